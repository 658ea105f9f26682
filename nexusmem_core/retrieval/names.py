"""The words inside the identifiers a commit message names, for the word index.

A commit says ``DeadlineExceededErrors can occur anywhere`` or ``fix paramsSerializer``; a
question asks about "deadlines" or "the params serializer". The index's tokenizer splits
``snake_case`` at the underscore but keeps ``camelCase`` whole, so those words never meet. Each
commit node's identifiers are split here (``DeadlineExceededErrors``: deadline, exceeded,
errors) and the parts stored in the node's ``names`` column, which the index weighs like its
paths (store/fts.py). The query side splits the identifiers a question types the same way
(query.py), so both spellings meet in the middle.

Only commits: on the real set (bench/eval/real, BM25) names on commits lifted MRR@10 0.746 ->
0.751 and Recall@10 0.903 -> 0.921; on doc sections too, how-to questions lost more than the
rest gained (0.754 -> 0.735), and on per-file diffs, whose code is all identifiers, everything
lost a little (MRR@10 0.744).

Parts shorter than three letters are dropped (``getX``: get), and each part is kept once. The
text split is what reaches disk already redacted: ``[REDACTED]`` has no lower-case letter, so it
is never split.
"""

from __future__ import annotations

import re

__all__ = ["KINDS", "VERSION", "name_parts"]

KINDS = frozenset({"git_commit"})

# Names the splitting rule: a memory whose nodes were split by another one is split again by
# the next sync (sync.py), so a change here reaches every stored commit.
VERSION = "1"

# An identifier with a case change inside it: ``paramsSerializer``, ``DeadlineExceededError``,
# ``HTTPError``, ``XMLHttpRequest``. Plain words (``Fix``, ``URL``) have none.
_IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+[A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*)\b"
)
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# What every such identifier holds: a capital between a letter or digit and a lower-case
# letter or digit. Most messages have none, and this finds that out at a third of the cost.
# It is looked for in the text's classes (see _classes), where the capital is ``U`` and a
# lower-case letter or digit ``l``: led by one literal, the scan skips to the next capital
# as memchr does, where a class ([A-Z]) was tested at every character (a 10k-commit walk's
# 2.7 MB of messages: 5 ms with the mapping, 13 ms before).
_CASE_CHANGE = re.compile(rb"U(?<=[lU]U)l")
_UPPER, _LOWER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz0123456789"
_CLASSES = bytes(
    ord("U") if i in _UPPER else ord("l") if i in _LOWER else ord(" ") for i in range(256)
)


def _classes(text: str) -> bytes:
    """One byte per character of ``text``: ``U`` for an ASCII capital, ``l`` for an ASCII
    lower-case letter or digit, a space for any other (a non-ASCII one is encoded as ``?``)."""
    return text.encode("ascii", "replace").translate(_CLASSES)


def name_parts(kind: str, title: str, body: str) -> str:
    """The parts of the identifiers in ``title`` and ``body``, space-separated, for a node of
    ``kind``; empty for the kinds not split and for text without such identifiers."""
    if kind not in KINDS:
        return ""
    text = f"{title}\n{body}"
    classes = _classes(text)
    if not _CASE_CHANGE.search(classes):
        return ""
    parts: dict[str, None] = {}
    for identifier in _identifiers(text, classes):
        for part in _PART.findall(identifier):
            if len(part) > 2:
                parts[part.lower()] = None
    return " ".join(parts)


def _identifiers(text: str, classes: bytes) -> list[str]:
    """``_IDENTIFIER.findall(text)``, tried only on the words holding a case change (found in
    ``classes``, the :func:`_classes` of ``text``: one byte per character, so at the same
    places).

    A match is a whole word (``\\b`` on both sides, letters and digits between), and holds a
    case change: so each word around one is matched alone, not the text. findall tried the
    pattern at every word of a commit that names one identifier, and backtracked through each
    (14 ms of a 10k-commit walk, 2.5 ms so).
    """
    found: list[str] = []
    end = 0
    for change in _CASE_CHANGE.finditer(classes):
        at = change.start()
        if at < end:
            continue  # in the word just tried
        start, end = at, at + 1
        while start and _word(text[start - 1]):
            start -= 1
        while end < len(text) and _word(text[end]):
            end += 1
        if _IDENTIFIER.fullmatch(text, start, end):
            found.append(text[start:end])
    return found


def _word(char: str) -> bool:
    """Whether ``char`` is one ``\\w`` takes (``\\b`` is where one is and the next not)."""
    return char.isalnum() or char == "_"
