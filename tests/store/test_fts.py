"""The FTS layer: terms that cannot change the ranking are not searched; a query that would
score too many rows takes the rows holding every term first (retrieval/words.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.models import Node
from nexusmem_core.retrieval import words
from nexusmem_core.store import fts
from nexusmem_core.store.fts import bm25_candidates, term_counts
from nexusmem_core.store.nodes import delete_nodes, upsert_nodes, upsert_project, write_rows
from nexusmem_core.store.rows import node_rows


async def test_terms_in_more_than_half_the_rows_are_dropped(settings: Settings, make_repo):
    repo = make_repo("common")
    for i in range(6):
        repo.commit(f"feat: widget step {i}", {f"w{i}.txt": "widget\n"})
    repo.commit("fix: widget overflow on resize", {"o.txt": "y\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        counts = await term_counts(engine.db, ["widget", "overflow", "absent"])
        assert counts.informative(["widget", "overflow"]) == ["overflow"]
        assert counts.informative(["widget"]) == ["widget"]
        assert counts.informative(["widget", "absent"]) == ["widget", "absent"]
        response = await handlers.search(engine, "widget overflow")
    assert response.results[0].title == "fix: widget overflow on resize"


async def test_a_term_counts_most_in_the_title_then_the_body_then_the_paths(
    settings: Settings, make_repo
):
    repo = make_repo("weights")
    repo.commit("chore: start", {"a.txt": "a\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        pid = engine.project_id

        def node(ref: str, title: str, body: str, path: str) -> Node:
            return Node(
                pid, "doc_section", "docs", ref, title, body, 1, 0.5, "authored", None, [path]
            )

        async with engine.db.transaction():
            await upsert_nodes(
                engine.db,
                [
                    node("paths", "plain notes", "plain text here", "src/zephyr.py"),
                    node("body", "plain notes", "zephyr text here", "src/a.py"),
                    node("title", "zephyr notes", "plain text here", "src/a.py"),
                ],
            )
        found = await bm25_candidates(engine.db, '"zephyr"', pid)
    assert [c.ref for c in found] == ["title", "body", "paths"]


def note(pid: str, ref: str, title: str, body: str = "") -> Node:
    return Node(pid, "doc_section", "docs", ref, title, body, 1, 0.5, "authored", None, [])


@asynccontextmanager
async def memory_of(
    settings: Settings, make_repo, notes: Callable[[str], list[Node]]
) -> AsyncIterator[Engine]:
    """A synced memory of a one-commit repository, with ``notes(project_id)`` added."""
    repo = make_repo("notes")
    repo.commit("chore: start", {"a.txt": "a\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        async with engine.db.transaction():
            await upsert_nodes(engine.db, notes(engine.project_id))
        yield engine


async def test_term_counts_are_exact_up_to_the_probe_and_estimated_beyond(
    settings: Settings, make_repo, monkeypatch
):
    monkeypatch.setattr(fts, "PROBE", 40)  # 10 hits walked in each of the 4 parts
    async with memory_of(
        settings,
        make_repo,
        lambda pid: (
            [note(pid, f"o{i}", f"old alpha {i}") for i in range(60)]  # alpha: old rows only
            + [note(pid, f"n{i}", f"new {i}", "beta" if i < 3 else "") for i in range(60)]
        ),
    ) as engine:
        counts = await term_counts(engine.db, ["alpha", "beta", "gamma"])
    assert counts.hits["beta"] == 3 and counts.hits["gamma"] == 0  # under the probe: exact
    # alpha fills the older half densely: estimated near its 60, not from the newest rows.
    assert 45 <= counts.hits["alpha"] <= 75 and counts.rows >= 120
    assert counts.total(["alpha", "beta"]) == counts.hits["alpha"] + 3


async def test_past_the_exact_bound_the_rows_holding_every_term_come_first(
    settings: Settings, make_repo, monkeypatch
):
    async with memory_of(
        settings,
        make_repo,
        lambda pid: (
            [note(pid, f"both{i}", f"note {i}", "kiwi mango " + "word " * 60) for i in range(3)]
            # One word, thrice, in a short title: exact BM25 ranks it above them all.
            + [note(pid, "kiwi-only", "kiwi kiwi kiwi")]
            + [note(pid, f"mango{i}", f"mango {i}", "filler") for i in range(3)]
            + [note(pid, f"filler{i}", f"other {i}", "filler") for i in range(12)]
        ),
    ) as engine:
        pid = engine.project_id
        db, terms = engine.db, ["kiwi", "mango"]
        exact = await words.word_candidates(db, terms, pid, 3)
        monkeypatch.setattr(words, "EXACT_HITS", 2)
        every = await words.word_candidates(db, terms, pid, 3)
        short = await words.word_candidates(db, terms, pid, 10)  # too few hold both: the OR
        monkeypatch.setattr(words, "EXACT_HITS", 8_000)
        scores = {c.ref: c.relevance for c in await words.word_candidates(db, terms, pid, 10)}
    assert exact[0].ref == "kiwi-only"
    assert sorted(c.ref for c in every) == ["both0", "both1", "both2"]
    assert all(c.relevance == scores[c.ref] for c in every)  # the OR's own scores
    assert {c.ref for c in short} == {"kiwi-only", *scores} and len(short) == 7


async def test_when_few_rows_hold_every_term_those_lacking_one_follow_exactly(
    settings: Settings, make_repo, monkeypatch
):
    async with memory_of(
        settings,
        make_repo,
        lambda pid: (
            [note(pid, "all", "lemon lime kiwi")]
            + [note(pid, f"two{i}", f"lemon lime {i}") for i in range(2)]
            # One term, thrice, in a short title: the OR ranks it among the first four.
            + [note(pid, "two-b", "lime kiwi", "word " * 40), note(pid, "one", "lemon " * 3)]
            + [note(pid, f"f{i}", f"filler {i}") for i in range(10)]
        ),
    ) as engine:
        pid = engine.project_id
        db, terms = engine.db, ["lemon", "lime", "kiwi"]
        scores = {c.ref: c.relevance for c in await words.word_candidates(db, terms, pid, 10)}
        monkeypatch.setattr(words, "EXACT_HITS", 2)
        found = await words.word_candidates(db, terms, pid, 4)
        fallback = await words.word_candidates(db, terms, pid, 10)  # still short: the OR
    assert "one" in sorted(scores, key=scores.__getitem__, reverse=True)[:4]
    # The plan: every row lacking at most one term, at the OR's own scores, best first.
    assert {c.ref for c in found} == {"all", "two0", "two1", "two-b"}
    assert all(c.relevance == scores[c.ref] for c in found)
    assert [c.relevance for c in found] == sorted((c.relevance for c in found), reverse=True)
    assert {c.ref for c in fallback} == set(scores) and "one" in scores


async def test_a_long_query_matches_on_its_rarest_terms(settings: Settings, make_repo, monkeypatch):
    async with memory_of(
        settings,
        make_repo,
        lambda pid: (
            [note(pid, "rare", "quasar pulsar"), note(pid, "common", "nebula")]
            + [note(pid, f"n{i}", f"nebula {i}") for i in range(4)]
            + [note(pid, f"f{i}", f"filler {i}") for i in range(8)]
        ),
    ) as engine:
        pid = engine.project_id
        monkeypatch.setattr(words, "MAX_MATCHED", 2)
        terms = ["nebula", "quasar", "pulsar"]
        cheap = await words.word_candidates(engine.db, terms, pid, 10)
        monkeypatch.setattr(words, "MORE_HITS", 2)  # past the rows it is cheap to score
        found = await words.word_candidates(engine.db, terms, pid, 10)
    assert [c.ref for c in found] == ["rare"]
    # While the rows stay cheap to score, the query keeps its common word too.
    assert cheap[0].ref == "rare" and {"common", "n0"} <= {c.ref for c in cheap}


def orchard(pid: str) -> list[Node]:
    """80 notes over which apple, pear and plum lie unevenly: apple in the older rows only."""
    out = []
    for i in range(80):
        words_ = ["apple" if i < 40 else "filler", "pear" if i % 3 else "", "plum" * (i % 5 == 0)]
        out.append(note(pid, f"n{i}", f"note {i} {words_[0]}", " ".join(words_ * (1 + i % 4))))
    return out


async def test_a_statement_split_in_two_halves_ranks_exactly_as_the_whole(
    settings: Settings, make_repo, monkeypatch
):
    async with memory_of(settings, make_repo, orchard) as engine:
        db, pid = engine.db, engine.project_id
        counts = await term_counts(db, ["apple", "pear", "plum"])
        # apple lies in the older half of the rows: so do the halves of its hits.
        middle = counts.middle(["apple"])
        newest = (await db.fetchone("select max(seq) from nodes"))[0]
        assert middle is not None and middle < newest - 40
        for match in ['"apple"', '"pear" OR "plum"', '"apple" AND "pear"']:
            split = counts.middle(["apple", "pear", "plum"], every="AND" in match)
            (whole,) = await fts.bm25_each(db, [match], pid, 15)
            (halves,) = await fts.bm25_each(db, [match], pid, 15, split=split)
            assert [(c.ref, c.relevance) for c in halves] == [(c.ref, c.relevance) for c in whole]
            assert len(whole) == 15
        # Through the word arm: every statement split, the same candidates at the same scores.
        terms = ["apple", "pear", "plum"]
        monkeypatch.setattr(words, "EXACT_HITS", 2)
        plain = await words.word_candidates(db, terms, pid, 10)
        monkeypatch.setattr(words, "SPLIT_HITS", 1)
        split_up = await words.word_candidates(db, terms, pid, 10)
        assert [(c.ref, c.relevance) for c in split_up] == [(c.ref, c.relevance) for c in plain]
        assert db._sibling is not None  # the halves ran on the second connection too


async def test_reads_run_two_at_a_time_but_see_the_writers_own_transaction(
    settings: Settings, make_repo
):
    async with memory_of(settings, make_repo, lambda pid: []) as engine:
        db, pid = engine.db, engine.project_id
        count = ("select count(*) from nodes where kind = ?", ("doc_section",))
        titles = ("select title from nodes where kind = ? order by seq", ("git_commit",))
        assert await db.fetch_each([count, titles]) == [[(0,)], [("chore: start",)]]
        async with db.transaction():
            await upsert_nodes(db, [note(pid, "x", "uncommitted")])
            # The second connection cannot see this row yet: inside a transaction, all run here.
            assert await db.fetch_each([count, count]) == [[(1,)], [(1,)]]
        assert db._sibling is not None
    assert db._sibling is None  # closed with the engine


async def test_the_ranked_rows_are_read_first_and_their_nodes_looked_up_by_seq(
    settings: Settings, make_repo
):
    """Not the project's nodes scanned by index and each looked up among the ranked rows: at
    500k nodes that plan cost 80 ms for a query that matched nothing."""
    async with memory_of(settings, make_repo, lambda pid: [note(pid, "a", "alpha")]) as engine:
        plan = await engine.db.fetchall(
            "explain query plan " + fts._BM25_SQL,
            ('"alpha"', 0, 2**62, 100, 300, engine.project_id, 2**62),
        )
    steps = [row[3] for row in plan]
    assert "SCAN f" in steps
    assert any(s.startswith("SEARCH n USING INTEGER PRIMARY KEY") for s in steps)
    assert steps.index("SCAN f") < next(i for i, s in enumerate(steps) if s.startswith("SEARCH n "))


async def test_another_projects_rows_do_not_crowd_this_ones_out(settings: Settings, make_repo):
    """A memory of one project reads only as many ranked rows as it returns; one that holds
    another project's rows too (an identity that moved) reads deeper, so that project's
    better-scoring rows do not take every place before the filter by project."""

    def mine(pid: str) -> list[Node]:
        return [note(pid, f"mine{i}", "kestrel notes", "plain text") for i in range(3)]

    async with memory_of(settings, make_repo, mine) as engine:
        db, pid = engine.db, engine.project_id
        alone = await bm25_candidates(db, '"kestrel"', pid, 2)
        assert [c.ref for c in alone] == ["mine2", "mine1"]  # tied: newest first
        async with db.transaction():
            await upsert_project(db, "other", "other", "/elsewhere", None)
            theirs = [note("other", f"theirs{i}", "kestrel kestrel kestrel") for i in range(4)]
            await upsert_nodes(db, theirs)
        shared = await bm25_candidates(db, '"kestrel"', pid, 2)
    # The four better rows of the other project fill the first four places; six are read.
    assert [c.ref for c in shared] == ["mine2", "mine1"]


async def _segments(engine: Engine) -> int:
    (count,) = await engine.db.fetchone("select count(distinct segid) from nodes_fts_idx")
    return int(count)


async def test_a_sync_that_left_many_index_segments_merges_them(
    settings: Settings, make_repo, monkeypatch
):
    """Each row a sync rewrites flushes FTS5's pending terms into a segment of its own, and a
    query looks its terms up in every segment. A small index is merged back to one segment
    by the sync that left more than two; a large one only past twelve."""
    repo = make_repo("segments")
    guide = "# Guide\n\n" + "".join(f"## Part {i}\n\nThe kestrel part {i}.\n\n" for i in range(6))
    repo.commit("docs: the guide", {"docs/guide.md": guide})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        repo.commit("docs: reword the guide", {"docs/guide.md": guide.replace("The", "A")})
        monkeypatch.setattr(fts, "COMPACT_ROWS", 0)  # a large index: left as it is
        report = await handlers.sync(engine)
        assert not report.index_compacted and await _segments(engine) > fts.SMALL_SEGMENTS
        monkeypatch.undo()
        repo.commit("docs: a note", {"NOTES.md": "# Notes\n\nA falcon note.\n"})
        report = await handlers.sync(engine)  # a small index with many: merged
        assert report.index_compacted and await _segments(engine) == 1
        # The merged index still matches the rows it indexes, and finds what was written.
        await engine.db.execute(
            "insert into nodes_fts(nodes_fts, rank) values ('integrity-check', 1)"
        )
        found = await handlers.search(engine, "falcon", vector=False)
        indexed = await engine.db.fetchone(
            "select count(*) from nodes_fts where nodes_fts match 'kestrel'"
        )
        holding = await engine.db.fetchone(
            "select count(*) from nodes where instr(body, 'kestrel')"
        )
    assert found.results[0].ref == "NOTES.md#Notes"
    assert indexed == holding == (8,)  # the six parts and the two commits' patches, once each


async def test_rows_indexed_during_a_bulk_load_stay_right_when_rewritten_or_removed(
    settings: Settings, make_repo
):
    """A first sync of a long history indexes its rows in steps while the walk runs; a row
    indexed early and then rewritten or deleted in the same load leaves no stale word."""
    async with memory_of(settings, make_repo, lambda pid: []) as engine:
        db, pid = engine.db, engine.project_id
        async with db.transaction(), fts.deferred_index(db) as index:
            await upsert_nodes(db, [note(pid, f"n{i}", f"heron {i}", "marsh") for i in range(4)])
            await upsert_nodes(db, [note(pid, "cjk", "缓存", "鹭鸟栖息")])
            await index.step(least=5)  # five rows past the sync's: indexed now
            assert await db.fetchone(_HITS, ("heron",)) == (4,)
            await upsert_nodes(db, [note(pid, "n0", "egret 0", "marsh")])  # rewritten
            await upsert_nodes(db, [note(pid, "cjk", "缓存", "白鹭飞翔")])
            await delete_nodes(db, [note(pid, "n1", "heron 1", "marsh").id])
            await upsert_nodes(db, [note(pid, "late", "heron late", "marsh")])
            await index.step(least=5)  # one row past the last step: not yet
        # The word index matches the rows it indexes; the CJK one (of some rows only) holds
        # the rewritten text and not the old.
        await db.execute("insert into nodes_fts(nodes_fts, rank) values ('integrity-check', 1)")
        await db.execute("insert into nodes_cjk(nodes_cjk) values ('integrity-check')")
        assert await db.fetchone(_HITS, ("heron",)) == (3,)  # n2, n3 and the late one
        assert await db.fetchone(_HITS, ("egret",)) == (1,)
        cjk = "select count(*) from nodes_cjk where nodes_cjk match ?"
        assert await db.fetchone(cjk, ('"白鹭飞"',)) == (1,)
        assert await db.fetchone(cjk, ('"鹭鸟栖"',)) == (0,)
        triggers = await db.fetchall("select name from sqlite_master where type = 'trigger'")
        temp = await db.fetchall("select name from sqlite_temp_master")
    assert {"nodes_ai", "nodes_au", "nodes_ad"} <= {name for (name,) in triggers}
    assert temp == []  # the step's temp triggers went with the load


async def test_rows_a_bulk_load_writes_as_new_are_upserted_when_one_is_not(
    settings: Settings, make_repo
):
    """A bulk load inserts its rows without the upsert's update arm; a batch holding a row
    memory has after all (rewritten, or the same) still ends as the upsert leaves it."""
    async with memory_of(settings, make_repo, lambda pid: []) as engine:
        db, pid = engine.db, engine.project_id
        async with db.transaction(), fts.deferred_index(db) as index:
            await upsert_nodes(db, [note(pid, f"n{i}", f"heron {i}", "marsh") for i in range(3)])
            await index.step(least=3)  # indexed early: the temp triggers are on
            fresh = [replace(note(pid, "n0", "egret 0", "marsh"), files=["egret.md"])]
            fresh += [note(pid, "n1", "heron 1", "marsh")]
            fresh += [replace(note(pid, "n3", "heron 3", "marsh"), files=["heron.md"])]
            changed = await write_rows(db, *node_rows(fresh, 1), new=True)
            assert changed == 2  # n0 rewritten, n3 new; n1 unchanged
            ibis = replace(note(pid, "n4", "ibis", ""), files=["b.txt", "a.txt"])
            assert await write_rows(db, *node_rows([ibis], 1), new=True)  # all new
            files = await db.fetchall(
                "select n.ref, f.path from node_files f join nodes n on n.seq = f.node_seq "
                "where n.kind = 'doc_section' order by 1, 2"
            )
        await db.execute("insert into nodes_fts(nodes_fts, rank) values ('integrity-check', 1)")
        assert await db.fetchone(_HITS, ("heron",)) == (3,)  # n1, n2 and n3
        assert await db.fetchone(_HITS, ("egret",)) == (1,)
        assert await db.fetchone(_HITS, ("ibis",)) == (1,)
        titles = await db.fetchall(
            "select ref, title from nodes where kind = 'doc_section' order by ref"
        )
    assert titles == [
        ("n0", "egret 0"),
        ("n1", "heron 1"),
        ("n2", "heron 2"),
        ("n3", "heron 3"),
        ("n4", "ibis"),
    ]
    # Each row's files on its own row, whether its seq was looked up (a batch upserted) or
    # taken as it was inserted (a batch all new).
    assert files == [("n0", "egret.md"), ("n3", "heron.md"), ("n4", "a.txt"), ("n4", "b.txt")]


_HITS = "select count(*) from nodes_fts where nodes_fts match ?"


def commit(pid: str, ref: str, title: str, body: str = "") -> Node:
    return Node(pid, "git_commit", "git", ref, title, body, 1, 0.5, "observed", None, [])


async def test_linked_candidates_are_the_best_hits_among_the_linked_and_the_undoing(
    settings: Settings, make_repo
):
    """The undone-question arm ranks, among the commits at either end of a revert link and
    those whose subject says they undo something, exactly as the whole-index ranking would:
    the same scores, in the same order, cut at the limit (the hits are filtered outside
    FTS5, not given to it as a row list)."""
    from nexusmem_core.reverts import UNDOING_TITLE

    async with memory_of(
        settings,
        make_repo,
        lambda pid: (
            [commit(pid, f"plain{i}", f"tune the parser {i}", "parser " * i) for i in range(30)]
            + [commit(pid, f"told{i}", f"Revert parser tweak {i}", "parser " * i) for i in range(6)]
            + [commit(pid, f"twin{i}", "Revert parser twin", "parser") for i in range(2)]  # a tie
            + [commit(pid, "linked-a", "parser speed-up"), commit(pid, "linked-b", "back again")]
            + [note(pid, "section", "Revert the parser", "a doc, not a commit")]
        ),
    ) as engine:
        db, pid = engine.db, engine.project_id
        ids = {c.ref: c.id for c in await fts.bm25_candidates(db, '"parser" OR "again"', pid)}
        async with db.transaction():
            await db.execute(
                "insert into links (src, dst, kind, project_id, created_at) "
                "values (?, ?, 'reverts', ?, 0)",
                (ids["linked-b"], ids["linked-a"], pid),
            )
        match = '"parser" OR "again"'
        whole = await fts.bm25_candidates(db, match, pid, limit=1000)
        wanted = {f"told{i}" for i in range(6)} | {"twin0", "twin1", "linked-a", "linked-b"}
        ranked = [c.ref for c in whole if c.ref in wanted]
        cut = min(ranked.index("twin0"), ranked.index("twin1")) + 1  # one twin of the tie in
        for limit in (cut, 3, 100):
            found = await fts.linked_candidates(
                db, match, "reverts", pid, limit, None, UNDOING_TITLE
            )
            expected = [c for c in whole if c.ref in wanted][:limit]
            assert [(c.ref, c.score) for c in found] == [(c.ref, c.score) for c in expected]
        untitled = await fts.linked_candidates(db, match, "reverts", pid)
    assert {c.ref for c in untitled} == {"linked-a", "linked-b"}
