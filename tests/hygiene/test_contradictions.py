"""Contradiction checks: the most similar newer node, a local chat model's yes/no (a fake Ollama
over real HTTP), cached per pair, shown as suggestions, never acted on by themselves."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.errors import UsageError
from nexusmem_core.hygiene.flags import OPEN
from nexusmem_core.hygiene.stale import StaleReport

from ..conftest import Repo, changed, run_cli
from ..fake_ollama import FakeOllama

FABRIC = "docs/deploy.md — Deploy"
ANSIBLE = "Deploy with the ansible playbook to the staging host"


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


@pytest.fixture
def deploy_repo(repo: Repo) -> Repo:
    """A January claim, and months later a commit that says the opposite."""
    repo.commit(
        "docs: how to deploy",
        {"docs/deploy.md": "# Deploy\n\nDeploy with the fabric script to the staging host.\n"},
    )
    repo.commit(
        f"{ANSIBLE}\n\n{ANSIBLE}, not the fabric script.",
        {"deploy.yml": "hosts: staging\n"},
        days=120,
    )
    return repo


def configure(engine: Engine, **contradictions: object) -> None:
    """The chat model the fake serves, and a short timeout."""
    options = {"model": "fake-chat", "timeout_seconds": 1, **contradictions}
    engine.config = changed(
        engine.config,
        contradictions=changed(engine.config.contradictions, **options),
    )


@pytest.fixture
async def live(settings: Settings, deploy_repo: Repo, ollama: FakeOllama) -> AsyncIterator[Engine]:
    tuned = changed(settings, ollama_host=ollama.url, embed_model=ollama.model)
    async with open_engine(tuned, deploy_repo.path, create=True) as engine:
        configure(engine, auto_check=False)
        await handlers.sync(engine)
        configure(engine)
        yield engine


def suggested(report: StaleReport) -> dict[str, list[str]]:
    return {c.title: [s.title for s in c.suggestions] for c in report.candidates}


@pytest.mark.parametrize(
    ("mode", "verdict"), [("yes", "yes"), ("no", "no"), ("garbage", "unknown")]
)
async def test_each_verdict_is_cached_and_only_yes_is_suggested(
    live: Engine, ollama: FakeOllama, mode: str, verdict: str
):
    ollama.chat_mode = mode
    report = await handlers.check_contradictions(live)
    assert report.contradictions == "ok" and report.judged == len(ollama.chat_requests) > 0
    fabric = next(c for c in report.candidates if c.title == FABRIC)
    rows = await live.db.fetchall(
        "select n.title, c.verdict, c.model from contradictions c join nodes n on n.id = c.new_id "
        "where c.old_id = ?",
        (fabric.id,),
    )
    assert rows == [(ANSIBLE, verdict, "fake-chat")]
    assert [s.title for s in fabric.suggestions] == ([ANSIBLE] if mode == "yes" else [])
    prompt = ollama.chat_requests[-1]
    assert prompt["stream"] is False and prompt["model"] == "fake-chat"
    # Nothing is superseded by a verdict; only a person does that (mark-stale).
    assert await live.db.fetchone("select 1 from nodes where supersedes is not null") is None


async def test_a_judged_pair_is_never_sent_again(live: Engine, ollama: FakeOllama):
    first = await handlers.check_contradictions(live)
    sent = len(ollama.chat_requests)
    again = await handlers.check_contradictions(live)
    assert len(ollama.chat_requests) == sent and again.judged == 0
    assert again.cached == first.judged and suggested(again) == suggested(first)
    assert suggested(await handlers.stale(live))[FABRIC] == [ANSIBLE]  # plain stale shows it


@pytest.mark.parametrize(
    ("mode", "model", "expected"),
    [
        ("slow", "fake-chat", "did not answer within 1s"),
        ("yes", "qwen2.5:3b", "ollama pull qwen2.5:3b"),
    ],
)
async def test_a_model_that_cannot_answer_stops_the_pass_in_one_line(
    live: Engine, ollama: FakeOllama, mode: str, model: str, expected: str
):
    ollama.chat_mode = mode
    configure(live, model=model)
    report = await handlers.check_contradictions(live)
    assert report.contradictions.startswith("skipped: ") and expected in report.contradictions
    assert len(ollama.chat_requests) <= 1 and report.judged == 0  # it stopped at the first
    assert await live.db.fetchone("select 1 from contradictions") is None  # nothing cached
    assert report.candidates  # the candidates are still listed


async def test_without_vectors_it_says_so_and_asks_nothing(
    settings: Settings, deploy_repo: Repo, ollama: FakeOllama
):
    tuned = changed(settings, ollama_host=ollama.url, embed_model=ollama.model)
    async with open_engine(tuned, deploy_repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        configure(engine)
        report = await handlers.check_contradictions(engine)
    assert report.contradictions.startswith("off: nothing is embedded with fake-embed yet")
    assert not ollama.chat_requests and report.candidates


async def test_dismiss_silences_a_suggestion_for_good(live: Engine, ollama: FakeOllama):
    report = await handlers.check_contradictions(live)
    fabric = next(c for c in report.candidates if c.title == FABRIC)
    assert (await handlers.open_suggestions(live)).suggestions
    dismissed = await handlers.dismiss_suggestion(live, fabric.id[:8])
    assert dismissed.dismissed == 1
    sent = len(ollama.chat_requests)
    again = await handlers.check_contradictions(live)
    assert suggested(again)[FABRIC] == [] and len(ollama.chat_requests) == sent
    remaining = (await handlers.open_suggestions(live)).to_dict()["suggestions"]
    assert FABRIC not in [s["old_title"] for s in remaining]
    with pytest.raises(UsageError, match="no open suggestion"):
        await handlers.dismiss_suggestion(live, fabric.id)


async def test_sync_judges_a_small_batch_and_counts_what_is_open(
    settings: Settings, deploy_repo: Repo, ollama: FakeOllama
):
    tuned = changed(settings, ollama_host=ollama.url, embed_model=ollama.model)
    async with open_engine(tuned, deploy_repo.path, create=True) as engine:
        configure(engine, sync_batch=2)
        first = await handlers.sync(engine)
        assert (first.judged, first.contradictions) == (2, "ok")
        assert first.flagged == 2 == (await handlers.status(engine)).flagged
        second = await handlers.sync(engine)
        total = await engine.db.fetchone("select count(*) from contradictions")
        assert second.judged == total[0] - 2 > 0  # the rest; the first two were not re-asked
        assert len(ollama.chat_requests) == total[0]
        configure(engine, auto_check=False)
        off = await handlers.sync(engine)
        assert off.judged == 0 and off.contradictions.startswith("off")


async def test_the_open_flags_are_read_from_the_judgements_not_from_every_node(live: Engine):
    """Every sync counts the open flags: reading the project's nodes to probe the judgements
    cost 29 ms at 50k commits for a count that is almost always 0."""
    plan = await live.db.fetchall(
        f"explain query plan select count(distinct c.old_id) {OPEN}", (live.project_id,)
    )
    steps = [row[3] for row in plan if row[3].startswith(("SCAN", "SEARCH"))]
    assert steps[0] == "SCAN c"  # the judgements first
    assert not any(s.startswith("SCAN") for s in steps[1:])  # each node found by its id


async def test_sync_is_quiet_when_the_chat_model_was_never_there(
    settings: Settings, deploy_repo: Repo, ollama: FakeOllama
):
    tuned = changed(settings, ollama_host=ollama.url, embed_model=ollama.model)
    async with open_engine(tuned, deploy_repo.path, create=True) as engine:
        report = await handlers.sync(engine)  # the default qwen2.5:3b is not pulled here
    assert report.contradictions.startswith("off: ") and "ollama pull" in report.contradictions
    assert report.judged == 0


def test_cli_shows_suggestions_under_their_candidate(deploy_repo: Repo, ollama: FakeOllama):
    path = str(deploy_repo.path)
    env = {"OLLAMA_HOST": ollama.url, "NEXUSMEM_EMBED_MODEL": ollama.model}
    assert run_cli("init", "-C", path).returncode == 0
    config = deploy_repo.path / ".nexusmem" / "config.json"
    data = json.loads(config.read_text())
    data["contradictions"].update(model="fake-chat", autoCheck=False)
    config.write_text(json.dumps(data))
    assert run_cli("sync", "-q", "-C", path, env=env).returncode == 0
    out = run_cli("stale", "--check-contradictions", "-C", path, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if f"[authored] {FABRIC}" in line)
    assert lines[at + 1].startswith("    likely superseded by ")
    assert lines[at + 1].endswith(f" {ANSIBLE} (2026-05-06)")
    assert "contradictions: " in out.stderr and "pair(s) judged" in out.stderr
    assert "flagged    " in run_cli("status", "-C", path).stdout
    old_id = lines[at].split()[1]
    out = run_cli("stale", "--dismiss", old_id, "-C", path)
    assert out.stdout == f"dismissed 1 suggestion(s) under {old_id}\n"
    shown = run_cli("stale", "-C", path).stdout.splitlines()
    at = next(i for i, line in enumerate(shown) if f"[authored] {FABRIC}" in line)
    assert at + 1 == len(shown) or not shown[at + 1].startswith("    likely")
