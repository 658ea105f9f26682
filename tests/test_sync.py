"""Sync: idempotent, incremental, safe across rebases, and honest about odd repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core import sync as sync_module
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.errors import NotInitialisedError

from .conftest import Repo


async def snapshot(engine: Engine) -> list[tuple]:
    return await engine.db.fetchall(
        "select id, kind, ref, title, body, ts, created_at, signal, content_hash, seq "
        "from nodes order by id"
    )


async def test_first_sync_records_commits_diffs_and_doc_sections(engine: Engine, repo: Repo):
    report = await handlers.sync(engine)
    assert report.full_walk
    assert report.commits == 4
    kinds = dict(await engine.db.fetchall("select kind, count(*) from nodes group by kind"))
    assert kinds["git_commit"] == 4
    # retry.py twice, README.md, VERSION, guide.rst: one node per changed file.
    assert kinds["file_diff"] == 5
    refs = {
        r for (r,) in await engine.db.fetchall("select ref from nodes where kind = 'doc_section'")
    }
    assert refs == {
        "README.md#Project",
        "README.md#Install",
        "docs/guide.rst#Guide",
        "docs/guide.rst#Why BM25 first",
    }


async def test_resync_changes_no_row(engine: Engine):
    await handlers.sync(engine)
    before = await snapshot(engine)
    report = await handlers.sync(engine)
    assert (report.commits, report.diffs, report.docs_sections, report.removed) == (0, 0, 0, 0)
    assert not report.full_walk
    assert await snapshot(engine) == before


async def test_new_commits_are_walked_incrementally(engine: Engine, repo: Repo):
    await handlers.sync(engine)
    repo.commit("fix: handle an empty upload", {"src/retry.py": "RETRY_BUDGET = 5\n"})
    report = await handlers.sync(engine)
    assert not report.full_walk
    assert (report.commits, report.diffs) == (1, 1)


async def test_rebase_then_sync_walks_again_without_duplicates(engine: Engine, repo: Repo):
    repo.commit("feat: first draft", {"a.txt": "one\n"})
    await handlers.sync(engine)
    repo.git("commit", "-q", "--amend", "-m", "feat: first draft, reworded")
    report = await handlers.sync(engine)
    assert report.full_walk  # the old cursor is no longer an ancestor of HEAD
    titles = [
        t for (t,) in await engine.db.fetchall("select title from nodes where kind = 'git_commit'")
    ]
    assert titles.count("feat: first draft, reworded") == 1
    # The rewritten commit's node stays (it describes a real event); nothing is duplicated.
    assert len(titles) == len(
        set(await engine.db.fetchall("select ref from nodes where kind = 'git_commit'"))
    )
    again = await handlers.sync(engine)
    assert (again.commits, again.diffs) == (0, 0)


async def test_doc_sections_that_disappear_are_forgotten(engine: Engine, repo: Repo):
    await handlers.sync(engine)
    repo.commit("docs: trim", {"README.md": "# Project\n\nIntro text only.\n"})
    report = await handlers.sync(engine)
    assert report.removed == 1
    refs = {
        r
        for (r,) in await engine.db.fetchall(
            "select ref from nodes where kind = 'doc_section' and grp = 'README.md'"
        )
    }
    assert refs == {"README.md#Project"}
    repo.git("rm", "-q", "docs/guide.rst")
    repo.commit("docs: drop the guide")
    await handlers.sync(engine)
    assert not await engine.db.fetchall("select 1 from nodes where grp = 'docs/guide.rst'")


async def test_unchanged_doc_files_are_not_parsed_again(engine: Engine, repo: Repo):
    await handlers.sync(engine)
    repo.commit("feat: unrelated", {"src/other.py": "x = 1\n"})
    report = await handlers.sync(engine)
    assert report.docs_files_parsed == 0


async def test_empty_repository_syncs_to_an_empty_memory(settings: Settings, make_repo):
    repo = make_repo("empty")
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine)
        status = await handlers.status(engine)
    assert report.commits == 0 and status.nodes == 0 and status.head is None


async def test_non_utf8_commit_messages_and_file_names_are_kept(settings: Settings, make_repo):
    repo = make_repo("latin1")
    repo.git("config", "i18n.commitEncoding", "ISO-8859-1")
    name = b"caf\xe9.txt"
    repo.write(name, b"caf\xe9 au lait\n")
    repo.commit(b"fix: caf\xe9 crash on \xff\xfe bytes")
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        rows = await engine.db.fetchall("select kind, title, ref from nodes order by kind")
        response = await handlers.search(engine, "crash bytes")
    assert [kind for kind, _, _ in rows] == ["file_diff", "git_commit"]
    commit_title = rows[1][1]
    assert commit_title.startswith("fix: caf") and "crash" in commit_title
    assert response.results and response.results[0].kind in ("git_commit", "file_diff")


async def test_rebuild_replaces_the_memory_in_one_step(engine: Engine):
    await handlers.sync(engine)
    before = {row[0] for row in await snapshot(engine)}
    report = await handlers.sync(engine, rebuild=True)
    assert report.rebuilt and report.full_walk
    assert {row[0] for row in await snapshot(engine)} == before


async def test_failed_sync_leaves_the_previous_memory_intact(
    engine: Engine, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    await handlers.sync(engine)
    before = await snapshot(engine)
    repo.commit("feat: more", {"b.txt": "b\n"})

    async def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(sync_module, "_sync_docs", broken)
    with pytest.raises(RuntimeError):
        await handlers.sync(engine, rebuild=True)
    assert await snapshot(engine) == before


async def test_since_limits_the_first_walk(settings: Settings, repo: Repo):
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine, since="2026-01-04")
    assert report.commits == 2  # the chore on Jan 4 and the docs commit on Jan 5


async def test_opening_an_uninitialised_repository_is_not_initialised(
    settings: Settings, repo: Repo
):
    with pytest.raises(NotInitialisedError, match="has no NexusMem memory yet"):
        async with open_engine(settings, repo.path):
            pass


async def test_two_clones_of_one_origin_share_a_project_id(
    settings: Settings, make_repo, tmp_path: Path
):
    a, b = make_repo("a"), make_repo("b")
    a.git("remote", "add", "origin", "git@github.com:Acme/Widget.git")
    b.git("remote", "add", "origin", "https://github.com/acme/widget")
    async with (
        open_engine(settings, a.path, create=True) as ea,
        open_engine(settings, b.path, create=True) as eb,
    ):
        assert ea.project_id == eb.project_id == "github.com/acme/widget"


async def test_full_text_index_matches_the_nodes_after_every_kind_of_sync(
    engine: Engine, repo: Repo
):
    async def check() -> None:
        # FTS5 compares its index with the content table and raises if they disagree.
        await engine.db.execute("insert into nodes_fts(nodes_fts) values ('integrity-check')")

    await handlers.sync(engine)  # bulk: the index is built once at the end
    await check()
    repo.commit("docs: rewrite", {"README.md": "# Project\n\nNew intro.\n\n## Usage\n\nRun.\n"})
    await handlers.sync(engine)  # incremental: triggers keep the index in step
    await check()
    await handlers.sync(engine, rebuild=True)
    await check()
    response = await handlers.search(engine, "usage run")
    assert any(r.ref == "README.md#Usage" for r in response.results)


def test_a_database_error_while_writing_is_one_line_and_changes_nothing(repo):
    import sqlite3

    from .conftest import run_cli

    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    db = repo.path / ".nexusmem" / "memory.db"
    with sqlite3.connect(db) as conn:
        before = conn.execute("select count(*) from nodes").fetchone()[0]
        conn.execute(
            "create trigger refuse before insert on nodes begin "
            "select raise(abort, 'disk says no'); end"
        )
    repo.commit("feat: one more", {"b.txt": "b"})
    out = run_cli("sync", "-q", "--no-embed", "-C", str(repo.path))
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "disk says no" in out.stderr
    assert "Traceback" not in out.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from nodes").fetchone()[0] == before


def test_secrets_in_commits_patches_and_the_remote_url_never_reach_the_database(repo):
    from .conftest import run_cli

    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    repo.git("remote", "add", "origin", f"https://bob:{token}@github.com/acme/app.git")
    repo.commit(f"chore: rotate the CI token\n\nold one was {token}", {".env": f"TOKEN={token}\n"})
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    for name in ("memory.db", "memory.db-wal"):
        path = repo.path / ".nexusmem" / name
        if path.exists():
            assert token.encode() not in path.read_bytes(), name
    out = run_cli("query", "-C", str(repo.path), "rotate the CI token").stdout
    assert "[REDACTED]" in out and token not in out


@pytest.mark.parametrize("since", ["notadate", "2026-13-45", "2026-02-30", "3 fortnights ago"])
def test_an_unreadable_since_is_one_line_and_ingests_nothing(repo: Repo, since: str):
    import sqlite3

    from .conftest import run_cli

    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    out = run_cli("sync", "--no-embed", "--since", since, "-C", str(repo.path))
    assert out.returncode == 1
    assert out.stderr.startswith("error: --since: ") and repr(since) in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    with sqlite3.connect(repo.path / ".nexusmem" / "memory.db") as conn:
        assert conn.execute("select count(*) from cursors where source = 'git'").fetchone() == (0,)
    later = run_cli("sync", "--no-embed", "--json", "-C", str(repo.path))
    assert json.loads(later.stdout)["commits"] == 4


@pytest.mark.parametrize("since", ["2026-01-04", "2026-01-04T00:00:00", "@1767484800"])
async def test_since_reads_a_date_a_time_or_unix_seconds(settings: Settings, repo: Repo, since):
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine, since=since, embed=False)
    assert report.commits == 2


async def test_a_since_sync_leaves_the_older_commits_to_the_next_sync(engine: Engine, repo: Repo):
    first = await handlers.sync(engine, since="2026-01-04", embed=False)
    assert first.commits == 2
    later = await handlers.sync(engine, embed=False)
    titles = {
        t for (t,) in await engine.db.fetchall("select title from nodes where kind = 'git_commit'")
    }
    assert later.commits == 2 and len(titles) == 4
    assert "feat: add the retry loop" in titles


async def test_a_since_sync_after_a_plain_one_does_not_skip_what_came_between(
    engine: Engine, repo: Repo
):
    await handlers.sync(engine, embed=False)
    repo.commit("fix: an old-dated fix", {"a.txt": "a\n"}, days=1)  # 2026-01-06
    repo.commit("feat: a new feature", {"b.txt": "b\n"}, days=10)  # 2026-01-16
    narrow = await handlers.sync(engine, since="2026-01-10", embed=False)
    assert narrow.commits == 1
    later = await handlers.sync(engine, embed=False)
    assert later.commits == 1  # the fix the --since sync passed over
    again = await handlers.sync(engine, embed=False)
    assert (again.commits, again.diffs) == (0, 0)


def test_a_sync_with_nothing_new_runs_no_git_log(repo: Repo, tmp_path: Path):
    """Every git run costs a no-op sync a process start: with HEAD where the cursor is, the
    commit and diff walks are not run at all, and each git question is asked once."""
    from .conftest import run_cli

    assert run_cli("init", cwd=repo.path).returncode == 0
    assert run_cli("sync", cwd=repo.path).returncode == 0
    trace = tmp_path / "git-trace"

    def runs() -> list[str]:
        trace.unlink(missing_ok=True)
        done = run_cli("sync", cwd=repo.path, env={"GIT_TRACE": str(trace)})
        assert done.returncode == 0, done.stderr
        lines = trace.read_text().splitlines()
        return [line.split("built-in: git ", 1)[1] for line in lines if "built-in: git " in line]

    idle = runs()
    assert not [run for run in idle if run.startswith(("log", "merge-base"))], idle
    assert len(idle) <= 6, idle  # repo (twice: opened, then under the write lock), docs, tree
    repo.commit("fix: one more", {"src/more.py": "x = 1\n"})
    walked = runs()
    assert [run for run in walked if run.startswith("log")], walked  # a new commit is walked
