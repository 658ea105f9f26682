"""scrub-secrets: secrets an older NexusMem stored leave the database file, its WAL and the hook
logs; the backup keeps them; search still works; a resync neither undoes nor duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.collectors.agent import AGENT_NOTES
from nexusmem_core.collectors.agent import told as told_log
from nexusmem_core.collectors.agent.recall import AGENT_LOG
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.collectors.shell import nodes as shell_nodes
from nexusmem_core.collectors.shell.record import build_record
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.errors import StoreError
from nexusmem_core.handlers.agents import told
from nexusmem_core.hygiene.scrub import scrub
from nexusmem_core.models import Node
from nexusmem_core.registry import ProjectEntry, register_project
from nexusmem_core.store import rows as store_rows
from nexusmem_core.store.nodes import decode_meta, get_cursor, set_cursor, upsert_nodes

from ..conftest import Repo, changed, run_cli
from ..fake_ollama import FakeOllama
from ..test_vectors import with_ollama

TOKEN = "ghp_" + "Z9y8X7w6" * 4 + "Q1r2"  # a GitHub token: 36 characters after the prefix
RAW = f"export GITHUB_TOKEN={TOKEN} && ./deploy.sh"


def stored_files(repo: Repo) -> list[Path]:
    db = repo.path / ".nexusmem" / "memory.db"
    return [p for p in (db, db.with_name("memory.db-wal")) if p.exists()]


def holds(path: Path, secret: str = TOKEN) -> bool:
    return secret.encode() in path.read_bytes()


async def store_like_an_old_version(
    engine: Engine, home: Path, monkeypatch: pytest.MonkeyPatch, nested: bool = True
) -> str:
    """What an older NexusMem, whose table lacked the rule, left behind: a raw line in each
    hook log, read by a sync into a raw node (cursor at the end of the log), and (``nested``)
    a secret deep in its meta. Returns the node's id."""
    record = build_record(
        "echo ok", {"shell": "bash", "exit": "0", "cwd": str(engine.repo.root)}, home
    )
    assert record is not None
    record["cmd"] = RAW
    hooklog.append(home, record)
    agent = {**record, "id": "toolu_1", "cmd": RAW, "error": f"bad token {TOKEN}"}
    hooklog.append(home, agent, AGENT_LOG)
    with monkeypatch.context() as patch:
        patch.setattr(shell_nodes, "redact_cut", lambda text, limit: (text[:limit], 0))
        node = shell_nodes.hook_node(engine.project_id, record, 12000, str(engine.repo.root))
        if nested:
            node.meta["note"] = [f"token {TOKEN}"]
            node = changed(node)  # a fresh Node: its cached hash follows the meta
        log = home / hooklog.LOG_FILE
        end = hooklog.read_new(log, hooklog.LogCursor()).cursor
        # The store redacts names and meta now; an old version did not.
        patch.setattr(store_rows, "redact_lines", lambda values: values)
        async with engine.db.transaction():
            await upsert_nodes(engine.db, [node])
            await set_cursor(engine.db, engine.project_id, "shell:hook", end.encode())
    return node.id


@pytest.fixture
async def seeded(settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch) -> str:
    repo.commit(f"ci: deploy with {TOKEN}")
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        return await store_like_an_old_version(engine, settings.home, monkeypatch)


async def test_scrub_leaves_no_secret_bytes_and_search_still_finds_the_node(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    repo.commit(f"ci: deploy with {TOKEN}")  # redacted at ingest: only old versions stored it
    async with open_engine(settings, repo.path, create=True) as server:  # an MCP server, say
        await handlers.sync(server)
        seeded = await store_like_an_old_version(server, settings.home, monkeypatch)
        await scrub_files(repo, settings, seeded)
        assert repo.path.joinpath(".nexusmem", "memory.db-wal").exists()  # kept by the server


async def scrub_files(repo: Repo, settings: Settings, seeded: str) -> None:
    logs = [settings.home / hooklog.LOG_FILE, settings.home / AGENT_LOG]
    before = {p: p.read_bytes() for p in [*stored_files(repo), *logs]}
    assert len(before) == 4 and all(holds(log) for log in logs)
    assert holds(repo.path / ".nexusmem" / "memory.db-wal")  # not checkpointed yet

    dry = run_cli("scrub-secrets", "-C", str(repo.path))
    assert dry.returncode == 0, dry.stderr
    assert "1 would change: shell:hook 1" in dry.stdout
    assert "github_token" in dry.stdout and "dry run: nothing was changed" in dry.stdout
    assert TOKEN not in dry.stdout + dry.stderr
    assert {p: p.read_bytes() for p in before} == before  # a dry run changes nothing

    done = run_cli("scrub-secrets", "-C", str(repo.path), "--yes")
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    assert "1 scrubbed" in done.stdout and "WAL truncated" in done.stdout
    for path in [*stored_files(repo), *logs]:
        assert not holds(path), path
        assert b"[REDACTED]" in path.read_bytes() or path.name.endswith("-wal")
    for log in logs:
        assert log.stat().st_mode & 0o777 == 0o600
    (backup,) = (repo.path / ".nexusmem" / "backups").iterdir()
    assert str(backup) in done.stdout
    assert backup.stat().st_mode & 0o777 == 0o600 and holds(backup)  # the one place left

    async with open_engine(settings, repo.path, read_only=True) as engine:
        response = await handlers.search(engine, "deploy.sh GITHUB_TOKEN")
        node = await handlers.get_node(engine, seeded)
        (detail,) = await engine.db.fetchone(
            "select detail from audit where operation = 'scrub-secrets'"
        ) or ("",)
    assert seeded in [r.id for r in response.results]  # found through the rebuilt index
    assert node is not None and "GITHUB_TOKEN=[REDACTED]" in node["body"]
    assert node["meta"]["note"] == ["token [REDACTED]"]
    assert json.loads(detail)["rules"] == {"github_token": 1, "secret_assignment": 2}

    again = run_cli("scrub-secrets", "-C", str(repo.path), "--json")
    assert json.loads(again.stdout)["found"] == 0


async def test_a_resync_after_the_scrub_neither_undoes_nor_duplicates(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    repo.commit(f"ci: deploy with {TOKEN}")
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        await store_like_an_old_version(engine, settings.home, monkeypatch, nested=False)
    await scrub(settings, repo.path, apply=True)
    async with open_engine(settings, repo.path) as engine:
        hashes = dict(await engine.db.fetchall("select id, content_hash from nodes"))
        report = await handlers.sync(engine)
        assert report.shell == 0 and report.agent == 1  # the agent line was never synced
        # Even re-reading the whole shell log builds the very node that is stored.
        await set_cursor(engine.db, engine.project_id, "shell:hook", "0:")
        assert (await handlers.sync(engine)).shell == 0
        after = dict(await engine.db.fetchall("select id, content_hash from nodes"))
    assert {k: v for k, v in after.items() if k in hashes} == hashes
    assert len(after) == len(hashes) + 1
    assert not any(holds(p) for p in stored_files(repo))


async def test_every_stored_node_hashes_as_its_collector_built_it(engine: Engine, repo: Repo):
    """The scrub recomputes content hashes from rows; that is only sound if a row rebuilds
    the Node its collector wrote, hash for hash."""
    repo.commit("feat: more", {"docs/more.md": "# More\n\n## Part\n\nText.\n"})
    await handlers.sync(engine)
    rows = await engine.db.fetchall(
        "select project_id, kind, source, ref, grp, title, body, paths, ts, signal, "
        "provenance, meta, content_hash from nodes"
    )
    assert rows
    for pid, kind, source, ref, grp, title, body, paths, ts, signal, prov, meta, digest in rows:
        files = paths.split("\n") if paths else []
        node = Node(pid, kind, source, ref, title, body, ts, signal, prov, grp, files)
        node.meta = decode_meta(meta)
        assert node.meta_json == meta and node.content_hash == digest, (kind, ref)


KILLED_BEFORE_COMPACTING = """
import os, sys
from pathlib import Path
import anyio
from nexusmem_core.config import Settings
from nexusmem_core.hygiene import scrub

async def dying(db, **options):
    os._exit(9)  # committed, and killed before the FTS rebuild and the VACUUM

scrub.compact = dying
anyio.run(lambda: scrub.scrub(Settings.from_env(), Path(sys.argv[1]), apply=True))
"""


async def test_a_scrub_killed_before_compacting_is_finished_by_the_next_command(
    seeded: str, repo: Repo
):
    died = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_COMPACTING, str(repo.path)], capture_output=True
    )
    assert died.returncode == 9, died.stderr
    term = TOKEN.split("_", 1)[1].lower()  # as the FTS index keeps it, in its old segments
    db = repo.path / ".nexusmem" / "memory.db"
    files = (db, db.with_name("memory.db-wal"), db.with_name("memory.db-shm"))
    left = [p for p in files if p.exists() and (holds(p) or holds(p, term))]
    assert left  # what the kill left behind

    out = run_cli("status", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    (line,) = out.stderr.splitlines()
    assert "compaction_resumed" in line and "fts_rebuilt=True" in line
    assert "vacuumed=True" in line and "wal_truncated=True" in line
    assert [p for p in files if p.exists() and (holds(p) or holds(p, term))] == []


async def test_log_cursors_are_moved_not_reset(seeded: str, repo: Repo, settings: Settings):
    async with open_engine(settings, repo.path) as engine:
        await handlers.sync(engine)  # reads the agent log too
    await scrub(settings, repo.path, apply=True)
    async with open_engine(settings, repo.path) as engine:
        for source, name in (("shell:hook", hooklog.LOG_FILE), ("agent:claude", AGENT_LOG)):
            value = await get_cursor(engine.db, engine.project_id, source)
            read = hooklog.read_new(settings.home / name, hooklog.LogCursor.decode(value))
            assert read.records == [] and not read.restarted, source
            assert read.cursor.offset == (settings.home / name).stat().st_size


async def test_vectors_of_scrubbed_nodes_are_dropped_and_made_again(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    with FakeOllama() as ollama:
        settings = with_ollama(settings, ollama)
        async with open_engine(settings, repo.path, create=True) as engine:
            await handlers.sync(engine)
            node_id = await store_like_an_old_version(engine, settings.home, monkeypatch)
            await handlers.sync(engine)  # embeds the raw node
            (seq,) = await engine.db.fetchone("select seq from nodes where id = ?", (node_id,))
            embedded = "select count(*) from embeddings where seq = ?"
            assert await engine.db.fetchone(embedded, (seq,)) == (1,)
        report = await scrub(settings, repo.path, apply=True)
        assert report.projects[0].nodes == 1
        async with open_engine(settings, repo.path) as engine:
            assert await engine.db.fetchone(embedded, (seq,)) == (0,)
            vec = "select count(*) from nodes_vec where rowid = ?"
            assert await engine.db.fetchone(vec, (seq,)) == (0,)
            sent = ollama.embedded_texts
            assert (await handlers.sync(engine)).embedded == 1  # only the scrubbed node
            assert ollama.embedded_texts == sent + 1
            assert await engine.db.fetchone(vec, (seq,)) == (1,)


async def test_without_sqlite_vec_a_scrub_that_would_orphan_vectors_refuses(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    with FakeOllama() as ollama:
        async with open_engine(with_ollama(settings, ollama), repo.path, create=True) as engine:
            await handlers.sync(engine)
            await store_like_an_old_version(engine, settings.home, monkeypatch)
            await handlers.sync(engine)
    before = [p.read_bytes() for p in stored_files(repo)]
    off = changed(settings, vector="off")
    with pytest.raises(StoreError, match="needs sqlite-vec"):
        await scrub(off, repo.path, apply=True)
    assert [p.read_bytes() for p in stored_files(repo)] == before
    assert not (repo.path / ".nexusmem" / "backups").exists()


async def test_all_projects_scrubs_every_registered_repository_and_the_logs_once(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    repos = [make_repo("one"), make_repo("two")]
    for r in repos:
        r.commit("init", {"a.txt": "a\n"})
        async with open_engine(settings, r.path, create=True) as engine:
            await handlers.sync(engine)
            await store_like_an_old_version(engine, settings.home, monkeypatch)
    gone = ProjectEntry("gone", "gone", str(tmp_path / "gone"), str(tmp_path / "gone.db"))
    register_project(settings.home, gone)
    dry = await scrub(settings, repos[0].path, all_projects=True)
    assert [p.nodes for p in dry.projects] == [1, 1] and len(dry.skipped) == 1
    # Each repository's line, in both command logs; no note was told.
    assert [log.lines for log in dry.logs] == [2, 2, 0]
    done = await scrub(settings, repos[0].path, all_projects=True, apply=True)
    assert [p.nodes for p in done.projects] == [1, 1] and all(p.backup for p in done.projects)
    for r in repos:
        assert not any(holds(p) for p in stored_files(r))
    assert not holds(settings.home / hooklog.LOG_FILE)
    assert (await scrub(settings, repos[1].path, all_projects=True)).found == 0


async def test_a_single_project_scrub_moves_the_other_repositories_cursors(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    one, two = make_repo("one"), make_repo("two")
    for r in (one, two):
        r.commit("init", {"a.txt": "a\n"})
        async with open_engine(settings, r.path, create=True) as engine:
            await handlers.sync(engine)
            await store_like_an_old_version(engine, settings.home, monkeypatch)
    await scrub(settings, one.path, apply=True)  # rewrites the shared logs
    async with open_engine(settings, two.path) as engine:
        value = await get_cursor(engine.db, engine.project_id, "shell:hook")
        log = settings.home / hooklog.LOG_FILE
        read = hooklog.read_new(log, hooklog.LogCursor.decode(value))
        assert read.records == [] and not read.restarted
    assert any(holds(p) for p in stored_files(two))  # its nodes were not scrubbed


def test_a_repository_without_memory_is_an_error_before_any_log_is_touched(make_repo, home: Path):
    bare = make_repo("bare")
    home.mkdir(parents=True)
    log = home / hooklog.LOG_FILE
    log.write_text(json.dumps({"id": "x", "cmd": RAW, "shell": "bash"}) + "\n")
    os.chmod(log, 0o600)
    result = run_cli("scrub-secrets", "-C", str(bare.path), "--yes")
    assert result.returncode == 1 and "nexusmem init" in result.stderr
    assert holds(log)


async def test_a_scrubbed_commit_s_names_are_split_again_from_its_redacted_text(
    settings: Settings, repo: Repo
):
    """A commit's names are split from its text (retrieval/names.py): a scrub that redacts
    the text splits them again, so no piece of the secret stays searchable through them."""
    secret = "HunterTwoSecret99"  # what an older table let through, camelCase as it happens
    sha = repo.commit("ci: deploy the staging box")
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        async with engine.db.transaction():  # as an older version stored it: raw, and split
            await engine.db.execute(
                "update nodes set body = body || ?, names = 'hunter two secret' where ref = ?",
                (f"\nDB_PASSWORD={secret}\n", sha),
            )
        assert (await handlers.search(engine, "hunter", vector=False)).results
    done = run_cli("scrub-secrets", "-C", str(repo.path), "--yes")
    assert done.returncode == 0, done.stderr
    async with open_engine(settings, repo.path, read_only=True) as engine:
        (body, names) = await engine.db.fetchone(
            "select body, names from nodes where ref = ?", (sha,)
        )
        found = await handlers.search(engine, "hunter secret", vector=False)
    assert "DB_PASSWORD=[REDACTED]" in body and secret not in body
    assert names == ""  # nothing left to split: the identifier was the secret
    assert sha not in [res.ref for res in found.results]


def tell_like_an_old_version(home: Path, root: str) -> None:
    """A note the agent hook of an older version told and logged, its command and text not
    redacted (the notes log's format)."""
    note = {
        "v": 1,
        "id": "note-1",
        "ts": 1_760_000_000.0,
        "agent": "claude",
        "session": "s1",
        "event": "PreToolUse",
        "kind": "recall",
        "root": root,
        "cmd_hash": "ab" * 32,
        "cmd": RAW,
        "after": None,
        "text": f"`{RAW}` failed once: bad token",
        "redactions": 0,
    }
    hooklog.append(home, note, AGENT_NOTES)


async def test_a_note_an_older_version_told_is_scrubbed_in_the_table_and_the_log(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    repo.commit("init", {"a.txt": "a\n"})
    root = os.path.realpath(repo.path)
    tell_like_an_old_version(settings.home, root)
    async with open_engine(settings, repo.path, create=True) as engine:
        with monkeypatch.context() as patch:  # as an older sync stored it: raw
            patch.setattr(told_log, "redact_cut", lambda text, limit: (text[:limit], 0))
            await handlers.sync(engine, embed=False)
        (stored,) = await told(engine)
    assert TOKEN in stored["command"] and TOKEN in stored["text"]
    log = settings.home / AGENT_NOTES
    files = [log, *stored_files(repo)]
    before = [p.read_bytes() for p in files]

    dry = await scrub(settings, repo.path)
    (project,) = dry.projects
    assert (project.nodes, project.notes, project.rules) == (0, 1, {"secret_assignment": 2})
    assert [line.lines for line in dry.logs] == [0, 0, 1]
    assert "  notes   1 agent note(s) would change" in dry.lines()
    assert [p.read_bytes() for p in files] == before

    done = await scrub(settings, repo.path, apply=True)
    assert (done.projects[0].notes, done.logs[2].lines) == (1, 1)
    assert done.projects[0].backup is not None
    assert not any(holds(p) for p in [log, *stored_files(repo)])
    assert log.stat().st_mode & 0o777 == 0o600
    async with open_engine(settings, repo.path) as engine:
        (scrubbed,) = await told(engine)
        # The notes cursor moved with the rewritten log: nothing is read again.
        cursor = await get_cursor(engine.db, engine.project_id, told_log.CURSOR)
        read = told_log.read_notes(log, hooklog.LogCursor.decode(cursor), root)
        assert read.records == [] and not read.restarted
        await handlers.sync(engine, embed=False)
        assert await told(engine) == [scrubbed]
    assert "[REDACTED" in scrubbed["command"] and "[REDACTED" in scrubbed["text"]
    assert (scrubbed["session"], scrubbed["ts"]) == ("s1", stored["ts"])
    assert (await scrub(settings, repo.path)).found == 0
