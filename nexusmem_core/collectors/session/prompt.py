"""The prompt a session's summary comes from, and the hash that decides whether it is sent.

The model reads the session's highest-signal exchanges that fit ``prompt_chars``, in the order
they happened; the opening question goes in first, as it says what the session was for. One
long answer is cut to a quarter of the budget so it cannot crowd out the rest. The turns were
redacted when they were stored; each piece and the prompt are redacted again anyway (a turn
stored before a rule existed), ~1.5 ms for 12,000 characters.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Any

from ...redact import redact_tally

__all__ = ["SYSTEM", "TITLE_MAX", "Prompt", "Turn", "build_prompt", "opening_line"]

TITLE_MAX = 90  # characters: a title, not a paragraph
CUT = " [...]"
_SECRET_MARGIN = 4096
SYSTEM = (
    "You summarise one working session between a developer and a coding assistant, for the "
    "project's memory. Write plain text, no markdown.\n"
    "Line 1: a title saying what the session was about, in at most 10 words. No preamble, no "
    "quotes, and not the words 'summary' or 'session'.\n"
    "Then three parts, each on its own lines, starting with its label:\n"
    "Decisions: what was decided, each with its reason.\n"
    "Diagnoses: what was found to cause which problem.\n"
    "Unfinished: what was left to do.\n"
    "Write 'none' after a label with nothing to say. Use only what the transcript says."
)
_HEADER = (
    "The exchanges of one session, in the order they happened (the most telling ones, when it "
    "was long):"
)
_ASK = "Write the title line, then Decisions, Diagnoses and Unfinished."
_REPLY_TOKENS = 1024  # the summary's length at most; also room kept for it in the context


@dataclass(frozen=True)
class Turn:
    """One stored chunk of an exchange (the conversation source splits long answers)."""

    turn: int
    chunk: int
    ts: int | None
    signal: float
    question: str  # for a chunk after the first, only the question's first line
    answer: str

    @classmethod
    def from_node(cls, body: str, ts: int | None, signal: float, meta: dict[str, Any]) -> Turn:
        """Split ``"Q: " + question + "\\n\\nA: " + answer`` at ``meta['q_len']``; a body
        of another shape is read as an answer with no question."""
        turn, chunk, q_len = meta.get("turn"), meta.get("chunk", 0), meta.get("q_len")
        if not isinstance(turn, int) or not isinstance(chunk, int):
            raise ValueError("conversation turn without a turn number")
        question, answer = "", body
        if isinstance(q_len, int) and body.startswith("Q: "):
            end = 3 + q_len
            if body[end : end + 5] == "\n\nA: ":
                question, answer = body[3:end], body[end + 5 :]
        return cls(turn, chunk, ts, float(signal), question, answer)


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    hash: str  # of both messages: an unchanged hash never calls the model again
    turns: int  # exchanges in the session
    used: int  # exchanges the prompt holds
    opening: str  # the fallback title: the first line of the question that opened it

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def options(self) -> dict[str, Any]:
        """Deterministic, and a context window that holds the whole prompt and the reply:
        Ollama's default (2,048 or 4,096 tokens, by version) silently drops the start of a
        longer prompt."""
        tokens = math.ceil((len(self.system) + len(self.user)) / 3) + _REPLY_TOKENS
        return {
            "temperature": 0,
            "num_predict": _REPLY_TOKENS,
            "num_ctx": max(4096, 2048 * math.ceil(tokens / 2048)),
        }


def _stamp(ts: int | None) -> str:
    return "time unknown" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))


def _cut(text: str, chars: int) -> str:
    """``text`` in at most ``chars`` characters, redacted first: a cut through a secret (in a
    turn stored before its rule existed) could leave a piece no pattern recognises. Only a
    margin past the cut is redacted, which holds any secret the table knows (a PEM key
    included), so a long answer costs no more than a short one."""
    text = redact_tally(text[: chars + _SECRET_MARGIN])[0].strip()
    return text if len(text) <= chars else text[: max(0, chars - len(CUT))].rstrip() + CUT


def _piece(t: Turn, chars: int) -> str:
    """One chunk as the model reads it, at most about ``chars`` long."""
    head = f"[exchange {t.turn + 1}{', continued' if t.chunk else ''}, {_stamp(t.ts)}]\n"
    asked = f"Developer: {_cut(t.question, chars // 3)}\n" if t.chunk == 0 and t.question else ""
    room = max(0, chars - len(head) - len(asked) - len("Assistant: "))
    return f"{head}{asked}Assistant: {_cut(t.answer, room)}"


def opening_line(turns: list[Turn]) -> str:
    """The first line of the question that opened the session (the earliest one asked),
    shortened at a word to fit a title; empty when no turn holds a question."""
    asked = sorted((t for t in turns if t.question.strip()), key=lambda t: (t.turn, t.chunk))
    if not asked:
        return ""
    line = next(x for x in asked[0].question.strip().splitlines() if x.strip()).strip()
    line = " ".join(redact_tally(line)[0].split())
    if len(line) <= TITLE_MAX:
        return line
    return line[: TITLE_MAX - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def build_prompt(turns: list[Turn], prompt_chars: int) -> Prompt:
    """The two messages for one session; ``prompt_chars`` bounds the user message.

    Nothing in it but the chosen exchanges depends on the session: a session that went on with
    exchanges too weak to make the cut keeps its prompt, and so its summary.
    """
    ordered = sorted(turns, key=lambda t: (t.turn, t.chunk))
    budget, limit = prompt_chars - len(_HEADER) - len(_ASK) - 4, max(400, prompt_chars // 4)
    pieces = {(t.turn, t.chunk): _piece(t, limit) for t in ordered}
    first = ordered[0] if ordered else None
    # The opening question first, then by signal; equal signals in the order they happened.
    ranked = sorted(ordered, key=lambda t: (t is not first, -t.signal, t.turn, t.chunk))
    chosen: list[Turn] = []
    for t in ranked:
        cost = len(pieces[(t.turn, t.chunk)]) + 2
        if cost <= budget:
            chosen.append(t)
            budget -= cost
    chosen.sort(key=lambda t: (t.turn, t.chunk))
    body = "\n\n".join(pieces[(t.turn, t.chunk)] for t in chosen)
    user = redact_tally(f"{_HEADER}\n\n{body}\n\n{_ASK}")[0]
    digest = hashlib.sha256(f"{SYSTEM}\x00{user}".encode("utf-8", "surrogatepass")).hexdigest()
    return Prompt(
        system=SYSTEM,
        user=user,
        hash=digest,
        turns=len({t.turn for t in ordered}),
        used=len({t.turn for t in chosen}),
        opening=opening_line(ordered),
    )
