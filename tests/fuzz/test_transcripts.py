"""Agent transcripts: Claude Code's session JSONL and Codex's rollouts, read into exchanges,
then cut into ``conversation_turn`` nodes.

Another program writes these files, often while they are read: lines may be torn, of a kind a
newer version added, or hold any JSON, lone surrogates (a UTF-16 string cut inside an emoji)
included. A person's message may hold anything a person pastes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.conversation.claude import parse_claude
from nexusmem_core.collectors.conversation.codex import parse_codex
from nexusmem_core.collectors.conversation.paths import RepoPaths
from nexusmem_core.collectors.conversation.transcript import human_text
from nexusmem_core.collectors.conversation.turns import turn_nodes
from nexusmem_core.collectors.shell.scope import inside

from .bounds import PROJECT, Store, Target, mutated, repeated, within

CWD = "/work/repo"  # replaced by the real repository directory of the check

_WORDS = [
    "why does the upload fail? ",
    "because the token expired; the fix is to refresh it. ",
    "<command-name>/clear</command-name>",
    "<command-message>clear</command-message>",
    "<local-command-stdout></local-command-stdout>",
    "<system-reminder>",
    "</system-reminder>",
    "<a>",
    "</a>",
    "<b x='1'>",
    "\n",
    "\n\n",
    "# Heading\n",
    "## Root cause ##\n",
    "```\n",
    "~~~\n",
    "src/upload.py:42 ",
    CWD + "/README.md ",
    "\ud83d",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a ",
    "[Request interrupted by user]",
    " ",
]
_text = st.one_of(mutated(_WORDS), repeated(_WORDS, max_repeat=3000))
_HOSTILE: list[Any] = [None, 0, True, [], {}, "", "\ud800", CWD + "/\x00", [{"type": "text"}]]


def _blocks(kind: str) -> st.SearchStrategy[Any]:
    block = st.one_of(
        st.builds(lambda t: {"type": kind, "text": t}, _text),
        st.sampled_from(
            [{"type": "tool_result", "content": "ok"}, {"type": "image"}, {"type": "tool_use"}]
        ),
        st.sampled_from(_HOSTILE),
    )
    return st.one_of(_text, st.lists(block, max_size=3))


@st.composite
def claude_records(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["user", "assistant", "summary", "system", "progress", "new"]))
    record: dict[str, Any] = {
        "type": kind,
        "cwd": CWD,
        "sessionId": "s1",
        "uuid": draw(st.sampled_from(["u1", "u2", "u3", "u4"])),
        "timestamp": draw(st.sampled_from(["2026-01-01T00:00:00Z", "yesterday", "9999-12-31"])),
        "gitBranch": draw(st.sampled_from(["main", "\ud800", ""])),
        "message": {"content": draw(_blocks("text"))},
    }
    for key in draw(st.lists(st.sampled_from(sorted(record)), max_size=2)):
        record[key] = draw(st.sampled_from(_HOSTILE).map(copy.deepcopy))
    if draw(st.booleans()):
        record[draw(st.sampled_from(["isSidechain", "isMeta", "isCompactSummary"]))] = True
    return record


@st.composite
def codex_records(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["session_meta", "response_item", "event_msg", "compacted", "x"]))
    role = draw(st.sampled_from(["user", "assistant", "developer"]))
    payload: dict[str, Any] = {
        "id": draw(st.sampled_from(["0190a1b2-c3d4-e5f6-a7b8-c9d0e1f2a3b4", "\ud800", ""])),
        "cwd": CWD,
        "git": {"branch": "main"},
        "type": draw(st.sampled_from(["message", "function_call", "reasoning"])),
        "role": role,
        "content": draw(_blocks("input_text" if role == "user" else "output_text")),
    }
    for key in draw(st.lists(st.sampled_from(sorted(payload)), max_size=2)):
        payload[key] = draw(st.sampled_from(_HOSTILE).map(copy.deepcopy))
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": payload}


def _lines(records: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    line = st.one_of(
        st.builds(
            lambda r, a: json.dumps(r, ensure_ascii=a).encode("utf-8", "surrogatepass"),
            records,
            st.booleans(),
        ),
        st.sampled_from([b"", b"{", b"[]", b"[" * 5000, b"\xff", b'{"type": "user"']),
    )
    return st.builds(
        lambda lines, tail: b"\n".join(lines) + tail,
        st.lists(line, max_size=6),
        st.sampled_from([b"\n", b"", b'\n{"type": "us']),
    )


transcripts = st.one_of(
    st.tuples(st.just("claude"), _lines(claude_records())),
    st.tuples(st.just("codex"), _lines(codex_records())),
)


def check_transcript(case: tuple[str, bytes], store: Store) -> None:
    """A transcript parses, its turns are nodes a real database stores, and each body keeps
    the question/answer contract the session summaries read it by."""
    agent, data = case
    root = str(store.root)
    path = store.root.parent / ("s1.jsonl" if agent == "claude" else "rollout-x.jsonl")
    path.write_bytes(data.replace(CWD.encode(), root.encode()))
    parse = parse_claude if agent == "claude" else parse_codex
    with within():
        transcript = parse(str(path), lambda cwd: inside(cwd, [root]))
        built = turn_nodes(PROJECT, transcript, 2000, RepoPaths(root, [root]))
    assert transcript.skipped <= data.count(b"\n") + 1
    if not transcript.ours:
        return  # sync reads no further, and writes nothing (step.read_transcript)
    for node in built.nodes:
        assert 0.05 <= node.signal <= 1
        q_len = node.meta["q_len"]
        assert node.body.startswith("Q: ") and node.body[3 + q_len : 3 + q_len + 5] == "\n\nA: "
    store.write(built.nodes)
    for text in (transcript.session, transcript.cwd):  # both are stored as they are
        assert text is None or text.encode()


@settings(max_examples=80, deadline=None)
@given(case=transcripts)
@example(
    case=(
        "claude",
        json.dumps({"type": "user", "cwd": CWD, "message": {"content": "\ud83d"}}).encode(),
    )
)
@example(case=("claude", b'{"type": "user", "cwd": "' + CWD.encode() + b'/\\u0000"}\n'))
def test_a_transcript_becomes_nodes_or_is_passed_over(
    case: tuple[str, bytes], store: Store
) -> None:
    check_transcript(case, store)


@settings(max_examples=100, deadline=None)
@given(_text)
@example("<a></a>" * 30 + "<b>")
@example("<system-reminder>" * 20_000)
def test_telling_a_person_from_the_harness_is_linear(text: str) -> None:
    with within():
        kept = human_text(text)
    assert kept == "" or kept in text or "<system-reminder>" in text


TARGETS = {"transcripts": Target(transcripts, check_transcript, store=True)}
