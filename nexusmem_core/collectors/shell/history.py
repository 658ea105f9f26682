"""Shell history files, read when no NexusMem shell hook is installed (the scrape fallback).

Four formats: bash (``~/.bash_history``, optionally with ``#<epoch>`` lines), zsh (plain or
extended, metafied), fish (``fish_history``, YAML-like) and PowerShell's PSReadLine
(``ConsoleHost_history.txt``). Parsers take bytes and never raise; sync reads only the tail of a
file (:func:`read_tail`) and keeps the entries whose key is trustworthy (:func:`settled`).

Keys are natural keys for content-addressed node ids, built so that re-reading a file that was
appended to, or trimmed from the front, gives the same keys for the same entries:

* an entry with a timestamp: ``{shell}:{ts}:{sha256(command)[:16]}:{n}``, ``n`` counting the
  earlier entries of the same parse with the same ``(ts, command)``;
* an entry without one: ``{shell}:ctx:{sha256(prev3 + command)[:24]}:{n}``, anchored on its
  content and that of the 3 commands before it (never on a line number): the hash is of those
  commands and this one joined with NUL (fewer than 3 at the start of a parse), ``n`` counting
  the earlier entries of the same parse with the same context hash.

An untimed entry among the first 3 of a read has fewer than 3 commands before it, so its key
is not the one it had when more of the file was before it. Of a tail, such entries are left to
the reads that saw them with their context (:func:`settled`). A file short enough to be read
whole is the start of history only until the shell trims it from the front: each sync notes
what it read (:class:`LastRead`), and the next one, finding the new file to start with the end
of that, knows the first entries were stored already, under the keys they had then.

Standard library only: this runs on the sync hot path.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CONTEXT",
    "MAX_COMMAND_BYTES",
    "PARSERS",
    "HistoryEntry",
    "LastRead",
    "default_history_files",
    "parse_bash",
    "parse_fish",
    "parse_pwsh",
    "parse_zsh",
    "read_tail",
    "settled",
]

MAX_COMMAND_BYTES = 64 * 1024  # a longer command is cut (at a UTF-8 character boundary)
_WORD_BACK = 16 * 1024  # how far back a cut looks for the start of the word it went through
CONTEXT = 3  # commands before an untimed entry that its key is anchored on
SEEN = 1000  # entries of a read that the next one compares its start with (:class:`LastRead`)
FRAGMENTS = 32  # at most this many pieces of a cut command start a trimmed file


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    shell: str  # "bash" | "zsh" | "fish" | "pwsh"
    command: str  # the full command; multi-line commands joined with "\n"
    ts: int | None  # unix seconds when the file records it, else None (never invented)
    duration: float | None  # seconds; zsh extended history gives it, else None
    key: str  # natural key for a content-addressed id (see the module docstring)


# (command, ts, duration) before keys are assigned.
_Raw = tuple[str, int | None, float | None]

# Timestamps longer than 15 digits are not timestamps (and int() of a huge digit run raises).
_BASH_TS = re.compile(rb"#(\d{1,15})")
_ZSH_EXTENDED = re.compile(rb": (\d{1,15}):(\d{1,15});")
_FISH_WHEN = re.compile(rb"[ \t]*(\d{1,15})[ \t]*")
_FISH_ESCAPE = re.compile(r"\\([\\n])")
_UNMETA_TABLE = bytes(c ^ 0x20 for c in range(256))
_META_PAIR = re.compile(rb"\x83(.)", re.DOTALL)


# --- helpers ---------------------------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    """Lines without their terminator; a CRLF file (Windows, PSReadLine) reads like an LF one."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _cap(raw: bytes) -> bytes:
    """At most MAX_COMMAND_BYTES, without leaving half a UTF-8 character at the end."""
    if len(raw) <= MAX_COMMAND_BYTES:
        return raw
    raw = raw[:MAX_COMMAND_BYTES]
    i = len(raw) - 1
    while i > len(raw) - 4 and raw[i] & 0xC0 == 0x80:  # continuation bytes
        i -= 1
    lead = raw[i]
    need = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if lead >= 0xF0 else 1
    raw = raw[:i] if len(raw) - i < need else raw
    # The word the cut went through may be the front half of a token, which no pattern would
    # know without its tail: it goes, back to the last space or line (if one is near).
    space = max(
        raw.rfind(b" ", -_WORD_BACK), raw.rfind(b"\n", -_WORD_BACK), raw.rfind(b"\t", -_WORD_BACK)
    )
    return raw[:space] if space > 0 else raw


def _text(raw: bytes) -> str | None:
    """Decoded command text, or None when there is nothing but whitespace (or NULs) in it.

    NUL bytes are dropped: no shell stores one in a command, they are what a crash leaves in a
    history file (preallocated blocks that were never written).
    """
    text = _cap(raw).decode("utf-8", "replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text if text.strip() else None


class _Joiner:
    """Accumulates the lines of one multi-line command, keeping at most the byte cap."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, line: bytes) -> None:
        if self.size <= MAX_COMMAND_BYTES:
            self.parts.append(line)
            self.size += len(line) + 1

    def take(self) -> bytes:
        raw = b"\n".join(self.parts)
        self.parts, self.size = [], 0
        return raw

    def __bool__(self) -> bool:
        return bool(self.parts)


def _keyed(shell: str, raws: Iterable[_Raw]) -> list[HistoryEntry]:
    entries: list[HistoryEntry] = []
    prev: deque[str] = deque(maxlen=CONTEXT)
    timed: dict[tuple[int, str], int] = {}
    untimed: dict[str, int] = {}
    for command, ts, duration in raws:
        if ts is not None:
            n = timed.get((ts, command), 0)
            timed[(ts, command)] = n + 1
            digest = hashlib.sha256(command.encode()).hexdigest()[:16]
            key = f"{shell}:{ts}:{digest}:{n}"
        else:
            anchor = "\x00".join([*prev, command])
            ctx = hashlib.sha256(anchor.encode()).hexdigest()[:24]
            n = untimed.get(ctx, 0)
            untimed[ctx] = n + 1
            key = f"{shell}:ctx:{ctx}:{n}"
        entries.append(HistoryEntry(shell, command, ts, duration, key))
        prev.append(command)
    return entries


# --- parsers ---------------------------------------------------------------------------------


def parse_bash(data: bytes) -> list[HistoryEntry]:
    """``~/.bash_history``: a command a line, or ``#<epoch>`` lines dating what follows them.

    Once a ``#<epoch>`` line is seen, every line up to the next one belongs to the command it
    dates (bash writes a multi-line command as several lines). Lines before the first
    ``#<epoch>`` line, and all lines of a file without any, are one command each. ``#`` followed
    by anything but digits (``# comment``) is a command.
    """
    raws: list[_Raw] = []
    ts: int | None = None
    group = _Joiner()

    def flush() -> None:
        if group and (text := _text(group.take().strip(b"\n"))) is not None:
            raws.append((text, ts, None))

    for line in _lines(data):
        match = _BASH_TS.fullmatch(line) if line[:1] == b"#" else None
        if match:
            flush()
            ts = int(match.group(1))
        elif ts is None:
            if (text := _text(line)) is not None:
                raws.append((text, None, None))
        else:
            group.add(line)
    flush()
    return _keyed("bash", raws)


def _unmetafy(raw: bytes) -> bytes:
    """zsh stores 0x83 (Meta) followed by ``byte ^ 0x20`` for NUL and bytes 0x83..0xA2."""
    if b"\x83" not in raw:
        return raw
    return _META_PAIR.sub(lambda m: m.group(1).translate(_UNMETA_TABLE), raw)


def parse_zsh(data: bytes) -> list[HistoryEntry]:
    """``~/.zsh_history``: plain lines or ``: <epoch>:<duration>;<command>`` (EXTENDED_HISTORY).

    zsh writes a newline inside a command as backslash + newline, so a line ending with a
    backslash continues on the next one (the backslash is dropped, the newline kept). The file
    is metafied and is unmetafied before decoding. A record that does not start with the
    extended header is a plain, untimed command (a file written before EXTENDED_HISTORY was
    set, or the remainder of a command whose header is before a tail's first line).
    """
    raws: list[_Raw] = []
    record = _Joiner()

    def flush() -> None:
        raw = _unmetafy(record.take())
        ts: int | None = None
        duration: float | None = None
        if raw[:1] == b":" and (match := _ZSH_EXTENDED.match(raw)):
            ts, duration = int(match.group(1)), float(int(match.group(2)))
            raw = raw[match.end() :]
        if (text := _text(raw)) is not None:
            raws.append((text, ts, duration))

    for line in _lines(data):
        if line.endswith(b"\\"):
            record.add(line[:-1])
        else:
            record.add(line)
            flush()
    if record:
        flush()
    return _keyed("zsh", raws)


def parse_fish(data: bytes) -> list[HistoryEntry]:
    """``fish_history``: ``- cmd: <command>``, ``  when: <epoch>``, optional ``  paths:`` list.

    In the command fish escapes a backslash as ``\\\\`` and a newline as ``\\n``; any other
    backslash is literal. Lines before the first ``- cmd:`` (the rest of an entry cut by a
    tail) and lines fish does not write are ignored.
    """
    raws: list[_Raw] = []
    command: str | None = None
    ts: int | None = None
    for line in _lines(data):
        if line.startswith(b"- cmd:"):
            if command is not None:
                raws.append((command, ts, None))
            raw = line[6:]
            text = _text(raw[1:] if raw[:1] == b" " else raw)
            if text is not None and "\\" in text:
                text = _FISH_ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else "\n", text)
            command = text if text is not None and text.strip() else None
            ts = None
        elif (
            command is not None
            and ts is None
            and line.startswith(b"  when:")
            and (match := _FISH_WHEN.fullmatch(line, 7))
        ):
            ts = int(match.group(1))
    if command is not None:
        raws.append((command, ts, None))
    return _keyed("fish", raws)


def parse_pwsh(data: bytes) -> list[HistoryEntry]:
    """PSReadLine's ``ConsoleHost_history.txt``: a command a line, no timestamps.

    PSReadLine writes a newline inside a command as backtick + newline, so a line ending with a
    backtick continues on the next one (the backtick is dropped, the newline kept: a command
    that itself used a backtick line continuation reads back with its backtick).
    """
    raws: list[_Raw] = []
    record = _Joiner()
    for line in _lines(data):
        if line.endswith(b"`"):
            record.add(line[:-1])
            continue
        record.add(line)
        if (text := _text(record.take())) is not None:
            raws.append((text, None, None))
    if record and (text := _text(record.take())) is not None:
        raws.append((text, None, None))
    return _keyed("pwsh", raws)


# --- which entries to trust ------------------------------------------------------------------


def settled(
    entries: list[HistoryEntry], whole_file: bool, before: range = range(0)
) -> list[HistoryEntry]:
    """The entries whose key is trustworthy: all of a whole file, fewer of a tail.

    ``before``: which of a whole file's entries the previous read had too (see
    :meth:`LastRead.overlap`). The untimed entries ahead of them (pieces of a command the trim
    cut through) are left out, and so are those among them whose 3 predecessors are not all
    among them: they were stored when first read, with the context they had then, and their
    key now would make a second node of each.

    A timed entry's key depends only on itself (and on ``n``), so it is always settled. An
    untimed entry's key hashes it with the 3 commands before it, which in a tail are only known
    from the 4th entry on; and a tail may begin inside a multi-line command whose first lines
    are before it (zsh ``\\``, PowerShell backtick, bash lines after a ``#<epoch>`` line), so
    its first entry may be a fragment. Of a tail (``whole_file`` False) this drops:

    * untimed entries among the first 3 of the tail (their 3 predecessors are not all in it);
    * zsh and pwsh, when the first entry is untimed (it may be a fragment): untimed entries
      among the first 4;
    * bash with ``#<epoch>`` lines: every untimed entry before the first timed one (bash
      writes the lines of a multi-line command separately, so these may be the rest of a
      command whose ``#<epoch>`` line is outside the tail), and untimed entries among the 3
      after it.

    When keys change (and what it costs):

    * an exact repeat of the same 4-command sequence (context + command) in one window does
      not collapse: ``n`` tells the repeats apart (0, 1, ...). The same holds for two identical
      commands in the same second. When the earlier of two repeats leaves the window (trimmed
      from the front, or past the tail), the later one takes ``n - 1``, the id of the one that
      left: it is merged into that node, no new id is made.
    * an untimed entry's key changes when one of its 3 predecessors changes: a shell that
      rewrites its file without older duplicates (bash ``HISTCONTROL=erasedups``, zsh
      ``HIST_IGNORE_ALL_DUPS``/``HIST_SAVE_NO_DUPS``) or ``history -d`` re-keys the 3 entries
      after each removed one, which then appear as new entries.
    * ``whole_file`` True means the window starts at the start of history, until the shell
      trims the file from the front (a history size below the tail length): then ``before``
      says which entries were read before. A file that went from being read as a tail to
      being read whole (its history size lowered) re-keys its first 3 untimed entries once,
      as does one whose previous read is not known (the first sync after an upgrade).
    * bash: after ``HISTTIMEFORMAT`` is unset, the lines written after the last ``#<epoch>``
      line read as one command of that timestamp until a tail no longer contains it; then they
      read as separate untimed commands with new keys.
    """
    if whole_file or not entries:
        start, held = before.start, before.start + CONTEXT
        return [
            e
            for i, e in enumerate(entries)
            if e.ts is not None or not (i < start or (i in before and i < held))
        ]
    shell = entries[0].shell
    first_whole = 0  # index of the first entry known to start where a command starts
    if shell == "bash":
        first_whole = next((i for i, e in enumerate(entries) if e.ts is not None), 0)
    elif shell in ("zsh", "pwsh") and entries[0].ts is None:
        first_whole = 1
    return [e for i, e in enumerate(entries) if e.ts is not None or i >= first_whole + CONTEXT]


@dataclass(frozen=True)
class LastRead:
    """What a sync read of one history file: the file (a digest of its path) and a digest of
    each entry, the first :data:`SEEN` of them. Kept by the next sync of the same project."""

    file: str
    entries: tuple[str, ...]

    @classmethod
    def of(cls, path: Path, entries: Sequence[HistoryEntry]) -> LastRead:
        digests = (_digest(f"{e.ts}\x00{e.command}")[:12] for e in entries[:SEEN])
        return cls(_digest(str(path))[:16], tuple(digests))

    def overlap(self, now: LastRead) -> range:
        """Which of ``now``'s entries are the ones this read ended with: the file was appended
        to, or trimmed from the front, in between. Entries before them are what is left of one
        the trim cut through (bash trims lines, not commands). Empty when nothing lines up
        over 3 entries at least (4 after such pieces; all this read had, if fewer), or when it
        is another file."""
        if now.file != self.file or not self.entries:
            return range(0)
        before, after = self.entries, now.entries
        where: dict[str, list[int]] = {}
        for k, digest in enumerate(before):
            where.setdefault(digest, []).append(k)
        for head in range(min(len(after), FRAGMENTS + 1)):
            least = min(CONTEXT, len(before)) if head == 0 else CONTEXT + 1
            for k in where.get(after[head], ()):  # the earliest first: the longest overlap
                n = len(before) - k
                if n < least:
                    break
                end = head + n
                if (
                    end <= len(after)
                    and after[end - 1] == before[-1]
                    and after[head:end] == before[k:]
                ):
                    return range(head, end)
        return range(0)

    def encode(self) -> str:
        return json.dumps({"file": self.file, "entries": list(self.entries)})

    @classmethod
    def decode(cls, value: str | None) -> LastRead | None:
        try:
            data = json.loads(value or "null")
            return cls(str(data["file"]), tuple(str(d) for d in data["entries"]))
        except (ValueError, TypeError, KeyError, RecursionError):
            return None  # none noted, or not by this version: the file reads as never read


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# --- files -----------------------------------------------------------------------------------


def read_tail(
    path: Path,
    max_lines: int = 300,
    *,
    block_size: int = 64 * 1024,
    max_bytes: int = 16 * 1024 * 1024,
) -> tuple[bytes, bool]:
    """The last ``max_lines`` lines of a file and whether that is the whole file.

    Reads backwards in blocks of ``block_size`` bytes, never the whole of a large file. The
    tail starts at a line start: a partial first line is never returned. At most ``max_bytes``
    are read: when ``max_lines`` lines are longer than that, fewer whole lines are returned
    (none when the last line alone is longer). Raises ``OSError`` when the file cannot be read.
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0 or max_lines <= 0:
            return b"", size == 0
        block_size = max(1, block_size)
        chunks: list[bytes] = []
        pos = size
        newlines = 0
        trailing = 0  # 1 when the file ends with a newline: it ends the last line, no more
        read = 0
        while pos > 0 and read < max_bytes:
            step = min(block_size, pos, max_bytes - read)
            pos -= step
            handle.seek(pos)
            chunk = handle.read(step)
            if len(chunk) < step:  # truncated while being read (a shell rewriting it)
                return b"", False  # nothing to trust now; the next sync reads it again
            if not chunks and chunk.endswith(b"\n"):
                trailing = 1
            chunks.append(chunk)
            read += step
            newlines += chunk.count(b"\n")
            if newlines - trailing >= max_lines:
                break
    buf = b"".join(reversed(chunks))
    end = len(buf) - trailing
    idx = end
    for _ in range(max_lines):
        idx = buf.rfind(b"\n", 0, idx)
        if idx < 0:
            break
    if idx >= 0:
        return buf[idx + 1 :], False
    if pos == 0:
        return buf, True
    first = buf.find(b"\n", 0, end)  # cut by max_bytes: drop the partial first line
    return (buf[first + 1 :] if first >= 0 else b""), False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # unreadable directory, NUL in the name, ...
        return False


def _expand(value: str | None, home: Path) -> Path | None:
    """A path from the environment: ``~`` expanded to ``home``; relative paths are ignored."""
    if not value:
        return None
    if value == "~":
        return home
    if value.startswith(("~/", "~\\")):
        return home / value[2:]
    path = Path(value)
    return path if path.is_absolute() else None


_ZSH_SNIFF = re.compile(rb"(?m)^: \d{1,15}:\d{1,15};")
_BASH_SNIFF = re.compile(rb"(?m)^#\d{1,15}\r?$")


def _histfile_shell(path: Path, environ: Mapping[str, str]) -> str | None:
    """Which of bash and zsh writes ``$HISTFILE``: by its name, its content, then ``$SHELL``."""
    name = path.name.lower()
    if "zsh" in name or "zhist" in name or name == ".histfile":
        return "zsh"
    if "bash" in name:
        return "bash"
    try:
        with open(path, "rb") as handle:
            head = handle.read(16 * 1024)
    except OSError:
        return None
    if _ZSH_SNIFF.search(head):
        return "zsh"
    if _BASH_SNIFF.search(head):
        return "bash"
    shell = environ.get("SHELL", "").replace("\\", "/").rsplit("/", 1)[-1].lower()
    shell = shell.removesuffix(".exe")
    return shell if shell in ("bash", "zsh") else None


def default_history_files(home: Path, environ: Mapping[str, str]) -> dict[str, Path]:
    """Shell -> history file, for the shells whose file exists (the first that exists wins).

    * bash: ``$HISTFILE`` when it is a bash file, ``~/.bash_history``;
    * zsh: ``$HISTFILE`` when it is a zsh file, ``$ZDOTDIR/.zsh_history``, ``~/.zsh_history``,
      then ``.zhistory`` (prezto's name) in the same two places;
    * fish: ``${XDG_DATA_HOME:-~/.local/share}/fish/fish_history``;
    * pwsh: ``%APPDATA%\\Microsoft\\Windows\\PowerShell\\PSReadLine\\ConsoleHost_history.txt``
      (Windows; ``~/AppData/Roaming`` when ``APPDATA`` is unset), then
      ``${XDG_DATA_HOME:-~/.local/share}/powershell/PSReadLine/ConsoleHost_history.txt``
      (Linux, macOS).

    ``$HISTFILE`` is told apart by its name (``zsh``, ``zhist``, ``.histfile``; ``bash``), then
    by its content (zsh extended lines; ``#<epoch>`` lines), then by ``$SHELL``; when none
    tells, it is ignored. ``~`` in these variables means ``home``; relative paths are ignored.
    """
    found: dict[str, Path] = {}
    histfile = _expand(environ.get("HISTFILE"), home)
    if histfile is not None and _is_file(histfile):
        shell = _histfile_shell(histfile, environ)
        if shell is not None:
            found[shell] = histfile

    zdotdir = _expand(environ.get("ZDOTDIR"), home)
    xdg_data = _expand(environ.get("XDG_DATA_HOME"), home)
    data_dirs = [d for d in (xdg_data, home / ".local" / "share") if d is not None]
    appdata = _expand(environ.get("APPDATA"), home)
    roaming = [d for d in (appdata, home / "AppData" / "Roaming") if d is not None]
    psreadline = ("PSReadLine", "ConsoleHost_history.txt")
    candidates: dict[str, list[Path]] = {
        "bash": [home / ".bash_history"],
        "zsh": [
            *(d / name for name in (".zsh_history", ".zhistory") for d in (zdotdir, home) if d),
        ],
        "fish": [d / "fish" / "fish_history" for d in data_dirs],
        "pwsh": [
            *(d.joinpath("Microsoft", "Windows", "PowerShell", *psreadline) for d in roaming),
            *(d.joinpath("powershell", *psreadline) for d in data_dirs),
        ],
    }
    for shell, paths in candidates.items():
        if shell in found:
            continue
        path = next((p for p in paths if _is_file(p)), None)
        if path is not None:
            found[shell] = path
    return {shell: found[shell] for shell in candidates if shell in found}


PARSERS: dict[str, Callable[[bytes], list[HistoryEntry]]] = {
    "bash": parse_bash,
    "zsh": parse_zsh,
    "fish": parse_fish,
    "pwsh": parse_pwsh,
}
