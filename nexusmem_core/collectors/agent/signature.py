"""What went wrong in a failed command, as a signature that survives a change of command.

``pytest tests/a.py`` and ``pytest -k foo`` dying on ``ModuleNotFoundError: No module named
'yaml'`` are one error with one fix. The signature is the line of the output that names the
error (a traceback's last line, a compiler's ``error:``, ``npm ERR!``, pytest's ``FAILED ... -``,
Rust's ``error[E0425]``, Go's ``panic:``), banners passed over, with what changes from run to
run masked: directories, line and column numbers, addresses, hashes, durations, numbers. Its id
is a hash of that normalised text: what ``meta.sig`` holds and recall looks up.

A signature that would say nothing (``exit code 1``, a bare ``Error``, an assertion with no test
named) is none at all: matching it would tie unrelated failures together.

How much of a failure's text the hook keeps is a user setting: ``sources.agent.errorChars`` in
``$NEXUSMEM_HOME/config.json``, or ``NEXUSMEM_AGENT_ERROR_CHARS`` (which wins); 0 keeps no text
and makes no signature. Not a repository's config.json: the hook's log serves every repository.

Standard library only (``re``, ``hashlib``, ``json``, ``os``): the hook imports this on a
failure. Linear in its input, and the input is bounded (``MAX_INPUT``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import namedtuple

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_CHARS",
    "MAX_CHARS",
    "MAX_INPUT",
    "Signature",
    "Step",
    "error_chars",
    "failure_fields",
    "from_record",
    "head",
    "signature",
    "went_away",
]

DEFAULT_CHARS = 300  # characters of a failure's (redacted) message kept
MAX_CHARS = 4000  # the most a setting may ask for
MAX_INPUT = 32 * 1024  # characters read of a longer message: its head and its tail
MAX_LINE = 400  # a longer line is cut before any pattern reads it
MAX_FILES = 5  # files of a stack trace kept
ENV = "NEXUSMEM_AGENT_ERROR_CHARS"


class Signature(namedtuple("Signature", "id text line files")):
    """One failure's error, normalised."""

    __slots__ = ()
    id: str  # 16 hex digits of the sha256 of ``text``
    text: str  # normalised: "ModuleNotFoundError: No module named 'yaml'"
    line: str  # the line as printed (redacted), what a pasted error line matches
    files: list[str]  # the files a stack trace names, innermost last, as printed


# --------------------------------------------------------------------------- the setting


def error_chars(home: str, environ: dict[str, str] | None = None) -> int:
    """How many characters of a failure's message to keep: ``NEXUSMEM_AGENT_ERROR_CHARS``,
    else ``sources.agent.errorChars`` of the user's config.json, else 300; 0 is off. A value
    that is not a number in range is the default, silently: the hook never fails on it."""
    raw: Any = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        try:
            with open(os.path.join(home, "config.json"), encoding="utf-8") as handle:
                data = json.loads(handle.read(1024 * 1024))
            raw = data["sources"]["agent"]["errorChars"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            return DEFAULT_CHARS
    try:
        chars = int(raw)
    except (TypeError, ValueError):
        return DEFAULT_CHARS
    return chars if 0 <= chars <= MAX_CHARS and not isinstance(raw, bool) else DEFAULT_CHARS


def failure_fields(error: str, cwd: str, home: str) -> tuple[str | None, dict[str, Any] | None]:
    """What a log record keeps of a failure's message: its redacted excerpt (``error``) and
    the signature of the whole redacted message (``sig``: id, line and the trace's files,
    made absolute from ``cwd``); (None, None) with the setting at 0."""
    chars = error_chars(home)
    if not chars or not error:
        return None, None
    # Imported here: if the redaction table cannot load, no text is kept at all.
    from ...redact import redact
    from .payload import error_excerpt

    clean = redact(error)
    found = signature(clean)
    sig = None
    if found is not None:
        # Real paths, as the project's root is kept: a trace read through a link still counts.
        files = [os.path.realpath(os.path.join(cwd, f)) for f in found.files]
        sig = {"id": found.id, "line": found.line, "files": files}
    return error_excerpt(clean, chars), sig


def from_record(record: dict[str, Any]) -> Signature | None:
    """The signature a log record carries, if it is well formed (a hand-edited log must not
    fail a sync): ``text`` is not kept in the record, so it comes back empty."""
    sig = record.get("sig")
    if not isinstance(sig, dict):
        return None
    sig_id, line, files = sig.get("id"), sig.get("line"), sig.get("files")
    if not isinstance(sig_id, str) or not _ID.fullmatch(sig_id):
        return None
    if not isinstance(line, str) or len(line) > MAX_LINE or not _storable(line):
        return None
    files = files if isinstance(files, list) else []
    kept = [f for f in files if isinstance(f, str) and len(f) < 4096 and _storable(f)]
    return Signature(sig_id, "", line, kept[:MAX_FILES])


_ID = re.compile(r"[0-9a-f]{16}")


def _storable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


# --------------------------------------------------------------------------- choosing the line

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")

# Lines that say a command failed without saying why.
_BANNER = re.compile(
    r"^(?:"
    r"(?:error:\s*)?(?:command |process )?exit(?:ed)?(?: with)?(?: a)?(?: non-zero)? "
    r"(?:code|status)\b|"
    r"error: (?:could not compile|aborting due to|process didn't exit|command failed|"
    r"recipe for target|Recipe `\w+` failed)|"
    r"npm (?:ERR!|error) (?:code|errno|path|syscall|command|cwd|signal|Exit status|"
    r"A complete log|Failed at|This is probably|Test failed|Lifecycle|\s*$)|"
    r"make(?:\[\d+\])?: \*\*\*|Traceback \(most recent|During handling of|"
    r"The above exception was|FAILED \(|ERROR: (?:Command errored out|Failed building)|"
    r"Error: Process completed|Command failed|error Command failed|info Visit "
    r")",
    re.IGNORECASE,
)

# Each kind of error line, best first; ``last``: of several, the last names it (a traceback's
# final exception), else the first (a compiler's first error; the rest often follow from it).
_PYTEST = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+|\S+\.py) - (.+)$")
_RUST = re.compile(r"^error\[E\d{4}\]: (.+)$")
_GO_PANIC = re.compile(r"^(?:panic|fatal error): (.+)$")
_EXCEPTION = re.compile(
    r"^(?:E\s+|Caused by: |Uncaught |Exception in thread \"[^\"]{0,80}\" )?"
    r"((?:[A-Za-z_$][\w$]{0,80}\.){0,8}[A-Za-z_$]?[\w$]{0,80}"
    r"(?:Error|Exception|Exit|Interrupt|Fault|Failure|Refused|Timeout))"
    r"(?::\s?(.*))?$"
)
_LOCATED = re.compile(
    r"^(?:(\S{1,300}?)(?::\d+(?::\d+)?|\(\d+,\d+\)):\s*)?"
    r"(?:fatal )?(?:error|Error|ERROR)(?: (?:TS|CS|C|LNK)\d{1,5}| \[[\w-]{1,40}\])?:\s*(.+)$"
)
_NPM = re.compile(r"^npm (?:ERR!|error) (.+)$")
# "Rollup failed to resolve import ...", "Failed to connect to ...": a tool saying what it could
# not do, in words rather than an error type (vite, curl, docker, cargo's resolver).
_FAILED_TO = re.compile(r"^(?:[\w.@/-]{1,40} )?failed to (.+)$", re.IGNORECASE)
_FATAL = re.compile(r"^(?:fatal|FATAL|ERROR|Error|error)\s*:\s*(.+)$")
_KINDS = (  # (pattern, rank, last)
    (_PYTEST, 6, False),
    (_RUST, 6, False),
    (_GO_PANIC, 6, False),
    (_EXCEPTION, 5, True),
    (_LOCATED, 4, False),
    (_NPM, 3, False),
    (_FATAL, 2, False),
    (_FAILED_TO, 1, False),
)
# How a tool or an agent frames a line of output: a label (`Output: `, Gemini CLI's shell tool),
# a tool's tag (`[vite]: `), a status before the text (`Command failed with exit code 1: `).
# Taken off before a line is read, so the error it frames is found where it would be bare.
_FRAMING = re.compile(
    r"^(?:(?:Output|Stdout|Stderr|Error output)\s*:|\[[\w.@/-]{1,40}\]\s*:?|"
    r"(?:command )?failed with exit (?:code|status) -?\d{1,5}\s*:)\s*",
    re.IGNORECASE,
)


def _bounded(text: str) -> str:
    if len(text) <= MAX_INPUT:
        return text
    half = MAX_INPUT // 2
    return text[:half] + "\n" + text[-half:]


def _candidates(text: str) -> list[tuple[int, int, str, re.Match[str], re.Pattern[str]]]:
    """Every line shaped like an error, as (rank, order, line, match, pattern)."""
    found = []
    for position, raw in enumerate(_ANSI.sub("", _bounded(text)).splitlines()):
        line = _FRAMING.sub("", raw.strip()[:MAX_LINE], count=1)
        if len(line) < 4 or _BANNER.search(line):
            continue
        for pattern, rank, last in _KINDS:
            match = pattern.match(line)
            if match:
                found.append((rank, position if last else -position, line, match, pattern))
                break
    found.sort(key=lambda c: (c[0], c[1]), reverse=True)
    return found


def signature(text: str) -> Signature | None:
    """The signature of a failure's (redacted) message, or None when no line names an error
    specific enough to be worth matching."""
    for _rank, _order, line, match, pattern in _candidates(text):
        normal = _normal(match, pattern)
        if normal is not None:
            digest = hashlib.sha256(normal.encode("utf-8", "replace")).hexdigest()[:16]
            return Signature(digest, normal, line, _trace_files(text))
    return None


def _normal(match: re.Match[str], pattern: re.Pattern[str]) -> str | None:
    """The error in a matched line, masked; None when what is left is too generic."""
    if pattern is _PYTEST:
        inner = _EXCEPTION.match(match.group(2))
        found = _normal(inner, _EXCEPTION) if inner else None
        if found is not None:
            return found  # the error alone, as a traceback names it: the same error anywhere
        test, message = match.group(1), _mask(match.group(2))
        if _specific(message):
            return message
        return f"{test} {message}" if message else None  # the test is what is specific
    if pattern is _EXCEPTION:
        kind = match.group(1).rsplit(".", 1)[-1] if "." in match.group(1) else match.group(1)
        message = _mask(match.group(2) or "")
        normal = f"{kind}: {message}" if message else kind
        return normal if _specific(normal) else None
    if pattern is _LOCATED:
        where = match.group(1)
        message = _mask(match.group(2))
        normal = f"{_basename(where)}: error: {message}" if where else f"error: {message}"
        return normal if _specific(message) else None
    message = _mask(match.group(1))
    if pattern is _RUST:
        prefix = match.group(0).split(":", 1)[0] + ": "  # error[E0425]: the code says much
    else:
        prefix = {_GO_PANIC: "panic: ", _NPM: "npm: ", _FAILED_TO: "failed to "}.get(
            pattern, "error: "
        )
    return prefix + message if _specific(message) else None


# --------------------------------------------------------------------------- masking

_TOKEN = re.compile(r"[^\s'\"`()\[\]{}<>,;=]+")
_HEX_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HASH = re.compile(r"(?<![\w])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}(?![\w])")
_DURATION = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|s|sec|secs|seconds?|m|min|minutes?|h|hours?)"
    r"(?![\w])"
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,:]\d+)*(?![\w])")
_SPACES = re.compile(r"\s+")


def _mask(message: str) -> str:
    """What changes from run to run, masked: a path keeps its file name, numbers become <n>."""
    text = _HEX_ADDR.sub("<addr>", message)
    text = _UUID.sub("<hash>", text)
    text = _TOKEN.sub(_path, text)
    text = _HASH.sub("<hash>", text)
    text = _DURATION.sub("<duration>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACES.sub(" ", text).strip().rstrip(".")


def _path(match: re.Match[str]) -> str:
    token = match.group(0)
    if ("/" not in token and "\\" not in token) or "://" in token:
        return token
    return _basename(token)


def _basename(path: str) -> str:
    """``/tmp/x1/src/app.py:12`` as ``app.py``: the directories are where it ran (and how it
    was named from there), the file is what failed."""
    name = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    return name.split(":", 1)[0]


# Words that say something failed without saying what: a signature needs two others.
_GENERIC = frozenset(
    """a an and are at be by can cannot could did do does error errors err exception failed fail
    failure failures fatal for from had has have in is it its of on or see the this to was were
    with without above below details more info information exit exited code codes status command
    commands returned return non zero process run running test tests assert assertion
    assertionerror runtimeerror exception error systemexit keyboardinterrupt unknown unexpected
    something went wrong internal aborted abort n addr hash duration null none undefined
    true false not no""".split()
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _specific(text: str) -> bool:
    """Two words or more that are not about failing in general."""
    words = {w.lower() for w in _WORD.findall(text)} - _GENERIC
    return len([w for w in words if len(w) >= 3]) >= 2


# --------------------------------------------------------------------------- stack traces

_FRAMES = (
    re.compile(r'^\s*File "([^"]{1,1000})", line \d+'),  # Python
    re.compile(r"^\s*at (?:[^()]{0,300} \()?([^\s()]{1,400}):\d+:\d+\)?\s*$"),  # Node
    re.compile(r"^\s*--> ([^\s:]{1,1000}):\d+:\d+"),  # Rust
    re.compile(r"^\s*([^\s:]{1,1000}\.go):\d+(?: \+0x[0-9a-f]+)?\s*$"),  # Go
    re.compile(r"^([^\s:]{1,1000}\.\w{1,8}):\d+(?::\d+)?: (?:in |error|fatal error)"),  # pytest, cc
)


def _trace_files(text: str) -> list[str]:
    """The source files a stack trace names, innermost last, at most ``MAX_FILES``; not the
    interpreter's own (``<string>``, ``node:internal``)."""
    found: list[str] = []
    for raw in _ANSI.sub("", _bounded(text)).splitlines():
        line = raw[:MAX_LINE]
        for pattern in _FRAMES:
            match = pattern.match(line)
            if match:
                path = match.group(1)
                if not path.startswith(("<", "node:")) and "site-packages" not in path:
                    found = [p for p in found if p != path] + [path]
                break
    return found[-MAX_FILES:]


# --------------------------------------------------------------------------- gone away


class Step(namedtuple("Step", "ok failed sig cmd_hash title edited")):
    """One command of a session, as :func:`went_away` reads it."""

    __slots__ = ()
    ok: bool
    failed: bool
    sig: str | None
    cmd_hash: str | None
    title: str
    edited: list[str]


def head(command: str) -> str:
    """What a command runs, without its arguments: ``pytest``, ``npm test``, ``cargo build``.
    A pass of ``pytest -k foo`` shows an error of ``pytest tests/a.py`` gone."""
    words = command.split()
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # FOO=1 pytest
    if not words:
        return ""
    first = re.split(r"[/\\]", words[0])[-1]
    if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]):
        return f"{first} {words[1]}"
    return first


_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_:-]{0,40}")


def went_away(steps: list[Step], sig: str) -> tuple[int, int] | None:
    """Where error ``sig`` went away in one session's commands in one directory, oldest first:
    (the last failure with it, the first later pass of a command that had failed with it, or
    of the same program, after which it never came back), or None. What ran between the two is
    the candidate fix."""
    last: int | None = None
    fix: int | None = None
    hashes: set[str | None] = set()
    heads: set[str] = set()
    for index, step in enumerate(steps):
        if step.failed and step.sig == sig:
            last, fix = index, None  # it came back: an earlier pass fixed nothing
            hashes.add(step.cmd_hash)
            heads.add(head(step.title))
        elif fix is None and last is not None and step.ok and _shows(step, hashes, heads):
            fix = index
    return (last, fix) if last is not None and fix is not None else None


def _shows(step: Step, hashes: set[str | None], heads: set[str]) -> bool:
    """A pass of a command that failed with the error, or of the same program."""
    return (step.cmd_hash is not None and step.cmd_hash in hashes) or head(step.title) in heads
