"""Exchanges as ``conversation_turn`` nodes: redacted, cut at headings, scored.

The node contract (the session summaries and the failure -> fix linker build on it):

* ref ``{session}:{turn}:{chunk}`` (both 0-based; the turn is the exchange's place in its
  session), grp ``{session}:{turn}``: the chunks of one reply are siblings, which the packer caps;
* body ``"Q: " + question + "\\n\\nA: " + answer chunk``, with meta ``q_len`` so that
  ``body[3:3 + q_len]`` is the question and ``body[3 + q_len + 5:]`` the answer. After the first
  chunk the question is only its first line; the title is that line (at most 100 characters),
  and ``" — <heading>"`` after the first chunk;
* ts: when the reply's last text was written, else when the question was asked;
* meta: ``session``, ``turn``, ``chunk``, ``chunks``, ``q_len``, ``file``, ``cwd``, ``agent``,
  and ``git_branch`` when the transcript has one.

Signal, before any query, in [0.05, 1]. A conversation is a record of events, not an event, so it
starts at 0.4, with the plain shell command. A turn that diagnoses a problem (an error word, and
a cause in the reply: "because", "root cause", "turns out", "the fix") gains 0.2, one that only
mentions a problem 0.05; a reply that states a decision ("decided", "instead of", "rather than",
"trade-off") gains 0.15. A reply of a few words ("Done.") loses 0.15 and a one- or two-word
question ("yes", "go on") 0.1: they say nothing without their neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ...models import Node, NodeKind
from ...redact import redact, redact_count
from ..docs import markdown_headings  # the docs' own Markdown heading and fence rules
from .paths import RepoPaths
from .transcript import Transcript

__all__ = ["KIND", "Built", "split_reply", "turn_nodes", "turn_signal"]

KIND: NodeKind = "conversation_turn"
TITLE_CHARS = 100
FIRST_LINE_CHARS = 200  # the question's first line, as repeated after the first chunk

# Lowercase patterns, matched against lowercased text: case-insensitive alternations cost
# Python's re three times as much, and this runs over every reply of every transcript.
_PROBLEM = re.compile(
    r"\b(?:errors?|exceptions?|traceback|fail(?:s|ed|ing|ures?)?|crash(?:es|ed)?|bugs?|broken|"
    r"regressions?|time[sd]? ?out|segfault|panic(?:ked)?|stack ?trace)\b"
)
_CAUSE = re.compile(
    r"\b(?:because|root cause|caused by|the cause|turns? out|the (?:problem|issue|bug) (?:is|was)|"
    r"the fix|fixed (?:it )?by|due to)\b"
)
_DECISION = re.compile(
    r"\b(?:decided|decision|(?:we|i)(?:'ll| will) (?:use|go with|keep|drop)|going with|chose|"
    r"instead of|rather than|trade-?offs?|settled on)\b"
)
# Of a long reply, the signal reads the head and the tail: that is where a diagnosis or a decision
# is stated; the middle is mostly quoted output and code.
HEAD_CHARS, TAIL_CHARS = 6000, 2000


def turn_signal(question: str, answer: str) -> float:
    """How much an exchange is worth remembering before any query (see the module docstring)."""
    asked = question[:HEAD_CHARS].lower()
    said = (
        answer.lower()
        if len(answer) <= HEAD_CHARS + TAIL_CHARS
        else (answer[:HEAD_CHARS].lower() + "\n" + answer[-TAIL_CHARS:].lower())
    )
    signal = 0.4
    if _PROBLEM.search(asked) or _PROBLEM.search(said):
        signal += 0.2 if _CAUSE.search(said) else 0.05
    if _DECISION.search(said):
        signal += 0.15
    if len(answer.strip()) < 40:
        signal -= 0.15
    if len(question.split()) <= 2:
        signal -= 0.1
    return round(max(0.05, min(1.0, signal)), 3)


# ------------------------------------------------------------------------------------ chunking


def _sections(text: str) -> Iterator[tuple[str | None, str]]:
    """``text`` cut before each Markdown heading outside code fences, as (heading, text) pairs
    whose texts join back into ``text``."""
    heading: str | None = None
    lines: list[str] = []
    for line, found in markdown_headings(text.splitlines(keepends=True)):
        if found is not None:
            if lines:
                yield heading, "".join(lines)
            heading, lines = found[0], []
        lines.append(line)
    if lines:
        yield heading, "".join(lines)


def _units(text: str, budget: int) -> Iterator[str]:
    """``text`` in pieces of at most ``budget``: paragraphs, else lines, else plain cuts."""
    for paragraph in re.findall(r".*?(?:\n[ \t]*\n\s*|\Z)", text, re.DOTALL):
        if len(paragraph) <= budget:
            yield paragraph
            continue
        for line in paragraph.splitlines(keepends=True):
            for start in range(0, len(line), budget):
                yield line[start : start + budget]


def split_reply(answer: str, budget: int) -> list[tuple[str, str | None]]:
    """``answer`` in chunks of at most ``budget`` characters, each with the heading it starts
    under. Cut at headings; a section too long for one chunk is cut at blank lines (then line
    ends). Chunks fill from the front, so a reply that grew since the last read (a transcript
    still being written) keeps its earlier chunks as they were."""
    if len(answer) <= budget:
        return [(answer, None)]
    texts: list[str] = []
    headings: list[str | None] = []
    for heading, text in _sections(answer):
        pieces = [text] if len(text) <= budget else [p for p in _units(text, budget) if p]
        for i, piece in enumerate(pieces):
            # A section that needed cutting starts a chunk of its own: the cut is at its heading.
            fresh = i == 0 and len(pieces) > 1
            if texts and not fresh and len(texts[-1]) + len(piece) <= budget:
                texts[-1] += piece
            else:
                texts.append(piece)
                headings.append(heading)
    pairs = zip(texts, headings, strict=True)
    chunks = [(text.strip(), heading) for text, heading in pairs if text.strip()]
    return chunks or [("", None)]


# --------------------------------------------------------------------------------------- nodes


@dataclass
class Built:
    """A transcript's nodes, and the secrets replaced in each (a turn's count is given on its
    first chunk, since the question and answer are redacted whole, before cutting)."""

    nodes: list[Node] = field(default_factory=list)
    redacted: list[int] = field(default_factory=list)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _cap_question(question: str, max_chars: int) -> str:
    """A pasted log can make a question as long as any reply: it keeps at most half a body."""
    limit = max(20, max_chars // 2)
    if len(question) <= limit:
        return question
    cut = question.rfind("\n", 0, limit)
    return question[: cut if cut > limit // 2 else limit] + "\n[truncated]"


@dataclass(frozen=True)
class _Shared:
    """What every node of one transcript has in common."""

    project_id: str
    source: str
    session: str
    meta: dict[str, object]
    max_chars: int


def turn_nodes(
    project_id: str, transcript: Transcript, max_chars: int, paths: RepoPaths | None = None
) -> Built:
    """Every exchange of ``transcript`` as nodes, redacted before anything else is done."""
    session = transcript.session or ""
    meta: dict[str, object] = {
        "session": session,
        "file": transcript.path,
        "cwd": transcript.cwd,
        "agent": transcript.agent,
    }
    if transcript.git_branch:
        meta["git_branch"] = redact(transcript.git_branch)
    shared = _Shared(project_id, f"conversation:{transcript.agent}", session, meta, max_chars)
    built = Built()
    for turn, exchange in enumerate(transcript.exchanges):
        question, asked_secrets = redact_count(exchange.question)
        answer, answered_secrets = redact_count(exchange.answer)
        question = _cap_question(question, max_chars)
        files = paths.named(question + "\n" + answer, transcript.cwd) if paths else []
        ts = exchange.answered if exchange.answered is not None else exchange.asked
        nodes = _exchange_nodes(shared, turn, question, answer, ts, files)
        built.nodes += nodes
        built.redacted += [asked_secrets + answered_secrets] + [0] * (len(nodes) - 1)
    return built


def _exchange_nodes(
    shared: _Shared, turn: int, question: str, answer: str, ts: int | None, files: list[str]
) -> list[Node]:
    """One exchange's nodes, from its redacted question and answer: one per chunk."""
    first = _first_line(question)
    title = _clip(first, TITLE_CHARS)
    chunks = split_reply(answer, max(50, shared.max_chars - len(question) - len("Q: \n\nA: ")))
    signal = turn_signal(question, answer)
    nodes = []
    for chunk, (text, heading) in enumerate(chunks):
        asked = question if chunk == 0 else _clip(first, FIRST_LINE_CHARS)
        suffix = "" if chunk == 0 else f" — {_clip(heading or f'part {chunk + 1}', 60)}"
        position = {"turn": turn, "chunk": chunk, "chunks": len(chunks), "q_len": len(asked)}
        nodes.append(
            Node(
                project_id=shared.project_id,
                kind=KIND,
                source=shared.source,
                ref=f"{shared.session}:{turn}:{chunk}",
                title=title + suffix,
                body=f"Q: {asked}\n\nA: {text}",
                ts=ts,
                signal=signal,
                provenance="recorded",
                grp=f"{shared.session}:{turn}",
                files=files,
                meta={**shared.meta, **position},
            )
        )
    return nodes
