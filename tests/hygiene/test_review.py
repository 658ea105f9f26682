"""Review and mark-stale: people's judgements rank and label nodes, and outlive every resync."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.engine import Engine
from nexusmem_core.errors import UsageError
from nexusmem_core.models import Node
from nexusmem_core.store.nodes import upsert_nodes

from ..conftest import DAY, Repo, run_cli

INSTALL = "README.md — Install"


def synced(repo: Repo) -> Path:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    out = run_cli("sync", "-q", "--no-embed", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    return repo.path / ".nexusmem" / "memory.db"


def node_id(db: Path, title: str) -> str:
    with sqlite3.connect(db) as conn:
        (found,) = conn.execute("select id from nodes where title = ?", (title,)).fetchone()
    return str(found)


def query(repo: Repo, text: str) -> dict[str, dict[str, object]]:
    out = run_cli("query", "--json", "--no-vector", "-C", str(repo.path), text)
    assert out.returncode == 0, out.stderr
    return {r["title"]: r for r in json.loads(out.stdout)["results"]}


def claim(engine: Engine, ref: str, days_ago: float, provenance: str = "recorded", **kw) -> Node:
    return Node(
        project_id=engine.project_id,
        kind=kw.pop("kind", "conversation_turn"),
        source="test",
        ref=ref,
        title=kw.pop("title", f"claim {ref}"),
        body=kw.pop("body", f"the team said {ref}"),
        ts=int(time.time() - days_ago * DAY),
        signal=0.5,
        provenance=provenance,
        **kw,
    )


def test_review_labels_a_node_and_clear_takes_the_label_off(repo: Repo):
    db = synced(repo)
    install = node_id(db, INSTALL)
    out = run_cli("review", install[:8], "--verify", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"verified {install[:12]} {INSTALL}\n"
    assert query(repo, "pip install")[INSTALL]["trust"] == "verified"
    shown = run_cli("query", "--no-vector", "-C", str(repo.path), "pip install").stdout
    assert f"[verified] {INSTALL}" in shown
    out = run_cli("review", install, "--reject", "--note", "we use uv now", "-C", str(repo.path))
    assert out.stdout.startswith("rejected ")
    shown = run_cli("query", "--no-vector", "-C", str(repo.path), "pip install").stdout
    assert f"[rejected] {INSTALL}" in shown
    assert run_cli("review", install[:6], "--clear", "-C", str(repo.path)).returncode == 0
    result = query(repo, "pip install")[INSTALL]
    assert result["trust"] == "candidate"
    again = run_cli("review", install[:6], "--clear", "-C", str(repo.path))
    assert again.stdout.endswith("(it already was)\n")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select detail from audit where operation = 'review' order by id")
        details = [json.loads(d) for (d,) in rows]
    assert [d["trust"] for d in details] == ["verified", "rejected", "candidate", "candidate"]
    assert details[1] == {"node": install, "trust": "rejected", "previous": "verified"} | {
        "note": "we use uv now"
    }


async def test_rejected_ranks_lower_but_is_still_returned_and_verified_only_labels(
    engine: Engine,
):
    await handlers.sync(engine, embed=False)
    before = await handlers.search(engine, "retry budget", vector=False)
    top = before.results[0]
    await handlers.review(engine, top.id, "verified")
    verified = {r.id: r for r in (await handlers.search(engine, "retry budget")).results}
    assert verified[top.id].score == top.score and verified[top.id].trust == "verified"
    await handlers.review(engine, top.id, "rejected")
    after = await handlers.search(engine, "retry budget", vector=False)
    rejected = next(r for r in after.results if r.id == top.id)
    assert rejected.trust == "rejected" and rejected.score == pytest.approx(top.score / 2)
    assert after.results[0].id != top.id


async def test_judgements_survive_a_resync_and_a_rebuild(engine: Engine, repo: Repo):
    await handlers.sync(engine, embed=False)
    db = engine.db
    install = node_id(db.path, INSTALL)
    intro = node_id(db.path, "README.md — Project")
    await handlers.review(engine, install, "rejected")
    await handlers.mark_stale(engine, intro, install)
    repo.commit("docs: install with uv", {"README.md": "# Project\n\n## Install\n\nRun uv.\n"})
    await handlers.sync(engine, embed=False)  # the section's text changed: same node, new body
    await handlers.sync(engine, embed=False, rebuild=True)
    row = await db.fetchone("select trust, supersedes, body from nodes where id = ?", (install,))
    assert row == ("rejected", intro, "Run uv.")


async def test_an_id_prefix_must_name_exactly_one_node(engine: Engine):
    await handlers.sync(engine, embed=False)
    refs: dict[str, str] = {}
    for i in range(5000):  # two refs whose ids share their first four characters
        found = claim(engine, f"r{i}", 60)
        if found.id[:4] in refs:
            break
        refs[found.id[:4]] = found.ref
    async with engine.db.transaction():
        await upsert_nodes(engine.db, [found, claim(engine, refs[found.id[:4]], 60)])
    with pytest.raises(UsageError, match="several node ids"):
        await handlers.review(engine, found.id[:4], "verified")
    with pytest.raises(UsageError, match="no node id starts with"):
        await handlers.review(engine, "ffff" + found.id[4:], "verified")
    with pytest.raises(UsageError, match="not a node id"):
        await handlers.review(engine, "xyz!", "verified")
    assert (await handlers.review(engine, found.id[:20], "verified")).changed


def test_mark_stale_ranks_the_old_node_lower_and_keeps_it(repo: Repo):
    db = synced(repo)
    old, new = node_id(db, INSTALL), node_id(db, "docs/guide.rst — Why BM25 first")
    before = query(repo, "install")[INSTALL]
    out = run_cli("mark-stale", old[:10], "--supersedes", new[:10], "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"{old[:12]} {INSTALL}",
        f"  superseded by {new[:12]} docs/guide.rst — Why BM25 first",
    ]
    after = query(repo, "install")[INSTALL]
    assert after["superseded"] and after["score"] == pytest.approx(before["score"] / 2)
    shown = run_cli("query", "--no-vector", "-C", str(repo.path), "install").stdout
    assert f"[superseded] {INSTALL}" in shown
    with sqlite3.connect(db) as conn:
        assert conn.execute("select supersedes from nodes where id = ?", (new,)).fetchone() == (
            old,
        )
        assert conn.execute("select count(*) from audit where operation = 'mark-stale'").fetchone()
    again = run_cli("mark-stale", old, "--supersedes", new, "-C", str(repo.path))
    assert "(already marked)" in again.stdout
    backwards = run_cli("mark-stale", new, "--supersedes", old, "-C", str(repo.path))
    assert backwards.returncode == 1 and "the other way round" in backwards.stderr
    itself = run_cli("mark-stale", old, "--supersedes", old, "-C", str(repo.path))
    assert itself.stderr == "error: mark-stale: a node cannot supersede itself\n"
