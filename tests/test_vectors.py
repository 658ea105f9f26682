"""The vector arm: embedded during sync, fused by rank, and never fatal when Ollama is not."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.retrieval.fuse import rrf, unit_relevance
from nexusmem_core.store.db import open_database
from nexusmem_core.store.fts import Candidate

from .conftest import Repo, changed, run_cli
from .fake_ollama import FakeOllama
from .test_shell_sync import log_command


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


def with_ollama(settings: Settings, fake: FakeOllama, model: str | None = None) -> Settings:
    return changed(settings, ollama_host=fake.url, embed_model=model or fake.model)


@pytest.fixture
def car_repo(repo: Repo) -> Repo:
    repo.commit(
        "docs: fleet notes",
        {"docs/fleet.md": "# Fleet\n\nEvery automobile is inspected before the weekly rental.\n"},
    )
    return repo


async def test_sync_embeds_everything_once(settings, car_repo, ollama):
    async with open_engine(with_ollama(settings, ollama), car_repo.path, create=True) as engine:
        report = await handlers.sync(engine)
        total = (await engine.db.fetchone("select count(*) from nodes"))[0]
        assert report.vectors == "ok" and report.embedded == total
        sent = ollama.embedded_texts
        again = await handlers.sync(engine)
        assert again.embedded == 0 and ollama.embedded_texts == sent  # unchanged: not re-sent
        status = await handlers.status(engine)
    assert status.embedded == total and f"{total} embedded, 0 pending" in status.vector


async def test_a_vector_only_hit_still_appears(settings, car_repo, ollama):
    async with open_engine(with_ollama(settings, ollama), car_repo.path, create=True) as engine:
        await handlers.sync(engine)
        bm25 = await handlers.search(engine, "car", vector=False)
        hybrid = await handlers.search(engine, "car")
    assert not bm25.results and bm25.vector == "off"
    assert hybrid.vector == "used"
    fleet = next(r for r in hybrid.results if r.ref == "docs/fleet.md#Fleet")
    assert fleet.arms == ["vector"]


async def test_a_hit_found_by_both_arms_says_so(settings, car_repo, ollama):
    async with open_engine(with_ollama(settings, ollama), car_repo.path, create=True) as engine:
        await handlers.sync(engine)
        response = await handlers.search(engine, "automobile inspected")
    assert response.results[0].ref == "docs/fleet.md#Fleet"
    assert response.results[0].arms == ["bm25", "vector"]


async def test_a_commit_found_by_each_arm_through_another_of_its_records_is_one_answer(
    settings, make_repo, ollama
):
    """The word arm finds a fix by its diff (the code names ``drain_backlog``), the vector
    arm by its message (a segfault is a panic); another commit holds the word "panic" and is
    second to the vector arm. Fused record by record, that other commit stands first, found
    by both; fused as answers, the fix is found by both arms, each ranking it higher."""
    r: Repo = make_repo("units")
    fix = r.commit(
        "Stop the segfault when the worker shuts down",
        {"worker.py": "def drain_backlog(items):\n    return sorted(items)\n"},
    )
    for i in range(6):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy module {i}", {f"m{i}.py": f"x = {i}\n"})
    other = r.commit("Keep the backlog panic handler small", {"handler.py": "SMALL = 1\n"})
    async with open_engine(with_ollama(settings, ollama), r.path, create=True) as engine:
        await handlers.sync(engine)
        bm25 = await handlers.search(engine, "panic in drain_backlog", vector=False)
        hybrid = await handlers.search(engine, "panic in drain_backlog")
    assert [res.ref for res in bm25.results[:2]] == [other, fix]  # the words alone
    assert hybrid.vector == "used"
    assert [res.ref for res in hybrid.results[:2]] == [fix, other]
    assert hybrid.results[0].arms == ["bm25", "vector"]


async def test_a_failed_command_keeps_its_word_rank_where_its_vector_says_less(
    settings, make_repo, ollama
):
    """A question about a failure is prose; the failed command is a command line, whose
    vector is far from it. The word arm ranks the command second (the commit holds "build"
    and "worker"); the vector arm, fifth, behind short messages that share the question's
    filler. Its word rank stands in for the vector's, so the failure comes first."""
    r: Repo = make_repo("failed-command")
    r.commit("Build the worker", {"worker.py": "x = 2\n"})
    for i in range(6):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy module {i}", {f"m{i}.py": f"x = {i}\n"})
    for word in ("cache", "queue", "index"):
        r.commit(f"The {word} would not", {f"{word}.py": "x = 1\n"})
    log_command(settings.home, "make worker-image", r.path, exit_code=2)
    async with open_engine(with_ollama(settings, ollama), r.path, create=True) as engine:
        await handlers.sync(engine)
        response = await handlers.search(engine, "the worker image would not build")
    assert response.vector == "used"
    assert response.results[0].title == "you: make worker-image  (exit 2)"


def cand(name: str) -> Candidate:
    return Candidate(
        name, "p", "doc_section", name, None, name, 0, 0, 0.5, "authored", "candidate", "{}", False
    )


def test_a_unit_counts_once_a_list_at_its_best_rank():
    commit, diff, other = cand("c1"), cand("d1"), cand("o")
    units = {"c1": "sha1", "d1": "sha1"}
    fused = unit_relevance(
        {"bm25": [diff, other, cand("c1")], "vector": [other, commit]},
        lambda c: units.get(c.id),
        k=5,
    )
    assert fused == {"sha1": 1 / 6 + 1 / 7}  # bm25 at the diff's rank 1 (not also rank 3)


def test_first_in_both_lists_ranks_first():
    a, b, c, d = cand("a"), cand("b"), cand("c"), cand("d")
    fused = rrf({"bm25": [a, b, c], "vector": [cand("a"), d, cand("b")]})
    assert [x.id for x in fused] == ["a", "b", "d", "c"]
    assert fused[0].arms == ["bm25", "vector"] and fused[2].arms == ["vector"]


@pytest.mark.parametrize(
    ("mode", "model", "expected"),
    [
        ("unreachable", None, "Ollama is not reachable"),
        ("ok", "not-pulled", "ollama pull not-pulled"),
        ("slow", None, "did not answer within 1s"),
        ("malformed", None, "malformed reply"),
        ("wrong_count", None, "malformed reply"),
    ],
)
async def test_failures_leave_sync_and_search_on_bm25(
    settings, repo, ollama, mode, model, expected
):
    ollama.mode, ollama.delay = mode, 3.0
    host = "http://127.0.0.1:9" if mode == "unreachable" else ollama.url
    tuned = changed(settings, ollama_host=host, embed_model=model or ollama.model)
    async with open_engine(tuned, repo.path, create=True) as engine:
        engine.config = changed(
            engine.config, embed=changed(engine.config.embed, timeout_seconds=1)
        )
        report = await handlers.sync(engine)
        response = await handlers.search(engine, "retry budget")
    assert report.commits == 4 and report.embedded == 0
    # Never having had vectors, an absent Ollama is the quiet BM25 mode; anything else is said.
    state = "off: " if mode == "unreachable" else "skipped: "
    assert report.vectors.startswith(state) and expected in report.vectors
    assert response.results and response.vector.startswith("off")


async def test_an_interrupted_pass_resumes_and_a_new_model_re_embeds(settings, repo, ollama):
    async with open_engine(with_ollama(settings, ollama), repo.path, create=True) as engine:
        first = await handlers.sync(engine, embed_limit=5)
        total = (await engine.db.fetchone("select count(*) from nodes"))[0]
        rest = await handlers.sync(engine)
        assert (first.embedded, rest.embedded) == (5, total - 5)
    ollama.model, ollama.dims = "other-embed", 24
    async with open_engine(with_ollama(settings, ollama), repo.path) as engine:
        changed = await handlers.sync(engine)
        models = await engine.db.fetchall("select distinct model, dims from embeddings")
    assert "embedding model changed from fake-embed" in changed.vectors
    assert changed.embedded == total and models == [("other-embed", 24)]


async def test_a_changed_dimension_under_one_name_rebuilds(settings, repo, ollama):
    async with open_engine(with_ollama(settings, ollama), repo.path, create=True) as engine:
        await handlers.sync(engine)
        ollama.dims = 48
        repo.commit("fix: one more", {"x.txt": "x\n"})
        await handlers.sync(engine)
        dims = await engine.db.fetchall("select distinct dims from embeddings")
        assert dims == [(48,)]
        response = await handlers.search(engine, "one more")
    assert response.vector == "used"


async def test_knn_matches_brute_force(tmp_path: Path):
    from nexusmem_core.store import vectors

    rng = random.Random(7)
    dims, count = 16, 300
    data = [[rng.gauss(0, 1) for _ in range(dims)] for _ in range(count)]
    async with open_database(tmp_path / "v.db") as db:
        if not db.vectors.loaded:
            pytest.skip(f"sqlite-vec not loaded: {db.vectors.reason}")
        items = [vectors.Pending(i + 1, "p" if i % 2 else "q", "", "h") for i in range(count)]
        async with db.transaction():
            await vectors.store(db, "m", items, data)
        query = [rng.gauss(0, 1) for _ in range(dims)]
        got = await vectors.knn(db, "p", query, 10)

    def cosine(a: list[float], b: list[float]) -> float:
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return 1 - dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)

    f32 = [list(struct.unpack(f"{dims}f", struct.pack(f"{dims}f", *v))) for v in data]
    brute = sorted((cosine(query, f32[i]), i + 1) for i in range(count) if i % 2)[:10]
    assert [seq for seq, _ in got] == [seq for _, seq in brute]


def test_cli_sync_is_quiet_without_ollama_and_says_so_when_it_goes(
    repo: Repo, home: Path, ollama: FakeOllama
):
    run_cli("init", "-C", str(repo.path))
    out = run_cli("sync", "-C", str(repo.path))
    assert out.returncode == 0 and "vectors" not in out.stderr  # BM25 alone: first class
    data = json.loads(run_cli("sync", "--json", "-C", str(repo.path)).stdout)
    assert data["vectors"].startswith("off: Ollama is not reachable at http://127.0.0.1:9")
    env = {"OLLAMA_HOST": ollama.url, "NEXUSMEM_EMBED_MODEL": ollama.model}
    assert run_cli("sync", "-C", str(repo.path), env=env).returncode == 0  # embeds
    ollama.model = "renamed"  # the configured model is gone from the server
    repo.commit("fix: something new to embed", {"new.txt": "n\n"})
    out = run_cli("sync", "-C", str(repo.path), env=env)
    lines = [line for line in out.stderr.splitlines() if line.startswith("vectors: ")]
    assert len(lines) == 1 and "ollama pull fake-embed" in lines[0]
    data = json.loads(
        run_cli("query", "retry", "--json", "--no-vector", "-C", str(repo.path)).stdout
    )
    assert data["vector"] == "off" and all(r["arms"] == ["bm25"] for r in data["results"])


@pytest.mark.parametrize(
    ("mode", "model", "expected"),
    [
        ("ok", None, "used"),
        ("slow", None, "did not answer within 1s"),
        ("malformed", None, "malformed reply"),
        ("ok", "gone", "ollama pull"),
    ],
)
async def test_the_query_embedding_fails_over_to_bm25(
    settings, repo, ollama, mode, model, expected
):
    async with open_engine(with_ollama(settings, ollama), repo.path, create=True) as engine:
        await handlers.sync(engine)
        engine.config = changed(
            engine.config, embed=changed(engine.config.embed, query_timeout_seconds=1)
        )
        ollama.mode = mode
        if model:
            ollama.model = model
        response = await handlers.search(engine, "retry budget")
    assert expected in response.vector
    titles = [res.title for res in response.results]
    if expected == "used":
        # Both arms rank: the short "feat: add the retry loop" is the fake's nearest vector,
        # and its diff holds RETRY_BUDGET; the fix is BM25's first, the vector's fourth.
        assert titles[0].startswith("feat: add the retry") and response.results[0].arms == [
            "bm25",
            "vector",
        ]
        assert titles[1].startswith("fix: raise the retry")
    else:  # BM25 alone
        assert titles and titles[0].startswith("fix: raise the retry")
        assert all(res.arms == ["bm25"] for res in response.results)


async def test_a_vector_left_from_before_a_rebuild_finds_no_other_node(settings, car_repo, ollama):
    # Found while building the crash loop (tests/crash.py): a rebuild re-inserts the nodes,
    # and their row numbers, which vectors are keyed by, go to other nodes. Until the vectors
    # are made again (Ollama away, the embedding pass killed), the old ones must not point at
    # those.
    async with open_engine(with_ollama(settings, ollama), car_repo.path, create=True) as engine:
        await handlers.sync(engine)
        before = await handlers.search(engine, "car")
    assert "fleet" in before.results[0].title.lower() and "vector" in before.results[0].arms
    car_repo.commit("feat: zebra stripes", {"zebra.txt": "zebra\n"})  # shifts the row numbers
    async with open_engine(settings, car_repo.path) as engine:  # Ollama is away
        report = await handlers.sync(engine, rebuild=True)
    assert report.embedded == 0
    async with open_engine(with_ollama(settings, ollama), car_repo.path) as engine:
        found = await handlers.search(engine, "car")
        own = await engine.db.fetchall(
            "select n.id from nodes n join embeddings e on e.seq = n.seq "
            "and e.content_hash = n.content_hash"
        )
    by_vector = {r.id for r in found.results if "vector" in r.arms}
    assert by_vector <= {node_id for (node_id,) in own}


def _filler(words: int, seed: int) -> str:
    rng = random.Random(seed)
    vocabulary = [f"word{n}" for n in range(400)]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


@pytest.fixture
def garage_repo(repo: Repo) -> Repo:
    """A long section that names the automobile only far past its head, and a short one that
    names a vehicle once among many words: the short one is nearer a question about a car by
    its one vector, the long one by the passage that holds the automobile."""
    tail = "The automobile lift needs a service. Park each automobile on the automobile lift."
    repo.commit(
        "docs: garage and parking",
        {
            "docs/garage.md": f"# Garage\n\n{_filler(450, 1)}\n\n{tail}\n\n{_filler(60, 2)}\n",
            "docs/parking.md": f"# Parking\n\n{_filler(80, 3)} vehicle {_filler(40, 4)}\n",
        },
    )
    return repo


async def test_a_long_section_is_found_by_a_passage_past_its_head(settings, garage_repo, ollama):
    async with open_engine(with_ollama(settings, ollama), garage_repo.path, create=True) as engine:
        await handlers.sync(engine)
        found = await handlers.search(engine, "car")
    assert found.vector == "used"
    assert found.results[0].ref == "docs/garage.md#Garage"
    assert found.results[0].arms == ["vector"]


def test_passages_cover_the_body_after_its_head_in_whole_words():
    from nexusmem_core.store import vectors

    body = _filler(900, 5)
    parts = vectors.passages("doc_section", "Garage", body)
    assert 2 <= len(parts) <= vectors.PASSAGES
    assert all(p.startswith("Garage\n") and len(p) <= 7 + vectors.PASSAGE_CHARS for p in parts)
    words = set(body.split())
    assert all(set(p.split("\n", 1)[1].split()) <= words for p in parts)  # no word cut in two
    covered = " ".join(p.split("\n", 1)[1] for p in parts)
    tail = body[vectors.HEAD_CHARS : vectors.HEAD_CHARS + len(parts) * 600].split()[1:-1]
    assert set(tail) <= set(covered.split())  # nothing between the passages is skipped
    assert vectors.passages("doc_section", "Short", body[:800]) == []
    assert vectors.passages("file_diff", "a.py", body) == []  # code: its head alone


async def _passages_held(engine) -> tuple[int, int]:
    """(passage vectors stored, passages the current nodes have)."""
    from nexusmem_core.store import vectors

    (stored,) = await engine.db.fetchone(f"select count(*) from {vectors.PASSAGE_TABLE}")
    rows = await engine.db.fetchall("select kind, title, body from nodes")
    return stored, sum(len(vectors.passages(*row)) for row in rows)


async def test_passages_are_replaced_and_removed_with_their_node(settings, garage_repo, ollama):
    from nexusmem_core.store import vectors

    async with open_engine(with_ollama(settings, ollama), garage_repo.path, create=True) as engine:
        await handlers.sync(engine)
        stored, wanted = await _passages_held(engine)
        assert stored == wanted > 0
        garage_repo.commit("docs: shorter garage", {"docs/garage.md": "# Garage\n\nShort now.\n"})
        await handlers.sync(engine)
        after = await _passages_held(engine)
        (seq,) = await engine.db.fetchone(
            "select seq from nodes where ref = 'docs/garage.md#Garage'"
        )
        own = await engine.db.fetchall(
            f"select rowid from {vectors.PASSAGE_TABLE} where rowid between ? and ?",
            (seq * vectors.SLOTS, seq * vectors.SLOTS + vectors.PASSAGES),
        )
        found = await handlers.search(engine, "car")
    assert after[0] == after[1] and own == []
    assert found.results[0].ref == "docs/parking.md#Parking"  # its old passages are gone


async def test_a_memory_embedded_before_passages_embeds_its_long_nodes_again(
    settings, garage_repo, ollama
):
    """v15: the long nodes an older version embedded by their head alone are embedded whole
    by the next sync with a model, and only they."""
    from nexusmem_core.store import vectors

    tuned = with_ollama(settings, ollama)
    async with open_engine(tuned, garage_repo.path, create=True) as engine:
        await handlers.sync(engine)
        await engine.db.execute(f"delete from {vectors.PASSAGE_TABLE}")  # as v14 left it
        await engine.db.execute("delete from schema_migrations where version = 15")
        rows = await engine.db.fetchall("select kind, title, body from nodes")
    long_nodes = sum(1 for row in rows if vectors.passages(*row))
    async with open_engine(tuned, garage_repo.path) as engine:  # migrated to v15 on opening
        report = await handlers.sync(engine)
        stored, wanted = await _passages_held(engine)
        found = await handlers.search(engine, "car")
    assert report.embedded == long_nodes > 0
    assert stored == wanted > 0
    assert found.results[0].ref == "docs/garage.md#Garage"
