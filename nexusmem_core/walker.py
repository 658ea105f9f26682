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
``("walked", touched, skipped, early, left_out)`` (the newest commit time of every path it
saw, the records it could not read, whether the job was the one it planned and how many of
the rows it sent were made before it came, and the file patches past a commit's caps), then
``("done",)``; or ``("error", kind, message)`` instead. The sync's side is :func:`walk`,
with a child :func:`start` makes then or one :func:`prestart` made before the sync imported
the rest (``nexusmem sync``), so that its start-up overlaps the sync's own; :func:`stop`
ends one either way.

A child :func:`prestart` makes is told the repository, HEAD and the project's id: it begins
the walk at once and, from the config as last validated, guesses the rest of its job and
makes its rows (the commits', then the diffs') while the sync starts up (:class:`_History`).

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
EARLY_FRAMES = 4  # frames of diffs made before the job comes, at most
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


def start(guess: Sequence[str] | None = None) -> subprocess.Popen[bytes] | None:
    """A child that imports what it needs, then waits for its job; None when no process can
    be started. With ``guess`` (a repository root and the commit it will be asked to walk,
    and the project's id when known) it begins that walk before the job comes (see
    :class:`_History`). Its stderr goes nowhere: every failure it can name comes back as a
    frame, and one that kills it before it can (an interpreter that cannot import this
    package, run from a source tree, say) leaves the walk to the sync, never a traceback on
    the user's terminal. ``-P``: a repository's own ``nexusmem_core`` folder is not
    imported."""
    command = [sys.executable, "-P", "-m", "nexusmem_core.walker", *(guess or ())]
    try:
        return subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError:
        return None


def prestart(path: str | Path, since: str | None = None, *, rebuild: bool = False) -> Child | None:
    """For ``nexusmem sync``, before it imports the rest: a child made now when this looks
    like the first sync (or, with ``rebuild``, a rebuild: a first sync again) of a history
    of :data:`PRESTART_COMMITS` or more, so its start-up
    overlaps the sync's own, and (without ``since``) its walk of HEAD begins at once. A
    guess, made cheaply (no git run but one listing of the newest commits), that never
    fails: the sync decides, says what is wrong, and :func:`stop` ends a child it does not
    use; a child whose job is not the walk it guessed walks the job's.

    On Linux the child is forked (:func:`_fork`), after the imports it shares with the
    sync, made while git lists; elsewhere it is started (:func:`start`)."""
    try:
        listing = _newest_commits(Path(path), rebuild)
    except (OSError, ValueError):  # no git, an unreadable folder: the sync will say
        return None
    if listing is None:
        return None
    root, newest, project_id = listing
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
    guess = None if since is not None else (str(root), shas[0], *filter(None, [project_id]))
    return (_fork(guess) if fork else None) or start(guess)


def _newest_commits(
    path: Path, rebuild: bool = False
) -> tuple[Path, subprocess.Popen[str], str | None] | None:
    """The repository's root, a git run listing its :data:`PRESTART_COMMITS` newest commits
    (the first is HEAD), begun, and the project's id as its memory holds it, when that
    memory has no git cursor yet (or a ``rebuild`` walks all of history again anyway)."""
    import sqlite3
    from urllib.parse import quote

    here = path.resolve()
    root = next((d for d in (here, *here.parents) if (d / ".git").exists()), None)
    memory = root / ".nexusmem" / "memory.db" if root else None
    if root is None or memory is None or not memory.is_file():
        return None
    from .paths import home_dir
    from .trust import trusted

    if not trusted(str(root), home_dir()):
        return None  # a workspace the repository shipped: the sync refuses it
    try:
        conn = sqlite3.connect(f"file:{quote(str(memory))}?mode=ro", uri=True)
        try:
            walked = conn.execute("select 1 from cursors where source = 'git' limit 1").fetchone()
            ids = conn.execute("select id from projects where root = ?", (str(root),)).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if walked and not rebuild:
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
    return root, newest, ids[0][0] if len(ids) == 1 else None


def _can_fork() -> bool:
    """Whether :func:`prestart` may fork: on Linux, in a process of one thread (a lock
    another thread held would stay held in the child), as ``nexusmem sync`` is then.
    macOS's system libraries are not all safe across a fork without exec, and Windows
    has none: a child is started there."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def _fork(guess: Sequence[str] | None) -> Forked | None:
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
    """The started child (``python -m nexusmem_core.walker [root rev [project]]``): :func:`_serve`
    on its stdin and stdout."""
    sys.exit(_serve(sys.stdin.buffer, sys.stdout.buffer, sys.argv[1:4]))


def _serve(jobs: IO[bytes], out: IO[bytes], guess: Sequence[str]) -> int:
    """Import what a walk needs, then walk the job read from ``jobs`` (none: the sync did
    not need this child) and write its frames to ``out``; the exit code. Given a guess of
    its walk (a root, a commit and the project's id: :func:`prestart`), it begins that walk
    first."""
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
            early.stop()
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
    """The walk :func:`prestart` guessed, begun; None without a guess, or when it cannot
    begin (the job's own walk then says why, as a frame). With the project's id as well,
    the job itself is guessed (:func:`_plan`), and the commits' and diffs' rows are made
    before it comes."""
    if len(guess) not in (2, 3):
        return None
    try:
        plan = _plan(*guess) if len(guess) == 3 else None
        return _History(guess[0], guess[1], plan=plan)
    except Exception:  # nothing of this walk is needed: the job walks anew
        return None


def _plan(root: str, rev: str, project_id: str) -> Job | None:
    """The job a first sync of ``rev`` gives (see sync._walk_beside), from the project's
    config as it was last validated; None when that is not known (the config changed
    since, or was never read): then only the walk is begun."""
    from .collectors.diffs import patch_args
    from .config.snapshot import peek_config
    from .paths import CONFIG_FILE, home_dir, workspace_dir

    config = peek_config(workspace_dir(Path(root)) / CONFIG_FILE, Path(home_dir()) / CONFIG_FILE)
    if config is None or not config.sources.git.enabled:
        return None
    diff = config.sources.diff
    return Job(
        root=root,
        project_id=project_id,
        rev=rev,
        since=None,
        max_chars=config.limits.max_body_chars,
        now=0,  # the rows' record time is the job's, set as they are sent
        patches=patch_args(["-n", str(diff.max_commits), rev]) if diff.enabled else None,
        skip_globs=list(diff.skip_globs),
    )


def _widen(out: IO[bytes]) -> None:
    """Let a pipe hold ``PIPE_BYTES`` (Linux: 64 KiB by default), so its writer goes on while
    its reader is busy: the frames' pipe a whole frame or two, the walk going on while the
    sync writes the frame before; git's output, git going on while the walk builds rows."""
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
    """The job's walk (``early``: the one begun before it came, taken over when it fits):
    every commit's frames, then the file diffs' (when the job asks for them)."""
    from .collectors.git import parse_record
    from .ingest import COMMIT_BATCH, commit_batch

    if early is not None and not early.fits(job):
        early.stop()  # HEAD moved, or the guess was wrong: the job's walk instead
        early = None
    history = early or _History(job.root, job.rev, job.since)
    commits, patches = history.take_over(job, send)
    for record in history.records:
        history.take(parse_record(record))
        if len(history.commits) == COMMIT_BATCH:
            commits.add(commit_batch(job.project_id, history.commits, job.max_chars))
            history.commits = []
    commits.add(commit_batch(job.project_id, history.commits, job.max_chars))
    history.git.check()
    commits.flush()
    left_out = 0
    if patches is not None:
        patches.frames.release(job.now, send)
        while patches.step(job):
            pass
        patches.git.check()
        patches.frames.flush()
        left_out = patches.cap.left_out
    send(("walked", history.touched, history.skipped, history.early, left_out))


class _History:
    """A history walk's git, and what was made of it before the job came. A child given a
    guess (:func:`prestart`'s: the repository's root and HEAD) begins its walk at once and
    parses while the sync starts up; given the job's ``plan`` as well (:func:`_plan`), it
    starts the patches' git too and makes the commits' and the diffs' rows (the record time
    left for the job to say). The job then takes it over, makes again what it planned
    otherwise, or stops it when it asks for another walk."""

    def __init__(self, root: str, rev: str, since: str | None = None, plan: Job | None = None):
        from .collectors.git import walk_args

        self.root, self.rev, self.since, self.plan = root, rev, since, plan
        self.git = _Git(Path(root), walk_args(rev, since))
        self.records = _records(self.git.chunks())
        self.commits: list[Commit] = []  # parsed, not yet in a frame the job sends
        self.touched: dict[str, int] = {}
        self.skipped = 0
        self.built = _Frames(0, None, "commits")  # the plan's rows of commits[:planned]
        self.planned = 0
        self.patches: _Patches | None = None
        # What the "walked" frame tells: whether the job was the plan, and the rows made
        # before it came that it sent.
        self.early: dict[str, Any] = {"planned": False, "rows": 0}
        if plan is not None and plan.patches is not None:
            self.patches = _Patches(plan)

    def fits(self, job: Job) -> bool:
        """Whether ``job`` asks for this walk."""
        same = Path(job.root).resolve() == Path(self.root).resolve()
        return same and job.rev == self.rev and job.since == self.since

    def stop(self) -> None:
        """Stop its git runs: their output is not wanted."""
        self.git.stop()
        if self.patches is not None:
            self.patches.git.stop()

    def read_job(self, stdin: IO[bytes]) -> bytes:
        """The job's line, read by a thread while this one makes what it can of the walk
        (:meth:`_prepare`, a step at a time)."""
        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(stdin.readline()), daemon=True)
        reader.start()
        for _ in self._prepare():
            if not reader.is_alive():
                break
        reader.join()
        return line[0] if line else b""

    def _prepare(self) -> Iterator[None]:
        """Before the job: parse (up to :data:`EARLY_COMMITS` commits), make the plan's rows
        (the commits', then the diffs', up to :data:`EARLY_FRAMES` frames of them), and
        ready what the walk needs later; then wait. A step is a few ms: the job waits for
        one at most."""
        from .collectors.git import parse_record
        from .ingest import COMMIT_BATCH, commit_batch

        while len(self.commits) < EARLY_COMMITS:
            record = next(self.records, None)
            if record is None:
                break
            self.take(parse_record(record))
            if len(self.commits) % COMMIT_BATCH == 0:
                yield
        if (plan := self.plan) is not None:
            while self.planned < len(self.commits):
                batch = self.commits[self.planned : self.planned + COMMIT_BATCH]
                self.built.add(commit_batch(plan.project_id, batch, plan.max_chars))
                self.planned += len(batch)
                yield
            self.built.flush()  # their rows too (a frame of fewer rows: the job waits for none)
            yield
            while self.patches is not None and len(self.patches.frames.held) < EARLY_FRAMES:
                if not self.patches.step(plan):
                    self.patches.frames.flush()
                    break
                yield
        # Parsed, and the job not here yet: what the walk needs later is readied meanwhile
        # (on a short history the first diff paid ~20 ms to compile patterns after it).
        yield from _warm_up()

    def take_over(self, job: Job, send: Any) -> tuple[_Frames, _Patches | None]:
        """For ``job`` (the walk this one is): the commits' frames, what was made of them
        sent, and the diffs' (its ``git log -p``) when the job asks for them; the rows the
        plan made that are not the job's are made again (the commits') or dropped (the
        diffs': their git starts anew)."""
        from .ingest import COMMIT_BATCH, commit_batch

        plan = self.plan
        made_for = (job.project_id, job.max_chars)
        same = plan is not None and (plan.project_id, plan.max_chars) == made_for
        commits = self.built if same else _Frames(0, None, "commits")
        self.early["rows"] = sum(len(frame[1]) for frame in commits.held)
        commits.release(job.now, send)
        for start in range(self.planned if same else 0, len(self.commits), COMMIT_BATCH):
            batch = self.commits[start : start + COMMIT_BATCH]
            commits.add(commit_batch(job.project_id, batch, job.max_chars))
        self.commits = []
        patches = self.patches
        wanted = (job.patches, job.skip_globs)
        planned = same and plan is not None and (plan.patches, plan.skip_globs) == wanted
        if patches is not None and not planned:
            patches.git.stop()
            patches = None
        elif patches is not None:
            self.early["rows"] += sum(len(frame[1]) for frame in patches.frames.held)
        if patches is None and job.patches is not None:
            patches = _Patches(job)
        self.early["planned"] = planned
        return commits, patches

    def take(self, commit: Commit | None) -> None:
        """Note a parsed commit (None: a record that did not parse)."""
        if commit is None:
            self.skipped += 1
            return
        for _, path in commit.changes:
            self.touched.setdefault(path, commit.ts)
        self.commits.append(commit)


class _Patches:
    """The diffs' ``git log -p`` (read as it comes, into a bounded buffer, so git runs on
    the other core meanwhile), and the frames made of its commits so far."""

    def __init__(self, job: Job) -> None:
        from .collectors.diffs import PatchCap

        assert job.patches is not None
        self.git = _Git(Path(job.root), job.patches, ahead=True)
        # Cut as git prints them: a huge file or commit is never held whole (diffs.PatchCap).
        self.cap = PatchCap(job.max_chars, job.skip_globs)
        self.records = _records(self.cap.stream(self.git.chunks()))
        self.frames = _Frames(0, None, "diffs")

    def step(self, job: Job) -> bool:
        """Make the diff nodes of the next commit, for ``job``; False at the end."""
        from .collectors.diffs import split_commit
        from .ingest import patch_nodes

        record = next(self.records, None)
        if record is None:
            return False
        if (parsed := split_commit(record)) is not None:
            commit, patches = parsed
            self.frames.add(
                patch_nodes(job.project_id, commit, patches, job.skip_globs, job.max_chars)
            )
        return True


def _warm_up() -> Iterator[None]:
    """What a walk's diffs need before their first patch, a step at a time."""
    from .collectors import diffs  # noqa: F401
    from .redact import warm_up

    yield
    yield from warm_up()


class _Frames:
    """Nodes gathered into frames of rows of one stage, sent when full; held, with no
    record time yet, until :meth:`release` says where to send them and when they are."""

    def __init__(self, now: int, send: Any, stage: str) -> None:
        self.now, self.send, self.stage = now, send, stage
        self.nodes: list[Node] = []
        self.chars = 0
        self.held: list[tuple[Any, ...]] = []

    def add(self, nodes: list[Node]) -> None:
        self.nodes.extend(nodes)
        self.chars += sum(len(n.body) for n in nodes)
        if len(self.nodes) >= FRAME_ROWS or self.chars >= FRAME_CHARS:
            self.flush()

    def flush(self) -> None:
        from .store.rows import node_rows

        if self.nodes:
            rows, files = node_rows(self.nodes, self.now)
            if self.send is None:
                self.held.append((self.stage, rows, files))
            else:
                self.send((self.stage, rows, files))
        self.nodes, self.chars = [], 0

    def release(self, now: int, send: Any) -> None:
        """Send the frames held, their record time ``now``, and every later one as it fills."""
        from .store.rows import recorded_at

        self.now, self.send = now, send
        for stage, rows, files in self.held:
            send((stage, recorded_at(rows, now), files))
        self.held = []


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
        # git runs ahead of the parsing by up to a wide pipe, not 64 KiB: with the default,
        # it waited on the pipe whenever this process built a batch of rows, and ran little
        # beside it (a first sync of 50k commits: 4.02 -> 3.74 s, 10k: 1.03 -> 0.95 s).
        assert self.process.stdout is not None
        _widen(self.process.stdout)
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
