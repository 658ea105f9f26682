"""The shell hook's log: ``$NEXUSMEM_HOME/shell-history.jsonl``, one JSON object a line.

Written by ``record.py`` (in the background of every prompt) and read by sync. Standard library
only. The command text is redacted before it is written; the raw text survives only as a keyed
hash (HMAC with a per-user key in ``$NEXUSMEM_HOME/hook.key``), so two commands that differ only
in a secret stay distinct without the secret being guessable from its hash.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import sys
from collections import namedtuple
from collections.abc import Callable, Iterator

from ...trust import user_key

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# Imported by the hooks on every command: no pathlib, dataclasses or secrets here (together
# they were a third of a hook's start-up). Paths may be given as str or Path.

__all__ = [
    "LOG_FILE",
    "MAX_LINE",
    "LogCursor",
    "ReadResult",
    "append",
    "cannot_append",
    "command_hash",
    "last_record",
    "read_new",
    "storable",
]

LOG_FILE = "shell-history.jsonl"
MAX_LINE = 256 * 1024  # a longer line is dropped: no shell command worth keeping is that long
_CHUNK = 64 * 1024


def command_hash(home: str | os.PathLike[str], raw: str) -> str:
    """A keyed hash of the raw command text: equal commands match, secrets do not leak."""
    return hmac.new(
        user_key(home) or b"", raw.encode("utf-8", "surrogatepass"), hashlib.sha256
    ).hexdigest()


def append(home: str | os.PathLike[str], record: dict[str, Any], name: str = LOG_FILE) -> None:
    """Append one record as a line to ``home/name``, creating the log with mode 0600.

    O_APPEND makes each write land whole at the end even with many shells writing at once
    (a line is far below PIPE_BUF on the filesystems that matter). If a writer died half-way
    through a line, this one starts on a fresh line, so only the torn record is lost.
    """
    os.makedirs(home, mode=0o700, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    fd = os.open(os.path.join(home, name), os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line
        os.write(fd, line.encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)


_CANNOT_WRITE = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, getattr(errno, "EDQUOT", -1)}


def cannot_append(err: OSError, log: str) -> int:
    """A hook's exit code when writing failed with ``err``. A log that cannot be written (a
    full disk, a read-only home) loses every record until it is fixed: one line on stderr
    naming the file and the remedy, and exit 1. Any other failure stays silent (exit 0)."""
    if err.errno not in _CANNOT_WRITE:
        return 0
    from pathlib import Path  # only now: a hook that works never pays for it

    from ...files import file_error

    print(f"nexusmem: {file_error('write', Path(err.filename or log), err)}", file=sys.stderr)
    return 1


class LogCursor(namedtuple("LogCursor", "offset head", defaults=(0, ""))):
    """Where the last sync stopped: a byte offset, and what the file looked like there.

    ``head`` is a hash of the file's first line. If the file is now shorter than the offset, or
    its first line changed, it was truncated or rotated: reading starts again from 0 (records
    carry their own ids, so re-reading what was already ingested adds nothing).
    """

    __slots__ = ()
    offset: int
    head: str

    def encode(self) -> str:
        return f"{self.offset}:{self.head}"

    @classmethod
    def decode(cls, value: str | None) -> LogCursor:
        if not value or ":" not in value:
            return cls()
        offset, _, head = value.partition(":")
        return cls(int(offset), head) if offset.isdigit() else cls()


class ReadResult(
    namedtuple("ReadResult", "records cursor malformed restarted", defaults=(0, False))
):
    __slots__ = ()
    records: list[dict[str, Any]]
    cursor: LogCursor
    malformed: int
    restarted: bool


def _head(handle: Any) -> str:
    handle.seek(0)
    return hashlib.sha256(handle.readline(MAX_LINE)).hexdigest()[:16]


def _lines(handle: Any, end: int) -> Iterator[bytes | None]:
    """The lines from here to ``end``, each read with a bound. One longer than MAX_LINE comes
    out as None, passed over up to its newline a chunk at a time: a 100 MB line written by
    anything at all must not be held whole."""
    while handle.tell() < end:
        line = handle.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = handle.readline(_CHUNK)
            yield None
            continue
        yield line


def read_new(
    path: Path,
    cursor: LogCursor,
    keep: Callable[[dict[str, Any]], bool] | None = None,
    most: int | None = None,
    *,
    parse: Callable[[bytes], dict[str, Any] | None] | None = None,
    mark: bytes | None = None,
) -> ReadResult:
    """The complete records written since ``cursor`` (those ``keep`` accepts); malformed lines
    are skipped and counted. Filtering while reading keeps memory to the records kept: the log
    is shared by every repository, and most of its lines belong to others. With ``most``, it
    stops once it has kept that many, its cursor after the last line read: the rest is read
    from there (a first sync of a 100k-line log held 50k records at once, 74 MB).

    ``parse`` reads one line into a record, or None for a malformed one; by default a command
    record (it must have ``id``, ``cmd`` and ``shell``). A log of other records (the notes the
    agents were told) gives its own. With ``mark``, a line without those bytes is passed over
    unparsed and uncounted: bytes every wanted line has, such as its repository.

    A last line without its newline is still being written: it is left for the next sync.
    """
    reader = _parse if parse is None else parse
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, across the helpers
    except FileNotFoundError:
        return ReadResult([], LogCursor())
    with handle:
        size = os.fstat(handle.fileno()).st_size
        head = _head(handle)
        restarted = cursor.offset > size or (cursor.offset > 0 and cursor.head != head)
        start = 0 if restarted else cursor.offset
        handle.seek(start)
        records: list[dict[str, Any]] = []
        malformed = 0
        offset = start
        for line in _lines(handle, size):
            if line is None:  # an oversize line, skipped to its end
                malformed += 1
                offset = handle.tell()
                continue
            if not line.endswith(b"\n"):
                break  # a partial last line
            offset += len(line)
            if not line.strip():
                # The seam a writer leaves when it starts a fresh line after a torn one: two
                # writers that both saw the torn end each add one (append checks without a
                # lock). Not a record, so not a malformed one either.
                continue
            if mark is not None and mark not in line:
                continue
            record = reader(line)
            if record is None:
                malformed += 1
            elif keep is None or keep(record):
                records.append(record)
                if len(records) == most:
                    break
        return ReadResult(records, LogCursor(offset, head), malformed, restarted)


def last_record(path: Path, keep: Callable[[dict[str, Any]], bool], mark: bytes) -> dict | None:
    """The log's last complete record that ``keep`` accepts, or None. Read from the end back,
    a chunk at a time, so it costs the tail of the log, not all of it; only lines holding
    ``mark`` (bytes every wanted line has) are parsed."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, across the generator
    except FileNotFoundError:
        return None
    with handle:
        segments = _segments_backward(handle, os.fstat(handle.fileno()).st_size)
        next(segments)  # after the last newline: nothing, or a line still being written
        for line in segments:
            if line is not None and mark in line:
                record = _parse(line)
                if record is not None and keep(record):
                    return record
    return None


def _segments_backward(handle: Any, end: int) -> Iterator[bytes | None]:
    """The newline-separated pieces of the file's first ``end`` bytes, last first; None for
    one longer than MAX_LINE, which is passed over without ever being held whole."""
    pos, carry, oversize = end, b"", False
    while pos > 0:
        step = min(_CHUNK, pos)
        pos -= step
        handle.seek(pos)
        parts = (handle.read(step) + carry).split(b"\n")
        for part in reversed(parts[1:]):
            yield None if oversize or len(part) > MAX_LINE else part
            oversize = False
        carry = parts[0]  # the end of a piece that starts in an earlier chunk
        if oversize or len(carry) > MAX_LINE:
            carry, oversize = b"", True
    yield None if oversize else carry


_REQUIRED = {"id": str, "cmd": str, "shell": str}
# Text sync copies into a node (the agent log's fields too): anything but a string, or a string
# SQLite cannot encode (a lone surrogate, which JSON's \ud800 allows), would fail the sync at
# this line every time.
_TEXTS = ("id", "cmd", "shell", "cwd", "session", "cmd_hash", "outcome", "error", "tool_use_id")
# Numbers a record may carry, and their sane range: a NaN or a 1e300 would otherwise reach
# int() or SQLite during sync and fail it, every time, at the same line.
_NUMBERS = {
    "start": (0, 2**33),
    "ts": (0, 2**33),
    "duration": (0, 10**7),
    "exit": (-(2**31), 2**31),
}


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested a thousand deep
        return None
    if not isinstance(record, dict):
        return None
    for name, kind in _REQUIRED.items():
        if not isinstance(record.get(name), kind) or not record[name]:
            return None
    for name in _TEXTS:
        value = record.get(name)
        if value is not None and not (isinstance(value, str) and storable(value)):
            return None
    edited = record.get("edited")
    if edited is not None and not (
        isinstance(edited, list) and all(isinstance(p, str) and storable(p) for p in edited)
    ):
        return None
    for name, (low, high) in _NUMBERS.items():
        value = record.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if not low <= value < high:  # also false for NaN
            return None
    return record


def storable(text: str) -> bool:
    """False for text SQLite cannot encode: a lone surrogate, which JSON's ``\\ud800`` allows.
    A record carrying one is passed over; stored, it would fail the sync every time."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
