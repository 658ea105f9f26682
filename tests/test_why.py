"""Why a result ranked where it did (retrieval/why.py, ``handlers.search.explain``): on real git
repositories synced into real databases, with the vector arm from a fake Ollama over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.handlers import explain, search
from nexusmem_core.retrieval.why import Explained, Why

from .conftest import BASE_TS, DAY, Repo, changed, run_cli
from .fake_ollama import FakeOllama
from .test_shell_sync import log_command

NOW = BASE_TS + 30 * DAY  # recency measured from a fixed moment: explain and search agree


@pytest.fixture
async def synced(settings: Settings, repo: Repo) -> AsyncIterator[Engine]:
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        yield engine


@pytest.fixture
async def hybrid(settings: Settings, repo: Repo) -> AsyncIterator[Engine]:
    with FakeOllama() as fake:
        live = changed(settings, ollama_host=fake.url, embed_model=fake.model)
        async with open_engine(live, repo.path, create=True) as engine:
            await handlers.sync(engine)
            yield engine


def why_of(explained: Explained, ref: str) -> Why:
    (result,) = [r for r in explained.response.results if r.ref == ref]
    return explained.why[result.id]


def moved_by(why: Why, stage: str) -> list[str]:
    return [m.note for m in why.moves if m.stage == stage]


def untouched_after_fusion(explained: Explained) -> list[Why]:
    """The results whose relevance and score no stage changed after fusion but the priors
    (a stage may still have moved them: others moved around them)."""
    after = explained.stages[explained.stages.index("prior_factor") + 1 :]
    return [
        w
        for w in explained.why.values()
        if w.priors["applied"]
        and w.relevance == w.fused
        and not [m for m in w.moves if m.stage in after and m.note.startswith("score")]
    ]


async def test_explain_returns_the_response_search_returns(synced: Engine):
    for question in ("retry budget S3 timeouts", "why BM25 first?", "how do I install it"):
        plain = await search(synced, question, vector=False, now=NOW)
        told = await explain(synced, question, vector=False, now=NOW)
        assert told.response.to_dict() == plain.to_dict()
        assert list(told.why) == [r.id for r in plain.results]
        assert [w.packed_rank for w in told.why.values()] == list(range(1, len(plain.results) + 1))
        assert [w.tokens for w in told.why.values()] == [r.tokens for r in plain.results]


async def test_a_result_found_by_bm25_alone_has_no_vector_rank(synced: Engine):
    told = await explain(synced, "retry budget S3 timeouts", now=NOW)
    assert told.response.vector != "used"
    first = told.why[told.response.results[0].id]
    assert first.bm25_rank is not None and first.bm25_relevance is not None
    assert first.bm25_relevance > 0
    assert first.vector_rank is None and first.vector_distance is None
    assert told.stages[0] == "lexical_candidates" and "rrf" not in told.stages
    assert told.arms["vector"] == []
    assert [row["id"] for row in told.arms["bm25"]][first.bm25_rank - 1] == first.id


async def test_with_both_arms_the_fused_relevance_is_the_rrf_of_both_ranks(hybrid: Engine):
    question = "BM25 first, offline with no model"
    told = await explain(hybrid, question, now=NOW)
    assert told.response.vector == "used"
    assert told.response.to_dict() == (await search(hybrid, question, now=NOW)).to_dict()
    k = hybrid.config.retrieval.fusion_k
    both = [w for w in told.why.values() if w.bm25_rank and w.vector_rank]
    assert both
    for w in both:
        assert w.fused == pytest.approx(1 / (k + w.bm25_rank) + 1 / (k + w.vector_rank), abs=1e-12)
        assert w.vector_distance is not None and 0 <= w.vector_distance <= 2
    vector_ids = [row["id"] for row in told.arms["vector"]]
    assert all(vector_ids[w.vector_rank - 1] == w.id for w in both if w.vector_rank)
    assert told.stages[:3] == ["lexical_candidates", "rrf", "neutral_when_unembedded"]


async def test_the_priors_product_times_the_fused_relevance_is_the_score(synced: Engine):
    told = await explain(synced, "retry budget S3 timeouts upload", vector=False, now=NOW)
    plain = untouched_after_fusion(told)
    assert plain
    for w in plain:
        assert w.priors["product"] * w.fused == pytest.approx(w.score, abs=1e-9)
        factors = w.priors["signal"]["factor"] * w.priors["recency"]["factor"]
        assert factors * w.priors["penalty"] == pytest.approx(w.priors["product"], abs=1e-12)
        assert w.priors["recency"]["age_days"] >= 0


async def test_a_rejected_node_shows_its_penalty(synced: Engine):
    question = "retry budget S3 timeouts"
    before = await explain(synced, question, vector=False, now=NOW)
    first = before.response.results[0]
    assert before.why[first.id].priors["penalty"] == 1.0
    await handlers.review(synced, first.id, "rejected")
    after = await explain(synced, question, vector=False, now=NOW)
    why = after.why[first.id]
    assert why.priors["trust"] == {"value": "rejected", "factor": 0.5}
    assert why.priors["penalty"] == 0.5
    assert why.priors["product"] == pytest.approx(before.why[first.id].priors["product"] / 2)


async def test_a_commit_that_absorbed_its_diff_says_so(settings: Settings, make_repo):
    r: Repo = make_repo("grouped")
    r.commit("feat: start", {"src/codec.py": "def decode(data):\n    return data\n"})
    sha = r.commit(
        "fix: empty bodies no longer fail",
        {"src/codec.py": "def decode(data):\n    if not data:  # zstandard frame missing\n"},
    )
    async with open_engine(settings, r.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        told = await explain(engine, "zstandard frame missing", vector=False, now=NOW)
    commit = why_of(told, sha)
    assert [(c.relation, c.ref) for c in commit.came_with] == [("hunk", f"{sha}:src/codec.py")]
    (note,) = moved_by(commit, "group_commits")
    assert "absorbed its diffs: src/codec.py (its best hunk)" in note
    diff_row = next(row for row in told.arms["bm25"] if row["ref"] == f"{sha}:src/codec.py")
    assert diff_row["relevance"] > 0  # the word arm found the diff, the commit answered
    gone = told.left[diff_row["id"]]
    assert (gone.stage, gone.after) == ("group_commits", None)
    assert gone.note == f"grouped under commit {sha[:7]} (fix: empty bodies no longer fail)"


async def test_a_why_question_s_lifted_commit_shows_the_lift(settings: Settings, make_repo):
    r: Repo = make_repo("explains")
    for i in range(12):
        r.commit(f"Refactor part {i} of the parser", {f"parse{i}.py": f"x = {i}\n"})
    wanted = r.commit(
        "Keep the flush interval above zero\n\nA zero interval made the writer spin on an "
        "empty queue and pinned a core; the floor of one second keeps it asleep between batches.",
        {"flush.py": "FLOOR = 1\n"},
    )
    r.commit("Flush interval zero: tidy the interval check", {"notes.txt": "notes\n"})
    async with open_engine(settings, r.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        told = await explain(engine, "why can't the flush interval be zero?", vector=False, now=NOW)
    assert "lift_explained" in told.stages and "lift_reasons" in told.stages
    why = why_of(told, wanted)
    (explained_lift,) = [m for m in why.moves if m.stage == "lift_explained"]
    assert explained_lift.note.startswith("relevance x1.50")
    assert explained_lift.after is not None and explained_lift.before is not None
    assert explained_lift.after < explained_lift.before  # it rose in the word arm's list
    (reasons,) = moved_by(why, "lift_reasons")
    assert reasons.startswith("score x1.60")
    assert why.packed_rank == 1


async def test_a_copy_dropped_is_named_by_the_section_kept(settings: Settings, make_repo):
    r: Repo = make_repo("copies")
    steps = (
        "Install the package with pip, then run the development proxy on port 8080 so "
        "the tests that reach an external host can be recorded."
    )
    r.commit(
        "docs: contributing guide, twice",
        {
            "docs/contributing.md": f"# Contributing\n\n## Development proxy\n\n{steps}\n",
            ".github/CONTRIBUTING.md": f"# Contributing\n\n## Development proxy\n\n{steps}\n",
        },
    )
    async with open_engine(settings, r.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        told = await explain(engine, "development proxy port 8080", vector=False, now=NOW)
    kept = next(r for r in told.response.results if r.ref.endswith("#Development proxy"))
    why = told.why[kept.id]
    (copy,) = [c for c in why.came_with if c.relation == "copy"]
    assert copy.ref == kept.copies[0]
    assert moved_by(why, "drop_copies") == [f"its copies dropped: {copy.ref}"]
    assert told.left[copy.id].note == f"dropped as a copy of {kept.ref}"


async def test_a_revert_and_what_it_undid_each_name_the_other(settings: Settings, make_repo):
    r: Repo = make_repo("reverted")
    tried = r.commit("Load plugins lazily on first use", {"plugins.py": "LAZY = True\n"})
    undone = r.commit(
        f'Revert "Load plugins lazily on first use"\n\nThis reverts commit {tried}.',
        {"plugins.py": "LAZY = False\n"},
    )
    async with open_engine(settings, r.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        told = await explain(engine, "lazily plugins loading attempt", vector=False, now=NOW)
    revert, original = why_of(told, undone), why_of(told, tried)
    assert ("reverts", original.id) in [(c.relation, c.id) for c in revert.came_with]
    assert ("reverted_by", revert.id) in [(c.relation, c.id) for c in original.came_with]


def test_the_cli_prints_why_under_each_result(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    out = run_cli("query", "--why", "-C", str(repo.path), "retry", "budget", "S3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("- "))
    assert "raise the retry budget" in lines[first]
    notes = [line for line in lines if line.startswith("  why: bm25 #")]
    assert len(notes) == sum(1 for line in lines if line.startswith("- "))
    assert any(line.startswith("       priors x") for line in lines)
    as_json = run_cli("query", "--json", "--why", "-C", str(repo.path), "retry budget S3")
    data = json.loads(as_json.stdout)
    assert list(data["why"]) == [r["id"] for r in data["results"]]
    assert data["stages"][0] == "lexical_candidates"
    assert data["why"][data["results"][0]["id"]]["bm25_rank"] >= 1


def test_a_failure_and_the_fix_that_follows_it_name_each_other(repo: Repo, home):
    t0 = 1_767_400_000.0
    log_command(home, "npm whoami", repo.path, 1, t0)
    log_command(home, "npm login", repo.path, 0, t0 + 120)
    log_command(home, "npm whoami", repo.path, 0, t0 + 180)
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    synced = run_cli("sync", "-q", "--no-embed", "--link-failures", "-C", str(repo.path))
    assert synced.returncode == 0, synced.stderr
    out = run_cli("query", "--json", "--why", "-C", str(repo.path), "why did npm whoami fail")
    data = json.loads(out.stdout)
    failed, fix = data["results"][:2]
    assert (failed["title"], fix["fix_for"]) == ("you: npm whoami  (exit 1)", failed["id"])
    assert {"relation": "fix", "id": fix["id"], "ref": fix["ref"]} in (
        data["why"][failed["id"]]["came_with"]
    )
    (follow,) = [m for m in data["why"][fix["id"]]["moves"] if m["stage"] == "follow"]
    assert follow["note"].startswith("the fix of npm whoami (linked by retry)")
    assert data["why"][fix["id"]]["score"] == data["why"][failed["id"]]["score"]  # its place


def test_why_across_projects_is_one_line(repo: Repo):
    out = run_cli("query", "--why", "--all-projects", "-C", str(repo.path), "retry")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert out.stderr.startswith("error: --why:")
