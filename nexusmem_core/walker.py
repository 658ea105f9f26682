"""A full history walk in a second process, so that parsing and writing use both cores.

A first sync spends most of its time in Python: parsing git's log and building, redacting
and binding each commit's node, under one interpreter lock, so the database thread's writes
wait on the parsing and the parsing on them. Here a second Python process runs the walk's
git and builds the commits' nodes and rows exactly as the in-process walk does
(``ingest.commit_batch``, ``store.rows.node_rows``: redacted before they leave it), and
streams the rows (and then the file diffs') to the sync, which writes them in its own
transaction while it builds the import graph and reads the doc files itself. Nothing
reaches disk outside that transaction: the rows travel through a pipe.

The child runs :func:`_serve`: started (:func:`start`: ``python -m nexusmem_core.walker``),
or forked from ``nexusmem sync`` before the sync's threads exist (:func:`prestart`, on
Linux: no second interpreter to start, nor the imports the two share). It imports what a
walk needs, reads its :class:`Job` from its input as one JSON line (none: it was not
needed, and it ends), and writes length-prefixed ``marshal`` frames: ``("commits", rows,
files)`` batches, then the file diffs' ``("diffs", rows, files)`` when asked for, then
``("walked", touched, skipped)`` (the newest commit time of every path
it saw, and the records it could not read), then ``("done",)``; or ``("error", kind,
message)`` instead. The sync's side is :func:`walk`, with a child :func:`start` makes then or
one :func:`prestart` made before the sync imported the rest (``nexusmem sync``), so that its
start-up overlaps the sync's own; :func:`stop` ends one either way.

Only worth its start-up (~0.1 s of the other core) on a long history: :func:`worth_it`.
"""

from __future__ import annotations

import contextlib
import gc
import json
import marshal
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from .paths import git_env

if TYPE_CHECKING:
    from .collectors.git import Commit
    from .models import Node

__all__ = [
    "MIN_COMMITS",
    "PRESTART_COMMITS",
    "Child",
    "Job",
    "main",
    "prestart",
    "start",
    "stop",
    "walk",
    "worth_it",
]

# A history shorter than this is walked in process: the second interpreter's start-up and
# imports (~0.1 s) cost about what parsing this many commits does.
MIN_COMMITS = 2000
# The CLI starts one before it imports the rest, for a first sync of this many or more: its
# start-up then overlaps the sync's own instead of coming after it.
PRESTART_COMMITS = 1000
EARLY_COMMITS = 5000  # commits parsed before the job comes, at most (see _History)
FRAME_ROWS = 1000  # rows a frame holds at most...
FRAME_CHARS = 4 << 20  # ...and characters of body: a frame is held whole on both sides
_HEADER = struct.Struct("<I")
PIPE_BYTES = 1 << 20


@dataclass
class Job:
    """What the child walks (``rev`` with ``since``, as the sync's walk) and how it builds
    the commits' nodes; ``now`` is their record time. With ``patches`` (the arguments of the
    sync's ``git log -p``, diffs.patch_args), it makes the file diffs' nodes too, after the
    commits', but those of the paths ``skip_globs`` matches."""

    root: str
    project_id: str
    rev: str
    since: str | None
    max_chars: int
    now: int
    patches: list[str] | None = None
    skip_globs: list[str] = field(default_factory=list)


async def worth_it(root: Path, head: str) -> bool:
    """Whether ``head``'s history holds at least :data:`MIN_COMMITS` commits (counting stops
    there: a count of the whole of a 50k-commit history costs 0.3 s)."""
    from .collectors.git import git

    count = await git(root, "rev-list", "--count", f"--max-count={MIN_COMMITS}", head)
    return int(count.strip() or 0) >= MIN_COMMITS


class Child(Protocol):
    """A child waiting for its job: a ``subprocess.Popen`` (:func:`start`), or a
    :class:`Forked` one (:func:`prestart`, on Linux)."""

    @property
    def stdin(self) -> IO[bytes] | None: ...

    @property
    def stdout(self) -> IO[bytes] | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...

    def kill(self) -> None: ...


def start(guess: tuple[str, str] | None = None) -> subprocess.Popen[bytes] | None:
    """A child that imports what it needs, then waits for its job; None when no process can
    be started. With ``guess`` (a repository root and the commit it will be asked to walk)
    it begins that walk before the job comes (see :class:`_History`). Its stderr goes nowhere:
    every failure it can name comes back as a frame, and one that kills it before it can
    (an interpreter that cannot import this package, run from a source tree, say) leaves
    the walk to the sync, never a traceback on the user's terminal. ``-P``: a repository's
    own ``nexusmem_core`` folder is not imported."""
    command = [sys.executable, "-P", "-m", "nexusmem_core.walker", *(guess or ())]
    try:
        return subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError:
        return None


def prestart(path: str | Path, since: str | None = None) -> Child | None:
    """For ``nexusmem sync``, before it imports the rest: a child made now when this looks
    like the first sync of a history of :data:`PRESTART_COMMITS` or more, so its start-up
    overlaps the sync's own, and (without ``since``) its walk of HEAD begins at once. A
    guess, made cheaply (no git run but one listing of the newest commits), that never
    fails: the sync decides, says what is wrong, and :func:`stop` ends a child it does not
    use; a child whose job is not the walk it guessed walks the job's.

    On Linux the child is forked (:func:`_fork`), after the imports it shares with the
    sync, made while git lists; elsewhere it is started (:func:`start`)."""
    try:
        listing = _newest_commits(Path(path))
    except (OSError, ValueError):  # no git, an unreadable folder: the sync will say
        return None
    if listing is None:
        return None
    root, newest = listing
    fork = _can_fork()
    try:
        if fork:
            from . import ingest  # noqa: F401  (the sync's own imports: the child has them too)
            from .store import rows  # noqa: F401
        shas = newest.communicate()[0].split()
    except OSError:
        return None
    finally:
        if newest.poll() is None:  # only when something above failed: git is not waited for
            newest.kill()
            newest.wait()
    if newest.returncode != 0 or len(shas) < PRESTART_COMMITS:
        return None
    guess = (str(root), shas[0]) if since is None else None
    return (_fork(guess) if fork else None) or start(guess)


def _newest_commits(path: Path) -> tuple[Path, subprocess.Popen[str]] | None:
    """The repository's root and a git run listing its :data:`PRESTART_COMMITS` newest
    commits (the first is HEAD), begun, when its memory has no git cursor yet."""
    import sqlite3
    from urllib.parse import quote

    here = path.resolve()
    root = next((d for d in (here, *here.parents) if (d / ".git").exists()), None)
    memory = root / ".nexusmem" / "memory.db" if root else None
    if root is None or memory is None or not memory.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(memory))}?mode=ro", uri=True)
        try:
            walked = conn.execute("select 1 from cursors where source = 'git' limit 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if walked:
        return None  # a later sync: it walks what is new, not all of history
    newest = subprocess.Popen(
        ["git", "rev-list", f"--max-count={PRESTART_COMMITS}", "HEAD"],
        cwd=root,
        env=git_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return root, newest


def _can_fork() -> bool:
    """Whether :func:`prestart` may fork: on Linux, in a process of one thread (a lock
    another thread held would stay held in the child), as ``nexusmem sync`` is then.
    macOS's system libraries are not all safe across a fork without exec, and Windows
    has none: a child is started there."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def _fork(guess: tuple[str, str] | None) -> Forked | None:
    """A child forked from this process: it has this interpreter and what it has imported
    already (a started one spends ~60 ms of CPU on its start-up and imports, on the cores
    the sync's own imports and git share); None when it cannot be made."""
    try:
        job_in, job_out = os.pipe()
        frames_in, frames_out = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        for fd in (job_in, job_out, frames_in, frames_out):
            os.close(fd)
        return None
    if pid == 0:  # the child: never back into the caller, whatever happens
        code = 1
        try:
            os.close(job_out)
            os.close(frames_in)
            # The sync's terminal and pipes are not the child's: a reader of the sync's
            # output waits for the sync alone, and nothing of the child's reaches it.
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
                comm.write("nexusmem-walk")  # ps and top tell it from the sync
            code = _serve(os.fdopen(job_in, "rb"), os.fdopen(frames_out, "wb"), guess or ())
        except BaseException:  # stderr is nowhere: the exit code says it
            pass
        finally:
            os._exit(code)  # not the sync's atexit handlers, nor its buffered output
    os.close(job_in)
    os.close(frames_out)
    return Forked(pid, os.fdopen(job_out, "wb"), os.fdopen(frames_in, "rb"))


class Forked:
    """A forked child, as the sync uses a ``subprocess.Popen``: its two pipes, and poll,
    wait and kill."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reaped(os.WNOHANG)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self._reaped(0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def _reaped(self, options: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:  # reaped already: by another thread's call, say
            if self.returncode is None:
                self.returncode = -1  # how it ended is that call's to tell
            return
        if pid:
            self.returncode = os.waitstatus_to_exitcode(status)


def stop(child: Child | None) -> None:
    """End a child (one not used, or left early) and wait for it."""
    if child is None:
        return
    if child.poll() is None:
        child.kill()
    child.wait()
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


@contextlib.asynccontextmanager
async def walk(
    job: Job, child: Child | None = None
) -> AsyncIterator[AsyncIterator[tuple[Any, ...]] | None]:
    """Give ``job`` to ``child`` (one started now when None); yield its frames (None when
    no child can take it: the caller walks in process). Its errors are raised from the
    frames as the in-process walk raises them. Leaving early stops it."""
    import anyio.to_thread

    child = child or start()
    if child is None or not _give(child, job):
        stop(child)
        yield None
        return
    assert child.stdout is not None
    out = child.stdout

    async def frames() -> AsyncIterator[tuple[Any, ...]]:
        while True:
            frame = await anyio.to_thread.run_sync(_read_frame, out, abandon_on_cancel=True)
            if frame is None:
                code = await anyio.to_thread.run_sync(child.wait)
                raise _failed(f"it ended without finishing (exit code {code})")
            if frame[0] == "done":
                return
            if frame[0] == "error":
                raise _error(frame[1], frame[2])
            yield frame

    try:
        yield frames()
    finally:
        stop(child)  # done: it has ended or is ending; left early: it is killed


def _give(child: Child, job: Job) -> bool:
    """Send ``job`` to ``child``; False when it is gone (it failed to start: walk here)."""
    assert child.stdin is not None
    try:
        child.stdin.write(json.dumps(asdict(job)).encode() + b"\n")
        child.stdin.close()
    except OSError:
        return False
    return True


def _read_frame(out: IO[bytes]) -> tuple[Any, ...] | None:
    """The next frame, or None when the child's output ends before one is whole."""
    head = out.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    size = _HEADER.unpack(head)[0]
    data = out.read(size)
    if len(data) < size:
        return None
    try:
        frame: tuple[Any, ...] = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    return frame


def _failed(why: str) -> Exception:
    from .errors import NexusMemError

    return NexusMemError(f"the history walk's second process failed: {why}")


def _kinds() -> dict[str, type[Exception]]:
    """The errors a frame names, as the in-process walk raises them (both ways)."""
    from .errors import GitError, GitNotFoundError

    return {"git": GitError, "git-missing": GitNotFoundError}


def _error(kind: str, message: str) -> Exception:
    """The exception the in-process walk would have raised."""
    known = _kinds().get(kind)
    return known(message) if known else _failed(message)


# --- the child ------------------------------------------------------------------------------


def main() -> None:
    """The started child (``python -m nexusmem_core.walker [root rev]``): :func:`_serve`
    on its stdin and stdout."""
    sys.exit(_serve(sys.stdin.buffer, sys.stdout.buffer, sys.argv[1:3]))


def _serve(jobs: IO[bytes], out: IO[bytes], guess: Sequence[str]) -> int:
    """Import what a walk needs, then walk the job read from ``jobs`` (none: the sync did
    not need this child) and write its frames to ``out``; the exit code. Given a guess of
    its walk (a root and a commit: :func:`start`), it begins that walk first."""
    _widen(out)
    early = _guessed(guess)
    from . import ingest  # noqa: F401  (now, while the sync imports too: the job waits)
    from .store import rows  # noqa: F401

    # The walk makes no reference cycles (commits, nodes and rows are trees of builtins),
    # and this process ends with it: the cycle collector would only spend 3% of a 50k walk
    # looking for garbage it never finds.
    gc.disable()

    line = early.read_job(jobs) if early else jobs.readline()
    if not line.strip():
        if early is not None:
            early.git.stop()
        return 0
    try:
        _walk(Job(**json.loads(line)), lambda frame: _send(out, frame), early)
        _send(out, ("done",))
    except BrokenPipeError:
        pass  # the sync is gone or left early: nothing to tell it
    except BaseException as err:  # every failure is a frame: never a traceback on stderr
        kind = next((k for k, known in _kinds().items() if type(err) is known), "internal")
        message = str(err) if kind != "internal" else f"{type(err).__name__}: {err}"
        with contextlib.suppress(BrokenPipeError):
            _send(out, ("error", kind, message))
        return 1
    finally:
        with contextlib.suppress(BrokenPipeError, ValueError):
            out.flush()
    return 0


def _guessed(guess: Sequence[str]) -> _History | None:
    """The walk :func:`start` guessed, begun; None without a guess, or when it cannot begin
    (the job's own walk then says why, as a frame)."""
    if len(guess) != 2:
        return None
    try:
        return _History(guess[0], guess[1])
    except Exception:  # nothing of this walk is needed: the job walks anew
        return None


def _widen(out: IO[bytes]) -> None:
    """Let the pipe hold a whole frame or two (Linux: 64 KiB by default), so the walk goes
    on while the sync is busy writing the frame before."""
    if os.name != "posix":
        return
    import fcntl

    if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux only
        with contextlib.suppress(OSError):  # past /proc/sys/fs/pipe-max-size: keep the default
            fcntl.fcntl(out.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _send(out: IO[bytes], frame: tuple[Any, ...]) -> None:
    data = marshal.dumps(frame)
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def _walk(job: Job, send: Any, early: _History | None = None) -> None:
    """The job's walk (``early``: the one begun before it came, taken over when it fits)."""
    from .collectors.git import parse_record
    from .ingest import COMMIT_BATCH, commit_batch

    frames = _Frames(job.now, send, "commits")
    if early is not None and not early.fits(job):
        early.git.stop()  # HEAD moved, or the guess was wrong: the job's walk instead
        early = None
    history = early or _History(job.root, job.rev, job.since)
    # Its output is read meanwhile (git computes the patches on the other core instead of
    # waiting on a full pipe), and parsed once the commits are sent.
    patches = _Git(Path(job.root), job.patches, ahead=True) if job.patches is not None else None
    parsed, history.commits = history.commits, []  # before the job came
    for start in range(0, len(parsed), COMMIT_BATCH):
        frames.add(
            commit_batch(job.project_id, parsed[start : start + COMMIT_BATCH], job.max_chars)
        )
    for record in history.records:
        history.take(parse_record(record))
        if len(history.commits) == COMMIT_BATCH:
            frames.add(commit_batch(job.project_id, history.commits, job.max_chars))
            history.commits = []
    frames.add(commit_batch(job.project_id, history.commits, job.max_chars))
    history.git.check()
    frames.flush()
    if patches is not None:
        _diffs(job, patches, send)
    send(("walked", history.touched, history.skipped))


class _History:
    """A history walk's git, and what was parsed of it before the job came. A child started
    with a guess (:func:`prestart`'s: the repository's root and HEAD) begins its walk at
    once and parses while the sync starts up (the job's project id is needed only to make
    the nodes); the job then takes it over, or stops it when it asks for another walk."""

    def __init__(self, root: str, rev: str, since: str | None = None) -> None:
        from .collectors.git import walk_args

        self.root, self.rev, self.since = root, rev, since
        self.git = _Git(Path(root), walk_args(rev, since))
        self.records = _records(self.git.chunks())
        self.commits: list[Commit] = []  # parsed, waiting for the job's project id
        self.touched: dict[str, int] = {}
        self.skipped = 0

    def fits(self, job: Job) -> bool:
        """Whether ``job`` asks for this walk."""
        same = Path(job.root).resolve() == Path(self.root).resolve()
        return same and job.rev == self.rev and job.since == self.since

    def read_job(self, stdin: IO[bytes]) -> bytes:
        """The job's line, read by a thread while this one parses (up to
        :data:`EARLY_COMMITS` commits: then it waits)."""
        from .collectors.git import parse_record

        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(stdin.readline()), daemon=True)
        reader.start()
        while reader.is_alive() and len(self.commits) < EARLY_COMMITS:
            record = next(self.records, None)
            if record is None:
                break
            self.take(parse_record(record))
        # Parsed, and the job not here yet: what the walk needs later is readied meanwhile,
        # a step at a time, so the job waits for one step at most (on a short history the
        # child is idle ~30 ms here, and the first diff paid ~20 ms to compile patterns).
        for _ in _warm_up():
            if not reader.is_alive():
                break
        reader.join()
        return line[0] if line else b""

    def take(self, commit: Commit | None) -> None:
        """Note a parsed commit (None: a record that did not parse)."""
        if commit is None:
            self.skipped += 1
            return
        for _, path in commit.changes:
            self.touched.setdefault(path, commit.ts)
        self.commits.append(commit)


def _warm_up() -> Iterator[None]:
    """What a walk's diffs need before their first patch, a step at a time."""
    from .collectors import diffs  # noqa: F401
    from .redact import warm_up

    yield
    yield from warm_up()


def _diffs(job: Job, git: _Git, send: Any) -> None:
    """The file diffs' nodes of the commits ``git`` (the sync's ``git log -p``) prints."""
    from .collectors.diffs import split_commit
    from .ingest import patch_nodes

    frames = _Frames(job.now, send, "diffs")
    for record in _records(git.chunks()):
        if (parsed := split_commit(record)) is not None:
            commit, patches = parsed
            frames.add(patch_nodes(job.project_id, commit, patches, job.skip_globs, job.max_chars))
    git.check()
    frames.flush()


class _Frames:
    """Nodes gathered into frames of rows of one stage, sent when full."""

    def __init__(self, now: int, send: Any, stage: str) -> None:
        self.now, self.send, self.stage = now, send, stage
        self.nodes: list[Node] = []
        self.chars = 0

    def add(self, nodes: list[Node]) -> None:
        self.nodes.extend(nodes)
        self.chars += sum(len(n.body) for n in nodes)
        if len(self.nodes) >= FRAME_ROWS or self.chars >= FRAME_CHARS:
            self.flush()

    def flush(self) -> None:
        from .store.rows import node_rows

        if self.nodes:
            rows, files = node_rows(self.nodes, self.now)
            self.send((self.stage, rows, files))
        self.nodes, self.chars = [], 0


def _records(chunks: Iterable[bytes]) -> Iterator[bytes]:
    from .collectors.git import Records

    records = Records()
    for chunk in chunks:
        yield from records.feed(chunk)
    yield from records.end()


class _Git:
    """A git run whose output is read as it comes; ``ahead``: read by a thread into a bounded
    buffer from the start, to be parsed later (as collectors.git.git_ahead does)."""

    def __init__(self, root: Path, args: list[str], *, ahead: bool = False) -> None:
        from .collectors.git import AHEAD_CHUNKS, GIT_MISSING
        from .errors import GitNotFoundError

        self.root, self.args = root, args
        try:
            self.process = subprocess.Popen(
                ["git", "-c", "core.quotepath=off", *args],
                cwd=root,
                env=git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except FileNotFoundError as err:
            raise GitNotFoundError(GIT_MISSING) from err
        self.buffer: queue.Queue[bytes] | None = None
        if ahead:
            self.buffer = queue.Queue(AHEAD_CHUNKS)
            threading.Thread(target=self._pump, args=(self.buffer,), daemon=True).start()

    def _read(self) -> Iterator[bytes]:
        assert self.process.stdout is not None
        read = self.process.stdout.read1  # type: ignore[attr-defined]  # a BufferedReader
        while chunk := read(1 << 16):
            yield chunk

    def _pump(self, buffer: queue.Queue[bytes]) -> None:
        for chunk in self._read():
            buffer.put(chunk)
        buffer.put(b"")  # the end

    def stop(self) -> None:
        """Stop git: its output is not wanted."""
        self.process.kill()
        self.process.wait()

    def chunks(self) -> Iterator[bytes]:
        if self.buffer is None:
            yield from self._read()
            return
        while chunk := self.buffer.get():
            yield chunk

    def check(self) -> None:
        """Raise GitError as git_stream does, when git failed."""
        from .collectors.git import stream_failed

        assert self.process.stderr is not None
        errors = self.process.stderr.read()
        if (code := self.process.wait()) != 0:
            raise stream_failed(self.root, self.args, code, errors)


if __name__ == "__main__":
    main()
