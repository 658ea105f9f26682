"""Stale candidates: old, non-observed claims with nothing confirming them, oldest first."""

from __future__ import annotations

import json

from nexusmem_core import handlers
from nexusmem_core.engine import Engine
from nexusmem_core.store.nodes import upsert_nodes

from ..conftest import Repo, run_cli
from .test_review import claim, synced


async def test_stale_lists_unconfirmed_claims_oldest_first_and_writes_nothing(engine: Engine):
    await handlers.sync(engine, embed=False)
    nodes = [
        claim(engine, "old", 400),
        claim(engine, "older", 500, "derived", kind="session_summary"),
        claim(engine, "recent", 10),
        claim(engine, "verified", 600),
        claim(engine, "rejected", 600),
        claim(engine, "superseded", 600),
        claim(engine, "replacement", 5),
        claim(engine, "observed", 700, "observed", kind="shell_command"),
    ]
    async with engine.db.transaction():
        await upsert_nodes(engine.db, nodes)
    by_ref = {n.ref: n.id for n in nodes}
    await handlers.review(engine, by_ref["verified"], "verified")
    await handlers.review(engine, by_ref["rejected"], "rejected")
    await handlers.mark_stale(engine, by_ref["superseded"], by_ref["replacement"])
    changes = engine.db.conn.total_changes
    report = await handlers.stale(engine)
    titles = [c.title for c in report.candidates]
    assert titles[:2] == ["claim older", "claim old"]  # then the repository's doc sections
    assert {c.provenance for c in report.candidates[2:]} == {"authored"}
    assert not {"claim recent", "claim verified", "claim rejected", "claim superseded"} & {*titles}
    assert report.candidates[0].age_days == 500 and report.candidates[0].kind == "session_summary"
    assert [c.title for c in (await handlers.stale(engine, limit=1)).candidates] == titles[:1]
    assert "claim recent" in [c.title for c in (await handlers.stale(engine, 5)).candidates]
    assert engine.db.conn.total_changes == changes  # read-only


async def test_a_later_commit_to_its_document_confirms_a_section(engine: Engine):
    await handlers.sync(engine, embed=False)
    section = claim(engine, "notes.md#Plan", 300, "authored", kind="doc_section", grp="notes.md")
    commit = claim(engine, "abc123", 200, "observed", kind="git_commit", files=["notes.md"])
    async with engine.db.transaction():
        await upsert_nodes(engine.db, [section])
    assert section.id in [c.id for c in (await handlers.stale(engine)).candidates]
    async with engine.db.transaction():
        await upsert_nodes(engine.db, [commit])
    assert section.id not in [c.id for c in (await handlers.stale(engine)).candidates]


def test_stale_cli_prints_one_line_per_candidate_and_json(repo: Repo):
    synced(repo)
    out = run_cli("stale", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 4 and all("[authored]" in line for line in lines)
    assert lines[0].startswith("2026-01-02  ") and "README.md — Project" in lines[0]
    assert "with nothing confirming them (nothing was changed)" in out.stderr
    data = json.loads(run_cli("stale", "--json", "--limit", "2", "-C", str(repo.path)).stdout)
    assert len(data["candidates"]) == 2 and data["min_age_days"] == 45
    assert set(data["candidates"][0]) >= {"id", "title", "date", "age_days", "suggestions"}
    assert run_cli("stale", "--min-age-days", "-1", "-C", str(repo.path)).returncode == 1


async def test_the_report_counts_every_candidate_beside_the_oldest_it_lists(engine: Engine):
    await handlers.sync(engine, embed=False)
    async with engine.db.transaction():
        await upsert_nodes(engine.db, [claim(engine, f"c{i}", 400 + i) for i in range(30)])
    every = await handlers.stale(engine, limit=1000)
    oldest = await handlers.stale(engine, limit=20)
    assert every.total == len(every.candidates) > 30  # the claims and the doc sections
    assert oldest.total == every.total and len(oldest.candidates) == 20
    assert oldest.counted().startswith(f"the oldest 20 of {every.total} non-observed nodes")
    assert oldest.to_dict()["total"] == every.total
