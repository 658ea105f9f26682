"""Markdown and reST split into sections at their headings."""

from __future__ import annotations

import os
import tracemalloc
from collections import Counter

import anyio

from nexusmem_core.collectors.docs import (
    MAX_DOC_BYTES,
    MAX_SECTIONS,
    doc_text,
    parse_markdown,
    parse_rst,
    parse_sections,
)
from nexusmem_core.config import ProjectConfig
from nexusmem_core.ingest import read_doc_files

from ..conftest import Repo

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


def test_setext_headings_split_like_atx_ones():
    text = "Intro\n\nInstall\n=======\n\nRun it.\n\nUsage\n-----\n\nCall it.\n"
    sections = parse_markdown(text, "README.md")
    assert [(s.heading, s.level, s.text) for s in sections] == [
        ("README.md", 0, "Intro"),
        ("Install", 1, "Run it."),
        ("Usage", 2, "Call it."),
    ]


def test_a_rule_under_a_paragraph_or_a_list_is_not_a_heading():
    text = "# T\n\nfirst line\nlast line\n---\n\n- item\n---\n\n---\nfront: matter\n---\n"
    sections = parse_markdown(text, "a.md")
    assert [s.heading for s in sections] == ["T"]
    assert "last line\n---" in sections[0].text and "- item\n---" in sections[0].text


def test_html_headings_over_several_lines():
    text = '<h3 name="config">\nDoes it read a config file?\n</h3>\n\nYes.\n\n<h2>\nnever closed\n'
    sections = parse_markdown(text + "\n" * 6 + "tail\n", "FAQ.md")
    assert [(s.heading, s.level) for s in sections] == [("Does it read a config file?", 3)]
    assert "never closed" in sections[0].text


def test_a_changelog_is_one_section_per_release_with_its_version_and_date():
    text = (
        "# Changelog\n\nAll notable changes.\n\n"
        "## [1.7.9](https://example.com/compare/v1.7.8...v1.7.9) (2024-12-04)\n\n"
        "### Bug Fixes\n\n* fix the proxy\n\n### Reverts\n\n* undo the agent change\n\n"
        "## 0.28.1 (6th December, 2024)\n\n* Fix SSL case.\n"
    )
    sections = parse_sections("CHANGELOG.md", text)
    assert [s.label for s in sections] == [
        "",
        "version 1.7.9, released 2024-12-04",
        "version 0.28.1, released 2024-12-06",
    ]
    release = sections[1]
    assert "Bug Fixes\n* fix the proxy" in release.text and "undo the agent change" in release.text
    assert release.ts == 1733270400  # 2024-12-04 UTC, the release's own date


def test_a_release_keeps_the_text_of_its_links_and_drops_their_addresses_and_tags():
    text = (
        "## [1.7.8](https://github.com/o/r/compare/v1.7.7...v1.7.8) (2024-11-25)\n\n"
        "* allow a callback as paramsSerializer ([#6680](https://github.com/o/r/issues/6680)) "
        "([eac4619](https://github.com/o/r/commit/eac4619fe2e0))\n\n"
        "### Contributors to this release\n\n"
        '- <img src="https://avatars.example/u/1?v&#x3D;4" alt="avatar" width="18"/> '
        '[Jay](https://github.com/jay "+281/-19 (#6640 #6619 )")\n'
    )
    (release,) = parse_sections("CHANGELOG.md", text)
    assert "paramsSerializer (#6680) (eac4619)" in release.text
    assert "- Jay" in " ".join(release.text.split())
    assert "https" not in release.text and "avatar" not in release.text
    assert release.heading.startswith("[1.7.8](https://")  # the reference is the heading as written
    rst = "Version 2.1\n-----------\n\n- Fix a leak. `#456 <https://github.com/o/r/pull/456>`__\n"
    (section,) = parse_sections("CHANGES.rst", rst)
    assert "Fix a leak. #456" in section.text and "https" not in section.text
    readme = "# Usage\n\nSee [the guide](https://example.com/guide).\n"
    assert "https://example.com/guide" in parse_sections("README.md", readme)[0].text


def test_rst_and_setext_changelogs_date_a_release_from_its_first_lines():
    rst = "Version 3.1.0\n-------------\n\nReleased 2024-11-01\n\n-   Limit fields.\n"
    (release,) = parse_sections("CHANGES.rst", rst)
    assert release.label == "version 3.1.0, released 2024-11-01" and "Limit fields" in release.text
    setext = "TBD\n===\nNothing yet.\n\n15.0.0 (2025-10-15)\n===================\nBig one.\n"
    assert [s.label for s in parse_sections("CHANGELOG.md", setext)] == [
        "unreleased changes",
        "version 15.0.0, released 2025-10-15",
    ]


def test_a_file_of_more_headings_than_the_cap_keeps_the_rest_in_its_last_section():
    over = 50  # headings past the cap; the intro is a section too
    text = "Intro.\n\n" + "".join(f"# H{i}\n\nbody {i}\n\n" for i in range(MAX_SECTIONS + over))
    sections = parse_markdown(text, "f.md")
    assert len(sections) == MAX_SECTIONS and sections[0].heading == "f.md"
    assert sections[-1].heading == f"H{MAX_SECTIONS - 2}" and sections[-1].folded == over + 1
    assert sections[-1].text.endswith(f"# H{MAX_SECTIONS + over - 1}\n\nbody {MAX_SECTIONS + 49}")
    rst = "Intro.\n\n" + "".join(
        f"T{i}\n======\n\nbody {i}\n\n" for i in range(MAX_SECTIONS + over)
    )
    cut = parse_rst(rst, "f.rst")
    assert len(cut) == MAX_SECTIONS and cut[-1].folded == over + 1
    log = "Intro.\n\n" + "".join(f"## {i}.0.0\n\n- fix {i}\n\n" for i in range(MAX_SECTIONS + over))
    releases = parse_sections("CHANGELOG.md", log)
    assert len(releases) == MAX_SECTIONS and releases[-1].folded == over + 1


def test_binary_bytes_are_not_doc_text():
    assert doc_text("# Café\n".encode()) == "# Café\n"
    french = "Le café de la gare est fermé le lundi; on y sert une crème brûlée.\n" * 20
    assert doc_text(french.encode("latin-1")) is not None  # a few undecodable bytes
    assert doc_text(b"# Title\x00\n") is None  # a NUL
    assert doc_text(bytes(range(128, 256)) * 8) is None  # mostly undecodable


def docs_of(repo: Repo, skipped: Counter[str] | None = None) -> list:
    async def run() -> list:
        return await read_doc_files(repo.path, ProjectConfig(), skipped)

    return anyio.run(run)


def test_a_doc_file_is_read_up_to_the_cap(make_repo):
    repo = make_repo("r")
    repo.commit("docs", {"BIG.md": "# Big\n\n" + "word " * (MAX_DOC_BYTES // 4)})
    (doc,) = docs_of(repo)
    assert doc.cut and len(doc.text) == MAX_DOC_BYTES


def peak(repo: Repo) -> int:
    tracemalloc.start()
    try:
        docs_of(repo)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_size_of_a_doc_file(make_repo):
    sizes = {}
    for megabytes in (8, 32):
        repo = make_repo(f"r{megabytes}")
        repo.commit("docs", {"BIG.md": "# Big\n\n" + "0123456789\n" * (megabytes * 100_000)})
        sizes[megabytes] = peak(repo)
    # Read whole, the 32 MB file took four times the 8 MB one's memory; read to the cap, the
    # two take the same.
    assert sizes[32] < sizes[8] * 1.5, sizes


def test_links_out_of_the_work_tree_fifos_and_binaries_are_skipped_and_counted(make_repo, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nkept out\n")
    repo = make_repo("r")
    files = {"README.md": "# Readme\n\nhello\n", "pic.md": "x", "notes.md": "n"}
    repo.commit("docs", files)
    (repo.path / "pic.md").write_bytes(b"\x89PNG\x00\x00")
    for name, target in (("abs.md", str(outside)), ("up.md", "../outside.md")):
        os.symlink(target, repo.path / name)
    os.symlink("README.md", repo.path / "same.md")
    repo.commit("docs: links")
    (repo.path / "notes.md").unlink()
    os.mkfifo(repo.path / "notes.md")  # a tracked path that would never end
    skipped: Counter[str] = Counter()
    docs = docs_of(repo, skipped)
    assert [d.path for d in docs] == ["README.md", "same.md"]  # a link to a doc inside stays
    assert skipped == {"outside": 2, "binary": 1, "not a file": 1}
