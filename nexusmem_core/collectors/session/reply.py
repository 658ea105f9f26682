"""Reading the model's reply: a title line, then the summary.

Measured on real sessions with qwen2.5:3b (the spec's figures), the title is usable about one
time in three; otherwise it is a conversational preamble, a bullet, a heading, or just
"Summary of the session". Those are rejected, and the session's opening question stands in:
never polished, always concrete. A rejected first line that is content (a bullet, a label, an
over-long sentence) stays in the summary; one that is not (a preamble, a generic title) goes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .prompt import TITLE_MAX

__all__ = ["Summary", "parse_reply", "title_problem"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)  # reasoning models
_LABEL = re.compile(r"^(decisions?|diagnos[ie]s|unfinished)\s*:", re.IGNORECASE)
_QUOTES = "\"'“”‘’`"
_PREAMBLE = re.compile(
    r"^(sure|certainly|of course|absolutely|okay|ok|alright|great|here(?:'s| is| are)|"
    r"below is|as requested|in this (?:session|conversation)|this (?:session|conversation)|"
    r"i(?:'ve| have|'ll| will| can|'m| am))\b",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^([-*+•]|\d+[.)])\s")
_GENERIC = frozenset(
    "a an the of this for title summary summarised summarized recap overview session sessions "
    "conversation chat transcript discussion coding work working".split()
)
_DROPPED = {"preamble", "generic"}  # rejected first lines that hold nothing worth keeping


@dataclass(frozen=True)
class Summary:
    title: str
    body: str
    title_fallback: bool  # the model's title was rejected; the opening question stands in
    problem: str | None  # why it was rejected


def title_problem(line: str) -> str | None:
    """Why ``line`` (a first line, cleaned) is not a title, or None when it is one."""
    if not line:
        return "empty"
    if line.startswith("#"):
        return "generic" if _generic(line.lstrip("# ")) else "heading"
    if _BULLET.match(line):
        return "bullet"
    if line.startswith(("**", "__", ">")):
        return "markdown"
    if _LABEL.match(line):
        return "label"
    if _generic(line):
        return "generic"
    if _PREAMBLE.match(line) or line.endswith(":"):
        return "preamble"
    if len(line) > TITLE_MAX:
        return "too long"
    return None


def _generic(line: str) -> bool:
    """Nothing but words any session's title could have ("Summary of the session")."""
    return all(word in _GENERIC for word in re.findall(r"\w+", line.lower()))


def _clean(line: str) -> str:
    """The title in a first line: without a generic label ("Title:", "Session summary:"),
    surrounding quotes or a final full stop."""
    label, colon, rest = line.strip().partition(":")
    if colon and rest.strip() and _generic(label) and not label.startswith(("#", "*", "_")):
        line = rest
    line = line.strip()
    if len(line) > 1 and line[0] in _QUOTES and line[-1] in _QUOTES:
        line = line[1:-1].strip()
    return line.rstrip(".").strip()


def parse_reply(text: str, fallback: str) -> Summary | None:
    """The title and summary in ``text``, the title replaced by ``fallback`` when the model's
    is rejected; None when the reply holds no summary (empty, or a title alone)."""
    lines = _THINK.sub("", text).strip().splitlines()
    if not lines:
        return None
    title = _clean(lines[0])
    problem = title_problem(title)
    keep = lines[1:] if problem is None or problem in _DROPPED else lines
    body = "\n".join(keep).strip()
    if not body:
        return None
    if problem is not None:
        title = fallback
    return Summary(title, body, problem is not None, problem)
