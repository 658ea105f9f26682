"""Git: the repository's identity and its commit history.

The history walk uses ``git log --name-status``, which is an order of magnitude cheaper than
``--numstat`` (measured on a 9.6k-commit repository: 0.8 s against 10 s): line counts are taken
only where the patch is read anyway (``diffs.py``). Output is streamed and parsed as it arrives,
so memory does not grow with the length of the history.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from ..errors import GitError, GitNotFoundError, NexusMemError, NotAGitRepositoryError
from ..models import cached
from ..paths import check_path, git_env

__all__ = [
    "GIT_MISSING",
    "LOG_FORMAT",
    "MARK",
    "SHA",
    "Commit",
    "Records",
    "RepoInfo",
    "commit_signal",
    "git",
    "git_ahead",
    "git_stream",
    "is_ancestor",
    "log_records",
    "main_checkout",
    "normalize_origin",
    "parse_header",
    "parse_record",
    "read_repo",
    "stream_failed",
    "toplevel",
    "walk_args",
    "walk_commits",
]

# A record separator no sane commit message contains; a chunk that does not start with a sha
# after it is glued back to the previous record (see ``_records``).
MARK = b"\x1e\x1dNXM\x1d\x1e"
LOG_FORMAT = "%x1e%x1dNXM%x1d%x1e%H%x00%P%x00%ct%x00%an%x00%B%x00"
# git prints a commit's time as whatever digits its object holds: from 2**63 SQLite cannot store
# it, and by 2**62 ``time.gmtime`` cannot date it. 2**33 is the year 2242.
_MAX_TS = 2**33
SHA = _SHA = re.compile(rb"^[0-9a-f]{40}(?:[0-9a-f]{24})?\x00")  # what a record starts with


@dataclass(frozen=True)
class RepoInfo:
    """Where a repository is and who it is."""

    root: Path
    origin: str | None
    head: str | None  # None in a repository with no commits yet

    @property
    def project_id(self) -> str:
        """The normalized origin URL, else the absolute path: two clones share one memory."""
        return normalize_origin(self.origin) if self.origin else str(self.root)

    @property
    def name(self) -> str:
        """``owner/name`` from the origin URL (``pallets/click``), else the folder's name."""
        return origin_name(self.origin) if self.origin else self.root.name


@dataclass
class Commit:
    sha: str
    parents: list[str]
    ts: int
    author: str
    message: str
    changes: list[tuple[str, str]] = field(default_factory=list)  # (status, path)

    @cached
    def subject(self) -> str:
        # The body with it: every commit a sync makes a node of reads both (its signal reads
        # the body), and one split of the message serves the two.
        subject, _, body = self.message.partition("\n")
        self.__dict__["body"] = body.strip()
        return subject.strip()

    @cached
    def body(self) -> str:
        parts = self.message.split("\n", 1)
        return parts[1].strip() if len(parts) > 1 else ""

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


GIT_MISSING = "git is not installed or not on PATH: install git and try again"


async def _run(cwd: Path, args: list[str]) -> Any:
    """Run git to completion; a git that cannot be started is one clear error."""
    try:
        return await anyio.run_process(
            ["git", "-c", "core.quotepath=off", *args], cwd=cwd, check=False, env=git_env()
        )
    except FileNotFoundError as err:
        raise GitNotFoundError(GIT_MISSING) from err
    except NotADirectoryError as err:
        raise NotAGitRepositoryError(f"{cwd} is not a directory") from err


def _failed(cwd: Path, args: tuple[str, ...], code: int, stderr: str) -> NexusMemError:
    """The one-line error for a git command that exited non-zero."""
    message = stderr.strip().splitlines()
    first = message[0] if message else f"exit code {code}"
    if "not a git repository" in first:
        return NotAGitRepositoryError(f"{cwd} is not inside a git repository")
    return GitError(f"git {args[0]} failed in {cwd}: {first}")


async def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git and return its stdout as text (undecodable bytes replaced)."""
    result = await _run(cwd, list(args))
    if check and result.returncode != 0:
        stderr = result.stderr.decode("utf-8", "replace")
        raise _failed(cwd, args, result.returncode, stderr)
    return result.stdout.decode("utf-8", "replace")


def git_sync(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git without an event loop, for the light set-up commands (hook, agent)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, env=git_env()
        )
    except FileNotFoundError as err:
        if not cwd.is_dir():
            raise NotAGitRepositoryError(f"{cwd} does not exist") from err
        raise GitNotFoundError(GIT_MISSING) from err
    except NotADirectoryError as err:
        raise NotAGitRepositoryError(f"{cwd} is not a directory") from err
    if check and done.returncode != 0:
        raise _failed(cwd, args, done.returncode, done.stderr)
    return done


async def git_stream(cwd: Path, *args: str) -> AsyncGenerator[bytes, None]:
    """Yield git's stdout in chunks as it is produced; raise GitError if git then fails.

    Left early (its reader cancelled or closed it), git is stopped and waited for before its
    transport closes. Closed first (anyio closes it when its wait is cancelled), the
    transport polls the child to see whether it still runs; a git that has just ended is
    reaped there, before the event loop's watcher thread, which then writes "Unknown child
    process pid ..." to stderr (seen under a sync's one-line error when its write failed
    while the walk read git, on a loaded machine: 6 runs in 30)."""
    try:
        process: Process = await anyio.open_process(
            ["git", "-c", "core.quotepath=off", *args], cwd=cwd, env=git_env()
        )
    except FileNotFoundError as err:
        raise GitNotFoundError(GIT_MISSING) from err
    async with process:
        assert process.stdout is not None and process.stderr is not None
        try:
            async for chunk in process.stdout:
                yield chunk
            errors = b"".join([c async for c in process.stderr])
            code = await process.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                # Its pipes closed, git ends at its next write (SIGPIPE) and is waited for.
                # Not killed: on Python 3.11 a kill polls the child first, the same race.
                await process.aclose()
            raise
    if code != 0:
        raise stream_failed(cwd, args, code, errors)


def stream_failed(cwd: Path, args: Sequence[str], code: int, errors: bytes) -> GitError:
    """The error of a streamed git (here, or in the walk's second process) that exited
    ``code`` after writing ``errors`` to stderr."""
    first = errors.decode("utf-8", "replace").strip().splitlines()
    return GitError(f"git {args[0]} failed in {cwd}: {first[0] if first else code}")


AHEAD_CHUNKS = 512  # of git's output read ahead: at most 32 MB (a pipe read is <= 64 KB)


@contextlib.asynccontextmanager
async def git_ahead(cwd: Path, *args: str) -> AsyncIterator[AsyncIterator[bytes]]:
    """Start git now; yield its output as :func:`git_stream` gives it, to be read later.

    While the caller does other work, a task reads what git prints into a bounded buffer, so
    git runs on another core instead of waiting on a full pipe (a first sync computes the
    newest commits' patches while it parses the history walk). The buffer holds at most
    ``AHEAD_CHUNKS`` chunks, in memory only (the patches are not redacted yet): past that git
    waits for the reader. Leaving the block before the output is read stops git; a git that
    fails raises from the stream where it ends, as git_stream's does.
    """
    send, receive = anyio.create_memory_object_stream[bytes | Exception](AHEAD_CHUNKS)

    async def pump() -> None:
        async with send:
            try:
                async with contextlib.aclosing(git_stream(cwd, *args)) as chunks:
                    async for chunk in chunks:
                        await send.send(chunk)
            except anyio.BrokenResourceError:
                return  # the reader is gone: git_stream's closing stops git
            except Exception as err:  # handed to the reader, which raises it where it reads
                with contextlib.suppress(anyio.BrokenResourceError):
                    await send.send(err)

    async def output() -> AsyncIterator[bytes]:
        async with receive:
            async for item in receive:
                if isinstance(item, Exception):
                    raise item
                yield item

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                yield output()
            finally:
                receive.close()  # read or not, the output is done with
                tg.cancel_scope.cancel()  # an unread rest stops git rather than waiting on it
    except BaseExceptionGroup as group:
        # The pump raises nothing; what the group holds is the caller's own error.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


def _check_repository_path(path: Path) -> None:
    """A path given as a repository is readable text and exists, before git is asked."""
    check_path(path, "the repository path")
    if not path.exists():
        raise NotAGitRepositoryError(f"{path} does not exist")


async def toplevel(path: Path) -> Path:
    """The top of the work tree containing ``path``; NotAGitRepositoryError if there is none."""
    _check_repository_path(path)
    return Path((await git(path, "rev-parse", "--show-toplevel")).strip())


async def read_repo(path: Path) -> RepoInfo:
    """Resolve the work tree containing ``path``, its origin and HEAD (two git runs: every
    command pays for them, a no-op sync twice)."""
    _check_repository_path(path)
    args = ("rev-parse", "--show-toplevel", "--verify", "-q", "HEAD^{commit}")
    result = await _run(path, list(args))
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    # Exit 1 with the top alone: a repository with no commits yet.
    if result.returncode not in (0, 1) or not lines:
        raise _failed(path, args, result.returncode, result.stderr.decode("utf-8", "replace"))
    root, head = Path(lines[0]), lines[1].strip() if result.returncode == 0 else ""
    origin = (await git(root, "config", "--get", "remote.origin.url", check=False)).strip()
    # A remote URL can carry a credential (https://user:token@host/...): it is stored, so it is
    # redacted; the project id drops the user part anyway.
    from ..redact import redact

    return RepoInfo(root=root.resolve(), origin=redact(origin) or None, head=head or None)


async def main_checkout(root: Path) -> Path | None:
    """The main checkout of the linked worktree whose top is ``root``; None for a main checkout,
    and for a worktree of a bare repository (it has no checkout of its own)."""
    common = (await git(root, "rev-parse", "--git-common-dir")).strip()
    # Relative to ``root`` (git prints ".git" in a main checkout), or absolute.
    common_dir = Path(os.path.realpath(root / common))
    if common_dir.name != ".git" or common_dir.parent == root.resolve():
        return None
    return common_dir.parent


async def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """True when ``older`` is still reachable from ``newer`` (false after a rebase)."""
    if older == newer:
        return True
    result = await _run(root, ["merge-base", "--is-ancestor", older, newer])
    return bool(result.returncode == 0)


_SCP_LIKE = re.compile(r"^(?:[\w.+-]+@)?([\w.-]+):(?!//)(.*)$")


def normalize_origin(url: str) -> str:
    """``git@github.com:A/B.git`` and ``https://github.com/a/b`` both become ``github.com/a/b``."""
    url = url.strip()
    match = _SCP_LIKE.match(url)
    if match and "://" not in url:
        host, path = match.groups()
    else:
        rest = url.split("://", 1)[-1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1]  # drop user:password@
        host = re.sub(r":\d+$", "", host)  # drop the port
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host}/{path}".lower().rstrip("/")


def origin_name(url: str) -> str:
    """A project's name from its origin: the URL's last two path segments as written
    (``git@github.com:pallets/click.git`` is ``pallets/click``); one when the path has one.
    A local path (``/srv/git/app.git``, ``file:///srv/git/app``) names its last segment."""
    url = url.strip()
    match = _SCP_LIKE.match(url)
    drive = re.match(r"^[A-Za-z]:[\\/]", url) is not None  # C:\\repos\\app.git
    local = drive or url.startswith(("/", ".", "~", "file:"))
    local = local or (match is None and "://" not in url)
    if match and "://" not in url and not local:
        path = match.group(2)
    else:
        path = url.split("://", 1)[-1]
        if "://" in url and not url.startswith("file:"):
            path = path.partition("/")[2]
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if parts and parts[-1].endswith(".git"):
        parts[-1] = parts[-1][:-4]
    parts = [p for p in parts if p]
    if not parts:
        return url
    return parts[-1] if local or len(parts) == 1 else "/".join(parts[-2:])


def parse_header(record: bytes) -> tuple[Commit, bytes] | None:
    """The commit fields of one ``LOG_FORMAT`` record, and the bytes that follow them."""
    parts = record.split(b"\x00", 5)
    if len(parts) < 5 or not _SHA.match(record):
        return None
    commit = _commit(*(p.decode("utf-8", "replace") for p in parts[:5]))
    if commit is None:
        return None
    return commit, parts[5] if len(parts) > 5 else b""


def _commit(sha: str, parents: str, ts: str, author: str, message: str) -> Commit | None:
    """The commit of a record's decoded header fields; None when its time cannot be one."""
    try:
        when = int(ts)
    except ValueError:
        return None
    if not 0 <= when < _MAX_TS:
        return None  # a hand-made commit object can carry any digits; nothing can show them
    return Commit(sha, parents.split(), when, author, message.rstrip("\n"))


def parse_record(record: bytes) -> Commit | None:
    """The commit of one ``walk_args`` record: :func:`parse_header`'s, with the (status, path)
    of each file it changed.

    The record is decoded whole and split once, not field by field and path by path (the walk
    parses every commit of the history: 10k records took 48 ms so, 38 ms now). The same text:
    every separator is a NUL, which the UTF-8 decoder never takes into a character it
    replaces, so the pieces decode as they would alone. Tokens that are only ASCII whitespace
    are dropped (``bytes.strip`` strips those alone), and a status is its first character,
    U+FFFD when that is not ASCII (its bytes were decoded as ASCII).
    """
    if not _SHA.match(record):
        return None
    fields = record.decode("utf-8", "replace").split("\x00")
    if len(fields) < 5 or (commit := _commit(*fields[:5])) is None:
        return None
    tokens = iter([t for t in fields[5:] if t.strip(_BLANK)])  # status, path, status, path...
    # Paired from one iterator, with no slices to copy; an odd last status is dropped.
    commit.changes = list(zip(map(_STATUSES.__getitem__, tokens), tokens, strict=False))
    return commit


_BLANK = " \t\n\r\x0b\x0c"  # the ASCII whitespace bytes.strip() strips


class _Statuses(dict[str, str]):
    """A change's status token (``M``, ``\\nM`` after the message) to its status, each
    distinct token worked out once."""

    def __missing__(self, token: str) -> str:
        status = token.strip(_BLANK)[:1]
        if not status.isascii():
            status = "\ufffd"
        if len(token) <= 4:  # git's own: a few in all (a misread path is not kept)
            self[token] = status
        return status


_STATUSES = _Statuses()


async def log_records(
    root: Path, args: list[str], output: AsyncIterator[bytes] | None = None
) -> AsyncIterator[bytes]:
    """Run ``git <args>`` (a log with ``LOG_FORMAT``) and yield each commit's record whole;
    with ``output``, read that instead (the same git started earlier: :func:`git_ahead`).

    Records are split on MARK as the output streams in. A MARK ends a record only when a sha
    follows it (the marker could sit inside a message, where ``_split`` glues it back), so
    each one is decided once the bytes after it have arrived. Every byte is searched once and
    only the record being read is held: re-splitting all that was pending at each 64 KB chunk
    took 3 s over one 16 MB record (a commit adding a big file, read with ``-p``).
    """
    records = Records()
    async for chunk in output if output is not None else git_stream(root, *args):
        for record in records.feed(chunk):
            yield record
    for record in records.end():
        yield record


class Records:
    """Cuts a ``LOG_FORMAT`` log into whole records as its output arrives (see
    :func:`log_records`): ``feed`` each chunk, then ``end``."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.start = self.scan = 0  # where the record being read starts; where to search on

    def feed(self, chunk: bytes) -> list[bytes]:
        self.buf += chunk
        records, start, scan = _cut(self.buf, self.start, self.scan, final=False)
        del self.buf[:start]  # cheap: a bytearray drops its front without copying the rest
        self.start, self.scan = 0, scan - start
        return records

    def end(self) -> list[bytes]:
        records, start, _ = _cut(self.buf, self.start, self.scan, final=True)
        if len(self.buf) > start:
            records.append(bytes(self.buf[start:]))
        return records


_LOOKAHEAD = 65  # a sha-256 id and its NUL: enough bytes to tell whether a record starts


def _cut(buf: bytearray, start: int, scan: int, final: bool) -> tuple[list[bytes], int, int]:
    """The records complete in ``buf`` from ``start``, the start of the next one, and where
    to search on; a MARK too near the end is decided later, unless the output is ``final``."""
    records: list[bytes] = []
    while (at := buf.find(MARK, scan)) >= 0:
        head = at + len(MARK)
        if not final and len(buf) - head < _LOOKAHEAD:
            return records, start, at
        scan = head
        if _SHA.match(buf[head : head + _LOOKAHEAD]):
            if at > start:
                records.append(bytes(buf[start:at]))
            start = head
    return records, start, max(scan, len(buf) - len(MARK) + 1)


def walk_args(rev_range: str, since: str | None = None) -> list[str]:
    """The history walk's git arguments: each commit of ``rev_range`` and the paths it changed."""
    args = ["log", "-z", "--no-renames", "--name-status", "--format=" + LOG_FORMAT]
    if since:
        args.append(f"--since={since}")
    return [*args, rev_range, "--"]


async def walk_commits(
    root: Path,
    rev_range: str,
    since: str | None = None,
    passed_over: Callable[[bytes], object] | None = None,
    paths: Sequence[str] = (),
) -> AsyncGenerator[Commit, None]:
    """Stream the commits in ``rev_range`` (newest first) with the paths each one changed; a
    record that does not parse (a corrupt or hand-made commit object) goes to ``passed_over``.
    With ``paths``, only the commits that changed one of them, and only those paths: each is
    a path as written, never a pattern (a doc may be named ``*.md``)."""
    pathspecs = [f":(literal){path}" for path in paths]
    async for record in log_records(root, [*walk_args(rev_range, since), *pathspecs]):
        if (commit := parse_record(record)) is not None:
            yield commit
        elif passed_over is not None:
            passed_over(record)


def _split(data: bytes) -> list[bytes]:
    """Split git's output into records; a piece not led by a sha belongs to the one before."""
    out: list[list[bytes]] = []
    for piece in data.split(MARK):
        if out and not _SHA.match(piece):
            out[-1].append(piece)  # joined once at the end: gluing as it goes was quadratic
        elif piece:
            out.append([piece])
    return [MARK.join(pieces) for pieces in out] or [b""]


_CONVENTIONAL = re.compile(r"^(?P<type>[a-zA-Z]+)(?:\([^)]*\))?(?P<bang>!)?:\s*\S")
_TYPE_SIGNAL = {
    "fix": 0.9,
    "hotfix": 0.9,
    "security": 0.9,
    "revert": 0.75,
    "perf": 0.8,
    "feat": 0.8,
    "refactor": 0.6,
    "docs": 0.5,
    "doc": 0.5,
    "test": 0.45,
    "tests": 0.45,
    "build": 0.4,
    "ci": 0.35,
    "chore": 0.3,
    "style": 0.25,
    "wip": 0.2,
}
_BUMP = re.compile(
    r"^(?:chore\(deps[^)]*\)|build\(deps[^)]*\)|bump\b|release\b|v?\d+\.\d+(?:\.\d+)?$|"
    r"update dependenc|prepare release|version bump)",
    re.IGNORECASE,
)
# A subject that says it repairs something, in the forms commit subjects use ("Fixing issue
# for HEAD ...", "Minor bugfix to ...": 4 of the real set's 36 what-broke answers).
_FIXISH = re.compile(
    r"\b(fix(es|ed|ing)?|bug(fix(es)?)?|crash(es|ed)?|regression|broken?|revert(s|ed)?)\b",
    re.IGNORECASE,
)


# A word _FIXISH matches holds one of these: an ASCII subject (where IGNORECASE is plain ASCII
# case) without any, most of them, is not searched (the search was 10 ms of a 10k-commit walk).
_FIXISH_ROOTS = ("fix", "bug", "crash", "regression", "broke", "revert")


def _fixish(subject: str) -> bool:
    if subject.isascii():
        lowered = subject.lower()
        if not any(map(lowered.__contains__, _FIXISH_ROOTS)):
            return False
    return _FIXISH.search(subject) is not None


def commit_signal(commit: Commit) -> float:
    """How much a commit is worth remembering before any query exists, in [0.05, 1].

    Conventional-commit type first (fix/feat high, chore/style low); merges and version bumps
    are low; a message body that explains (over ~200 characters) raises it, a breaking change
    (``!``) raises it.
    """
    subject = commit.subject
    if commit.is_merge:
        return 0.15
    if _BUMP.search(subject):
        return 0.12
    match = _CONVENTIONAL.match(subject)
    if match:
        signal = _TYPE_SIGNAL.get(match.group("type").lower(), 0.5)
        if match.group("bang"):
            signal += 0.1
    else:
        signal = 0.7 if _fixish(subject) else 0.5
    body = len(commit.body)
    if body >= 200:
        signal += 0.1
    elif body == 0:
        signal -= 0.05
    return round(min(1.0, max(0.05, signal)), 3)
