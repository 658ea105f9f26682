"""Documentation: tracked Markdown and reStructuredText files, split into sections at headings."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .git import git

__all__ = [
    "Section",
    "list_doc_files",
    "markdown_headings",
    "parse_markdown",
    "parse_rst",
    "parse_sections",
]


@dataclass
class Section:
    heading: str
    level: int
    text: str  # the section's own text, heading line excluded


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


def markdown_headings(
    lines: Iterable[str],
) -> Iterator[tuple[str, tuple[str | None, int] | None]]:
    """Each line, with its ATX heading's (text, level) when it is one outside a code fence.

    Lines may keep their line ends; the heading text is None for a bare ``#``.
    """
    fence: str | None = None
    for line in lines:
        bare = line.rstrip("\r\n")
        opened = _FENCE.match(bare)
        if opened:
            marker = opened.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
        elif fence is None and (match := _ATX.match(bare)):
            yield line, ((match.group(2) or "").strip() or None, len(match.group(1)))
            continue
        yield line, None


def parse_markdown(text: str, fallback: str) -> list[Section]:
    """ATX headings (``#`` .. ``######``), ignoring lines inside fenced code blocks."""
    sections: list[Section] = []
    heading, level, lines = fallback, 0, list[str]()
    for line, found in markdown_headings(text.splitlines()):
        if found is None:
            lines.append(line)
            continue
        sections.append(Section(heading, level, "\n".join(lines).strip()))
        heading, level, lines = found[0] or fallback, found[1], []
    sections.append(Section(heading, level, "\n".join(lines).strip()))
    return [s for s in sections if s.text]


_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def parse_rst(text: str, fallback: str) -> list[Section]:
    """reST titles: a line underlined (optionally also overlined) by a repeated punctuation."""
    lines = text.splitlines()
    sections: list[Section] = []
    styles: list[str] = []  # adornment styles in order of first appearance = levels
    heading, level, body = fallback, 0, list[str]()
    i = 0
    while i < len(lines):
        line = lines[i]
        title, style, skip = _rst_title(lines, i)
        if title is not None:
            if style not in styles:
                styles.append(style)
            sections.append(Section(heading, level, "\n".join(body).strip()))
            heading, level, body = title, styles.index(style) + 1, []
            i += skip
            continue
        body.append(line)
        i += 1
    sections.append(Section(heading, level, "\n".join(body).strip()))
    return [s for s in sections if s.text]


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
    file name."""
    fallback = path.rsplit("/", 1)[-1]
    if path.lower().endswith(".rst"):
        return parse_rst(text, fallback)
    return parse_markdown(text, fallback)


async def list_doc_files(root: Path, extensions: Sequence[str]) -> list[str]:
    """Tracked files whose name ends with one of ``extensions`` (case-insensitive)."""
    out = await git(root, "ls-files", "-z", "--cached")
    wanted = tuple(ext.lower() for ext in extensions)
    return sorted({p for p in out.split("\x00") if p and p.lower().endswith(wanted)})
