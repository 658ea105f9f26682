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

_LINE = r"//[^\n]*"
_BLOCK = r"/\*[\s\S]*?(?:\*/|\Z)"
# A quote right after a backslash starts no string: tried from every `\"` of a line, an
# unterminated string was scanned to the line's end once per quote (quadratic in its length).
# The check follows the quote rather than preceding it: a pattern whose every branch starts
# with a character lets the regex engine skip to the next one that can start a match, where
# a leading lookbehind makes it try each position (masking Python and JavaScript: 1.5x).
_DQ = r'"(?<!\\")(?:[^"\\\n]|\\[\s\S])*"'
_SQ = r"'(?<!\\')(?:[^'\\\n]|\\[\s\S])*'"

_DIALECTS = {
    # A regex literal is recognised after punctuation that cannot end an operand (matched with
    # it, and put back), so `a / b` stays division; `return /x/` is the one form it misses. One
    # that does not close on its line runs to the line's end: tried again from every later `(/`
    # instead, a long line of them took time with the square of its length.
    "js": re.compile(
        rf"(?P<c>{_LINE}|{_BLOCK})|(?P<s>{_DQ}|{_SQ})|(?P<t>`(?<!\\`)(?:[^`\\]|\\[\s\S])*`)"
        r"|(?P<r>[(,=:\[!&|?{};]\s*/(?![/*])"
        r"(?:[^/\\\n\[]|\\.?|\[(?:[^\]\\\n]|\\.?)*+(?:\]|(?=\n)|\Z))*+(?:/|(?=\n)|\Z))"
    ),
    "go": re.compile(
        rf"(?P<c>{_LINE}|{_BLOCK})|(?P<s>{_DQ}|`[^`]*`)|(?P<r>'(?:[^'\\\n]|\\[^'\n]+)')"
    ),
    "java": re.compile(
        rf'(?P<c>{_LINE}|{_BLOCK})|(?P<s>"""[\s\S]*?"""|{_DQ})|(?P<r>\'(?:[^\'\\\n]|\\[^\'\n]+)\')'
    ),
    # Rust: block comments nest (handled in code), strings span lines, raw strings carry
    # hashes (an unterminated one runs to the end), and a lone quote is a lifetime (`'a`)
    # unless one character and a quote follow.
    "rust": re.compile(
        r"(?P<c>//[^\n]*)|(?P<n>/\*)"
        r'|(?P<s>r(?P<h>#*)"[\s\S]*?(?:"(?P=h)|\Z)|"(?<!\\")(?:[^"\\]|\\[\s\S])*")'
        r"|(?P<r>'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|[^\n]))')"
    ),
    # Python: comments, and strings (triple-quoted ones across lines, an unterminated one to
    # the end). A prefix (r, b, f, u) changes neither where a string ends nor anything an
    # import needs; leaving it out lets the scan jump from one # or quote to the next.
    "python": re.compile(
        r"(?P<c>#[^\n]*)"
        r'|(?P<r>"""[\s\S]*?(?:"""|\Z)|\'\'\'[\s\S]*?(?:\'\'\'|\Z)'
        rf"|{_DQ}|{_SQ})"
    ),
}
_NESTING = re.compile(r"/\*|\*/")


@dataclass
class Masked:
    code: str
    strings: list[str | None]  # None: not a constant (a template literal with ${...})

    def string(self, index: str) -> str | None:
        return self.strings[int(index)]


def mask(text: str, dialect: str) -> Masked:
    """``text`` with comments blanked and string literals replaced by placeholders."""
    # A placeholder's marker in the text itself (\x02, which no source needs) would point
    # past the strings found: it is a space, one character for one, so offsets hold.
    text = text.replace("\x02", " ")
    token = _DIALECTS[dialect]
    out: list[str] = []
    strings: list[str | None] = []
    pos = 0
    while (m := token.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        end = m.end()
        kind = m.lastgroup if m.lastgroup != "h" else "s"
        if kind == "n":
            end = _nested_end(text, m.start())
        if kind in ("s", "t"):
            out.append(f"\x02{len(strings)}\x03")
            strings.append(_value(m.group(0), kind))
        else:  # a comment, or a character or regex literal: nothing an import needs
            if kind == "r" and dialect == "js":
                out.append(text[m.start()])  # the punctuation before the regex literal
            out.append("\n" * text.count("\n", m.start(), end) or " ")
        pos = end
    out.append(text[pos:])
    return Masked("".join(out), strings)


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
    token = _DIALECTS[dialect]
    out = []
    pos = 0
    while (m := token.search(text, pos)) is not None and m.start() <= until:
        end = _nested_end(text, m.start()) if m.lastgroup == "n" else m.end()
        out.append((m.start(), end))
        pos = end
    return out
