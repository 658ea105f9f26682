"""Session summaries during sync, against a fake Ollama over real HTTP: what is sent, what is
stored, what is never sent twice, and how a missing or broken model is one line."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.models import SyncReport
from nexusmem_core.render import status_text

from ...conftest import Repo, changed
from ...fake_ollama import FakeOllama
from ..conversation.transcripts import (
    AWS_KEY,
    CLAUDE_SESSION,
    CODEX_SESSION,
    GITHUB_TOKEN,
    install_claude,
    install_codex,
)
from .plant import RETRY, plant

TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        fake.chat_mode, fake.delay = "summary", 2.0
        yield fake


def configure(engine: Engine, **session: Any) -> None:
    """The session source on, with the fake's chat model and a short timeout."""
    options = {"enabled": True, "model": "fake-chat", "timeout_seconds": 1, **session}
    sources = engine.config.sources
    engine.config = changed(
        engine.config,
        sources=changed(sources, session=changed(sources.session, **options)),
    )


@pytest.fixture
async def live(settings: Settings, repo: Repo, ollama: FakeOllama) -> AsyncIterator[Engine]:
    tuned = changed(settings, ollama_host=ollama.url)
    async with open_engine(tuned, repo.path, create=True) as engine:
        configure(engine)
        yield engine


async def sync(engine: Engine, **options: Any) -> SyncReport:
    return await handlers.sync(engine, embed=False, **options)


async def summaries(engine: Engine) -> list[dict[str, Any]]:
    rows = await engine.db.fetchall(
        "select ref, title, body, ts, source, provenance, signal, meta from nodes "
        "where kind = 'session_summary' order by ts"
    )
    keys = ("ref", "title", "body", "ts", "source", "provenance", "signal", "meta")
    return [dict(zip(keys, (*row[:7], json.loads(row[7])), strict=True)) for row in rows]


async def states(engine: Engine) -> dict[str, str]:
    return dict(await engine.db.fetchall("select session, state from sessions"))


async def test_a_settled_session_becomes_one_derived_summary(live: Engine, ollama: FakeOllama):
    last = await plant(live, "s1")
    report = await sync(live)
    assert (report.sessions, report.sessions_queued, report.session_note) == (1, 0, "ok")
    (summary,) = await summaries(live)
    assert summary["title"] == "Raise the retry budget after S3 timeouts"
    assert summary["body"].startswith("Decisions: the retry budget goes to five, because")
    assert (summary["ref"], summary["ts"], summary["source"]) == ("s1", last, "session")
    assert (summary["provenance"], summary["signal"]) == ("derived", 0.6)
    meta = summary["meta"]
    assert (meta["session"], meta["model"], meta["turns"], meta["agent"]) == (
        "s1",
        "fake-chat",
        3,
        "claude",
    )
    assert meta["title_fallback"] is False
    row = await live.db.fetchone("select state, prompt_hash, last_ts, node_id from sessions")
    assert row is not None and row[:3] == ("done", meta["prompt_hash"], last)
    (request,) = ollama.chat_requests
    assert request["stream"] is False and request["options"]["temperature"] == 0
    system, user = (m["content"] for m in request["messages"])
    for part in ("title", "Decisions", "reason", "Diagnoses", "Unfinished"):
        assert part in system
    # Chronological, the opening question first; every exchange fits the default budget.
    assert user.index("Why do uploads fail") < user.index("raise the retry budget?")
    response = await handlers.search(live, "retry budget S3 timeouts", vector=False)
    assert any(r.kind == "session_summary" for r in response.results)


@pytest.mark.parametrize("mode", ["preamble", "generic", "bullet"])  # more in test_reply.py
async def test_a_title_the_model_gets_wrong_is_the_opening_question(
    live: Engine, ollama: FakeOllama, mode: str
):
    ollama.chat_mode = mode
    await plant(live, "s1")
    assert (await sync(live)).sessions == 1
    (summary,) = await summaries(live)
    assert summary["title"] == "Why do uploads fail under load?"
    assert summary["meta"]["title_fallback"] is True
    assert "Sure!" not in summary["body"] and "Summary of the session" not in summary["body"]
    assert summary["body"].rstrip().endswith("the backoff is not tested yet.")


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("slow", "did not answer within 1s (sources.session.timeoutSeconds"),
        ("malformed", "sent a malformed reply"),
        ("unreachable", "Ollama is not reachable at http://127.0.0.1:9"),
        ("empty", "the chat model fake-chat sent no summary for 2 session(s)"),
        ("garbage", "sent no summary"),  # a title alone
    ],
)
async def test_a_model_that_fails_is_one_line_and_the_session_waits_for_the_next_sync(
    live: Engine, ollama: FakeOllama, mode: str, said: str
):
    await plant(live, "s1")
    await plant(live, "s2", minutes_ago=600)
    if mode == "unreachable":
        live.settings = changed(live.settings, ollama_host="http://127.0.0.1:9")
    else:
        ollama.chat_mode = mode
    report = await sync(live)
    assert report.session_note.startswith("skipped: ") and said in report.session_note
    assert "\n" not in report.session_note and report.commits == 4  # the sync itself went on
    assert report.sessions == 0 and await summaries(live) == []
    assert await states(live) == {"s1": "pending", "s2": "pending"}
    live.settings = changed(live.settings, ollama_host=ollama.url)
    ollama.chat_mode, sent = "summary", len(ollama.chat_requests)
    report = await sync(live)
    assert (report.sessions, report.session_note) == (2, "ok")
    assert len(ollama.chat_requests) == sent + 2
    assert await states(live) == {"s1": "done", "s2": "done"}


async def test_an_unchanged_prompt_never_calls_the_model_again(live: Engine, ollama: FakeOllama):
    configure(live, prompt_chars=1000)  # room for the opening and one long answer
    opening = ("Why do uploads fail under load?", "Let me look.", 0.5)
    await plant(live, "s1", [opening, ("Why?", "a" * 2000, 0.9)], minutes_ago=120)
    await sync(live)
    assert len(ollama.chat_requests) == 1
    assert (await sync(live)).sessions == 0 and len(ollama.chat_requests) == 1
    # The session went on, with an exchange too weak to make the cut: the same prompt.
    last = await plant(live, "s1", [("And this?", "z" * 2000, 0.1)], first_turn=2, minutes_ago=60)
    assert (await sync(live)).sessions == 0 and len(ollama.chat_requests) == 1
    assert await live.db.fetchone("select state, last_ts from sessions") == ("done", last)
    # One that does make it is asked about, and the summary is updated in place.
    await plant(live, "s1", [("Backoff?", "Doubles.", 0.95)], first_turn=3, minutes_ago=45)
    assert (await sync(live)).sessions == 1 and len(ollama.chat_requests) == 2
    (summary,) = await summaries(live)
    assert summary["meta"]["turns"] == 4


async def test_past_max_sessions_the_rest_are_queued_newest_first(live: Engine, ollama: FakeOllama):
    configure(live, max_sessions=2)
    for session, hours in (("old", 30), ("mid", 20), ("new", 10)):
        await plant(live, session, minutes_ago=hours * 60)
    report = await sync(live)
    assert (report.sessions, report.sessions_queued) == (2, 1)
    assert await states(live) == {"new": "done", "mid": "done", "old": "queued"}
    assert [r["ref"] for r in await summaries(live)] == ["mid", "new"]
    report = await sync(live)
    assert (report.sessions, report.sessions_queued) == (1, 0)
    assert len(ollama.chat_requests) == 3
    status = await handlers.status(live)
    assert status.sessions == {"done": 3}
    assert "sessions   3 summarised, 0 queued" in status_text(status)


async def test_past_the_time_budget_the_rest_are_queued(live: Engine, ollama: FakeOllama):
    ollama.chat_delay = 1.5  # a model slower than the whole budget: one call, then no more
    configure(live, budget_seconds=1, timeout_seconds=10)
    for session, hours in (("old", 30), ("mid", 20), ("new", 10)):
        await plant(live, session, minutes_ago=hours * 60)
    report = await sync(live)
    assert (report.sessions, report.sessions_queued) == (1, 2)
    assert await states(live) == {"new": "done", "mid": "queued", "old": "queued"}
    assert report.session_note == "ok" and len(ollama.chat_requests) == 1


async def test_a_live_session_waits_until_it_settles(live: Engine, ollama: FakeOllama):
    await plant(live, "s1", minutes_ago=5)
    report = await sync(live)
    assert (report.sessions, report.session_note) == (0, "ok")
    assert ollama.chat_requests == [] and await states(live) == {}
    configure(live, settle_minutes=4)
    assert (await sync(live)).sessions == 1


async def test_a_secret_in_a_turn_reaches_neither_the_model_nor_the_summary(
    live: Engine, ollama: FakeOllama
):
    # A turn stored before a redaction rule existed: the prompt is redacted again anyway.
    leaky = [*RETRY, (f"Use GITHUB_TOKEN={TOKEN} for the upload?", f"No: {TOKEN} is yours.", 0.9)]
    await plant(live, "s1", leaky)
    ollama.chat_mode = "echo"  # the model repeats what it read
    assert (await sync(live)).sessions == 1
    assert TOKEN not in json.dumps(ollama.chat_requests)
    assert "[REDACTED]" in ollama.chat_requests[0]["messages"][-1]["content"]
    (summary,) = await summaries(live)
    assert TOKEN not in json.dumps(summary) and "[REDACTED]" in summary["body"]
    rows = await live.db.fetchall("select * from sessions")
    assert TOKEN not in repr(rows)


async def test_a_summary_holding_a_forgotten_value_is_not_written(live: Engine, ollama: FakeOllama):
    await handlers.forget(live, "tested", apply=True)  # the fake's summary holds it
    await plant(live, "s1")
    report = await sync(live)
    assert (report.sessions, report.denied) == (0, 1)
    assert await summaries(live) == [] and await states(live) == {"s1": "failed"}
    assert (await sync(live)).denied == 0 and len(ollama.chat_requests) == 1  # not asked again


async def test_recorded_transcripts_are_summarised_once_and_a_rebuild_asks_nothing_again(
    live: Engine, repo: Repo, ollama: FakeOllama
):
    # The conversation source's own fixtures, through sync --conversation: the turns' contract.
    install_claude(live.settings.claude_dir, repo.path)
    install_codex(live.settings.codex_dir, repo.path)
    ollama.chat_mode = "echo"  # the model repeats what it read
    report = await sync(live, conversation=True)
    assert (report.conversation, report.sessions, report.session_note) == (5, 2, "ok")
    before = await summaries(live)
    assert sorted(s["ref"] for s in before) == sorted([CLAUDE_SESSION, CODEX_SESSION])
    assert {s["meta"]["agent"] for s in before} == {"claude", "codex"}
    sent = json.dumps(ollama.chat_requests)
    assert AWS_KEY not in sent and GITHUB_TOKEN not in sent
    # A rebuild reads the transcripts again (their turns replaced): the same prompts, no call.
    report = await sync(live, conversation=True, rebuild=True)
    assert report.rebuilt and report.conversation == 5 and report.sessions == 0
    assert len(ollama.chat_requests) == 2
    assert await summaries(live) == before


async def test_prune_source_session_drops_the_summaries_and_what_they_were_made_from(
    live: Engine, ollama: FakeOllama
):
    await plant(live, "s1")
    await sync(live)
    report = await handlers.prune_source(live, "session", apply=True)
    assert (report.nodes, report.by_kind) == (1, {"session_summary": 1})
    assert report.reset == ["the record of summarised sessions (each is asked about again)"]
    assert "sources.session.enabled" in report.keep_out
    assert await summaries(live) == [] and await states(live) == {}
    assert (await sync(live)).sessions == 1 and len(ollama.chat_requests) == 2
