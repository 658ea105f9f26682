"""The common words' lists (store/wordtops.py): a one-word query read from its word's list ranks
exactly as scoring every row would, whatever was written, rewritten or removed since."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.models import Node
from nexusmem_core.retrieval import search as pipeline
from nexusmem_core.retrieval import words
from nexusmem_core.store import wordtops
from nexusmem_core.store.fts import Candidate, bm25_candidates
from nexusmem_core.store.nodes import delete_nodes, upsert_nodes

from .test_fts import memory_of, note


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists of a handful of rows, for words in ten rows or more: truncated, as at scale."""
    monkeypatch.setattr(wordtops, "LIST_HITS", 10)
    monkeypatch.setattr(wordtops, "KEEP", 8)
    monkeypatch.setattr(wordtops, "REFRESH_ROWS", 5)
    monkeypatch.setattr(words, "EXACT_HITS", 5)


def gamma_notes(pid: str, count: int = 60, seed: int = 7) -> list[Node]:
    """Notes holding "gamma" (and "gammas") once to a few times, in texts of varied length."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        filler = " ".join(f"w{rng.randrange(500)}" for _ in range(rng.randrange(2, 40)))
        title = "gamma note" if rng.random() < 0.2 else f"note {i}"
        body = " ".join(["gammas"] * rng.randrange(1, 4)) + " " + filler
        out.append(note(pid, f"g{i}", title, body))
    out += [note(pid, f"d{i}", f"delta {i}", "plain text") for i in range(30)]
    # Rows without it: the word is in a tenth of the rows, so the IDF barely moves when a row
    # holding it goes (as at scale, where a listed word is in 8,000 rows or more).
    out += [note(pid, f"p{i}", f"padding {i}", "words") for i in range(600)]
    return out


async def exact(engine: Engine, word: str, limit: int, pid: str | None = None) -> list[Candidate]:
    return await bm25_candidates(engine.db, f'"{word}"', pid or engine.project_id, limit)


async def assert_ranks_as_exact(
    engine: Engine,
    got: list[Candidate] | None,
    word: str,
    limit: int,
    pid: str | None = None,
    tolerance: float = 1e-9,
) -> None:
    """``got`` is what scoring every row gives: at each rank a row whose exact score is the
    exact ranking's score there, reported as that score (rows tied in score may trade places).
    ``tolerance``: the relative error allowed, for lists made before the mean row length moved."""
    assert got is not None
    every = await exact(engine, word, 10_000, pid)
    true = {c.id: c.relevance for c in every}
    assert len(got) == min(limit, len(every))
    for rank, c in enumerate(got):
        want = every[rank].relevance
        assert abs(true[c.id] - want) <= tolerance * want, (rank, c.ref)
        assert abs(c.relevance - true[c.id]) <= tolerance * want, (rank, c.ref)


async def test_a_common_word_is_read_from_its_list_in_exact_order(settings: Settings, make_repo):
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        assert await wordtops.best(db, "gamma", pid, 5) is None  # no list yet
        made = await wordtops.refresh(db, force=True)
        assert made is not None and made.scored_in_full == made.tokens >= 3  # gamma, note, delta
        hits, floor = await db.fetchone(
            "select hits, floor from word_top_tokens where token = 'gamma'"
        )
        (kept,) = await db.fetchone("select count(*) from word_tops where token = 'gamma'")
        assert hits == 60 and kept == 8 and floor > 0  # truncated: the rest weigh less
        for word in ("gamma", "gammas"):  # a query word reaches its stemmed token
            await assert_ranks_as_exact(engine, await wordtops.best(db, word, pid, 5), "gamma", 5)
        await assert_ranks_as_exact(engine, await wordtops.best(db, "delta", pid, 8), "delta", 8)
        assert await wordtops.best(db, "w3", pid, 5) is None  # in a few rows: no list
        assert await wordtops.best(db, "gamma_note", pid, 5) is None  # two tokens: a phrase
        assert await wordtops.refresh(db) is None  # nothing new: not due


async def test_rows_written_after_the_lists_are_scored_live_then_folded_in(
    settings: Settings, make_repo
):
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        await wordtops.refresh(db, force=True)
        async with db.transaction():
            await upsert_nodes(db, [note(pid, f"new{i}", "gamma gamma", "gamma") for i in range(3)])
        got = await wordtops.best(db, "gamma", pid, 5)
        assert got is not None and {c.ref for c in got[:3]} == {"new0", "new1", "new2"}
        await assert_ranks_as_exact(engine, got, "gamma", 5, tolerance=0.02)
        assert await wordtops.refresh(db) is None  # 3 live rows: fewer than REFRESH_ROWS
        async with db.transaction():
            await upsert_nodes(db, [note(pid, f"more{i}", "gamma", "x y z") for i in range(3)])
        folded = await wordtops.refresh(db)
        assert folded is not None and folded.scored_in_full == 0 and folded.rows_folded >= 6
        (upto,) = await db.fetchone("select upto from word_top_state")
        assert upto == (await db.fetchone("select max(seq) from nodes"))[0]
        listed = {
            r
            for (r,) in await db.fetchall(
                "select n.ref from word_tops t join nodes n on n.seq = t.seq "
                "where t.token = 'gamma'"
            )
        }
        assert {"new0", "new1", "new2"} <= listed
        await assert_ranks_as_exact(
            engine, await wordtops.best(db, "gamma", pid, 8), "gamma", 8, tolerance=0.02
        )


async def test_rewritten_and_removed_rows_leave_the_lists(settings: Settings, make_repo):
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        await wordtops.refresh(db, force=True)
        top = await wordtops.best(db, "gamma", pid, 5)
        assert top is not None
        first, second = top[0], top[1]
        by_ref = {n.ref: n for n in gamma_notes(pid)}
        async with db.transaction():
            # The best row no longer says gamma; another row now says it more than any.
            await upsert_nodes(db, [note(pid, first.ref, "rewritten", "nothing here")])
            await upsert_nodes(db, [note(pid, "g59", "gamma gamma gamma", "gamma")])
            await delete_nodes(db, [second.id])
        assert by_ref["g59"].title != "gamma gamma gamma"
        (late,) = await db.fetchone("select count(*) from word_top_late")
        assert late == 2  # the two rewrites; a removal needs no live scoring
        got = await wordtops.best(db, "gamma", pid, 5)
        assert got is not None and got[0].ref == "g59"
        assert first.id not in {c.id for c in got} and second.id not in {c.id for c in got}
        await assert_ranks_as_exact(engine, got, "gamma", 5, tolerance=0.02)
        folded = await wordtops.refresh(db)  # due: rows were rewritten
        assert folded is not None
        assert await db.fetchone("select count(*) from word_top_late") == (0,)
        await assert_ranks_as_exact(
            engine, await wordtops.best(db, "gamma", pid, 5), "gamma", 5, tolerance=0.02
        )


async def test_a_seq_handed_out_again_is_scored_as_its_new_row(settings: Settings, make_repo):
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        await wordtops.refresh(db, force=True)
        (high,) = await db.fetchone("select max(seq) from nodes")
        last = await db.fetchone("select id from nodes where seq = ?", (high,))
        async with db.transaction():
            await delete_nodes(db, [last[0]])
            await upsert_nodes(db, [note(pid, "reborn", "gamma gamma gamma", "gamma")])
        assert await db.fetchone("select seq from nodes where ref = 'reborn'") == (high,)
        got = await wordtops.best(db, "gamma", pid, 5)
        assert got is not None and got[0].ref == "reborn"
        await assert_ranks_as_exact(engine, got, "gamma", 5, tolerance=0.02)


async def test_when_filters_leave_too_few_listed_rows_the_word_is_scored_in_full(
    settings: Settings, make_repo
):
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        await wordtops.refresh(db, force=True)
        ranked = await exact(engine, "gamma", 20)
        older = [c.seq for c in ranked[9:13]]  # recorded long ago: past the list's 8 rows
        async with db.transaction():
            marks = ",".join("?" * len(older))
            await db.execute(f"update nodes set created_at = 1000 where seq in ({marks})", older)
        # As of then, no listed row existed: the list cannot say which rows lead.
        assert await wordtops.best(db, "gamma", pid, 3, as_of=1000) is None
        found = await words.word_candidates(db, ["gamma"], pid, 3, as_of=1000)
        want = await bm25_candidates(db, '"gamma"', pid, 3, as_of=1000)
        assert [c.seq for c in found] == [c.seq for c in want]
        assert {c.seq for c in found} <= set(older) and len(found) == 3
        # Without the filter, the list answers.
        assert await wordtops.best(db, "gamma", pid, 3) is not None


async def every_hit_scored(engine: Engine, text: str) -> list[str]:
    """The titles ``text`` finds with every hit scored: no list read."""
    original = words.EXACT_HITS
    words.EXACT_HITS = 10**9
    try:
        return [r.title for r in (await handlers.search(engine, text)).results]
    finally:
        words.EXACT_HITS = original


async def test_sync_makes_the_lists_and_a_search_reads_them(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    answered = []
    best = wordtops.best

    async def counted(*args, **kwargs):
        found = await best(*args, **kwargs)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(wordtops, "best", counted)
    monkeypatch.setattr(pipeline, "CANDIDATES", 6)  # within the 8 rows a list keeps here
    repo = make_repo("widgets")
    for i in range(14):
        # Lengths differ from row to row, so no two score the same (ties could go either way).
        message = f"feat: widget step {i}\n\n" + "detail " * i
        repo.commit(message, {f"w{i}.txt": "widget\n" * (i % 3 + 1) + "pad\n" * i})
    for i in range(20):
        repo.commit(f"chore: bump {i}", {f"b{i}.txt": "x\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine)
        assert report.word_lists >= 1
        (listed,) = await engine.db.fetchone(
            "select count(*) from word_tops where token = 'widget'"
        )
        assert listed == wordtops.KEEP

        async def search() -> list[str]:
            return [r.title for r in (await handlers.search(engine, "widget")).results]

        assert await search() == await every_hit_scored(engine, "widget")
        repo.commit("feat: widget polish", {"p.txt": "widget\n"})
        assert (await handlers.sync(engine)).word_lists == -1  # a few rows: live until due
        found = await search()
        assert "feat: widget polish" in found
        assert found == await every_hit_scored(engine, "widget")
        rebuilt = await handlers.sync(engine, rebuild=True)
        assert rebuilt.word_lists >= 1  # every row new: the lists are made again
        assert await search() == await every_hit_scored(engine, "widget")
    assert answered == [True, True, True]  # each search above read the list


async def test_a_refresh_that_another_write_overtook_writes_nothing(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        common = wordtops._common_tokens
        first = await wordtops.refresh(db, force=True)
        assert first is not None and first.tokens
        listed = await db.fetchone("select count(*), max(seq) from word_tops")

        async def removed(db_):
            async with db.transaction():  # another process forgets an old row meanwhile
                await delete_nodes(db, [node.id for node in gamma_notes(pid)[:1]])
            return await common(db_)

        monkeypatch.setattr(wordtops, "_common_tokens", removed)
        assert await wordtops.refresh(db, force=True) is None  # nothing new, but one row less
        after = await db.fetchone("select count(*), max(seq) from word_tops")
        assert after[0] <= listed[0]  # the trigger's delete only: nothing written
        await db.execute("delete from word_tops")
        await db.execute("update word_top_state set upto = 0, avgdl = 0")

        async def overtaken(db_):
            async with db.transaction():  # another sync writes while this refresh reads
                await upsert_nodes(db, [note(pid, "meanwhile", "gamma gamma", "gamma")])
            return await common(db_)

        monkeypatch.setattr(wordtops, "_common_tokens", overtaken)
        assert await wordtops.refresh(db, force=True) is None
        assert await db.fetchone("select count(*) from word_tops") == (0,)
        assert await db.fetchone("select upto from word_top_state") == (0,)
        monkeypatch.setattr(wordtops, "_common_tokens", common)
        assert await wordtops.refresh(db, force=True) is not None
        got = await wordtops.best(db, "gamma", pid, 5)
        assert got is not None and got[0].ref == "meanwhile"
        await assert_ranks_as_exact(engine, got, "gamma", 5)


async def test_many_rewritten_rows_send_their_words_back_to_full_scoring(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(wordtops, "LATE_MOST", 2)
    async with memory_of(settings, make_repo, gamma_notes) as engine:
        db, pid = engine.db, engine.project_id
        await wordtops.refresh(db, force=True)
        async with db.transaction():  # a value forgotten from four rows, say
            await upsert_nodes(
                db, [note(pid, f"g{i}", "gamma note", f"gamma rewritten {i}") for i in range(4)]
            )
        assert await wordtops.best(db, "gamma", pid, 5) is None  # too many to score live
        found = await words.word_candidates(db, ["gamma"], pid, 5)
        await assert_ranks_as_exact(engine, found, "gamma", 5)
        again = await wordtops.refresh(db)
        assert again is not None and again.scored_in_full >= 1  # gamma, over the whole index
        assert await db.fetchone("select count(*) from word_top_late") == (0,)
        await assert_ranks_as_exact(engine, await wordtops.best(db, "gamma", pid, 5), "gamma", 5)


async def test_a_refresh_that_fails_leaves_the_sync_done_and_says_so(
    settings: Settings, make_repo, monkeypatch: pytest.MonkeyPatch
):
    import sqlite3

    async def failing(db, **_):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(wordtops, "refresh", failing)
    repo = make_repo("full")
    repo.commit("feat: widget", {"w.txt": "widget\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine)
        (commits,) = await engine.db.fetchone(
            "select count(*) from nodes where kind = 'git_commit'"
        )
    assert commits == 1 and report.word_lists == -1
    assert any(
        "lists were not brought up to date: database or disk is full" in n for n in report.notes
    )


async def test_a_token_that_does_not_stem_to_itself_is_listed_by_a_word_that_does(
    settings: Settings, make_repo
):
    """porter stems "leases" to "leas", and "leas" to "lea": the list of "leas" is scored
    through "leases", and a query of "lease" or "leases" reads it."""

    def notes(pid: str) -> list[Node]:
        rng = random.Random(3)
        out = [
            note(pid, f"l{i}", f"lease {i}", "leases " * rng.randrange(1, 4) + "x " * i)
            for i in range(20)
        ]
        return out + [note(pid, f"p{i}", f"padding {i}", "words") for i in range(200)]

    async with memory_of(settings, make_repo, notes) as engine:
        db, pid = engine.db, engine.project_id
        assert await wordtops.token_of(db, "leas") == "lea"
        await wordtops.refresh(db, force=True)
        assert await db.fetchone("select hits from word_top_tokens where token = 'leas'") == (20,)
        for word in ("lease", "leases"):
            await assert_ranks_as_exact(engine, await wordtops.best(db, word, pid, 5), word, 5)


async def test_a_stop_word_gets_no_list_and_its_query_alone_is_scored_in_full(
    settings: Settings, make_repo
):
    """The words "the" and "this" (the token "thi") are in every gamma note, more than "gamma":
    they get no list, and a query of one of them alone still ranks exactly."""

    def notes(pid: str) -> list[Node]:
        made = gamma_notes(pid)
        return [replace(n, body=f"this is the {n.body} the end") for n in made[:60]] + made[60:]

    async with memory_of(settings, make_repo, notes) as engine:
        db, pid = engine.db, engine.project_id
        assert await wordtops.tokens_of(db, ["this", "the", "gammas"]) == {"thi", "the", "gamma"}
        made = await wordtops.refresh(db, force=True)
        assert made is not None
        listed = {t for (t,) in await db.fetchall("select token from word_top_tokens")}
        assert "gamma" in listed and not listed & {"the", "thi", "is"}
        for word in ("the", "this"):
            assert await wordtops.best(db, word, pid, 5) is None
            got = await words.word_candidates(db, [word], pid, 5)
            await assert_ranks_as_exact(engine, got, word, 5)
