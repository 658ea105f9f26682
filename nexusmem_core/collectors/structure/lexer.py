"""Comments out, string literals set aside: what the regex extractors read instead of the text.

An import pattern run over raw text would take ``// import "./old"`` or a string that happens to
hold ``import x from './y'`` for real imports. Here comments become blank (their newlines kept,
so line-anchored patterns still work) and every string literal becomes a placeholder
``\\x02N\\x03`` whose value is ``strings[N]``. A pattern then asks for a placeholder where a
specifier must be, and looks the value up. One regular expression per dialect finds the next
comment or literal, so the text between them is copied at C speed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["STRING", "Masked", "brace_depths", "mask", "skipped_spans"]

STRING = r"\x02(\d+)\x03"
"""A pattern fragment: one masked string literal, its index in group 1."""

# A run of line comments is one token (a doc comment of ten lines: one step of the loop, not
# ten); it is blanked to its newlines, as each would be.
_LINE = r"//[^\n]*+(?:\n[ \t]*+//[^\n]*+)*+"
_BLOCK = r"/\*[\s\S]*?(?:\*/|\Z)"
# A quote right after a backslash starts no string: tried from every `\"` of a line, an
# unterminated string was scanned to the line's end once per quote (quadratic in its length).
# The check follows the quote rather than preceding it: a pattern whose every branch starts
# with a character lets the regex engine skip to the next one that can start a match, where
# a leading lookbehind makes it try each position (masking Python and JavaScript: 1.5x).
_DQ = r'"(?<!\\")(?:[^"\\\n]|\\[\s\S])*"'
_SQ = r"'(?<!\\')(?:[^'\\\n]|\\[\s\S])*'"

# Each dialect's token pattern has no groups: its kind is read off its first characters
# (_KINDS). A group around each branch kept the regex engine from skipping straight to the
# next character that can start a token, so it tried every position (4x the time).
_DIALECTS = {
    # A regex literal is recognised after punctuation that cannot end an operand (matched with
    # it, and put back), so `a / b` stays division; `return /x/` is the one form it misses. One
    # that does not close on its line runs to the line's end: tried again from every later `(/`
    # instead, a long line of them took time with the square of its length.
    "js": re.compile(
        rf"{_LINE}|{_BLOCK}|{_DQ}|{_SQ}|`(?<!\\`)(?:[^`\\]|\\[\s\S])*`"
        r"|[(,=:\[!&|?{};]\s*/(?![/*])"
        r"(?:[^/\\\n\[]|\\.?|\[(?:[^\]\\\n]|\\.?)*+(?:\]|(?=\n)|\Z))*+(?:/|(?=\n)|\Z)"
    ),
    "go": re.compile(rf"{_LINE}|{_BLOCK}|{_DQ}|`[^`]*`|'(?:[^'\\\n]|\\[^'\n]+)'"),
    "java": re.compile(rf'{_LINE}|{_BLOCK}|"""[\s\S]*?"""|{_DQ}|\'(?:[^\'\\\n]|\\[^\'\n]+)\''),
    # Rust: block comments nest and raw strings carry hashes (both ended in code: the pattern
    # matches their openers), strings span lines, and a lone quote is a lifetime (`'a`)
    # unless one character and a quote follow.
    "rust": re.compile(
        rf'{_LINE}|/\*|r#*"|"(?<!\\")(?:[^"\\]|\\[\s\S])*"'
        r"|'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|[^\n]))'"
    ),
    # Python: comments, and strings (triple-quoted ones across lines, an unterminated one to
    # the end). A prefix (r, b, f, u) changes neither where a string ends nor anything an
    # import needs; leaving it out lets the scan jump from one # or quote to the next.
    "python": re.compile(
        r'#[^\n]*+(?:\n[ \t]*+#[^\n]*+)*+|"""[\s\S]*?(?:"""|\Z)|\'\'\'[\s\S]*?(?:\'\'\'|\Z)'
        rf"|{_DQ}|{_SQ}"
    ),
}
# A token's kind by its first character (then its first two): "c" a comment, "n" a nesting
# comment's opener, "s" a string kept as a placeholder ("w" a raw one's opener), "t" a
# template, "r" what an import never needs (a character, regex or Python string literal).
_KINDS: dict[str, dict[str, str]] = {
    "js": {"//": "c", "/*": "c", '"': "s", "'": "s", "`": "t", "": "r"},
    "go": {"//": "c", "/*": "c", '"': "s", "`": "s", "'": "r"},
    "java": {"//": "c", "/*": "c", '"': "s", "'": "r"},
    "rust": {"//": "c", "/*": "n", "r": "w", '"': "s", "'": "r"},
    "python": {"#": "c", "": "r"},
}


def _kind(kinds: dict[str, str], token: str) -> str:
    return kinds.get(token[:2]) or kinds.get(token[0]) or kinds[""]


_NESTING = re.compile(r"/\*|\*/")


@dataclass
class Masked:
    code: str
    strings: list[str | None]  # None: not a constant (a template literal with ${...})

    def string(self, index: str) -> str | None:
        return self.strings[int(index)]


def mask(text: str, dialect: str, stop: re.Pattern[str] | None = None) -> Masked:
    """``text`` with comments blanked and string literals replaced by placeholders; with
    ``stop``, only up to its first match in the code (outside comments and literals): for a
    language whose imports all come before something (Go's before its first declaration)."""
    # A placeholder's marker in the text itself (\x02, which no source needs) would point
    # past the strings found: it is a space, one character for one, so offsets hold.
    text = text.replace("\x02", " ")
    token, kinds = _DIALECTS[dialect], _KINDS[dialect]
    out: list[str] = []
    strings: list[str | None] = []
    pos = 0
    tokens = token.finditer(text)
    while (m := next(tokens, None)) is not None:
        start, found = m.start(), m.group()
        if stop is not None and (cut := stop.search(text, pos, start)) is not None:
            out.append(text[pos : cut.start()])
            return Masked("".join(out), strings)
        out.append(text[pos:start])
        kind, end = _kind(kinds, found), m.end()
        if kind in ("n", "w"):  # ended in code: the scan goes on from there
            kind, end = _ended(text, m, kind)
            tokens = token.finditer(text, end)
        if kind in ("s", "t"):
            out.append(f"\x02{len(strings)}\x03")
            strings.append(_value(text[start:end], kind))
        else:  # a comment, or a character or regex literal: nothing an import needs
            if kind == "r" and dialect == "js":
                out.append(found[0])  # the punctuation before the regex literal
            lines = found.count("\n") if end == m.end() else text.count("\n", start, end)
            out.append("\n" * lines or " ")
        pos = end
    cut = stop.search(text, pos) if stop is not None else None
    out.append(text[pos : cut.start() if cut else len(text)])
    return Masked("".join(out), strings)


def _ended(text: str, m: re.Match[str], kind: str) -> tuple[str, int]:
    """The kind of the token ``m`` found (``kind``: read off its first characters), as the
    masking treats it, and where it ends."""
    if kind == "n":
        return "c", _nested_end(text, m.start())
    if kind == "w":  # r#"...."#: up to a quote and as many hashes (the end, unterminated)
        close = '"' + "#" * (m.end() - m.start() - 2)
        found = text.find(close, m.end())
        return "s", len(text) if found < 0 else found + len(close)
    return kind, m.end()


def _value(literal: str, kind: str) -> str | None:
    if kind == "t":
        body = literal[1:-1]
        return None if "${" in body else body
    if literal.startswith(("r", "br", "b")):  # Rust byte and raw strings
        literal = literal.lstrip("br").strip("#")
    if literal.startswith('"""'):
        return literal[3:-3]
    return literal[1:-1]


def _nested_end(text: str, start: int) -> int:
    depth = 0
    for m in _NESTING.finditer(text, start):
        depth += 1 if m.group(0) == "/*" else -1
        if depth == 0:
            return m.end()
    return len(text)


def brace_depths(code: str, positions: list[int]) -> list[int]:
    """How many ``{`` are open at each of ``positions`` (ascending) in masked code."""
    depths, depth, last = [], 0, 0
    for pos in positions:
        chunk = code[last:pos]
        depth += chunk.count("{") - chunk.count("}")
        depths.append(depth)
        last = pos
    return depths


def skipped_spans(text: str, dialect: str, until: int) -> list[tuple[int, int]]:
    """The comments and literals of ``text`` (start, end), in order, up to the first one that
    starts after ``until``: what a match at a position up to ``until`` must not fall in."""
    token, kinds = _DIALECTS[dialect], _KINDS[dialect]
    out = []
    pos = 0
    while (m := token.search(text, pos)) is not None and m.start() <= until:
        end = _ended(text, m, _kind(kinds, m.group()))[1]
        out.append((m.start(), end))
        pos = end
    return out
