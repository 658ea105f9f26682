"""One thread, one node: what a long thread keeps, what an odd record gives, how it ranks."""

from __future__ import annotations

from typing import Any

import pytest

from nexusmem_core.collectors.github.nodes import Unreadable, thread_node


def issue(**fields: Any) -> dict[str, Any]:
    comments = fields.pop("comments", [])
    return {
        "__typename": "Issue",
        "number": 7,
        "title": "Crash on start",
        "body": "It crashes.",
        "state": "OPEN",
        "updatedAt": "2026-02-01T00:00:00Z",
        "author": {"login": "ann"},
        "labels": {"nodes": []},
        "comments": {"totalCount": len(comments), "nodes": comments},
        **fields,
    }


def comment(n: int, text: str | None = None) -> dict[str, Any]:
    return {
        "author": {"login": f"user{n}"},
        "body": text or f"comment {n}",
        "createdAt": f"2026-01-{n + 1:02d}T00:00:00Z",
    }


def test_a_long_thread_keeps_its_first_post_and_newest_comments_within_the_budget():
    words = "word " * 2000
    thread = issue(body=words, comments=[comment(n, f"reply {n}: " + "x" * 300) for n in range(20)])
    node, _ = thread_node("p", thread, max_comments=100, max_chars=3000)
    assert len(node.body) <= 3000 + len("\n[truncated]")
    assert node.body.startswith("Crash on start\n\nword word")
    assert "[truncated]" in node.body  # the post, cut to half the budget
    assert node.body.rstrip().endswith("x" * 300) and "user19: reply 19" in node.body
    kept = node.meta["comments_read"]
    assert 0 < kept < 20 and f"[{20 - kept} earlier comment(s) left out]" in node.body
    assert "user0: reply 0" not in node.body


def test_max_comments_keeps_the_newest_and_counts_the_rest():
    thread = issue(comments=[comment(n) for n in range(5)])
    node, _ = thread_node("p", thread, max_comments=2, max_chars=12_000)
    assert node.body.endswith(
        "[3 earlier comment(s) left out]\n\nuser3: comment 3\n\nuser4: comment 4"
    )
    assert (node.meta["comments"], node.meta["comments_read"]) == (5, 2)


def test_an_odd_record_gives_what_it_can_or_is_refused():
    node, _ = thread_node(
        "p", issue(author=None, labels=None, body=None, updatedAt="not a date"), 10, 12_000
    )
    assert node.meta["author"] == "ghost" and node.meta["labels"] == []
    assert node.body == "Crash on start\n\n(no description)" and node.ts is None
    with pytest.raises(Unreadable):
        thread_node("p", {"__typename": "Issue", "title": "no number"}, 10, 12_000)


@pytest.mark.parametrize(
    ("fields", "signal"),
    [
        ({}, 0.6),  # a bug by its title, open
        ({"title": "Add dark mode", "labels": {"nodes": [{"name": "enhancement"}]}}, 0.45),
        (
            {"timelineItems": {"nodes": [{"closer": {"__typename": "Commit", "oid": "a" * 40}}]}},
            0.75,
        ),
        ({"stateReason": "NOT_PLANNED", "state": "CLOSED"}, 0.25),
        ({"author": {"login": "renovate"}}, 0.1),
        ({"comments": [comment(n) for n in range(5)]}, 0.65),
    ],
)
def test_signal_says_what_kind_of_thread_it_is(fields: dict[str, Any], signal: float):
    node, _ = thread_node("p", issue(**fields), 100, 12_000)
    assert node.signal == signal
