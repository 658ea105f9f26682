"""The sync step: summarise the settled sessions whose prompt changed, a few per sync.

It runs after the ingest transaction, like embedding, because it waits on a model: the turns
are read, the model is asked (in a thread, with ``timeout_seconds``), and each summary is
written in a short transaction of its own, so a sync interrupted half-way keeps what it got.
At most ``max_sessions`` prompts are sent per sync, and none once ``budget_seconds`` have gone
by (a 3B model on a laptop CPU takes tens of seconds a summary); the due sessions past either
are ``queued`` for the next. When Ollama is absent or too slow the pass stops; a reply with no
summary in it passes over that session. Either way ``report.session_note`` says so in one
line, the sync succeeds, and the session stays ``pending``: it is asked again at the next sync.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio.to_thread

from ...embed.chat import ChatUnavailableError, ask
from ...hygiene.deny import DenyFilter
from ...logging import get_logger
from ...models import Node
from ...redact import redact_tally
from ...store.db import Database
from ...store.nodes import upsert_nodes
from .plan import SessionInfo, load_turns, plan
from .prompt import Prompt, build_prompt
from .reply import Summary, parse_reply

if TYPE_CHECKING:
    from ...engine import Engine
    from ...models import SyncReport

__all__ = ["SIGNAL", "ask_model", "read_reply", "summarize_sessions", "summary_node"]

SIGNAL = 0.6  # a distillation: above a routine turn, below a failed command
log = get_logger("session")


@dataclass
class _Pass:
    queued: list[SessionInfo] = field(default_factory=list)
    pending: list[SessionInfo] = field(default_factory=list)
    stopped: str = ""  # why the model could not be asked
    empty: int = 0  # replies with no summary in them
    sent: int = 0


async def ask_model(engine: Engine, prompt: Prompt) -> str:
    """The configured chat model's reply to ``prompt``, from the Ollama the embedding model
    runs on (``OLLAMA_HOST`` first); raises ChatUnavailableError in one line."""
    cfg = engine.config.sources.session
    host = engine.settings.ollama_host or engine.config.embed.host
    messages, options = prompt.messages(), prompt.options()
    return await anyio.to_thread.run_sync(
        lambda: ask(host, cfg.model, messages, cfg.timeout_seconds, options, "sources.session")
    )


async def summarize_sessions(engine: Engine, report: SyncReport) -> None:
    """Summarise what is due (see :mod:`.plan`), newest session first."""
    cfg, db, pid = engine.config.sources.session, engine.db, engine.project_id
    found = await plan(db, pid, cfg.settle_minutes, int(time.time()))
    deny = await DenyFilter.load(db, pid)
    run = _Pass()
    deadline = time.monotonic() + cfg.budget_seconds
    for info in found.due:
        if run.stopped:
            run.pending.append(info)
        elif run.sent >= cfg.max_sessions or time.monotonic() >= deadline:
            run.queued.append(info)
        else:
            await _summarise(engine, info, deny, run, report)
    if run.queued or run.pending:
        async with db.transaction():
            for state, infos in (("queued", run.queued), ("pending", run.pending)):
                for info in infos:
                    await _record(db, pid, info, state)
    report.sessions_queued = len(run.queued)
    report.session_note = _note(run, cfg.model)


async def _summarise(
    engine: Engine, info: SessionInfo, deny: DenyFilter, run: _Pass, report: SyncReport
) -> None:
    db, pid, cfg = engine.db, engine.project_id, engine.config.sources.session
    prompt = build_prompt(await load_turns(db, pid, info), cfg.prompt_chars)
    stored = info.stored
    if stored and stored.answered(prompt.hash):
        # The session went on, but its prompt did not change: nothing to ask.
        async with db.transaction():
            await _record(db, pid, info, "done" if stored.has_node else "failed")
        return
    run.sent += 1
    started = time.perf_counter()
    try:
        text = await ask_model(engine, prompt)
    except ChatUnavailableError as err:
        run.stopped = str(err)
        run.pending.append(info)
        return
    read = read_reply(engine, info, prompt, text)
    if read is None:
        run.empty += 1
        run.pending.append(info)
        return
    summary, node = read
    # A summary holding a forgotten value is not written; the same prompt would get the same
    # summary, so the prompt counts as answered ("failed") and is not sent again.
    denied = deny.denies(node)
    async with db.transaction():
        if denied:
            await _record(db, pid, info, "failed", prompt.hash)
        else:
            await upsert_nodes(db, [node])
            await _record(db, pid, info, "done", prompt.hash, node.id)
    if denied:
        report.denied += 1
    else:
        report.sessions += 1
    log.debug(
        "session_summarised",
        seconds=round(time.perf_counter() - started, 2),
        title_fallback=summary.title_fallback,
        denied=denied,
    )


def _note(run: _Pass, model: str) -> str:
    problems = [run.stopped] if run.stopped else []
    if run.empty:
        problems.append(f"the chat model {model} sent no summary for {run.empty} session(s)")
    if not problems:
        return "ok"
    return f"skipped: {'; '.join(problems)}; {len(run.pending)} session(s) stay pending"


def read_reply(
    engine: Engine, info: SessionInfo, prompt: Prompt, text: str
) -> tuple[Summary, Node] | None:
    """The summary in the model's reply and the node a sync stores for it; None when the
    reply holds no summary."""
    summary = parse_reply(text, prompt.opening or f"Session {info.session[:8]}")
    if summary is None:
        return None
    cfg = engine.config
    node = summary_node(
        engine.project_id, info, prompt, summary, cfg.sources.session.model,
        cfg.limits.max_body_chars,
    )  # fmt: skip
    return summary, node


def summary_node(
    pid: str, info: SessionInfo, prompt: Prompt, summary: Summary, model: str, max_chars: int
) -> Node:
    """The ``session_summary`` node: dated by the session's last turn, and redacted once more
    (a model can only echo what it read, but a pattern-shaped invention costs nothing to catch)."""
    return Node(
        project_id=pid,
        kind="session_summary",
        source="session",
        ref=info.session,
        title=redact_tally(summary.title)[0],
        body=redact_tally(summary.body)[0][:max_chars],
        ts=info.last_ts,
        signal=SIGNAL,
        provenance="derived",
        meta={
            "session": info.session,
            "agent": info.agent,
            "model": model,
            "prompt_hash": prompt.hash,
            "turns": prompt.turns,
            "title_fallback": summary.title_fallback,
        },
    )


async def _record(
    db: Database,
    pid: str,
    info: SessionInfo,
    state: str,
    prompt_hash: str | None = None,
    node_id: str | None = None,
) -> None:
    """The session's row. ``prompt_hash`` and ``node_id`` change only with a new answer: the
    hash is of the prompt the stored summary came from."""
    await db.execute(
        "insert into sessions (project_id, session, source, last_ts, prompt_hash, state, "
        "node_id, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?) "
        "on conflict(project_id, session) do update set source = excluded.source, "
        "last_ts = excluded.last_ts, state = excluded.state, "
        "prompt_hash = coalesce(excluded.prompt_hash, sessions.prompt_hash), "
        "node_id = coalesce(excluded.node_id, sessions.node_id), "
        "updated_at = excluded.updated_at",
        (
            pid,
            info.session,
            info.source,
            info.last_ts,
            prompt_hash,
            state,
            node_id,
            int(time.time()),
        ),
    )
