"""Documentation: tracked Markdown and reStructuredText files, split into sections at headings."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .changelog import is_changelog, plain_release_text, release_label, version_of
from .git import git

__all__ = [
    "MAX_DOC_BYTES",
    "MAX_SECTIONS",
    "SECTIONS_VERSION",
    "Section",
    "doc_text",
    "list_doc_files",
    "markdown_headings",
    "parse_markdown",
    "parse_rst",
    "parse_sections",
    "release_sections",
]


# Part of every doc file's digest (ingest.read_doc_files): raised when the way files are cut
# into sections changes, so a memory made before re-parses them once. 2: release sections
# keep their links' text, not their addresses; 3: at most MAX_SECTIONS sections a file.
SECTIONS_VERSION = b"sections 3\n"

# A doc file's first 4 MiB are read, no more: hand-written docs are far smaller (the longest
# changelogs run to a few hundred KB), and past this a file is generated or data named .md,
# whose bulk would only crowd memory.
MAX_DOC_BYTES = 4 << 20
# Sections one file is cut into, at most; the headings after the last are kept as its text.
# A long changelog has a few hundred releases; a file of 100k headings made 100k nodes.
MAX_SECTIONS = 1000
# A doc whose bytes are this much undecodable UTF-8 is not text: a Latin-1 page in French
# has a few percent, a binary file about half.
BINARY_RATIO = 0.1


@dataclass
class Section:
    heading: str
    level: int
    text: str  # the section's own text, heading line excluded
    label: str = ""  # what a title shows instead of the heading (a release's version and date)
    ts: int | None = None  # when the section says it happened (a release's date)
    folded: int = 0  # headings past MAX_SECTIONS kept in its text instead of cut at


def doc_text(data: bytes) -> str | None:
    """A doc file's bytes as text; None when they are not text: a NUL byte, or more than
    :data:`BINARY_RATIO` of them undecodable as UTF-8 (a few are replaced)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
    return None if text.count("\ufffd") > len(data) * BINARY_RATIO else text


# An ATX heading: the text (group 2) is runs of non-blanks and the blanks between them, less
# a closing run of `#`. Written so that nothing backtracks: the lazy `(.*?)` it replaces was
# tried against the closing run and the line end at every blank of a long run of blanks
# ("# a" + 30,000 spaces + "x" took 36 s). tests/fuzz/test_docs.py checks it reads every
# line as the lazy form did.
_ATX = re.compile(
    r"^ {0,3}(#{1,6})(?:[ \t]+((?:[^ \t]|[ \t]++(?=[^ \t])(?!#+[ \t]*$))*+))?"
    r"(?:[ \t]+#+)?[ \t]*$"
)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


_HTML_OPEN = re.compile(r"^ {0,3}<h([1-6])(?:\s[^>]*)?>", re.IGNORECASE)
_HTML_CLOSE = re.compile(r"</h[1-6]\s*>\s*$", re.IGNORECASE)
_HTML_LINES = 4  # an HTML heading not closed within these lines is text
_TAG = re.compile(r"<[^<>]*>")
_SETEXT_LINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# A line that cannot be a setext heading's text: a list item, a quote, a table row, a break.
_NOT_SETEXT_TEXT = re.compile(r"^(?: {4}|\s*(?:[-*+][ \t]|\d{1,9}[.)](?:[ \t]|$)|>|\|))")


def _setext_text(bare: str, after_blank: bool) -> bool:
    """Whether ``bare`` may be the text of a setext heading: a one-line paragraph."""
    return (
        after_blank
        and bool(bare.strip())
        and not _NOT_SETEXT_TEXT.match(bare)
        and not _SETEXT_LINE.match(bare)
    )


def markdown_headings(
    lines: Iterable[str],
) -> Iterator[tuple[str, tuple[str | None, int] | None]]:
    """Each line, with its heading's (text, level) when it is one outside a code fence.

    ATX headings (``# Title``), HTML ones (``<h3>Title</h3>``, over up to four lines) and
    setext ones (``Title`` over a line of ``=`` or ``-``; a one-line paragraph only, so a
    ``---`` rule under a paragraph's last line stays a rule). A setext or HTML heading comes
    as one item, its lines joined, so the items still join back into the text. Lines may keep
    their line ends; the heading text is None for a bare ``#``.
    """
    fence: str | None = None
    held: str | None = None  # a line that is a setext heading if the next one underlines it
    tag: list[str] = []  # the lines of an HTML heading not closed yet
    after_blank = True
    for line in lines:
        bare = line.rstrip("\r\n")
        if tag:
            tag.append(line)
            closed = _HTML_CLOSE.search(bare)
            if closed or len(tag) > _HTML_LINES:
                yield from _html_heading(tag) if closed else ((t, None) for t in tag)
                tag, after_blank = [], False
            continue
        if held is not None:
            text, held = held, None
            if _SETEXT_LINE.match(bare):
                yield text + line, (text.strip(), 1 if bare.strip()[0] == "=" else 2)
                after_blank = False
                continue
            yield text, None
        opened = _FENCE.match(bare)
        if opened:
            marker = opened.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
        elif fence is None and (match := _ATX.match(bare)):
            yield line, ((match.group(2) or "").strip() or None, len(match.group(1)))
            after_blank = False
            continue
        elif fence is None and _HTML_OPEN.match(bare):
            if _HTML_CLOSE.search(bare):
                yield from _html_heading([line])
                after_blank = False
            else:
                tag = [line]
            continue
        elif fence is None and _setext_text(bare, after_blank):
            held, after_blank = line, False
            continue
        yield line, None
        after_blank = not bare.strip()
    if held is not None:
        yield held, None
    yield from ((t, None) for t in tag)


def _html_heading(lines: list[str]) -> Iterator[tuple[str, tuple[str | None, int] | None]]:
    """An HTML heading (``<h3 name="x">`` .. ``</h3>``) as one item, its tags stripped."""
    joined = "".join(lines) if lines[0].endswith(("\n", "\r")) else "\n".join(lines)
    level = int(_HTML_OPEN.match(joined).group(1))  # type: ignore[union-attr]
    text = " ".join(_TAG.sub(" ", joined).split())
    yield ("".join(lines), (text or None, level))


def parse_markdown(text: str, fallback: str, keep_empty: bool = False) -> list[Section]:
    """ATX and setext headings, ignoring lines inside fenced code blocks."""
    sections: list[Section] = []
    heading, level, lines = fallback, 0, list[str]()
    folded = 0
    for line, found in markdown_headings(text.splitlines()):
        if found is None or len(sections) == MAX_SECTIONS - 1:
            lines.append(line)
            folded += found is not None
            continue
        sections.append(Section(heading, level, "\n".join(lines).strip()))
        heading, level, lines = found[0] or fallback, found[1], []
    sections.append(Section(heading, level, "\n".join(lines).strip(), folded=folded))
    return sections if keep_empty else [s for s in sections if s.text]


_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def parse_rst(text: str, fallback: str, keep_empty: bool = False) -> list[Section]:
    """reST titles: a line underlined (optionally also overlined) by a repeated punctuation."""
    lines = text.splitlines()
    sections: list[Section] = []
    styles: list[str] = []  # adornment styles in order of first appearance = levels
    heading, level, body = fallback, 0, list[str]()
    i = 0
    folded = 0
    while i < len(lines):
        line = lines[i]
        title, style, skip = _rst_title(lines, i)
        if title is not None and len(sections) == MAX_SECTIONS - 1:
            body.extend(lines[i : i + skip])
            folded += 1
            i += skip
            continue
        if title is not None:
            if style not in styles:
                styles.append(style)
            sections.append(Section(heading, level, "\n".join(body).strip()))
            heading, level, body = title, styles.index(style) + 1, []
            i += skip
            continue
        body.append(line)
        i += 1
    sections.append(Section(heading, level, "\n".join(body).strip(), folded=folded))
    return sections if keep_empty else [s for s in sections if s.text]


def _rst_title(lines: list[str], i: int) -> tuple[str | None, str, int]:
    line = lines[i]
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    after = lines[i + 2] if i + 2 < len(lines) else ""
    # Overline + title + underline.
    overlined = _ADORNMENT.match(line) and _ADORNMENT.match(after) and after[0] == line[0]
    if overlined and nxt.strip() and len(line.rstrip()) >= len(nxt.strip()):
        return nxt.strip(), "over" + line[0], 3
    # Title + underline at least as long as the title.
    underlined = line.strip() and not _ADORNMENT.match(line) and _ADORNMENT.match(nxt)
    if underlined and len(nxt.rstrip()) >= len(line.rstrip()) and not line[:1].isspace():
        return line.strip(), nxt[0], 2
    return None, "", 0


def parse_sections(path: str, text: str) -> list[Section]:
    """Sections of one file, by its extension; text before the first heading is titled by the
    file name. A changelog comes as one section per release (collectors/changelog.py)."""
    fallback = path.rsplit("/", 1)[-1]
    if is_changelog(path):
        return release_sections(text, fallback, rst=path.lower().endswith((".rst", ".txt")))
    if path.lower().endswith(".rst"):
        return parse_rst(text, fallback)
    return parse_markdown(text, fallback)


def release_sections(text: str, fallback: str, rst: bool) -> list[Section]:
    """A changelog as one section per release: the headings under a release heading (``###
    Fixed``) fold into its text, each under its heading text; other sections stay as they are."""
    parse = parse_rst if rst else parse_markdown
    sections = parse(text, fallback, keep_empty=True)
    out: list[Section] = []
    release: Section | None = None
    level: int | None = None  # the level of the first release heading
    for section in sections:
        version = version_of(section.heading) if section.level else None
        if version and (level is None or section.level <= level):
            level = section.level if level is None else level
            release = Section(section.heading, section.level, section.text)
            out.append(release)
        elif release is not None and level is not None and section.level > level:
            release.text = f"{release.text}\n\n{section.heading}\n{section.text}".strip()
        else:
            release = None
            out.append(section)
    for section in out:
        if version_of(section.heading) and section.level:
            section.label, section.ts = release_label(section.heading, section.text)
            section.text = plain_release_text(section.text)
    kept = [s for s in out if s.text]
    if kept and sections:
        kept[-1].folded = sections[-1].folded  # a release made anew does not carry it
    return kept


async def list_doc_files(root: Path, extensions: Sequence[str]) -> list[str]:
    """Tracked files whose name ends with one of ``extensions`` (case-insensitive), and the
    changelogs whatever their extension (``CHANGES``, ``NEWS.txt``)."""
    out = await git(root, "ls-files", "-z", "--cached")
    wanted = tuple(ext.lower() for ext in extensions)
    paths = (p for p in out.split("\x00") if p)
    return sorted({p for p in paths if p.lower().endswith(wanted) or is_changelog(p)})
