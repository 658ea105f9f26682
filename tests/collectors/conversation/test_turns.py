"""Exchanges become nodes by the contract the session summaries read: the question and the
answer recoverable from the body, long replies cut at their headings, secrets redacted."""

from __future__ import annotations

from nexusmem_core.collectors.conversation.transcript import Exchange, Transcript
from nexusmem_core.collectors.conversation.turns import split_reply, turn_nodes, turn_signal

from .transcripts import AWS_KEY, GITHUB_TOKEN

SECTION = "Some words about this part of the work, long enough to matter. " * 4
REPLY = "\n\n".join(
    [
        "# Plan\n\n" + SECTION,
        "## Build\n\n" + SECTION,
        "```python\n# not a heading: inside a fence\nx = 1\n```",
        "## Release\n\n" + "\n\n".join([SECTION] * 3),  # too long for one chunk: cut at blanks
        "## Rollback\n\n" + SECTION,
    ]
)


def test_a_long_reply_is_cut_at_its_headings_and_loses_nothing():
    chunks = split_reply(REPLY, 600)
    assert all(len(text) <= 600 for text, _ in chunks)
    headings = [heading for _, heading in chunks]
    # Small sections share a chunk; one too long for a chunk starts its own and is cut at
    # blank lines; the next section fills the rest of its last chunk.
    assert headings == ["Plan", "Release", "Release"]
    assert chunks[0][0].startswith("# Plan") and "# not a heading" in chunks[0][0]
    assert chunks[1][0].startswith("## Release") and "## Rollback" in chunks[2][0]
    joined = "".join(text for text, _ in chunks)
    assert joined.replace("\n", "").replace(" ", "") == REPLY.replace("\n", "").replace(" ", "")
    assert split_reply("short", 600) == [("short", None)]
    narrow = {heading for _, heading in split_reply(REPLY, 300)}
    assert "Build" in narrow and "not a heading: inside a fence" not in narrow


def test_a_reply_that_grows_keeps_its_earlier_chunks():
    before = split_reply(REPLY, 600)
    after = split_reply(REPLY + "\n\n## Afterwards\n\n" + SECTION, 600)
    assert after[: len(before) - 1] == before[:-1] and len(after) > len(before)


def transcript(*exchanges: Exchange) -> Transcript:
    return Transcript("claude", "/t/s1.jsonl", "s1", "/w", "main", list(exchanges), ours=True)


def test_the_body_holds_the_question_then_the_answer_chunk():
    question = f"Why is the deploy slow?\nIt takes ten minutes with key {AWS_KEY}."
    found = turn_nodes("p", transcript(Exchange(question, 100, [REPLY], 160)), 900)
    first, *rest = found.nodes
    for node in found.nodes:
        q_len = node.meta["q_len"]
        asked, answer = node.body[3 : 3 + q_len], node.body[3 + q_len + 5 :]
        assert node.body == f"Q: {asked}\n\nA: {answer}" and len(node.body) <= 900
        assert AWS_KEY not in node.body
        assert (node.kind, node.source, node.provenance) == (
            "conversation_turn",
            "conversation:claude",
            "recorded",
        )
        assert node.grp == "s1:0" and node.ref == f"s1:0:{node.meta['chunk']}"
        assert node.ts == 160 and node.meta["chunks"] == len(found.nodes)
    assert first.body.startswith("Q: Why is the deploy slow?\nIt takes ten minutes with key ")
    assert first.title == "Why is the deploy slow?"
    assert rest[0].body.startswith("Q: Why is the deploy slow?\n\nA: ## Release")  # first line
    assert rest[0].title == "Why is the deploy slow? — Release"
    assert found.redacted == [1] + [0] * len(rest)
    assert first.meta["git_branch"] == "main" and first.meta["agent"] == "claude"


def test_a_question_without_a_reply_yet_is_dated_by_the_question():
    found = turn_nodes("p", transcript(Exchange(f"push with {GITHUB_TOKEN}", 100)), 900)
    (node,) = found.nodes
    assert node.ts == 100 and node.body == "Q: push with [REDACTED]\n\nA: "


def test_a_diagnosis_or_a_decision_outranks_small_talk():
    diagnosis = turn_signal(
        "why does pytest fail?", "It fails because the fixture is stale; the fix is a reload."
    )
    decision = turn_signal(
        "which bundler?", "We'll go with esbuild rather than tsc: it builds in a second."
    )
    chat = turn_signal("thanks", "You're welcome.")
    plain = turn_signal("what does upload do?", "It sends the file to S3 in parts of 8 MB each.")
    assert diagnosis > plain and decision > plain > chat
    assert all(0 <= s <= 1 for s in (diagnosis, decision, chat, plain))
