"""``python -m nexusmem_core.collectors.shell.record``: what a shell hook runs after a command.

The hook starts it in the background with the command text on stdin (never in argv, where
``ps`` would show it) and the facts as options. It redacts, hashes and appends one line to
the log, and never fails at the prompt: a broken recorder must not be noticed there. The one
thing it prints (to the stderr the hooks discard) is why the log cannot be written.
Standard library and ``nexusmem_core.redact`` only; this runs once per command typed.
"""

from __future__ import annotations

import os
import sys
import time

from ...paths import home_dir
from .hooklog import LOG_FILE, append, cannot_append, command_hash

MAX_COMMAND = 64 * 1024
_FLAGS = {"--home", "--shell", "--exit", "--start", "--end", "--duration", "--cwd", "--session"}


def _options(argv: list[str]) -> dict[str, str]:
    options = {}
    for flag, value in zip(argv[0::2], argv[1::2], strict=False):
        if flag in _FLAGS:
            options[flag[2:]] = value
    return options


def _number(text: str | None, kind: type[float] | type[int]) -> float | int | None:
    if not text:
        return None
    try:
        # EPOCHREALTIME follows the locale's decimal separator: "1767225600,123" in de_DE.
        return kind(text.replace(",", "."))
    except ValueError:
        return None


def build_record(raw: str, options: dict[str, str], home: os.PathLike[str] | str) -> dict | None:
    """The log record for one command, or None when it must not be recorded."""
    # Imported here so that if redaction cannot load, nothing at all is written.
    from ...redact import redact_cut

    if not raw.strip() or raw[:1].isspace():
        return None  # empty, or typed with a leading space: the user asked not to keep it
    raw = raw.rstrip("\n")
    text, redactions = redact_cut(raw, MAX_COMMAND)  # redact, then cut: never half a secret
    raw = raw[:MAX_COMMAND]
    start = _number(options.get("start"), float)
    end = _number(options.get("end"), float)
    duration = _number(options.get("duration"), float)
    if duration is None and start is not None and end is not None:
        duration = end - start
    if start is None:  # fish with a BSD date: a duration only; a bash subshell-only one: neither
        start = (end if end is not None else time.time()) - (duration or 0.0)
    return {
        "v": 1,
        "id": os.urandom(12).hex(),
        "shell": options.get("shell", "unknown")[:16],
        "session": options.get("session", "")[:64],
        "cwd": options.get("cwd", ""),
        "exit": _number(options.get("exit"), int),
        "start": round(start, 3),
        "duration": round(max(0.0, duration), 3) if duration is not None else None,
        "cmd": text,
        "cmd_hash": command_hash(home, raw),
        "redactions": redactions,
    }


def main(argv: list[str]) -> int:
    options = _options(argv)
    home = options.get("home") or home_dir()
    try:
        # utf-8-sig: Windows PowerShell's stdin writer may put a BOM first (console set to UTF-8).
        raw = sys.stdin.buffer.read(MAX_COMMAND * 4).decode("utf-8-sig", "replace")
        record = build_record(raw, options, home)
        if record is not None:
            append(home, record)
    except OSError as err:
        return cannot_append(err, os.path.join(home, LOG_FILE))
    except Exception:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
