"""Stored text on its way out, to a person's terminal or to an agent.

What NexusMem stores was written by others (a commit message, a doc, a command) and is shown
to people and agents who did not write it. Two guards, the standard library only so the hooks
can use them, each linear in the text:

- a terminal gets no control characters but newline and tab: an escape sequence in a commit
  message could clear the screen, retitle the window or hide text, and a bidi override can
  make text read other than it is (``terminal``);
- an agent gets stored text it cannot take for the text around it: no line of a body has the
  shape of a result's header, and no tag-like ``<`` survives (``body_lines``, ``one_line``).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: the agent hook imports this module on every event
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "TerminalStream",
    "body_lines",
    "code_span",
    "json_safe",
    "neutralise_tags",
    "one_line",
    "terminal",
]


class _Lazy:
    """A pattern compiled the first time it is used: the agent hook imports this module on
    every event, and compiling all of them at import was 1.4 ms of an event that prints none."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, *args: object) -> None:
        self._args = args
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)  # type: ignore[call-overload]
        return getattr(self._compiled, name)


# Whole sequences first, so their parameters do not stay behind as text: CSI (colours, cursor
# moves, clear screen), the string ones (OSC retitles a window, DCS, SOS, PM, APC) up to their
# terminator, then any other ESC sequence. A string's body excludes every character that
# starts one, so a match that fails scans only up to the next start: linear.
_SEQUENCES = _Lazy(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\x90\x98\x9d\x9e\x9f]*"
    r"(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
# C0 but tab and newline, DEL, C1, and the bidi embeddings, overrides and isolates.
_CONTROLS = [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_DROP = dict.fromkeys([*_CONTROLS, *_BIDI])
_DROP_BUT_CR = {k: v for k, v in _DROP.items() if k != 0x0D}
_ANY_UNSAFE = _Lazy("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_JSON_UNSAFE = _Lazy("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal(text: str, keep_cr: bool = False) -> str:
    """``text`` without escape sequences and control characters (newline and tab stay; a
    carriage return too with ``keep_cr``, for a progress line)."""
    if not _ANY_UNSAFE.search(text):
        return text  # the common case: one scan, no copy
    return _SEQUENCES.sub("", text).translate(_DROP_BUT_CR if keep_cr else _DROP)


def json_safe(text: str) -> str:
    """JSON text whose characters a terminal acts on are written as ``\\uXXXX`` escapes: the
    same data, shown inert. JSON escapes C0 itself; DEL, C1 and the bidi controls it leaves
    raw, and outside ASCII they can only be inside a string, where the escape is valid."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# A tag's opening, as a model's prompt format or a client's markup would read it.
_TAG = _Lazy(r"<(?=[A-Za-z/!?|])")
# A line that could pass for a result's header (``- 2026-08-09 [observed] ...``) or the
# block's own heading, once its indentation is ignored.
_HEADER_SHAPE = _Lazy(
    r"[-*+>|\u2022 \t]*(?:\d{4}-\d\d-\d\d|date unknown|relevant history for:)", re.IGNORECASE
)


def neutralise_tags(text: str) -> str:
    """``<`` written ``&lt;`` where it opens something tag-like (``</tool>``, ``<system>``):
    stored text cannot open or close the frame a client or a model reads around it."""
    return _TAG.sub("&lt;", text)


# A newline, and the two Unicode line breaks a client may render as one.
_LINE_BREAK = _Lazy("[\n\u2028\u2029]")


def one_line(text: str) -> str:
    """Stored text shown inside a line the tool writes (a title, a name): terminal-safe, tags
    neutralised, and a line break shown as ``\\n`` so it cannot start a line of its own."""
    return _LINE_BREAK.sub("\\\\n", neutralise_tags(terminal(text))).replace("\t", " ")


def body_lines(text: str) -> list[str]:
    """Stored text shown as the indented lines under a header: terminal-safe, tags
    neutralised, and a line shaped like a header (a bullet and a date) escaped with a leading
    backslash, so only the lines the tool writes begin a result."""
    lines = _LINE_BREAK.split(neutralise_tags(terminal(text)))
    return [_escape_header(line) for line in lines]


def _escape_header(line: str) -> str:
    if not _HEADER_SHAPE.match(line):
        return line
    body = line.lstrip(" \t")
    return line[: len(line) - len(body)] + "\\" + body


def code_span(text: str) -> str:
    """``text`` as one Markdown code span, fenced with more backticks than it holds in a row,
    so a backtick inside it cannot close the span early (CommonMark's rule)."""
    text = one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


class TerminalStream:
    """A text stream that passes what is written through ``terminal``: the CLI puts it in
    front of stdout and stderr once, so no command can print stored text raw."""

    def __init__(self, stream: object, keep_cr: bool = False) -> None:
        self._stream = stream
        self._keep_cr = keep_cr

    def write(self, text: str) -> int:
        self._stream.write(terminal(text, self._keep_cr))  # type: ignore[attr-defined]
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
