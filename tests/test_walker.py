"""A long history walked in a second process: the memory it leaves is the in-process walk's."""

from __future__ import annotations

import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from nexusmem_core import handlers, walker
from nexusmem_core import sync as sync_module
from nexusmem_core.collectors.diffs import patch_args
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.errors import GitError, NexusMemError
from nexusmem_core.store import fts

from .conftest import Repo, run_cli

TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
# Every node's files, by node id (a walk here and one in the child give the same ids).
FILES = "select n.id, f.path from node_files f join nodes n on n.seq = f.node_seq order by 1, 2"


def busy_repo(make_repo: Callable[[str], Repo]) -> Repo:
    """A history with what parsing and redaction must get right: a secret in a message and in
    a path, CJK, identifiers, a merge, a rename, a deletion, an empty message, a non-UTF-8
    message, a doc file dated by its last commit, a changelog, and code with imports."""
    repo = make_repo("busy")
    repo.commit(
        "feat: add the uploader\n\nUploadRetryPolicy decides the backoff.",
        {
            "src/app/upload.py": "from app import retry\n",
            "src/app/retry.py": "BUDGET = 3\n",
            "src/app/__init__.py": "",
            "README.md": "# App\n\nUploads things.\n\n## Install\n\npip install app\n",
            "CHANGELOG.md": "# Changelog\n\n## 1.0\n\n- first release\n",
        },
    )
    repo.commit(f"chore: rotate the token\n\nthe old one was {TOKEN}", {".env": "A=1\n"})
    repo.commit("fix: 修复缓存失效导致的崩溃", {"src/app/retry.py": "BUDGET = 5\n"})
    repo.commit("docs: say why", {f"notes/{TOKEN}.txt": "x\n", "README.md": "# App\n\nWhy.\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("feat: side work on fetchRemoteConfig", {"src/app/side.py": "import os\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("perf: faster", {"src/app/upload.py": "from app import retry, side\n"})
    repo.git("merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")
    repo.git("mv", "src/app/side.py", "src/app/remote.py")
    repo.commit("refactor: rename side to remote")
    repo.git("rm", "-q", ".env")
    repo.clock += 3600
    repo.git("commit", "-q", "--allow-empty-message", "-m", "")  # an empty message
    repo.commit(b"fix: caf\xe9 latin-1 message", {"CHANGELOG.md": "# Changelog\n\n## 1.1\n"})
    for i in range(6):
        repo.commit(f"test: case {i} for HTTPError handling", {f"tests/test_{i}.py": f"{i}\n"})
    return repo


async def memory(settings: Settings, root: Path, since: str | None = None) -> tuple:
    """Sync a fresh memory of ``root``; what it stores, and what the report counts."""
    shutil.rmtree(root / ".nexusmem", ignore_errors=True)
    async with open_engine(settings, root, create=True) as engine:
        report = await handlers.sync(engine, since=since, embed=False)
        db = engine.db
        nodes = await db.fetchall(
            "select id, project_id, kind, source, ref, grp, title, body, paths, ts, signal, "
            "provenance, content_hash, meta, cjk, names from nodes order by id"
        )
        files = await db.fetchall(FILES)
        docs = await db.fetchall("select path, content_hash, ts from doc_files order by 1")
        edges = await db.fetchall("select * from import_edges order by 1, 2, 3")
        cursors = await db.fetchall(
            "select source, value from cursors where source not in ('last_sync') order by 1"
        )
        # What the word index holds, by node id (seqs follow the order rows were written in).
        await db.execute("insert into nodes_fts(nodes_fts, rank) values ('integrity-check', 1)")
        await db.execute(
            "create virtual table temp.words using fts5vocab(main, nodes_fts, 'instance')"
        )
        words = await db.fetchall(
            "select n.id, w.term, w.col, w.offset from temp.words w join nodes n "
            "on n.seq = w.doc order by 1, 2, 3, 4"
        )
        await db.execute("drop table temp.words")
    counts = (
        report.commits,
        report.diffs,
        report.docs_sections,
        report.git_skipped,
        report.import_edges,
        report.reverts,
    )
    return counts, nodes, files, docs, edges, cursors, words


@pytest.mark.parametrize("since", [None, "2026-01-06"])
async def test_a_walk_in_a_second_process_stores_what_the_walk_in_process_stores(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch, since: str | None
):
    repo = busy_repo(make_repo)
    monkeypatch.setattr(walker, "MIN_COMMITS", 10**6)
    here = await memory(settings, repo.path, since)
    walked = []
    write_walked = sync_module._write_walked

    async def spy(*args, **kwargs):
        walked.append(True)
        await write_walked(*args, **kwargs)

    monkeypatch.setattr(walker, "MIN_COMMITS", 2)
    monkeypatch.setattr(sync_module, "_write_walked", spy)
    monkeypatch.setattr(fts, "EARLY_ROWS", 3)  # the word index filled while the rows come
    stages: list[str] = []
    write_all = sync_module._write_all

    async def write(db, nodes, stage, *args):
        stages.append(stage)
        return await write_all(db, nodes, stage, *args)

    monkeypatch.setattr(sync_module, "_write_all", write)
    early = []
    index_step = fts._index_step

    def step(conn, indexed: int, least: int, marked: bool) -> int:
        high = index_step(conn, indexed, least, marked)
        early.append(least == 3 and high > indexed)
        return high

    monkeypatch.setattr(fts, "_index_step", step)
    beside = await memory(settings, repo.path, since)
    assert walked  # the second process walked it
    assert any(early)  # and rows were indexed before it ended
    assert "diffs" not in stages  # the file diffs came from the second process too
    assert beside == here
    counts, nodes, *_, words = beside
    assert counts[0] >= 6 and counts[1] > 0 and counts[2] > 0 and words
    assert not any(TOKEN in str(value) for row in nodes for value in row)


async def test_a_short_history_is_walked_in_process(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    async def never(*args, **kwargs):
        raise AssertionError("a second process for four commits")

    monkeypatch.setattr(sync_module, "_write_walked", never)
    counts, *_ = await memory(settings, repo.path)
    assert counts[0] == 4


async def test_without_a_second_process_the_walk_happens_here(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    repo = busy_repo(make_repo)
    here = await memory(settings, repo.path)
    monkeypatch.setattr(walker, "MIN_COMMITS", 2)
    monkeypatch.setattr(sys, "executable", str(repo.path / "no-such-python"))
    assert await memory(settings, repo.path) == here


async def test_a_second_process_that_dies_fails_the_sync_in_one_line_and_stores_nothing(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    repo = busy_repo(make_repo)
    dying = tmp_path / "python"
    dying.write_text("#!/bin/sh\nread job\nexit 3\n")  # takes its job, then dies
    dying.chmod(dying.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(walker, "MIN_COMMITS", 2)
    monkeypatch.setattr(sys, "executable", str(dying))
    async with open_engine(settings, repo.path, create=True) as engine:
        with pytest.raises(NexusMemError) as failed:
            await handlers.sync(engine, embed=False)
        assert str(failed.value) == (
            "the history walk's second process failed: it ended without finishing (exit code 3)"
        )
        assert await engine.db.fetchone("select count(*) from nodes") == (0,)
        assert await engine.db.fetchone("select count(*) from cursors where source = 'git'") == (0,)


async def test_a_git_that_fails_in_the_second_process_is_the_walks_git_error(repo: Repo):
    job = walker.Job(str(repo.path), "p", "f" * 40, None, 1000, 0)
    with pytest.raises(GitError, match=r"^git log failed in .*: fatal: bad object f{40}"):
        async with walker.walk(job) as frames:
            assert frames is not None
            async for _ in frames:
                pass


async def test_leaving_a_walk_early_stops_the_second_process(
    make_repo, monkeypatch: pytest.MonkeyPatch
):
    repo = busy_repo(make_repo)
    long_history(repo, 3000)  # three frames: the child is still walking when the first comes
    head = repo.git("rev-parse", "HEAD").strip()
    started = []
    start = walker.start

    def spy():
        started.append(start())
        return started[-1]

    monkeypatch.setattr(walker, "start", spy)
    job = walker.Job(str(repo.path), "p", head, None, 1000, 0)
    with pytest.raises(LookupError):
        async with walker.walk(job) as frames:
            assert frames is not None
            async for frame in frames:
                assert frame[0] == "commits"
                raise LookupError("enough")
    (child,) = started
    assert child.returncode is not None  # ended and waited for: not even a zombie is left


def long_history(repo: Repo, commits: int) -> None:
    """``commits`` more commits on ``main``, an hour apart, in one ``git fast-import``."""
    tip = repo.git("rev-parse", "HEAD").strip()
    stream = bytearray()
    for n in range(commits):
        repo.clock += 3600
        message = f"fix: case {n} of the parser's fetchRemoteConfig path".encode()
        body = f"value = {n}\n".encode()
        stream += b"commit refs/heads/main\n"
        stream += f"committer Test Author <test@example.com> {repo.clock} +0000\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        if n == 0:
            stream += f"from {tip}\n".encode()
        stream += f"M 100644 inline src/mod{n % 40}.py\n".encode()
        stream += b"data %d\n%s\n" % (len(body), body)
    repo.git("fast-import", "--quiet", input=bytes(stream))
    repo.git("reset", "-q", "--hard", "main")


def stored(db: Path) -> tuple[list[tuple], list[tuple]]:
    with closing(sqlite3.connect(db)) as conn:
        nodes = conn.execute(
            "select id, kind, ref, grp, title, body, paths, ts, signal, content_hash, meta, "
            "cjk, names from nodes order by id"
        ).fetchall()
        files = conn.execute(FILES).fetchall()
    return nodes, files


async def test_nexusmem_sync_of_a_long_first_history_stores_what_a_walk_in_process_stores(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    repo = busy_repo(make_repo)
    long_history(repo, walker.PRESTART_COMMITS)
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    early = walker.prestart(repo.path)  # what the CLI does before it imports the rest
    assert early is not None
    walker.stop(early)
    done = run_cli("sync", "-q", "--no-embed", "-C", str(repo.path))
    assert done.returncode == 0 and done.stderr == ""
    by_cli = stored(repo.path / ".nexusmem" / "memory.db")
    monkeypatch.setattr(walker, "MIN_COMMITS", 10**6)
    await memory(settings, repo.path)
    assert stored(repo.path / ".nexusmem" / "memory.db") == by_cli
    assert len(by_cli[0]) > walker.PRESTART_COMMITS


def test_a_child_is_started_early_only_for_the_first_sync_of_a_long_history(make_repo):
    short = busy_repo(make_repo)
    assert run_cli("init", "-C", str(short.path)).returncode == 0
    assert walker.prestart(short.path) is None  # 16 commits: walked in process
    long = make_repo("long")
    long.commit("first", {"a.txt": "a\n"})
    long_history(long, walker.PRESTART_COMMITS)
    assert walker.prestart(long.path) is None  # no memory yet: `sync` will say so
    assert run_cli("init", "-C", str(long.path)).returncode == 0
    child = walker.prestart(long.path / "src")  # from inside the repository too
    assert child is not None and child.poll() is None
    walker.stop(child)
    assert child.returncode is not None  # ended and waited for
    assert run_cli("sync", "-q", "--no-embed", "-C", str(long.path)).returncode == 0
    assert walker.prestart(long.path) is None  # a later sync walks only what is new


@pytest.mark.parametrize("guessed", [False, True])
def test_a_child_given_no_job_ends_quietly(repo: Repo, guessed: bool):
    head = repo.git("rev-parse", "HEAD").strip()
    child = walker.start((str(repo.path), head) if guessed else None)
    assert child is not None and child.stdin is not None and child.stdout is not None
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    assert child.stdout.read() == b""
    child.stdout.close()


async def test_a_child_takes_over_the_walk_it_guessed_and_drops_a_wrong_guess(make_repo):
    """A child started with a guess walks before its job comes; the job's walk is what it
    sends, whether the guess was right, HEAD has moved since, or the guess named a folder
    that is not there."""
    repo = busy_repo(make_repo)
    head = repo.git("rev-parse", "HEAD").strip()
    older = repo.git("rev-parse", "HEAD~3").strip()
    job = walker.Job(str(repo.path), "p" * 64, head, None, 1000, 0)

    async def walked(guess: tuple[str, str] | None) -> tuple[list[str], list]:
        child = walker.start(guess)
        if guess is not None:
            await anyio.sleep(0.3)  # the job comes late: a guessed walk is parsed meanwhile
        ids, rest = [], []
        async with walker.walk(job, child) as frames:
            assert frames is not None
            async for frame in frames:
                if frame[0] == "commits":
                    ids += [row[0] for row in frame[1]]
                elif frame[0] == "walked":
                    rest.append(frame[1:])
        return sorted(ids), rest

    plain = await walked(None)
    assert len(plain[0]) == int(repo.git("rev-list", "--count", "HEAD"))
    assert await walked((str(repo.path), head)) == plain
    assert await walked((str(repo.path), older)) == plain
    assert await walked((str(repo.path / "gone"), head)) == plain  # a guess that cannot begin


async def test_a_child_given_the_project_makes_the_rows_of_its_job_before_it_comes(make_repo):
    """Given the project's id as well, a child guesses its whole job from the config as last
    validated and makes the commits' and the diffs' rows before it comes; what it sends is
    what a child given no guess sends, the record time the job's, whether the job is the
    one it planned or not (another project id, another body limit, no diffs)."""
    repo = busy_repo(make_repo)
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    head = repo.git("rev-parse", "HEAD").strip()
    with closing(sqlite3.connect(repo.path / ".nexusmem" / "memory.db")) as db:
        (pid,) = db.execute("select id from projects").fetchone()
    guess = (str(repo.path), head, pid)
    patches = patch_args(["-n", "200", head])
    job = walker.Job(str(repo.path), pid, head, None, 12000, 1234, patches=patches)

    async def walked(job: walker.Job, guess: tuple[str, ...] | None, wait: float = 0) -> tuple:
        child = walker.start(guess)
        await anyio.sleep(wait)  # the job comes late: the guessed rows are made meanwhile
        frames: dict[str, list] = {"commits": [], "diffs": []}
        early: dict = {}
        async with walker.walk(job, child) as stream:
            assert stream is not None
            async for frame in stream:
                if frame[0] == "walked":
                    early = frame[3]
                else:
                    frames[frame[0]] += [tuple(row) for row in frame[1]]
        return {k: sorted(v) for k, v in frames.items()}, early

    plain, told = await walked(job, None)
    assert plain["commits"] and plain["diffs"] and told == {"planned": False, "rows": 0}
    assert {row[10] for rows in plain.values() for row in rows} == {1234}  # the job's time
    # However long the job takes to come, the rows are the same; given time, some are made
    # before it (a loaded machine may give the child none: it is given more, up to 5 s).
    for wait in (0.3, 0.6, 1.2, 2.4, 4.8):
        rows, told = await walked(job, guess, wait)
        assert rows == plain and told["planned"]
        if told["rows"]:
            break
    assert told["rows"] > 0
    for other in (  # its commits' rows are made again
        walker.Job(str(repo.path), "p" * 64, head, None, 12000, 1234, patches=patches),
        walker.Job(str(repo.path), pid, head, None, 1000, 1234, patches=patches),
    ):
        expected, _ = await walked(other, None)
        assert await walked(other, guess, 0.3) == (expected, {"planned": False, "rows": 0})
    no_diffs = walker.Job(str(repo.path), pid, head, None, 12000, 1234)  # its diffs dropped
    rows, told = await walked(no_diffs, guess, 0.3)
    assert rows == {"commits": plain["commits"], "diffs": []} and not told["planned"]


def test_a_first_sync_gives_its_early_child_the_job_it_planned(make_repo):
    """What the child plans is what `nexusmem sync` asks of it (else it makes its rows for
    nothing): the sync says so at debug level."""
    long = make_repo("long")
    long.commit("first", {"a.txt": "a\n", "docs/guide.md": "# Guide\n\nHow.\n"})
    long_history(long, walker.PRESTART_COMMITS)
    assert run_cli("init", "-C", str(long.path)).returncode == 0
    done = run_cli(
        "sync", "-q", "--no-embed", "-C", str(long.path), env={"NEXUSMEM_LOG_LEVEL": "DEBUG"}
    )
    assert done.returncode == 0, done.stderr
    ended = [line for line in done.stderr.splitlines() if "walk.ended" in line]
    assert len(ended) == 1 and "planned=True" in ended[0], done.stderr


FORKED = """
import sys, threading, time, anyio
from nexusmem_core import walker

root, head = sys.argv[1], sys.argv[2]
idle = walker.prestart(root)  # given no job: it ends, and says nothing
for _ in range(500):  # its first step: a name of its own, for ps and top
    with open(f"/proc/{idle.pid}/comm") as comm:
        if (name := comm.read().strip()) == "nexusmem-walk":
            break
    time.sleep(0.01)
idle.stdin.close()
print(type(idle).__name__, name, threading.active_count(), idle.wait(), idle.stdout.read())
child = walker.prestart(root)
job = walker.Job(root, "p" * 64, head, None, 1000, 0)

async def main():
    ids = []
    async with walker.walk(job, child) as frames:
        async for frame in frames:
            if frame[0] == "commits":
                ids += [row[0] for row in frame[1]]
    return ids

ids = anyio.run(main)
print(type(child).__name__, len(ids), len(set(ids)), child.returncode is not None)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked on Linux only")
def test_the_early_child_is_forked_from_a_process_of_one_thread(make_repo):
    """`nexusmem sync` is one thread when it makes its child: forked, it has the sync's
    imports already, and walks as a started one does. A process with another thread
    running starts one instead (a lock held by that thread would stay held in a fork)."""
    long = make_repo("long")
    long.commit("first", {"a.txt": "a\n"})
    long_history(long, walker.PRESTART_COMMITS)
    assert run_cli("init", "-C", str(long.path)).returncode == 0
    head = long.git("rev-parse", "HEAD").strip()
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(long.path), head],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    idle, walked = done.stdout.splitlines()
    assert idle == "Forked nexusmem-walk 1 0 b''"
    count = walker.PRESTART_COMMITS + 1
    assert walked == f"Forked {count} {count} True"  # and reaped: no zombie is left
    stay = threading.Event()
    other = threading.Thread(target=stay.wait)
    other.start()
    try:
        child = walker.prestart(long.path)
        assert isinstance(child, subprocess.Popen)
        walker.stop(child)
    finally:
        stay.set()
        other.join()


def test_the_early_guess_never_fails_the_sync(make_repo, monkeypatch: pytest.MonkeyPatch):
    long = make_repo("long")
    long.commit("first", {"a.txt": "a\n"})
    long_history(long, walker.PRESTART_COMMITS)
    assert run_cli("init", "-C", str(long.path)).returncode == 0
    monkeypatch.setenv("PATH", "/nonexistent")  # no git to count with
    assert walker.prestart(long.path) is None
    assert walker.prestart(long.path / "no" / "such" / "folder") is None


async def test_the_childs_diffs_keep_to_a_commits_caps_and_count_the_rest(make_repo):
    """The walk's second process cuts the patches as the in-process walk does: a commit of
    more files than MAX_DIFFS makes MAX_DIFFS diffs, and the rest are counted."""
    from nexusmem_core.collectors.diffs import MAX_DIFFS

    repo = make_repo("wide")
    repo.commit("feat: many", {f"m/{i:04d}.py": f"V = {i}\n" for i in range(MAX_DIFFS + 20)})
    head = repo.git("rev-parse", "HEAD").strip()
    job = walker.Job(str(repo.path), "p" * 64, head, None, 12000, 0, patches=patch_args([head]))
    diffs, walked = 0, None
    async with walker.walk(job) as frames:
        assert frames is not None
        async for frame in frames:
            if frame[0] == "diffs":
                diffs += len(frame[1])
            elif frame[0] == "walked":
                walked = frame
    assert diffs == MAX_DIFFS
    assert walked is not None and walked[4] == 20
