"""Git parsing: origins, signal, and records whose messages contain the separator."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from nexusmem_core.collectors import git as git_module
from nexusmem_core.collectors.git import (
    MARK,
    Commit,
    _split,
    commit_signal,
    git_ahead,
    git_stream,
    normalize_origin,
    parse_record,
    read_repo,
)
from nexusmem_core.errors import GitError, UsageError

from ..conftest import Repo


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widget.git",
        "https://github.com/acme/widget",
        "https://user:token@github.com/Acme/Widget.git/",
        "ssh://git@github.com:22/acme/widget.git",
    ],
)
def test_origins_normalize_to_one_identity(url: str):
    assert normalize_origin(url) == "github.com/acme/widget"


def make(subject: str, body: str = "", parents: int = 1) -> Commit:
    return Commit("a" * 40, ["b" * 40] * parents, 0, "x", f"{subject}\n\n{body}".strip())


def test_signal_orders_commit_types():
    fix = commit_signal(make("fix: crash on empty input", "Explains why. " * 20))
    feat = commit_signal(make("feat(api): add export"))
    chore = commit_signal(make("chore: tidy"))
    bump = commit_signal(make("chore(deps): bump lodash from 4.1 to 4.2"))
    merge = commit_signal(make("Merge branch 'x'", parents=2))
    assert fix > feat > chore > bump
    assert merge < chore
    assert commit_signal(make("fix: x", "long " * 60)) > commit_signal(make("fix: x"))


def test_a_plain_subject_that_reports_a_fix_weighs_as_one():
    plain = commit_signal(make("Add the export button"))
    for subject in (
        "Fixing issue for HEAD method and gziped response (#2666)",
        "Minor bugfix to CacheControl datastructure",
        "Fix #630: Bash completion for nested commands broken",
        "Reverted the cache change",
    ):
        assert commit_signal(make(subject)) > plain, subject
    assert commit_signal(make("Prefix bash functions with the root command name")) == plain


def test_a_marker_inside_a_message_stays_in_that_message():
    sha1, sha2 = "1" * 40, "2" * 40
    record1 = (
        f"{sha1}\x00\x001700000000\x00me\x00subject\n\nbody ".encode()
        + MARK
        + b" more body\x00\x00\nM\x00a.txt\x00"
    )
    record2 = f"{sha2}\x00{sha1}\x001700000001\x00me\x00second\x00\x00\nA\x00b.txt\x00".encode()
    records = _split(MARK + record1 + MARK + record2)
    commits = [parse_record(r) for r in records]
    assert [c.sha for c in commits] == [sha1, sha2]
    assert "more body" in commits[0].message
    assert commits[0].changes == [("M", "a.txt")]
    assert commits[1].parents == [sha1]


@pytest.mark.parametrize("path", ["a\x00b", "a\ud800b"], ids=["nul", "surrogate"])
async def test_a_repository_path_no_file_can_have_is_a_one_line_usage_error(path: str):
    # Every adapter's path meets git here; the CLI prints the message as its one line.
    with pytest.raises(UsageError) as caught:
        await read_repo(Path(path))
    message = str(caught.value)
    assert message.startswith(f"the repository path {path!r} contains")
    assert message.endswith("pass the repository's real path") and "\n" not in message


def _patch_args() -> list[str]:
    return ["log", "-p", "--no-color", "--format=%H", "HEAD", "--"]


async def _read(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


async def test_git_started_ahead_gives_what_it_would_have_streamed(repo: Repo):
    """The patches a first sync starts early are the bytes git_stream reads, in order, even
    once they have outgrown the read-ahead buffer (then git waits for the reader)."""
    for n in range(30):
        repo.commit(f"feat: step {n}", {f"src/m{n}.py": "x = 1\n" * 4000})
    streamed = await _read(git_stream(repo.path, *_patch_args()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(git_module, "AHEAD_CHUNKS", 2)
        async with git_ahead(repo.path, *_patch_args()) as output:
            ahead = await _read(output)
    assert len(streamed) > 10 * 65_536  # more than two chunks: git waited at least once
    assert ahead == streamed


async def test_git_started_ahead_fails_where_its_output_is_read(repo: Repo):
    async with git_ahead(repo.path, "log", "-p", "no-such-revision", "--") as output:
        with pytest.raises(GitError, match="no-such-revision"):
            await _read(output)


async def test_leaving_before_reading_stops_git(repo: Repo):
    """A sync that needs no diffs after all leaves the block unread: the git started ahead,
    blocked on a full buffer, is stopped rather than waited for (which would hang)."""
    for n in range(10):
        repo.commit(f"feat: step {n}", {f"src/m{n}.py": "x = 1\n" * 4000})
    with pytest.MonkeyPatch.context() as patch, anyio.fail_after(60):  # a hang fails, slowly
        patch.setattr(git_module, "AHEAD_CHUNKS", 1)
        async with git_ahead(repo.path, *_patch_args()):
            await anyio.sleep(0.2)  # the pump fills the buffer and blocks on it


async def test_a_reader_cancelled_mid_stream_leaves_git_waited_for(repo: Repo):
    """A sync whose write fails cancels the walk reading git. git is then stopped and waited
    for before its transport closes: closed first, the transport polls the child and may
    reap it before the event loop's watcher thread, which then writes "Unknown child process
    pid ..." to stderr under the sync's one-line error."""
    import asyncio.base_subprocess as base

    for n in range(10):
        repo.commit(f"feat: step {n}", {f"src/m{n}.py": "x = 1\n" * 4000})
    early: list[object] = []
    close = base.BaseSubprocessTransport.close

    def watched(transport: base.BaseSubprocessTransport) -> None:
        if transport._returncode is None:  # its end not seen yet
            early.append(transport)
        close(transport)

    with pytest.MonkeyPatch.context() as patch, anyio.fail_after(60):
        patch.setattr(base.BaseSubprocessTransport, "close", watched)
        with anyio.CancelScope() as scope:
            async with contextlib.aclosing(git_stream(repo.path, *_patch_args())) as chunks:
                async for _ in chunks:
                    scope.cancel()  # the next read, inside git_stream, is cancelled
    assert scope.cancelled_caught
    assert early == []


async def test_an_error_before_the_output_is_read_comes_out_as_itself(repo: Repo):
    """A history walk that fails while the patches' git runs ahead: its own error reaches the
    caller (a task group would wrap it in an ExceptionGroup, which no one-line error names)."""
    with pytest.raises(GitError, match="the walk failed"):
        async with git_ahead(repo.path, *_patch_args()):
            raise GitError("the walk failed")
