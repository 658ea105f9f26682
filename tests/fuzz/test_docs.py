"""Documentation files: Markdown and reStructuredText cut into sections at their headings, then
into ``doc_section`` nodes. A tracked doc file may hold anything: generated tables, minified
text, a line of a hundred thousand spaces.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.docs import _ATX, parse_sections
from nexusmem_core.ingest import DocFile, doc_nodes

from .bounds import Target, mutated, repeated, within

_FRAGMENTS = [
    "# ",
    "#",
    "###### ",
    "####### ",
    " ",
    "\t",
    "x",
    "Why",
    "\n",
    "\r\n",
    "```",
    "~~~",
    "    ",
    "===",
    "---",
    "~~~~~~\n",
    "Title\n=====\n",
    "=====\nTitle\n=====\n",
    "..",
    "\u2028",
    "\x0c",
    "中文",
    "DB_PASSWORD=hunter2 ",
]
documents = st.tuples(
    st.sampled_from(["README.md", "docs/guide.rst", "CHANGELOG.md", "a.markdown"]),
    st.one_of(mutated(_FRAGMENTS), repeated(_FRAGMENTS, max_repeat=5_000)),
)


def check_document(document: tuple[str, str]) -> None:
    """Sections come out in linear time, with their text; nodes have sane signal and ids."""
    path, text = document
    with within():
        sections = parse_sections(path, text)
        nodes = doc_nodes("p", DocFile(path, text, "0" * 64, 0), 1767225600, 4000)
    assert len(nodes) == len(sections)
    assert len({n.id for n in nodes}) == len(nodes)  # a repeated heading gets " (2)", ...
    for node, section in zip(nodes, sections, strict=True):
        assert section.text and 0 <= node.signal <= 1
        assert "hunter2" not in node.body


@settings(max_examples=80, deadline=None)
@given(documents)
@example(("README.md", "# a" + " " * 30_000 + "x"))
@example(("README.md", "# a" + " #" * 30_000 + "x"))
def test_a_doc_file_splits_into_sections(document: tuple[str, str]) -> None:
    check_document(document)


# The heading pattern before it was made linear: the reference for what a heading line means.
_ATX_BEFORE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(" \t#xé\\`"), max_size=14))
@example("# foo ##")
@example("#  ## ")
@example("# #")
def test_a_heading_line_reads_as_it_did(line: str) -> None:
    before, now = _ATX_BEFORE.match(line), _ATX.match(line)
    assert (before and before.groups()) == (now and now.groups())


TARGETS = {"doc sections": Target(documents, check_document)}
