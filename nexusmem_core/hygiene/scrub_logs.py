"""The hook logs' part of ``scrub-secrets``: rewrite a log with the current redaction table,
keep every line that lands meanwhile, and tell the log cursors where their lines went.

The logs (``$NEXUSMEM_HOME/shell-history.jsonl``, ``agent-events.jsonl`` and the notes the
agents were told, ``agent-notes.jsonl``) are appended to by hooks that take no lock: each writes
one whole line with ``O_APPEND`` (``hooklog.append``). So a log is never edited in place. It is
copied to a temporary file beside it (0600), only the lines whose text fields change (a
command's ``cmd`` or ``error``, a note's ``text`` or ``cmd``) re-encoded, and renamed over the
original:

* Lines appended while the copy runs are copied too: the copy goes on until the original
  stops growing, then renames.
* A hook that opened the old file just before the rename writes into the old file. After the
  rename the old file is watched for a short grace period and what lands there is appended,
  redacted, to the new log. A hook stalled between its ``open`` and its ``write`` for longer
  than that grace would lose its line: that is the one window left, a few system calls wide.

Sync reads a log from a cursor: a byte offset plus a hash of the first line (``LogCursor``).
Offsets move when lines change length, so every cursor is recomputed (:meth:`LogRemap.cursor`)
rather than reset to 0: a reset would re-read the whole log (harmless, records have ids, but
slow) and bring back records a user had removed from memory on purpose. To tell a cursor taken
on the old file from one taken on the new, the rewritten log's first line always starts with
one more space than before (JSON ignores it): its hash differs, so an old cursor that escaped
the remapping, say a sync that ran between the rename and the remapping, or a database this
run did not open, restarts from 0 instead of reading from the middle of a line.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ..collectors.agent import AGENT_LOG, AGENT_NOTES
from ..collectors.agent.told import CURSOR as NOTES_CURSOR
from ..collectors.shell import hooklog
from ..errors import FileAccessError
from ..redact import redact_tally

__all__ = ["LOGS", "HookLog", "LogRemap", "LogScrub", "scrub_line", "scrub_log"]

FIELDS = ("cmd", "error")  # the fields of a command record that hold text a person or agent typed


class HookLog(NamedTuple):
    """A log the hooks append to, the cursor source under which sync records how far it has
    read it, and its records' text fields (a record's ``redactions`` counts the first's)."""

    file: str
    cursor: str
    fields: tuple[str, ...] = FIELDS


LOGS = (
    HookLog(hooklog.LOG_FILE, "shell:hook"),
    HookLog(AGENT_LOG, "agent:claude"),
    HookLog(AGENT_NOTES, NOTES_CURSOR, ("text", "cmd")),
)
GRACE_CHECKS = 4
GRACE_SECONDS = 0.025


def scrub_line(line: bytes, tally: Counter[str], fields: tuple[str, ...] = FIELDS) -> bytes:
    """One log line with the secrets of its text ``fields`` redacted (``line`` itself when
    nothing changes).

    A record is re-encoded as the hooks write it; a line that is not a JSON record (a torn
    write) is redacted as plain text: it is never read, but it is still on disk.
    """
    end = b"\n" if line.endswith(b"\n") else b""
    body = line[: len(line) - len(end)]
    try:
        record = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested a thousand deep
        record = None
    if not isinstance(record, dict):
        text, found = redact_tally(body.decode("utf-8", "surrogateescape"))
        tally.update(found)
        return text.encode("utf-8", "surrogateescape") + end if found else line
    found = Counter[str]()
    for name in fields:
        if isinstance(record.get(name), str):
            record[name], hits = redact_tally(record[name])
            found.update(hits)
            count = record.get("redactions")
            if (
                name == fields[0]
                and hits
                and isinstance(count, int)
                and not isinstance(count, bool)
            ):
                record["redactions"] = count + sum(hits.values())
    sig = record.get("sig")  # the line an error signature was taken from, as printed
    if isinstance(sig, dict) and isinstance(sig.get("line"), str):
        sig["line"], hits = redact_tally(sig["line"])
        found.update(hits)
    if not found:
        return line
    tally.update(found)
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass") + end


@dataclass
class LogScrub:
    """What one log held (dry run) or had (applied): lines with a secret, and which rules."""

    file: str
    lines: int = 0
    rules: dict[str, int] = field(default_factory=dict)


@dataclass
class LogRemap:
    """Where the lines of a rewritten log went: the end of each line copied before the
    rename, in the old file and in the new one, and both files' head hashes."""

    old_head: str
    new_head: str
    old_ends: array[int] = field(default_factory=lambda: array("q"))
    new_ends: array[int] = field(default_factory=lambda: array("q"))

    def cursor(self, value: str) -> str:
        """The cursor ``value`` (taken on the old log) as it reads on the new one.

        A cursor of the new log, at 0, or already stale (another head: its reader restarts
        from 0 anyway) stays as it is. One past the lines copied before the rename points at
        the end of those: what follows is read again rather than skipped.
        """
        cursor = hooklog.LogCursor.decode(value)
        if cursor.offset == 0 or cursor.head != self.old_head:
            return value
        ends = self.old_ends
        at = bisect_left(ends, cursor.offset)
        if at < len(ends) and ends[at] == cursor.offset:
            return hooklog.LogCursor(self.new_ends[at], self.new_head).encode()
        if not ends or cursor.offset > ends[-1]:
            last = self.new_ends[-1] if self.new_ends else 0
            return hooklog.LogCursor(last, self.new_head).encode()
        return hooklog.LogCursor().encode()  # not a line end: cannot happen; read from 0


def _head(first_line: bytes) -> str:
    # As hooklog computes it: a hash of the first line's first MAX_LINE bytes.
    return hashlib.sha256(first_line[: hooklog.MAX_LINE]).hexdigest()[:16]


def scrub_log(
    path: Path, apply: bool, fields: tuple[str, ...] = FIELDS
) -> tuple[LogScrub, LogRemap | None]:
    """Find (dry run) or redact (``apply``) the secrets of one hook log, whose records keep
    their text in ``fields``.

    Returns what was found and, when the log was rewritten, how to move its cursors.
    """
    result = LogScrub(str(path))
    tally: Counter[str] = Counter()
    rewritten = None
    try:
        with open(path, "rb") as source:
            if apply:
                rewritten = _rewrite(path, source, tally, fields)
            else:
                for line in source:
                    result.lines += scrub_line(line, tally, fields) is not line
    except FileNotFoundError:
        return result, None
    except OSError as err:
        raise FileAccessError(
            f"cannot rewrite {path}: {err.strerror or err}; check the permissions of the file "
            "and of its directory, then run the command again"
        ) from err
    result.rules = dict(sorted(tally.items()))
    if rewritten is None:
        return result, None
    result.lines = rewritten.changed
    return result, rewritten.remap


@dataclass
class _Copy:
    """The state of one rewrite: the output, where each line ended, how many changed."""

    out: BinaryIO
    tally: Counter[str]
    remap: LogRemap
    fields: tuple[str, ...] = FIELDS
    changed: int = 0
    first: bytes | None = None

    def line(self, line: bytes, old_end: int) -> None:
        new = scrub_line(line, self.tally, self.fields)
        if new is not line:
            self.changed += 1
        if self.first is None:  # see the module docstring: the head must change
            self.first, new = line, b" " + new
            self.remap.new_head = _head(new)
        self.out.write(new)
        self.remap.old_ends.append(old_end)
        self.remap.new_ends.append(self.out.tell())


@dataclass
class _Rewritten:
    remap: LogRemap
    changed: int


def _rewrite(
    path: Path, source: BinaryIO, tally: Counter[str], fields: tuple[str, ...]
) -> _Rewritten | None:
    """Copy ``source`` redacted into a temporary file, rename it over ``path`` if any line
    changed, then catch up with the lines late writers put into the old file."""
    target = Path(os.path.realpath(path))  # a linked log: replace its target, keep the link
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".nexusmem-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            copy = _Copy(out, tally, LogRemap(old_head="", new_head=""), fields)
            _copy_until_quiet(source, copy)
            if not copy.changed:
                os.unlink(tmp)
                return None
            copy.remap.old_head = _head(copy.first or b"")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        # The log's time is when a command was last recorded (`hook status` shows it).
        was = os.fstat(source.fileno())
        os.utime(tmp, ns=(was.st_atime_ns, was.st_mtime_ns))
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    late = _catch_up(source, target, tally, fields)
    return _Rewritten(copy.remap, copy.changed + late)


def _copy_until_quiet(source: BinaryIO, copy: _Copy) -> None:
    """Copy every line, and then the lines appended meanwhile, until the file stops growing.

    A last line without its newline is copied as it is (a writer that died mid-line, since
    every live append is one whole line); the next append starts a fresh line after it.
    """
    seen = -1
    while (size := os.fstat(source.fileno()).st_size) != seen:
        seen = size
        for line in iter(source.readline, b""):
            copy.line(line, source.tell())


def _catch_up(source: BinaryIO, target: Path, tally: Counter[str], fields: tuple[str, ...]) -> int:
    """Append to the new log, redacted, what lands in the old one during a short grace
    period; return how many of those lines changed."""
    changed, pending = 0, b""
    for check in range(GRACE_CHECKS):
        time.sleep(GRACE_SECONDS)
        *complete, pending = (pending + source.read()).split(b"\n")
        lines = [line + b"\n" for line in complete]
        if check == GRACE_CHECKS - 1 and pending:
            lines.append(pending)  # a torn last line: copied as it is, like any other
        for line in lines:
            new = scrub_line(line, tally, fields)
            changed += new is not line
            _append(target, new)
    return changed


def _append(target: Path, line: bytes) -> None:
    """One line at the end of the new log, the way ``hooklog.append`` writes."""
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        ends_line = not size or os.pread(fd, 1, size - 1) == b"\n"
        if line == b"\n":  # the newline a writer put before its line, after a torn one
            if not ends_line:
                os.write(fd, line)
            return
        os.write(fd, line if ends_line else b"\n" + line)
    finally:
        os.close(fd)
