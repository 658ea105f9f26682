"""Markdown and reST split into sections at their headings."""

from __future__ import annotations

from nexusmem_core.collectors.docs import parse_markdown, parse_rst, parse_sections

MD = """Intro before any heading.

# Title

Text under the title.

```bash
# not a heading, inside a fence
echo hi
```

## Install ##

Run it.

#NotAHeading
"""

RST = """=======
Project
=======

Lead paragraph.

Install
-------

pip install it.

Usage
-----

Call it.

Sub part
~~~~~~~~

Deep text.
"""


def test_markdown_sections_ignore_fenced_code():
    sections = parse_markdown(MD, "README.md")
    assert [(s.heading, s.level) for s in sections] == [
        ("README.md", 0),
        ("Title", 1),
        ("Install", 2),
    ]
    assert "# not a heading, inside a fence" in sections[1].text
    assert "#NotAHeading" in sections[2].text


def test_rst_titles_with_over_and_underlines():
    sections = parse_rst(RST, "guide.rst")
    assert [(s.heading, s.level) for s in sections] == [
        ("Project", 1),
        ("Install", 2),
        ("Usage", 2),
        ("Sub part", 3),
    ]
    assert sections[3].text == "Deep text."


def test_empty_sections_are_dropped_and_dispatch_is_by_extension():
    assert parse_sections("a.md", "# Only a heading\n") == []
    assert parse_sections("docs/x.rst", "Title\n=====\n\nBody.\n")[0].heading == "Title"
    assert parse_sections("docs/x.markdown", "# T\n\nBody\n")[0].heading == "T"
