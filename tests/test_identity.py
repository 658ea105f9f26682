"""A repository whose origin changed keeps its memory: nodes, links, judgements, the deny list
and vectors are carried over to the new project id, and ``status`` says so. An unrelated
repository's memory is never merged in."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path

from mcp import Client

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.models import Status, SyncReport, node_id
from nexusmem_core.store import vectors
from nexusmem_mcp.server import build_server

from .conftest import Repo, changed, run_cli
from .fake_ollama import FakeOllama
from .test_shell_sync import log_command

T0 = 1_767_400_000.0
OLD, NEW = "github.com/acme/widgets", "github.com/acme/gadgets"


def cli(repo: Repo, *args: str) -> str:
    out = run_cli(*args, "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    return out.stdout


async def status(settings: Settings, path: Path) -> Status:
    async with open_engine(settings, path, read_only=True) as engine:
        return await handlers.status(engine)


async def synced(settings: Settings, path: Path, **options: bool) -> SyncReport:
    async with open_engine(settings, path, create=True) as engine:
        return await handlers.sync(engine, embed=False, **options)


def rows_under(db: Path, pid: str) -> dict[str, int]:
    """How many rows each table holds for project ``pid``."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        tables = [
            t
            for (t,) in conn.execute("select name from sqlite_master where type = 'table'")
            if "project_id" in {c[1] for c in conn.execute(f"pragma table_info({t})")}
        ]
        return {
            t: conn.execute(f"select count(*) from {t} where project_id = ?", (pid,)).fetchone()[0]
            for t in tables
            if t != "project_aliases"
        }


async def test_a_renamed_origin_carries_everything_over(settings: Settings, repo: Repo, home: Path):
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    fix = repo.git("log", "--format=%H", "--grep", "raise the retry budget").strip()
    log_command(home, "npm whoami", repo.path, 1, T0)
    log_command(home, "npm whoami", repo.path, 0, T0 + 60)
    await synced(settings, repo.path, link_failures=True)
    async with open_engine(settings, repo.path) as engine:
        await handlers.review(engine, node_id(OLD, "git_commit", fix)[:12], "verified")
        await handlers.forget(engine, "hunter2-not-in-memory", apply=True)
    before = await status(settings, repo.path)
    assert before.project_id == OLD and before.chains["retry"] == 1

    repo.git("remote", "set-url", "origin", "https://github.com/acme/gadgets.git")
    waiting = cli(repo, "status")  # read-only: nothing moves yet, memory is read under the old id
    assert f"{before.nodes} node(s)" in waiting
    assert (
        "origin     changed from git@github.com:acme/widgets.git to "
        "https://github.com/acme/gadgets.git: the next sync carries "
        f"{before.nodes} node(s) over"
    ) in waiting
    repo.commit("feat: a new name on the box", {"NAME": "gadgets\n"})
    report = json.loads(cli(repo, "sync", "--no-embed", "--json"))
    assert report["commits"] == 1 and not report["full_walk"]  # the git cursor came along

    after = await status(settings, repo.path)
    assert after.project_id == NEW and after.project == "acme/gadgets"
    assert after.nodes == before.nodes + 2  # the new commit and its diff
    assert after.chains == before.chains
    assert after.identity.startswith(
        "changed from git@github.com:acme/widgets.git to https://github.com/acme/gadgets.git on "
    )
    assert after.identity.endswith(f"; {before.nodes} node(s) carried over")

    found = json.loads(cli(repo, "query", "--json", "why was the retry budget raised"))
    old_fix = next(r for r in found["results"] if r["ref"] == fix)
    assert old_fix["id"] == node_id(NEW, "git_commit", fix) and old_fix["trust"] == "verified"
    assert old_fix["capture"] == "backfilled"  # the first sync's time came along too
    async with open_engine(settings, repo.path, read_only=True) as engine:
        failed = await handlers.search(engine, "why did npm whoami fail", vector=False)
        denied = await handlers.deny_list(engine)
        assert (await handlers.status(engine)).identity == after.identity  # said once
    assert [r.link for r in failed.results[:2]] == [None, "retry"]
    assert len(denied) == 1  # the deny list came along

    db = repo.path / ".nexusmem" / "memory.db"
    assert not any(rows_under(db, OLD).values())
    under_new = rows_under(db, NEW)
    assert under_new["deny_list"] == 1 and under_new["links"] == 1
    (entry,) = json.loads((home / "projects.json").read_text())["projects"]
    assert entry["project_id"] == NEW


async def test_an_origin_added_later_keeps_what_was_recorded_by_path(
    settings: Settings, repo: Repo
):
    nodes = (await synced(settings, repo.path)).commits
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets")
    assert (await synced(settings, repo.path)).commits == 0
    after = await status(settings, repo.path)
    assert after.project_id == OLD and after.by_kind["git_commit"] == nodes
    assert after.identity.startswith("changed from no origin to https://github.com/acme/")


async def test_a_moved_checkout_without_origin_keeps_its_memory(
    settings: Settings, repo: Repo, tmp_path: Path, home: Path
):
    await synced(settings, repo.path)
    nodes = (await status(settings, repo.path)).nodes
    moved = tmp_path / "moved" / "project"
    moved.parent.mkdir()
    repo.path.rename(moved)
    await synced(settings, moved)
    after = await status(settings, moved)
    assert after.project_id == str(moved) and after.nodes == nodes
    assert f"{nodes} node(s) carried over" in after.identity
    roots = [e["root"] for e in json.loads((home / "projects.json").read_text())["projects"]]
    assert roots == [str(moved)]  # the entry at the old root followed


async def test_an_unrelated_repository_is_never_merged_in(settings: Settings, make_repo):
    """Another root and none of its commits: a copied database stays someone else's."""
    first = make_repo("first")
    first.commit("feat: the first project's parser", {"a.py": "A = 1\n"})
    await synced(settings, first.path)
    second = make_repo("second")
    second.commit("feat: the second project's renderer", {"b.py": "B = 2\n"})
    shutil.copytree(first.path / ".nexusmem", second.path / ".nexusmem")
    await synced(settings, second.path)
    mine = await status(settings, second.path)
    assert mine.nodes == 2 and mine.identity == ""
    async with open_engine(settings, second.path, read_only=True) as engine:
        assert (await handlers.search(engine, "parser", vector=False)).results == []
    db = second.path / ".nexusmem" / "memory.db"
    assert rows_under(db, str(first.path.resolve()))["nodes"] == 2  # left alone


async def test_the_mcp_server_follows_an_origin_changed_while_it_runs(
    settings: Settings, repo: Repo
):
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    root = {"project_root": str(repo.path)}
    async with Client(build_server(settings)) as client:
        first = await client.call_tool("sync_project", root)
        assert not first.is_error and first.structured_content["commits"] == 4
        repo.git("remote", "set-url", "origin", "https://github.com/acme/gadgets.git")
        again = await client.call_tool("sync_project", root)
        assert again.structured_content["commits"] == 0  # carried over, not walked again
        found = await client.call_tool("search_memory", {"query": "retry budget", **root})
        state = await client.call_tool("get_status", root)
    assert found.structured_content["results"]
    assert state.structured_content["project_id"] == NEW
    assert "node(s) carried over" in state.structured_content["identity"]


async def test_vectors_move_with_their_nodes_and_are_not_embedded_again(
    settings: Settings, repo: Repo
):
    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    # A long section: its passages are vectors of the project's too.
    repo.commit("docs: the guide", {"docs/guide.md": "# Guide\n\n" + "retry budget " * 300})
    with FakeOllama() as fake:
        wired = changed(settings, ollama_host=fake.url, embed_model=fake.model)
        async with open_engine(wired, repo.path, create=True) as engine:
            first = await handlers.sync(engine)
            assert first.vectors == "ok" and first.embedded > 0
            repo.git("remote", "set-url", "origin", "https://github.com/acme/gadgets.git")
            again = await handlers.sync(engine)
            (probe,) = await engine.embedder(for_query=True).embed(["retry budget"])
            hits = await vectors.knn(engine.db, NEW, probe, 50)
            stale = await vectors.knn(engine.db, OLD, probe, 50)
            passages = await engine.db.fetchall(
                f"select project_id, count(*) from {vectors.PASSAGE_TABLE} group by project_id"
            )
            response = await handlers.search(engine, "retry budget")
    assert again.embedded == 0 and again.vectors == "ok"
    assert len(hits) == first.embedded and stale == []
    assert [pid for pid, _ in passages] == [NEW] and passages[0][1] > 0
    assert response.vector == "used"


async def test_memory_orphaned_by_an_older_version_is_merged_without_duplicates(
    settings: Settings, repo: Repo, monkeypatch
):
    """An older NexusMem synced again under the new id, leaving the old memory orphaned: the
    carry-over keeps one node per event, with the judgement people made on the old one."""
    from nexusmem_core import identity

    repo.git("remote", "add", "origin", "https://github.com/acme/widgets.git")
    fix = repo.git("log", "--format=%H", "--grep", "raise the retry budget").strip()
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        await handlers.review(engine, node_id(OLD, "git_commit", fix)[:12], "rejected")
        total = (await engine.db.fetchone("select count(*) from nodes"))[0]
        async with engine.db.transaction():  # a file only the old node names
            await engine.db.execute(
                "insert into node_files select seq, 'NOTES.txt' from nodes where id = ?",
                (node_id(OLD, "git_commit", fix),),
            )
        files = await engine.db.fetchall(_FILES)
    repo.git("remote", "set-url", "origin", "https://github.com/acme/gadgets.git")
    with monkeypatch.context() as legacy:
        legacy.setattr(identity, "find_priors", _none)
        async with open_engine(settings, repo.path) as engine:
            await handlers.sync(engine, embed=False)
            assert (await engine.db.fetchone("select count(*) from nodes"))[0] == 2 * total
    async with open_engine(settings, repo.path) as engine:  # now the carry-over runs
        (count,) = await engine.db.fetchone("select count(*) from nodes")
        (trust,) = await engine.db.fetchone(
            "select trust from nodes where id = ?", (node_id(NEW, "git_commit", fix),)
        )
        pids = await engine.db.fetchall("select distinct project_id from nodes")
        assert await engine.db.fetchall("pragma foreign_key_check") == []
        await engine.db.execute("insert into nodes_fts(nodes_fts) values ('integrity-check')")
        hits = await handlers.search(engine, "retry budget", vector=False)
        merged_files = await engine.db.fetchall(_FILES)
    assert count == total and trust == "rejected" and pids == [(NEW,)]
    # Each event's files once, on the node kept: the duplicate's went over to it.
    assert merged_files == files and ("git_commit", fix, "NOTES.txt") in files
    assert len({r.id for r in hits.results}) == len(hits.results) > 0


_FILES = (
    "select n.kind, n.ref, f.path from node_files f join nodes n on n.seq = f.node_seq "
    "order by 1, 2, 3"
)


async def _none(*_args: object) -> list:
    return []
