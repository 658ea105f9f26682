"""The approximate k-NN of big memories (store/sketches.py): the same neighbours as the exact
scan, and a sketch that follows the database through writes of this and other connections."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.store import sketches, vectors

from ..conftest import Repo, changed
from ..fake_ollama import FakeOllama, vector

TOPICS = ["upload", "retry", "cache", "parser", "token", "schema", "socket", "render"]


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        fake.dims = 64
        yield fake


@pytest.fixture
def small_bound(monkeypatch):
    """Sketch from 20 vectors on, and rescore 25% of them: the approximate path, at test size."""
    monkeypatch.setattr(sketches, "EXACT_UP_TO", 20)
    monkeypatch.setattr(sketches, "SHARE", 0.25)
    monkeypatch.setattr(sketches, "FLOOR", 1)


def history(repo: Repo, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
        repo.commit(f"fix: {a} {b} step {i}", {f"f{i}.txt": f"{a} {b}\n"})


def with_ollama(settings: Settings, fake: FakeOllama) -> Settings:
    return changed(settings, ollama_host=fake.url, embed_model=fake.model)


@asynccontextmanager
async def synced(
    settings: Settings, repo: Repo, fake: FakeOllama, commits: int
) -> AsyncIterator[Engine]:
    """An engine on ``repo`` with ``commits`` more commits, synced and embedded."""
    history(repo, commits)
    async with open_engine(with_ollama(settings, fake), repo.path, create=True) as engine:
        await handlers.sync(engine)
        yield engine


async def exact(db, pid: str, query: list[float], k: int) -> list[float]:
    """The exact scan's ``k`` smallest distances."""
    rows = await db.fetchall(
        f"select distance from {vectors.TABLE} where embedding match ? and k = ? "
        "and project_id = ? order by distance",
        (vectors._blob(query), k, pid),
    )
    return [round(d, 4) for (d,) in rows]


async def distances(db, seqs: list[int], query: list[float]) -> list[float]:
    """The float vectors' own distances for ``seqs``: the same as ``exact`` for the same
    neighbours (ties may come in another order)."""
    out = []
    for seq in seqs:
        (d,) = await db.fetchone(
            f"select vec_distance_cosine(embedding, ?) from {vectors.TABLE} where rowid = ?",
            (vectors._blob(query), seq),
        )
        out.append(round(d, 4))
    return out


async def test_past_the_exact_bound_the_nearest_are_the_exact_scans(
    settings, repo, ollama, small_bound
):
    async with synced(settings, repo, ollama, 40) as engine:
        db, pid = engine.db, engine.project_id
        sketch = await sketches.current(db, wait=True)
        assert sketch is not None and sketch.size > 20  # the approximate path is the one taken
        for text in ["retry upload", "parser token", "schema socket render"]:
            query = vector(text, ollama.dims)
            found = await vectors.knn(db, pid, query, 5)
            assert [d for _, d in found] == sorted(d for _, d in found)
            got = await distances(db, [seq for seq, _ in found], query)
            assert sorted(got) == await exact(db, pid, query, 5)
        response = await handlers.search(engine, "retry upload")
    assert response.vector == "used"
    assert "retry" in response.results[0].title and "upload" in response.results[0].title


async def test_the_sketch_follows_writes_from_this_and_other_connections(
    settings, repo, ollama, small_bound
):
    history(repo, 30)
    cfg = with_ollama(settings, ollama)
    async with open_engine(cfg, repo.path, create=True) as server:
        await handlers.sync(server)
        first = await sketches.current(server.db, wait=True)
        assert first is not None
        held = len(first.seqs)
        # Another process syncs new commits: appended to the sketch this one holds.
        repo.commit("feat: quasar telemetry", {"q.txt": "quasar\n"})
        async with open_engine(cfg, repo.path) as other:
            await handlers.sync(other)
        # Two searches at once after the change: the new rows are appended once.
        after, same = await asyncio.gather(sketches.current(server.db), sketches.current(server.db))
        (stored,) = await server.db.fetchone("select count(*) from embeddings")
        assert after is first and same is first  # appended, not read again
        assert len(after.seqs) == len(set(after.seqs.tolist())) == stored > held
        response = await handlers.search(server, "quasar telemetry")
        assert response.results[0].title == "feat: quasar telemetry"
        # A node forgotten: a rewrite, so the sketch is read again without it.
        (seq,) = await server.db.fetchone(
            "select seq from nodes where title = 'feat: quasar telemetry'"
        )
        async with server.db.transaction():
            await vectors.delete(server.db, [seq])
        again = await sketches.current(server.db, wait=True)
        assert again is not None and again is not first and seq not in set(again.seqs.tolist())


async def test_vectors_embedded_before_the_sketches_are_sketched_by_the_next_sync(
    settings, repo, ollama, small_bound
):
    async with synced(settings, repo, ollama, 30) as engine:
        db, pid = engine.db, engine.project_id
        query = vector("cache parser", ollama.dims)
        nearest = await exact(db, pid, query, 5)
        async with db.transaction():  # as a v8 database has them: vectors without sketches
            await db.execute("update embeddings set bits = null, i8 = null")
        assert await sketches.current(db) is None  # the exact scan meanwhile
        assert [round(d, 4) for _, d in await vectors.knn(db, pid, query, 5)] == nearest
        report = await handlers.sync(engine)
        assert report.embedded == 0  # sketched from the stored vectors, nothing re-embedded
        (missing,) = await db.fetchone("select count(*) from embeddings where bits is null")
        assert missing == 0 and await sketches.current(db, wait=True) is not None
        found = await vectors.knn(db, pid, query, 5)
        assert sorted(await distances(db, [s for s, _ in found], query)) == nearest


def test_signs_and_int8_copy_keep_the_vector():
    out = sketches.encode([[0.5, -0.25, 0.0, 1.0], [-1.0, 0.0, 0.0, 0.0]])
    bits, i8 = out[0]
    assert len(bits) == 8 and bits[0] == 0b1001  # dimensions 0 and 3 positive, padded to 64
    assert list(i8) == [64, 256 - 32, 0, 127]  # scaled so the largest is 127, as int8 bytes
    assert out[1][0] == bytes(8) and out[1][1][0] == 256 - 127


async def test_a_query_of_another_dimension_is_skipped_not_fatal(
    settings, repo, ollama, small_bound
):
    async with synced(settings, repo, ollama, 30) as engine:
        assert await sketches.current(engine.db, wait=True) is not None
        ollama.dims = 96  # the model now answers in another size; nothing re-embedded yet
        response = await handlers.search(engine, "retry upload")
    assert response.vector.startswith("skipped:") and "re-embed" in response.vector
    assert response.results  # BM25 still answers


async def test_another_projects_vectors_in_the_same_file_are_never_returned(
    settings, repo, ollama, small_bound, monkeypatch
):
    from nexusmem_core.models import Node
    from nexusmem_core.store.nodes import upsert_nodes

    monkeypatch.setattr(sketches, "SHARE", 1.0)  # every vector rescored: only the filter differs
    history(repo, 30)
    async with open_engine(with_ollama(settings, ollama), repo.path, create=True) as engine:
        db, pid = engine.db, engine.project_id
        async with db.transaction():  # as a memory holds a prior identity's nodes for a while
            await db.execute("insert into projects values ('other', 'other', '/x', null, 0)")
            await upsert_nodes(
                db,
                [
                    Node(
                        "other",
                        "doc_section",
                        "docs",
                        f"o{i}",
                        "retry upload",
                        "",
                        1,
                        0.5,
                        "authored",
                        None,
                        [],
                    )
                    for i in range(15)
                ],
            )
        await handlers.sync(engine)
        query = vector("retry upload", ollama.dims)
        assert await sketches.current(db, wait=True) is not None
        found = await vectors.knn(db, pid, query, 5)
        theirs = {
            s for (s,) in await db.fetchall("select seq from nodes where project_id = 'other'")
        }
        assert len(found) == 5 and not {seq for seq, _ in found} & theirs
        assert sorted(await distances(db, [s for s, _ in found], query)) == await exact(
            db, pid, query, 5
        )


async def test_a_query_reads_current_sign_pages_and_scans_exactly_when_they_are_not(
    settings, repo, ollama, small_bound, monkeypatch
):
    async with synced(settings, repo, ollama, 30) as engine:
        db, pid = engine.db, engine.project_id
        query = vector("token schema", ollama.dims)
        nearest = await exact(db, pid, query, 5)
        (marked,) = await db.fetchone("select count(*) from vec_sketch_dirty")
        assert marked == 0  # the sync rebuilt the pages it embedded into
        # A one-shot query (no background reads): current pages are cheap to read, so it does.
        sketch = await sketches.current(db)
        assert sketch is not None and len(sketch.seqs) == sketch.size
        found = await vectors.knn(db, pid, query, 5)
        assert sorted(await distances(db, [s for s, _ in found], query)) == nearest
        async with db.transaction():  # pages as an upgraded memory has them before its sync
            await db.execute(
                "insert into vec_sketch_dirty select distinct seq >> 12 from embeddings"
            )
    monkeypatch.setattr(sketches, "ROW_PAGES", 0)  # this memory's one page counts as many
    async with open_engine(with_ollama(settings, ollama), repo.path, read_only=True) as cli:
        # Reading every row's signs costs more than one exact scan: it scans exactly.
        assert [round(d, 4) for _, d in await vectors.knn(cli.db, pid, query, 5)] == nearest
        assert await sketches.current(cli.db) is None
        # A long-lived process reads them in the background, exact meanwhile, then the sketch.
        monkeypatch.setattr(sketches, "_warm_in_background", True)
        assert [round(d, 4) for _, d in await vectors.knn(cli.db, pid, query, 5)] == nearest
        for _ in range(200):
            if (sketch := await sketches.current(cli.db)) is not None:
                break
            await asyncio.sleep(0.02)
        assert sketch is not None and len(sketch.seqs) == sketch.size
        found = await vectors.knn(cli.db, pid, query, 5)
        assert sorted(await distances(cli.db, [s for s, _ in found], query)) == nearest


async def test_sign_pages_read_back_exactly_the_rows_they_page(tmp_path):
    from nexusmem_core.store.db import open_database

    def direct(rows):
        return [seq for seq, _ in rows], b"".join(bits for _, bits in rows)

    def paged(sketch):
        return sketch.seqs.tolist(), sketch.words.T.tobytes()

    seqs = [1, 2, 4095, 4096, 5000, 9000, 13000, 13001]  # four pages of 4,096 seqs
    vecs = [vector(f"word{i} other{i % 3}", 64) for i in range(len(seqs))]
    path = tmp_path / "m.db"
    async with open_database(path, vectors=False) as db:
        async with db.transaction():
            await db.executemany(
                "insert into embeddings (seq, model, dims, content_hash, embedded_at, bits, i8) "
                "values (?, 'm', 64, 'h', 0, ?, ?)",
                [(s, b, q) for s, (b, q) in zip(seqs, sketches.encode(vecs), strict=True)],
            )
            assert await sketches.refresh_pages(db) == 4
        read = sketches._read_apart(path, False)
        rows = await db.fetchall("select seq, bits from embeddings order by seq")
        assert paged(read) == direct(rows)
        async with db.transaction():  # one page changes: read from its rows until rebuilt
            await db.execute("delete from embeddings where seq = 5000")
            await db.execute("update embeddings set bits = ? where seq = 1", (bytes(8),))
        (marked,) = await db.fetchone("select count(*) from vec_sketch_dirty")
        rows = await db.fetchall("select seq, bits from embeddings order by seq")
        assert marked == 2 and paged(sketches._read_apart(path, False)) == direct(rows)
        async with db.transaction():
            assert await sketches.refresh_pages(db) == 2
            await db.execute("delete from embeddings where seq in (9000)")  # a page emptied
            assert await sketches.refresh_pages(db) == 1
        (pages,) = await db.fetchone("select count(*) from vec_sketch_pages")
        rows = await db.fetchall("select seq, bits from embeddings order by seq")
        assert pages == 3 and paged(sketches._read_apart(path, False)) == direct(rows)
