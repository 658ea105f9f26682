"""The deny list: values forgotten here, and the matcher that keeps them from coming back.

A literal is kept only as ``sha256(salt + value)`` with a salt of its own, and its length; a
regex as given. Without the value, a literal is found by hashing every window of its length
that could be it. To keep that affordable, and to say plainly what "contains" means, a value
matches only where it does not cut a run of letters or digits in two: ``hunter2`` is found
in ``pw=hunter2;`` and ``"hunter2"``, not in ``hunter22``. ``forget`` (which knows the value)
and sync (which does not) run this same matcher, so what one deletes the other never writes.

A node is read as separate pieces: title, body, paths (one per line), and every key and
value in its meta (so JSON escaping cannot hide a value); a note the agents were told as its
session, command and text. A literal is matched within one line of one piece (it may not hold
a line break): three in four 40-character windows of code cross one, and skipping them is most
of what makes the matcher cheap.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from operator import methodcaller
from typing import Any

from ..errors import UsageError
from ..models import Node
from ..store.db import Database

__all__ = [
    "DenyEntry",
    "DenyFilter",
    "is_same_literal",
    "literal_entry",
    "load_entries",
    "node_pieces",
    "normalize",
    "note_pieces",
    "regex_entry",
    "row_pieces",
]

# Per ASCII byte: 1 for a letter or digit, else 0; and 1 for anything that is neither that nor
# whitespace. A character outside ASCII is read as "?" (one byte per character, so positions
# stay character positions): a token of its own, like punctuation.
_SPACE = b" \t\n\r\x0b\x0c"
_ALNUM = bytes(int(chr(b).isalnum()) if b < 128 else 0 for b in range(256))
_PUNCT = bytes(int(not _ALNUM[b] and b not in _SPACE) for b in range(256))
_BREAK = bytes(int(b in b"\x00\n\r") for b in range(256))  # no literal holds one
_ONE = re.compile(b"\x01")
_START = methodcaller("start")
_DIGEST = methodcaller("digest")
_ENCODE = methodcaller("encode", "utf-8", "surrogatepass")
_CACHE_CAP = 200_000  # windows remembered as clean, per length: ~20 MB at most
_SEPARATOR = "\x00"  # between a node's pieces: no value holds one, so no match spans two


@dataclass(frozen=True)
class DenyEntry:
    """One deny-list row. ``value`` is the salted hash (hex) of a literal, or the pattern."""

    kind: str  # "literal" or "regex"
    value: str
    salt: str = ""
    length: int | None = None
    ignore_case: bool = False
    reason: str | None = None
    created_at: int | None = None
    id: int | None = None


def _hash(salt: str, value: str) -> str:
    return hashlib.sha256((salt + value).encode("utf-8", "surrogatepass")).hexdigest()


def normalize(value: str, ignore_case: bool) -> str:
    """The text a literal is hashed and matched as: without surrounding whitespace (a match
    never starts or ends in whitespace), lowercased for ``ignore_case``."""
    value = value.strip()
    if not value:
        raise UsageError("forget: give a value that is not only whitespace")
    if any(ch in value for ch in "\x00\n\r"):
        raise UsageError(
            "forget: a value is matched within one line; forget each line on its own, or a "
            "regular expression"
        )
    return value.lower() if ignore_case else value


def literal_entry(value: str, ignore_case: bool, reason: str | None) -> DenyEntry:
    """A new entry for a literal, with a fresh random salt: the value itself is not kept."""
    value = normalize(value, ignore_case)
    salt = secrets.token_hex(16)
    return DenyEntry("literal", _hash(salt, value), salt, len(value), ignore_case, reason)


def regex_entry(pattern: str, ignore_case: bool, reason: str | None) -> DenyEntry:
    """An entry for a regular expression (stored as given); raises UsageError if invalid."""
    if not pattern:
        raise UsageError("forget: the regular expression is empty: give a pattern")
    compiled = _compile(pattern, ignore_case)
    if compiled.search("", timeout=REGEX_SECONDS):
        raise UsageError("forget: the pattern matches empty text, so it would match all")
    return DenyEntry("regex", pattern, "", None, ignore_case, reason)


# One search of one piece of one node by one deny-list pattern may take this long. Python's re
# cannot be stopped, and a pattern such as (a|aa)+$ backtracks for hours on a long line, so
# patterns run on the `regex` module (the same syntax), whose searches take a timeout.
REGEX_SECONDS = 0.2


def _compile(pattern: str, ignore_case: bool) -> Any:
    import regex

    try:
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except (regex.error, RecursionError, OverflowError) as err:  # nesting, a{99999999999}
        raise UsageError(f"forget: not a valid regular expression ({err})") from err


def is_same_literal(entry: DenyEntry, value: str) -> bool:
    """Whether ``entry`` is the literal ``value`` (already normalized for its case rule)."""
    if entry.kind != "literal" or entry.length != len(value):
        return False
    return secrets.compare_digest(_hash(entry.salt, value), entry.value)


async def load_entries(db: Database, project_id: str) -> list[DenyEntry]:
    rows = await db.fetchall(
        "select id, kind, value, salt, length, ignore_case, reason, created_at from deny_list "
        "where project_id = ? order by id",
        (project_id,),
    )
    return [
        DenyEntry(kind, value, salt, length, bool(ic), reason, created, id_)
        for id_, kind, value, salt, length, ic, reason, created in rows
    ]


# ------------------------------------------------------------------------------------ pieces


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif value is not None:
        yield str(value)


def node_pieces(node: Node) -> list[str]:
    """What of a node a deny entry is matched against: as it will be stored."""
    return [node.title, node.body, "\n".join(node.files), *_leaves(node.meta)]


def row_pieces(title: str, body: str, paths: str, meta: str) -> list[str]:
    """The same pieces, read back from a stored row."""
    try:
        decoded = json.loads(meta or "{}")
    except json.JSONDecodeError:
        decoded = meta
    return [title, body, paths, *_leaves(decoded)]


def note_pieces(session: str, command: str | None, body: str) -> list[str]:
    """What of a note the agents were told (an ``agent_notes`` row) a deny entry is matched
    against: its text columns, as stored. Its other columns are our own ids and names."""
    return [session, command or "", body]


# ----------------------------------------------------------------------------------- matcher


class _Literals:
    """Literal entries of one length and case rule, and the windows already found clean."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.salted: list[tuple[bytes, bytes]] = []  # (salt, digest)
        self.clean: set[str] = set()

    def hit(self, text: str, masks: tuple[int, int, int]) -> bool:
        size = self.length
        starts, ends, breaks = masks
        # Windows that start where a token starts and end where one ends...
        found = starts & (ends >> (8 * (size - 1)))
        if found and breaks:
            # ... on one line (three windows in four of 40 characters span a line break).
            found &= ~_spanning(breaks, size)
        if not found:
            return False
        at = list(map(_START, _ONE.finditer(found.to_bytes(len(text), "little"))))
        windows = set(map(text.__getitem__, map(slice, at, map(size.__add__, at))))
        windows -= self.clean
        if not windows:
            return False
        raw = list(map(_ENCODE, windows))
        for salt, digest in self.salted:
            if digest in set(map(_DIGEST, map(hashlib.sha256, map(salt.__add__, raw)))):
                return True
        if len(self.clean) > _CACHE_CAP:
            self.clean.clear()
        self.clean |= windows
        return False


def _masks(text: str) -> tuple[int, int, int]:
    """Where tokens start, where they end, and where lines break, as integers with one byte
    per character (1 or 0; byte i is character i). A token is a run of ASCII letters and
    digits, or one other character that is not whitespace."""
    raw = text.encode("ascii", "replace")
    alnum = int.from_bytes(raw.translate(_ALNUM), "little")
    punct = int.from_bytes(raw.translate(_PUNCT), "little")
    starts = punct | (alnum & ~(alnum << 8))
    ends = punct | (alnum & ~(alnum >> 8))
    return starts, ends, int.from_bytes(raw.translate(_BREAK), "little")


def _spanning(breaks: int, size: int) -> int:
    """Byte i set when a break lies in characters i .. i + size - 1: ORs of shifted copies,
    doubling the reach each step, so log2(size) operations instead of size."""
    out, reach, block, width = 0, 0, breaks, 1
    while size:
        if size & 1:
            out |= block >> (8 * reach)
            reach += width
        size >>= 1
        if size:
            block |= block >> (8 * width)
            width *= 2
    return out


class DenyFilter:
    """Every deny entry of one project, compiled once per sync; counts what it kept out.

    A pattern that runs past ``REGEX_SECONDS`` on a piece: with ``strict`` (``forget``, which
    is about to store the pattern and delete what it matches) that is a UsageError and nothing
    changes; otherwise (sync) the node counts as matched, and as ``timed_out``: a value the
    user asked to keep out is not let in because the check took too long."""

    def __init__(self, entries: list[DenyEntry], *, strict: bool = False) -> None:
        self.dropped = 0
        self.timed_out = 0
        self.strict = strict
        self.regexes = [
            (e.value, _compile(e.value, e.ignore_case)) for e in entries if e.kind == "regex"
        ]
        # (ignore_case, length) -> the literals of that length, each with its own salt.
        self.literals: dict[tuple[bool, int], _Literals] = {}
        for e in entries:
            if e.kind == "literal" and e.length:
                group = self.literals.setdefault((e.ignore_case, e.length), _Literals(e.length))
                group.salted.append((e.salt.encode(), bytes.fromhex(e.value)))
        self.shortest = min((length for _, length in self.literals), default=0)
        self.folding = any(folded for folded, _ in self.literals)

    @classmethod
    async def load(cls, db: Database, project_id: str) -> DenyFilter:
        return cls(await load_entries(db, project_id))

    def __bool__(self) -> bool:
        return bool(self.regexes or self.literals)

    def denies(self, node: Node) -> bool:
        """Whether ``node`` holds a denied value; if so it is counted in ``dropped``."""
        if not self or not self.matches(node_pieces(node)):
            return False
        self.dropped += 1
        return True

    def matches(self, pieces: list[str]) -> bool:
        """Whether any of ``pieces`` holds a denied value."""
        for source, pattern in self.regexes:
            for piece in pieces:
                try:
                    if pattern.search(piece, timeout=REGEX_SECONDS):
                        return True
                except TimeoutError:
                    if self.strict:
                        raise UsageError(
                            f"the pattern {source!r} took more than {REGEX_SECONDS:g} s on "
                            f"a text of {len(piece):,} characters (it backtracks): simplify "
                            "it; nothing was changed"
                        ) from None
                    self.timed_out += 1
                    return True
        if not self.literals:
            return False
        # One text per node, not per piece: the per-call cost of the matcher dominated.
        text = _SEPARATOR.join(pieces)
        return len(text) >= self.shortest and self._literal(text)

    def _literal(self, text: str) -> bool:
        for folded in (False, True) if self.folding else (False,):
            subject = text.lower() if folded else text
            masks = _masks(subject)
            for (ignore_case, length), group in self.literals.items():
                if ignore_case != folded or length > len(subject):
                    continue
                if group.hit(subject, masks):
                    return True
        return False
