"""What a command's exit status means. Standard library only: the hooks import this.

Exit 1 is not always failure: ``grep`` says it found nothing, ``diff`` that files differ,
``test`` that a condition is false. Remembering those as failures would warn an agent before
every search it repeats. A pipeline's status is its last command's.
"""

from __future__ import annotations

import re

__all__ = ["is_predicate"]

_PREDICATES = {
    "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "diff", "cmp", "colordiff", "test",
    "[", "[[", "which", "type", "command", "pgrep", "pidof", "false", "id", "getent",
}  # fmt: skip
_GIT_PREDICATES = re.compile(
    r"^git\s+(grep\b|diff\b.*--(quiet|exit-code)\b|merge-base\s+--is-ancestor\b|"
    r"rev-parse\s+(-q\s+)?--verify\b|show-ref\s+(-q\s+)?--verify\b|check-ignore\b|ls-files\b.*--error-unmatch\b)"
)
_SEGMENT = re.compile(r"\|\|?|&&|;|\n")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*\s+")


def _last_command(command: str) -> str:
    """The command whose status the whole line returns: after the last ``|``, ``;`` or ``&&``
    (an ``||`` fallback's status is the fallback's, so it counts as last as well)."""
    parts = [p.strip() for p in _SEGMENT.split(command) if p.strip()]
    text = parts[-1] if parts else command.strip()
    while match := _ASSIGNMENT.match(text):  # FOO=1 grep ...
        text = text[match.end() :]
    return re.sub(r"^(sudo|env|time|nice)\s+", "", text)


def is_predicate(command: str) -> bool:
    """True when exit 1 of ``command`` answers a question (no match, differs, false) rather
    than reports an error."""
    last = _last_command(command)
    word = last.split(None, 1)[0] if last.split() else ""
    return word in _PREDICATES or bool(_GIT_PREDICATES.match(last))
