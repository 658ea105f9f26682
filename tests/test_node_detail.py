"""One node in full for the viewer: a commit with its diffs, a diff with its commit, a failure
with its fix and the files edited before it, what replaced what, reviews, and ids by prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.engine import Engine
from nexusmem_core.errors import UsageError
from nexusmem_core.handlers.hygiene import mark_stale, review
from nexusmem_core.handlers.node import node_detail
from nexusmem_core.models import Node
from nexusmem_core.store.nodes import upsert_nodes

from .conftest import Repo
from .test_timeline import T0, agent_run, sync

FIX = "fix: raise the retry budget after S3 upload timeouts"


async def node_of(engine: Engine, kind: str, title: str) -> str:
    row = await engine.db.fetchone(
        "select id from nodes where kind = ? and title = ?", (kind, title)
    )
    assert row is not None
    return str(row[0])


async def test_a_commit_lists_its_diffs_and_a_diff_names_its_commit(engine: Engine, repo: Repo):
    await sync(engine)
    fix = await node_of(
        engine, "git_commit", "fix: raise the retry budget after S3 upload timeouts"
    )
    detail = await node_detail(engine, fix)
    assert detail is not None
    assert (detail["kind"], detail["source"], detail["author"]) == ("git_commit", "git", None)
    assert detail["files"] == ["src/retry.py"] and detail["files_count"] == 1
    (diff,) = detail["diffs"]
    assert diff["path"] == "src/retry.py" and "RETRY_BUDGET = 5" in diff["body"]
    assert not diff["cut"] and detail["diffs_more"] == 0
    assert detail["capture"] == "backfilled"  # committed before memory was set up
    assert "S3 timed out under load" in detail["body"]

    of_diff = await node_detail(engine, diff["id"])
    assert of_diff is not None and of_diff["commit"]["id"] == fix
    assert of_diff["commit"]["title"] == FIX


async def test_a_failure_shows_its_fix_the_files_edited_before_it_and_its_links(
    engine: Engine, repo: Repo, home: Path
):
    agent_run(home, "pytest tests", repo.path, T0, code=1, edited=["src/retry.py"])
    agent_run(home, "pytest tests", repo.path, T0 + 30)
    await sync(engine)
    failure_id, pass_id = [
        row[0]
        for row in await engine.db.fetchall(
            "select id from nodes where kind = 'shell_command' order by ts"
        )
    ]
    failure = await node_detail(engine, failure_id)
    assert failure is not None and failure["failed"] and failure["outcome"] == "failed"
    assert failure["edited"] == ["src/retry.py"] and failure["author"] == "claude-code"
    assert [(f["link"], f["id"]) for f in failure["fixes"]] == [("retry", pass_id)]
    assert [(x["kind"], x["direction"], x["node"]["id"]) for x in failure["links"]] == [
        ("retry", "out", pass_id)
    ]
    passed = await node_detail(engine, pass_id)
    assert passed is not None and not passed["failed"] and passed["fixes"] == []
    assert [(x["kind"], x["direction"], x["node"]["id"]) for x in passed["links"]] == [
        ("retry", "in", failure_id)
    ]


async def test_superseded_links_show_both_ways_after_mark_stale(engine: Engine, repo: Repo):
    await sync(engine)
    old = await node_of(engine, "git_commit", "feat: add the retry loop")
    new = await node_of(
        engine, "git_commit", "fix: raise the retry budget after S3 upload timeouts"
    )
    before = await node_detail(engine, old)
    assert before is not None and before["superseded_by"] == [] and before["supersedes"] is None
    await mark_stale(engine, old, new)
    older = await node_detail(engine, old)
    newer = await node_detail(engine, new)
    assert older is not None and newer is not None
    assert older["superseded"] and [s["id"] for s in older["superseded_by"]] == [new]
    assert newer["supersedes"]["id"] == old and not newer["superseded"]
    assert newer["superseded_by"] == []


async def test_a_review_note_is_shown_with_the_trust_it_set(engine: Engine, repo: Repo):
    await sync(engine)
    node = await node_of(engine, "git_commit", "chore: bump version")
    await review(engine, node, "verified", note="checked against the release notes")
    await review(engine, node, "rejected")  # the later review, without a note
    detail = await node_detail(engine, node)
    assert detail is not None and detail["trust"] == "rejected" and detail["trust_note"] is None
    await review(engine, node, "verified", note="it was right after all")
    detail = await node_detail(engine, node)
    assert detail is not None and detail["trust"] == "verified"
    assert detail["trust_note"] == "it was right after all"


async def test_an_id_may_be_a_unique_prefix_and_an_ambiguous_one_is_refused(
    engine: Engine, repo: Repo
):
    await sync(engine)
    node = await node_of(engine, "git_commit", "chore: bump version")
    found = await node_detail(engine, node[:10].upper())
    assert found is not None and found["id"] == node
    # Enough nodes that two share their first four hex characters (certain past a few hundred).
    many = [
        Node(
            engine.project_id,
            "doc_section",
            "docs",
            f"n.md#{n}",
            f"n {n}",
            "x",
            T0,
            0.5,
            "authored",
        )
        for n in range(3000)
    ]
    async with engine.db.transaction():
        await upsert_nodes(engine.db, many)
    row = await engine.db.fetchone(
        "select substr(id, 1, 4) from nodes group by 1 having count(*) > 1 limit 1"
    )
    assert row is not None
    with pytest.raises(UsageError) as raised:
        await node_detail(engine, row[0])
    assert raised.value.argument == "node_id" and "several" in str(raised.value)
    assert await node_detail(engine, "f" * 64) is None


@pytest.mark.parametrize("bad", ["", "abc", "not-hex!", "g" * 10, "a" * 65])
async def test_a_malformed_id_is_one_line_naming_it(engine: Engine, bad: str):
    with pytest.raises(UsageError) as raised:
        await node_detail(engine, bad)
    assert raised.value.argument == "node_id" and "\n" not in str(raised.value)


async def test_node_detail_gives_everything_get_node_gives(engine: Engine, repo: Repo):
    await sync(engine)
    node = await node_of(engine, "git_commit", "feat: add the retry loop")
    plain = await handlers.get_node(engine, node)
    detail = await node_detail(engine, node)
    assert plain is not None and detail is not None
    assert {k: detail[k] for k in plain} == plain
