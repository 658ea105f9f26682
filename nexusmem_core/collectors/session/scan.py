"""``scan-session``: what the next syncs would send the model, without writing anything.

``--dry-run`` prints each due session's exact prompt and calls nothing. Without it, the model
is asked about the first ``limit`` due sessions (one unless told) and its title and summary are
shown, as a sync would store them, still writing nothing: the way to try another model
(``sources.session.model``) on real sessions before a sync pays for it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .plan import load_turns, plan
from .prompt import build_prompt

if TYPE_CHECKING:
    from ...engine import Engine

__all__ = ["SessionPreview", "SessionScan", "preview_footer", "preview_lines", "scan_sessions"]


@dataclass
class SessionPreview:
    session: str
    source: str
    agent: str | None
    last_ts: int | None
    turns: int  # exchanges in the session
    used: int  # exchanges in the prompt
    prompt_hash: str
    chars: int
    system: str
    prompt: str
    title: str | None = None  # with the model: what a sync would store
    title_fallback: bool | None = None
    title_problem: str | None = None
    summary: str | None = None


@dataclass
class SessionScan:
    sessions: list[SessionPreview] = field(default_factory=list)
    due: int = 0  # settled sessions whose summary is missing or out of date
    live: int = 0  # not settled yet
    current: int = 0  # summarised and up to date
    max_sessions: int = 0  # prompts a sync sends at most
    model: str = ""
    called: bool = False  # whether the model was asked
    note: str = ""  # why the model could not answer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def scan_sessions(engine: Engine, *, limit: int | None, call_model: bool) -> SessionScan:
    """Prompts for the due sessions, newest first (``limit`` of them at most); with
    ``call_model``, and the model's answer to each."""
    from ...embed.chat import ChatUnavailableError
    from .step import ask_model, read_reply

    cfg, db, pid = engine.config.sources.session, engine.db, engine.project_id
    found = await plan(db, pid, cfg.settle_minutes, int(time.time()))
    report = SessionScan(
        due=len(found.due),
        live=found.live,
        current=found.current,
        max_sessions=cfg.max_sessions,
        model=cfg.model,
        called=call_model,
    )
    for info in found.due:
        if limit is not None and len(report.sessions) >= limit:
            break
        prompt = build_prompt(await load_turns(db, pid, info), cfg.prompt_chars)
        if info.stored and info.stored.answered(prompt.hash):
            report.due -= 1  # it went on, but a sync would send nothing
            report.current += 1
            continue
        preview = SessionPreview(
            session=info.session,
            source=info.source,
            agent=info.agent,
            last_ts=info.last_ts,
            turns=prompt.turns,
            used=prompt.used,
            prompt_hash=prompt.hash,
            chars=len(prompt.user),
            system=prompt.system,
            prompt=prompt.user,
        )
        report.sessions.append(preview)
        if not call_model or report.note:
            continue
        try:
            text = await ask_model(engine, prompt)
        except ChatUnavailableError as err:
            report.note = str(err)
            continue
        read = read_reply(engine, info, prompt, text)
        if read is None:
            preview.summary = ""  # the model sent no summary: a sync keeps the session pending
            continue
        summary, node = read
        preview.title, preview.summary = node.title, node.body
        preview.title_fallback, preview.title_problem = summary.title_fallback, summary.problem
    return report


def _stamp(ts: int | None) -> str:
    return "time unknown" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))


def preview_lines(scan: SessionScan) -> list[str]:
    """``scan-session``'s stdout: each session's prompt, or (with the model) its summary."""
    out: list[str] = []
    for s in scan.sessions:
        out.append(
            f"=== session {s.session} ({s.source}, {s.turns} exchange(s), {s.used} in the "
            f"prompt, last {_stamp(s.last_ts)} UTC, {s.chars:,} characters, "
            f"prompt {s.prompt_hash[:12]}) ==="
        )
        if not scan.called:
            out += ["--- system", s.system, "--- user", s.prompt, ""]
        elif s.summary is None:
            out += ["(not asked: the chat model did not answer)", ""]
        elif not s.summary:
            out += ["(the chat model sent no summary: a sync keeps the session pending)", ""]
        else:
            why = f"  (rejected the model's: {s.title_problem})" if s.title_fallback else ""
            out += [f"title: {s.title}{why}", s.summary, ""]
    return out


def preview_footer(scan: SessionScan) -> str:
    """The one line on stderr: what was shown, what else there is, what was not done."""
    if not (scan.due or scan.live or scan.current):
        return (
            "no conversation turns in memory: sync them first (`nexusmem sync --conversation`, "
            "or sources.conversation.enabled)"
        )
    rest = f"{scan.current} up to date, {scan.live} still live (not settled)"
    if not scan.due:
        return f"no session is due for a summary: {rest}"
    done = (
        f"asked {scan.model}, wrote nothing"
        if scan.called
        else "dry run: the model was not called, nothing was written"
    )
    return (
        f"{len(scan.sessions)} of {scan.due} due session(s) shown, newest first (a sync sends "
        f"{scan.max_sessions} at most); {rest}; {done}"
    )
