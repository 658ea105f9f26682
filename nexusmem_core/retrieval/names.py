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
# Led by the capital (the letter before it checked behind): the scan then jumps from one
# capital to the next instead of trying every letter (half the time again).
_CASE_CHANGE = re.compile(r"[A-Z](?<=[A-Za-z0-9][A-Z])[a-z0-9]")


def name_parts(kind: str, title: str, body: str) -> str:
    """The parts of the identifiers in ``title`` and ``body``, space-separated, for a node of
    ``kind``; empty for the kinds not split and for text without such identifiers."""
    text = f"{title}\n{body}"
    if kind not in KINDS or not _CASE_CHANGE.search(text):
        return ""
    parts: dict[str, None] = {}
    for identifier in _IDENTIFIER.findall(text):
        for part in _PART.findall(identifier):
            if len(part) > 2:
                parts[part.lower()] = None
    return " ".join(parts)
