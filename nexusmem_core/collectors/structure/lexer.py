"""Comments out, string literals set aside: what the regex extractors read instead of the text.

An import pattern run over raw text would take ``// import "./old"`` or a string that happens to
hold ``import x from './y'`` for real imports. Here comments become blank (their newlines kept,
so line-anchored patterns still work) and every string literal becomes a placeholder
``\\x02N\\x03`` whose value is ``strings[N]``. A pattern then asks for a placeholder where a
specifier must be, and looks the value up. One regular expression per dialect cuts the text
into comments, literals and the code between them, at C speed; Python only replaces the
comments and literals.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["STRING", "Masked", "brace_depths", "mask", "skipped_spans"]

STRING = r"\x02(\d+)\x03"
"""A pattern fragment: one masked string literal, its index in group 1."""

# A run of line comments is one token (a doc comment of ten lines: one step of the loop, not
# ten); it is blanked to its newlines, as each would be.
_LINE = r"//[^\n]*+(?:\n[ \t]*+//[^\n]*+)*+"
# Inside a comment or a literal, each step takes a run of ordinary characters and gives none
# back (possessive): one character a step, as in `(?:[^"\\]|\\.)*`, kept a backtracking point
# for every character of every literal, and scanning ripgrep's sources took 18 ms, not 9.
_BLOCK = r"/\*(?:[^*]++|\*(?!/))*+(?:\*/|\Z)"
# A quote right after a backslash starts no string: tried from every `\"` of a line, an
# unterminated string was scanned to the line's end once per quote (quadratic in its length).
# The check follows the quote rather than preceding it: a pattern whose every branch starts
# with a character lets the regex engine skip to the next one that can start a match, where
# a leading lookbehind makes it try each position (masking Python and JavaScript: 1.5x).
_DQ = r'"(?<!\\")(?:[^"\\\n]++|\\[\s\S])*+"'
_SQ = r"'(?<!\\')(?:[^'\\\n]++|\\[\s\S])*+'"

# A regex literal is recognised after punctuation that cannot end an operand (matched with it,
# and put back), so `a / b` stays division; `return /x/` is the one form it misses. One that
# does not close on its line runs to the line's end: tried again from every later `(/` instead,
# a long line of them took time with the square of its length. A branch per punctuation mark,
# not one led by a class of them: the engine then skips to the next character that can start
# a token of any branch, instead of trying every position (scanning axios: 4.5 ms, not 7.3).
_REGEX = (
    r"\s*/(?![/*])"
    r"(?:[^/\\\n\[]++|\\.?|\[(?:[^\]\\\n]++|\\.?)*+(?:\]|(?=\n)|\Z))*+(?:/|(?=\n)|\Z)"
)
_REGEXES = "|".join(re.escape(mark) + _REGEX for mark in "(,=:[!&|?{};")

# No branch of a dialect's token pattern is a group: a token's kind is read off its first
# character (_KINDS). A group around each branch kept the regex engine from skipping straight
# to the next character that can start a token, so it tried every position (4x the time).
_TOKENS = {
    "js": rf"{_LINE}|{_BLOCK}|{_DQ}|{_SQ}|`(?<!\\`)(?:[^`\\]++|\\[\s\S])*+`|{_REGEXES}",
    "go": rf"{_LINE}|{_BLOCK}|{_DQ}|`[^`]*`|'(?:[^'\\\n]|\\[^'\n]+)'",
    "java": rf'{_LINE}|{_BLOCK}|"""(?:[^"]++|"(?!""))*+"""|{_DQ}|\'(?:[^\'\\\n]|\\[^\'\n]+)\'',
    # Rust: block comments nest and raw strings carry hashes, strings span lines, and a lone
    # quote is a lifetime (`'a`) unless one character and a quote follow. A block comment with
    # none inside is matched whole; one that nests, by its opener alone (a bare "/*"), which is
    # then ended in code. A raw string ends at a quote and as many hashes as it opened with
    # (the end, unterminated).
    "rust": (
        rf"{_LINE}|/\*(?:[^*/]++|\*(?!/)|/(?!\*))*+\*/|/\*"
        r'|r(?P<hashes>#*)"(?:[^"]++|"(?!(?P=hashes)))*+(?:"(?P=hashes)|\Z)'
        r'|"(?<!\\")(?:[^"\\]++|\\[\s\S])*+"'
        r"|'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|[^\n]))'"
    ),
    # Python: comments, and strings (triple-quoted ones across lines, an unterminated one to
    # the end). A prefix (r, b, f, u) changes neither where a string ends nor anything an
    # import needs; leaving it out lets the scan jump from one # or quote to the next.
    "python": (
        r'#[^\n]*+(?:\n[ \t]*+#[^\n]*+)*+|"""(?:[^"]++|"(?!""))*+(?:"""|\Z)'
        r"|'''(?:[^']++|'(?!''))*+(?:'''|\Z)"
        rf"|{_DQ}|{_SQ}"
    ),
}
# A token's kind by its first character: "c" a comment, "s" a string kept as a placeholder
# (its value between its first and last characters), "v" one whose value _value reads (a Rust
# raw string, a Java string or text block), "t" a template; any other token is what an import
# never needs (a character, regex or Python string literal).
_KINDS: dict[str, dict[str, str]] = {
    "js": {"/": "c", '"': "s", "'": "s", "`": "t"},
    "go": {"/": "c", '"': "s", "`": "s"},
    "java": {"/": "c", '"': "v"},
    "rust": {"/": "c", "r": "v", '"': "s"},
    "python": {"#": "c"},
}
_NESTING = re.compile(r"/\*|\*/")


@functools.cache
def _token(dialect: str) -> re.Pattern[str]:
    """The dialect's token pattern, compiled when a file of the dialect is first read
    (JavaScript's takes 1.4 ms, which a repository without any should not pay). The pattern is
    one group, which the engine looks into for the characters a match can start with, so that
    ``split`` gives the code and the tokens in turn, with no step of Python for the code
    (masking ripgrep: 15 ms, not 18)."""
    return re.compile(f"({_TOKENS[dialect]})")


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
    pieces = _pieces(text, dialect, stop)
    kinds, regex = _KINDS[dialect], dialect == "js"
    strings: list[str | None] = []
    for i in range(1, len(pieces), 2):
        found = pieces[i]
        kind = kinds.get(found[0])
        if kind == "s" or kind == "v" or kind == "t":
            pieces[i] = f"\x02{len(strings)}\x03"
            strings.append(found[1:-1] if kind == "s" else _value(found, kind))
        else:  # a comment, or a character or regex literal: nothing an import needs
            blank = "\n" * found.count("\n") or " "
            # A regex literal's token starts with the punctuation before it: put back.
            pieces[i] = found[0] + blank if regex and kind is None else blank
    return Masked("".join(pieces), strings)


def _pieces(text: str, dialect: str, stop: re.Pattern[str] | None) -> list[str]:
    """``text`` cut into code and tokens in turn (code, token, ..., code), up to the first
    match of ``stop`` in the code."""
    token = _token(dialect)
    if stop is None:
        pieces = token.split(text)
        if token.groups > 1:  # Rust: after each token, what its raw string's hashes took
            del pieces[2::3]
        if dialect != "rust" or "/*" not in pieces[1::2]:
            return pieces
    # Up to a stop, or past a comment that nests: a scan that can end early or start again.
    pieces = []
    pos = 0
    tokens = token.finditer(text)
    while (m := next(tokens, None)) is not None:
        start, end = m.span()
        if stop is not None and (cut := stop.search(text, pos, start)) is not None:
            pieces.append(text[pos : cut.start()])
            return pieces
        if m.group() == "/*":  # a comment that nests: ended in code, the scan goes on from there
            end = _nested_end(text, start)
            tokens = token.finditer(text, end)
        pieces += (text[pos:start], text[start:end])
        pos = end
    cut = stop.search(text, pos) if stop is not None else None
    pieces.append(text[pos : cut.start() if cut else len(text)])
    return pieces


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
    token = _token(dialect)
    out = []
    pos = 0
    while (m := token.search(text, pos)) is not None and m.start() <= until:
        end = _nested_end(text, m.start()) if m.group() == "/*" else m.end()
        out.append((m.start(), end))
        pos = end
    return out
