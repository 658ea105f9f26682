"""A full history walk in a second process, so that parsing and writing use both cores.

A first sync spends most of its time in Python: parsing git's log and building, redacting
and binding each commit's node, under one interpreter lock, so the database thread's writes
wait on the parsing and the parsing on them. Here a second Python process runs the walk's
git and builds the commits' nodes and rows exactly as the in-process walk does
(``ingest.commit_batch``, ``store.rows.node_rows``: redacted before they leave it), and
streams the rows to the sync, which writes them in its own transaction while it reads the
diffs and the import graph itself. Nothing reaches disk outside that transaction: the rows
travel through a pipe.

The sync's side is :func:`walk`; the child runs :func:`main` (``python -m
nexusmem_core.walker``), reads its job from argv and writes length-prefixed ``marshal`` frames
to stdout: ``("commits", rows, files)`` batches, then ``("walked", touched, skipped)`` (the
newest commit time of every path it saw, and the records it could not read), then
``("done",)``; or ``("error", kind, message)`` instead.

Only worth its start-up (~0.1 s of the other core) on a long history: :func:`worth_it`.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Node

__all__ = ["MIN_COMMITS", "Job", "main", "walk", "worth_it"]

# A history shorter than this is walked in process: the second interpreter's start-up and
# imports (~0.1 s) cost about what parsing this many commits does.
MIN_COMMITS = 2000
FRAME_ROWS = 1000  # rows a frame holds at most...
FRAME_CHARS = 4 << 20  # ...and characters of body: a frame is held whole on both sides
_HEADER = struct.Struct("<I")
PIPE_BYTES = 1 << 20


@dataclass
class Job:
    """What the child walks (``rev`` with ``since``, as the sync's walk) and how it builds
    the commits' nodes; ``now`` is their record time."""

    root: str
    project_id: str
    rev: str
    since: str | None
    max_chars: int
    now: int


async def worth_it(root: Path, head: str) -> bool:
    """Whether ``head``'s history holds at least :data:`MIN_COMMITS` commits (counting stops
    there: a count of the whole of a 50k-commit history costs 0.3 s)."""
    from .collectors.git import git

    count = await git(root, "rev-list", "--count", f"--max-count={MIN_COMMITS}", head)
    return int(count.strip() or 0) >= MIN_COMMITS


@contextlib.asynccontextmanager
async def walk(job: Job) -> AsyncIterator[AsyncIterator[tuple[Any, ...]] | None]:
    """Start the child on ``job``; yield its frames (None when no process can be started:
    the caller walks in process). Its errors are raised from the frames as the in-process
    walk raises them. Leaving early closes its pipe: the child ends at its next write."""
    import anyio
    from anyio.streams.buffered import BufferedByteReceiveStream

    command = [sys.executable, "-P", "-m", "nexusmem_core.walker", json.dumps(asdict(job))]
    try:
        process = await anyio.open_process(command, stdin=subprocess.DEVNULL, stderr=None)
    except OSError:
        yield None
        return
    async with process:
        assert process.stdout is not None
        stream = BufferedByteReceiveStream(process.stdout)

        async def frames() -> AsyncIterator[tuple[Any, ...]]:
            while True:
                try:
                    size = _HEADER.unpack(await stream.receive_exactly(_HEADER.size))[0]
                    frame = marshal.loads(await stream.receive_exactly(size))
                except (anyio.IncompleteRead, anyio.EndOfStream, ValueError, EOFError):
                    code = await process.wait()
                    raise _failed(f"it ended without finishing (exit code {code})") from None
                if frame[0] == "done":
                    return
                if frame[0] == "error":
                    raise _error(frame[1], frame[2])
                yield frame

        try:
            yield frames()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await process.aclose()  # its pipe closed, the child ends at its next write
            raise


def _failed(why: str) -> Exception:
    from .errors import NexusMemError

    return NexusMemError(f"the history walk's second process failed: {why}")


def _error(kind: str, message: str) -> Exception:
    """The exception the in-process walk would have raised."""
    from .errors import GitError, GitNotFoundError

    if kind == "git":
        return GitError(message)
    if kind == "git-missing":
        return GitNotFoundError(message)
    return _failed(message)


# --- the child ------------------------------------------------------------------------------


def main() -> None:
    """The child: walk the job of argv[1], write its frames to stdout."""
    out = sys.stdout.buffer
    _widen(out)
    try:
        _walk(Job(**json.loads(sys.argv[1])), lambda frame: _send(out, frame))
        _send(out, ("done",))
    except BrokenPipeError:
        pass  # the sync is gone or left early: nothing to tell it
    except BaseException as err:  # every failure is a frame: never a traceback on stderr
        from .errors import GitError, GitNotFoundError

        kinds: dict[type[BaseException], str] = {GitError: "git", GitNotFoundError: "git-missing"}
        kind = kinds.get(type(err), "internal")
        message = str(err) if kind != "internal" else f"{type(err).__name__}: {err}"
        with contextlib.suppress(BrokenPipeError):
            _send(out, ("error", kind, message))
        sys.exit(1)
    finally:
        with contextlib.suppress(BrokenPipeError, ValueError):
            out.flush()


def _widen(out: IO[bytes]) -> None:
    """Let the pipe hold a whole frame or two (Linux: 64 KiB by default), so the walk goes
    on while the sync is busy writing the frame before."""
    setpipe = getattr(__import__("fcntl"), "F_SETPIPE_SZ", None) if os.name == "posix" else None
    if setpipe is not None:
        with contextlib.suppress(OSError):  # past /proc/sys/fs/pipe-max-size: keep the default
            __import__("fcntl").fcntl(out.fileno(), setpipe, PIPE_BYTES)


def _send(out: IO[bytes], frame: tuple[Any, ...]) -> None:
    data = marshal.dumps(frame)
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def _walk(job: Job, send: Any) -> None:
    from .collectors.git import parse_record, walk_args
    from .ingest import COMMIT_BATCH, commit_batch

    frames = _Frames(job.now, send)
    touched: dict[str, int] = {}
    skipped = 0
    batch = []
    git = _Git(Path(job.root), walk_args(job.rev, job.since))
    for record in _records(git.chunks()):
        commit = parse_record(record)
        if commit is None:
            skipped += 1
            continue
        for _, path in commit.changes:
            touched.setdefault(path, commit.ts)
        batch.append(commit)
        if len(batch) == COMMIT_BATCH:
            frames.add(commit_batch(job.project_id, batch, job.max_chars))
            batch = []
    frames.add(commit_batch(job.project_id, batch, job.max_chars))
    git.check()
    frames.flush()
    send(("walked", touched, skipped))


class _Frames:
    """Nodes gathered into frames of rows, sent when full."""

    def __init__(self, now: int, send: Any) -> None:
        self.now, self.send = now, send
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
            self.send(("commits", rows, files))
        self.nodes, self.chars = [], 0


def _records(chunks: Iterable[bytes]) -> Iterator[bytes]:
    from .collectors.git import Records

    records = Records()
    for chunk in chunks:
        yield from records.feed(chunk)
    yield from records.end()


class _Git:
    """A git run whose output is read as it comes."""

    def __init__(self, root: Path, args: list[str]) -> None:
        from .collectors.git import GIT_MISSING, git_env
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

    def chunks(self) -> Iterator[bytes]:
        assert self.process.stdout is not None
        read = self.process.stdout.read1  # type: ignore[attr-defined]  # a BufferedReader
        while chunk := read(1 << 16):
            yield chunk

    def check(self) -> None:
        """Raise GitError as git_stream does, when git failed."""
        from .errors import GitError

        assert self.process.stderr is not None
        errors = self.process.stderr.read()
        if (code := self.process.wait()) != 0:
            lines = errors.decode("utf-8", "replace").strip().splitlines()
            first = lines[0] if lines else code
            raise GitError(f"git {self.args[0]} failed in {self.root}: {first}")


if __name__ == "__main__":
    main()
