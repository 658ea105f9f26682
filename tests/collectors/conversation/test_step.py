"""The conversation source through sync: opt-in, incremental, scoped to the repository, and
nothing secret on disk."""

from __future__ import annotations

import json
from pathlib import Path

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine
from nexusmem_core.render import render_search

from ...conftest import Repo, changed, run_cli
from ...test_shell_sync import log_command
from .transcripts import (
    AWS_KEY,
    CLAUDE_SESSION,
    GITHUB_TOKEN,
    RECORDED_CWD,
    install_claude,
    install_codex,
)


def turns_of(rows: list[tuple[str, ...]]) -> list[str]:
    return sorted(ref for (ref,) in rows)


async def turn_refs(engine: Engine) -> list[str]:
    rows = await engine.db.fetchall("select ref from nodes where kind = 'conversation_turn'")
    return turns_of(rows)


def configure(engine: Engine, **conversation: object) -> None:
    sources = engine.config.sources
    wanted = changed(sources.conversation, **conversation)
    engine.config = changed(engine.config, sources=changed(sources, conversation=wanted))


async def test_transcripts_are_read_only_when_the_source_is_turned_on(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path)
    install_codex(settings.codex_dir, repo.path)
    plain = await handlers.sync(engine, embed=False)
    assert plain.conversation == plain.conversation_files == 0
    assert await turn_refs(engine) == []
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert (report.conversation, report.conversation_files) == (5, 2)
    assert (report.conversation_skipped, report.redacted) == (4, 3)
    assert await turn_refs(engine) == [
        "019b4f2e-7c1d-7a30-9e55-3b8d2c6f1a47:0:0",
        "019b4f2e-7c1d-7a30-9e55-3b8d2c6f1a47:1:0",
        f"{CLAUDE_SESSION}:0:0",
        f"{CLAUDE_SESSION}:1:0",
        f"{CLAUDE_SESSION}:2:0",
    ]
    row = await engine.db.fetchone(
        "select meta from nodes where ref = ?", (f"{CLAUDE_SESSION}:0:0",)
    )
    meta = json.loads(row[0])
    assert meta["cwd"] == str(repo.path) and meta["git_branch"] == "fix/upload-timeout"
    # The paths the exchange names that exist here: node_files, for file-scoped questions.
    files = await engine.db.fetchall(
        "select path from node_files f join nodes n on n.seq = f.node_seq where n.ref = ?",
        (f"{CLAUDE_SESSION}:0:0",),
    )
    assert files == [("src/retry.py",)]  # tests/test_upload.py does not exist here


async def test_no_secret_from_a_transcript_reaches_the_database_file(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path)
    install_codex(settings.codex_dir, repo.path)
    await handlers.sync(engine, embed=False, conversation=True)
    database = repo.path / ".nexusmem" / "memory.db"
    stored = b"".join(p.read_bytes() for p in database.parent.glob("memory.db*"))
    assert b"Write a short deployment guide" in stored  # the turns are there
    for secret in (AWS_KEY, GITHUB_TOKEN):
        assert secret.encode() not in stored


async def test_an_unchanged_transcript_is_not_read_again_and_a_grown_one_is(
    engine: Engine, repo: Repo, settings: Settings
):
    path = install_claude(settings.claude_dir, repo.path)
    install_codex(settings.codex_dir, repo.path)
    await handlers.sync(engine, embed=False, conversation=True)
    again = await handlers.sync(engine, embed=False, conversation=True)
    assert (again.conversation_files, again.conversation) == (0, 0)
    record = {
        "type": "user",
        "cwd": str(repo.path),
        "sessionId": CLAUDE_SESSION,
        "uuid": "00000000-0000-4000-8000-000000000099",
        "timestamp": "2026-01-10T10:00:00Z",
        "message": {"role": "user", "content": "Does the rollback need a migration?"},
    }
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    grown = await handlers.sync(engine, embed=False, conversation=True)
    # Read whole again; the turns already stored upsert onto themselves.
    assert (grown.conversation_files, grown.conversation) == (1, 1)
    assert f"{CLAUDE_SESSION}:3:0" in await turn_refs(engine)
    path.unlink()  # Claude Code cleans transcripts up after 30 days: memory keeps them
    await handlers.sync(engine, embed=False, conversation=True)
    assert len(await turn_refs(engine)) == 6


async def test_only_sessions_run_inside_the_repository_are_kept(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    (repo.path / "src").mkdir(exist_ok=True)
    sibling = tmp_path / "project-old"  # shares the repository's slug as a prefix
    sibling.mkdir()
    install_claude(settings.claude_dir, repo.path / "src", session="in-a-subdirectory")
    install_claude(settings.claude_dir, sibling, session="in-the-sibling")
    install_codex(settings.codex_dir, tmp_path / "elsewhere", name="rollout-elsewhere.jsonl")
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert report.conversation_files == 1
    assert {ref.split(":")[0] for ref in await turn_refs(engine)} == {"in-a-subdirectory"}
    # Read once: the others are remembered as not this repository's, and not opened again.
    assert (await handlers.sync(engine, embed=False, conversation=True)).conversation_files == 0
    rows = await engine.db.fetchall("select session from source_files order by session")
    assert rows == [(None,), (None,), ("in-a-subdirectory",)]


async def test_the_per_agent_switches_and_the_file_budget_hold(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path, session="older")
    install_claude(settings.claude_dir, repo.path, session="newer")
    install_codex(settings.codex_dir, repo.path)
    configure(engine, enabled=True, codex=False, max_files=1)
    first = await handlers.sync(engine, embed=False)
    assert first.conversation_files == 1  # the rest wait for the next sync
    assert (await handlers.sync(engine, embed=False)).conversation_files == 1
    assert (await handlers.sync(engine, embed=False)).conversation_files == 0
    assert {ref.split(":")[0] for ref in await turn_refs(engine)} == {"older", "newer"}


async def test_a_long_reply_is_stored_as_sibling_chunks(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path)
    engine.config = changed(engine.config, limits=changed(engine.config.limits, max_body_chars=600))
    await handlers.sync(engine, embed=False, conversation=True)
    rows = await engine.db.fetchall(
        "select title, grp from nodes where grp = ? order by ref", (f"{CLAUDE_SESSION}:1",)
    )
    question = "Write a short deployment guide for the upload service."
    assert [title for title, _ in rows] == [
        question,
        f"{question} — Release",
        f"{question} — Rollback",
    ]


async def test_search_memory_finds_a_turn(engine: Engine, repo: Repo, settings: Settings):
    from mcp import Client

    from nexusmem_mcp.server import build_server

    install_codex(settings.codex_dir, repo.path)
    await handlers.sync(engine, embed=False, conversation=True)
    async with Client(build_server(settings)) as client:
        result = await client.call_tool(
            "search_memory",
            {"query": "ERR_MODULE_NOT_FOUND build", "project_root": str(repo.path)},
        )
    assert not result.is_error, result.content
    found = result.structured_content["results"]
    # The turn that asked, and the failed build the session ran, both from the rollout.
    turn = next(r for r in found if r["kind"] == "conversation_turn")
    assert turn["provenance"] == "recorded"
    assert turn["title"].startswith("npm run build fails with ERR_MODULE_NOT_FOUND")
    ran = next(r for r in found if r["kind"] == "shell_command")
    assert ran["provenance"] == "observed" and ran["title"] == "codex: npm run build  (exit 1)"
    assert "[recorded]" in result.content[0].text


def test_scan_conversation_previews_with_redaction_counts(repo: Repo, settings: Settings):
    install_claude(settings.claude_dir, repo.path)
    install_codex(settings.codex_dir, repo.path)
    out = run_cli("scan-conversation", "--json", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert (found["files"], found["skipped"], found["redacted"]) == (2, 4, 3)
    # Five turns, and the command the Codex session ran (`npm run build`, exit 1).
    assert sorted(row["redacted"] for row in found["nodes"]) == [0, 0, 0, 1, 1, 1]
    assert found["agents"]["codex"]["failed"] == 1
    assert AWS_KEY not in out.stdout and RECORDED_CWD not in out.stdout
    text = run_cli("scan-conversation", "--limit", "1", "-C", str(repo.path))
    assert len(text.stdout.splitlines()) == 1
    assert "3 secret(s) redacted, 4 broken or unknown line(s)" in text.stderr
    assert not (repo.path / ".nexusmem").exists()  # a dry run, before init


FAILED_AT = 1_768_035_600  # 2026-01-10T09:00:00Z


def discuss_a_failure(repo: Repo, settings: Settings, home: Path) -> None:
    """A failed ``alembic upgrade head``, and a session two minutes later that talks it over."""
    log_command(home, "alembic upgrade head", repo.path, exit_code=1, start=FAILED_AT)
    question = "alembic upgrade head just failed, why?"
    answer = (
        "The upgrade to head fails because two alembic revisions share a parent; merging "
        "them with `alembic merge heads` fixes it."
    )
    records = [
        ("user", "2026-01-10T09:02:00Z", question),
        ("assistant", "2026-01-10T09:02:30Z", [{"type": "text", "text": answer}]),
    ]
    text = "".join(
        json.dumps(
            {"type": kind, "cwd": str(repo.path), "timestamp": ts, "message": {"content": body}}
        )
        + "\n"
        for kind, ts, body in records
    )
    install_claude(settings.claude_dir, repo.path, session="migration", text=text)


async def test_a_failure_discussed_in_a_transcript_is_linked_to_it(
    engine: Engine, repo: Repo, settings: Settings, home: Path
):
    discuss_a_failure(repo, settings, home)
    # Not the first sync: see test_a_first_sync_links_a_discussion_too below.
    await handlers.sync(engine, embed=False)
    out = run_cli("sync", "--no-embed", "--conversation", "--link-failures", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert "1 conversation turn written" in out.stdout
    assert "conversation: 1 changed transcript(s) read, 0 broken" in out.stdout
    found = await handlers.search(engine, "alembic upgrade head failed", vector=False)
    linked = "alembic upgrade head just failed, why?  -- linked as the fix (discussed here)"
    assert linked in render_search(found)


async def test_a_first_sync_links_a_discussion_too(
    engine: Engine, repo: Repo, settings: Settings, home: Path
):
    """The first sync builds the full-text index after writing; the linker runs after that.
    New conversation turns are reason enough to link (no --link-failures needed)."""
    discuss_a_failure(repo, settings, home)
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert (report.conversation, report.linked_discussion) == (1, 1)


async def test_pruning_a_conversation_source_reads_it_again_next_time(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path)
    install_codex(settings.codex_dir, repo.path)
    assert (await handlers.sync(engine, embed=False, conversation=True)).conversation_files == 2
    pruned = await handlers.prune_source(engine, "conversation:codex", apply=True)
    assert pruned.removed == 3 and pruned.reset == ["the record of read transcripts"]
    assert pruned.by_kind == {"conversation_turn": 2, "shell_command": 1}
    again = await handlers.sync(engine, embed=False, conversation=True)
    assert (again.conversation_files, again.conversation) == (1, 2)


async def test_a_line_the_database_cannot_hold_does_not_stop_the_sync(
    engine: Engine, repo: Repo, settings: Settings
):
    cwd = json.dumps(str(repo.path))
    text = "".join(
        f'{{"type": "user", "cwd": {cwd}, "message": {{"content": "{question}"}}}}\n'
        for question in ("why \\ud800?", "and this?")  # a lone surrogate, as JSON allows
    )
    install_claude(settings.claude_dir, repo.path, session="odd", text=text)
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert (report.conversation, report.conversation_skipped) == (1, 1)


async def test_a_rebuild_without_the_source_keeps_the_turns_and_says_so(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path)
    install_codex(settings.codex_dir, repo.path)
    await handlers.sync(engine, embed=False, conversation=True)
    before = await turn_refs(engine)
    out = run_cli("sync", "--rebuild", "--no-embed", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert await turn_refs(engine) == before
    assert (
        "note: the rebuild kept 5 conversation turn(s) without reading their transcripts "
        "again; `sync --rebuild --conversation` reads them afresh"
    ) in out.stderr.splitlines()
    # What was read is still noted as read: the next sync opens no transcript again.
    assert (await handlers.sync(engine, embed=False, conversation=True)).conversation_files == 0


async def test_a_rebuild_reads_the_transcripts_again_and_keeps_the_turns_of_those_gone(
    engine: Engine, repo: Repo, settings: Settings
):
    install_claude(settings.claude_dir, repo.path)
    codex = install_codex(settings.codex_dir, repo.path)
    limits = engine.config.limits
    engine.config = changed(engine.config, limits=changed(limits, max_body_chars=600))
    await handlers.sync(engine, embed=False, conversation=True)
    assert f"{CLAUDE_SESSION}:1:2" in await turn_refs(engine)  # a reply in three chunks
    codex.unlink()  # Codex's rollout is gone; Claude Code's transcript is still there
    engine.config = changed(engine.config, limits=limits)
    report = await handlers.sync(engine, embed=False, conversation=True, rebuild=True)
    assert (report.conversation_files, report.conversation) == (1, 3)
    assert await turn_refs(engine) == [
        "019b4f2e-7c1d-7a30-9e55-3b8d2c6f1a47:0:0",
        "019b4f2e-7c1d-7a30-9e55-3b8d2c6f1a47:1:0",
        f"{CLAUDE_SESSION}:0:0",
        f"{CLAUDE_SESSION}:1:0",  # in one chunk now: the other two are gone
        f"{CLAUDE_SESSION}:2:0",
    ]
    assert not [note for note in report.notes if "rebuild kept" in note]


async def test_a_rebuild_links_a_failure_to_a_kept_discussion_again(
    engine: Engine, repo: Repo, settings: Settings, home: Path
):
    discuss_a_failure(repo, settings, home)
    assert (await handlers.sync(engine, embed=False, conversation=True)).linked_discussion == 1
    configure(engine, enabled=False)  # `sync --rebuild`, without --conversation
    report = await handlers.sync(engine, embed=False, rebuild=True)
    assert (report.conversation, report.linked_discussion) == (0, 1)
