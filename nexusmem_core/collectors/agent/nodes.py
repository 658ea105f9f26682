"""Commands a coding agent ran, as nodes beside the ones typed at a prompt.

They are ``shell_command`` nodes like the shell hook's, so they rank, link and warn the same
way; ``source`` (``agent:<name>``) and ``meta["author"]`` say which agent ran them. A
failure carries no exit code unless the agent gave one: the body says "exit code unknown"
rather than invent 1.
"""

from __future__ import annotations

from typing import Any

from ...models import Node
from ...redact import redact, redact_cut
from ..shell.nodes import _relative, _title, command_signal
from . import AGENTS, author_of
from .signature import from_record

__all__ = ["SOURCE", "agent_label", "agent_node", "outcome_text", "source_of"]

SOURCE = "agent:claude"  # Claude Code's, and that of records older than the ``agent`` field


def source_of(record: dict[str, Any]) -> str:
    """``agent:<name>`` of the agent that wrote ``record``; Claude Code's for an old record
    or an agent this NexusMem does not know."""
    agent = record.get("agent")
    return f"agent:{agent}" if isinstance(agent, str) and agent in AGENTS else SOURCE


def agent_label(source: str) -> str:
    """The agent's name as people know it, from its adapter's ``LABEL`` (an agent this
    NexusMem does not know: its name as given)."""
    from .payload import adapter

    name = source.partition(":")[2]
    try:
        label: str = adapter(name).LABEL
    except ValueError:
        return name
    return label


def outcome_text(outcome: str | None, exit_code: int | None) -> str:
    """How a command ended, in the words every command node uses, so one query finds failures
    whoever recorded them."""
    if outcome == "failed":
        code = f"exit {exit_code}" if exit_code is not None else "exit code unknown"
        return f"failed with an error ({code})"
    if outcome == "interrupted":
        return "interrupted"
    if outcome == "false":
        return "answered no: nothing found or a difference (exit 1)"
    if outcome == "denied":
        return "not run: permission denied"
    if outcome == "background":
        return "started in the background (how it ended is not known)"
    return "succeeded (exit 0)" if exit_code == 0 else "exit code unknown"


def agent_node(
    project_id: str, record: dict[str, Any], max_chars: int, root: str | None = None
) -> Node:
    """One command the agent ran, with what it changed just before and how it ended."""
    command, _ = redact_cut(str(record["cmd"]), max_chars)
    exit_code = record.get("exit") if isinstance(record.get("exit"), int) else None
    outcome = record.get("outcome") if isinstance(record.get("outcome"), str) else None
    edited = [p for p in record.get("edited") or [] if isinstance(p, str)]
    error = record.get("error") if isinstance(record.get("error"), str) else None
    source = source_of(record)
    sig = from_record(record)  # the error's signature: searchable, and meta.sig for recall
    facts = {
        "outcome": outcome_text(outcome, exit_code),
        "changed before this ran": ", ".join(edited) or None,
        "error": redact(error).replace("\n", " / ") if error else None,
        "error line": redact(sig.line) if sig else None,
        "cwd": _relative(record.get("cwd"), root),
        "ran by": f"the coding agent ({agent_label(source)})",
    }
    lines = [command, ""] + [f"{k}: {v}" for k, v in facts.items() if v not in (None, "")]
    # For the prior, a failure whose code is unknown weighs as a failure.
    signal_code = 0 if outcome in ("false", "denied") else exit_code
    if signal_code is None and outcome == "failed":
        signal_code = 1
    ts = record.get("ts")
    return Node(
        project_id=project_id,
        kind="shell_command",
        source=source,
        ref=str(record["id"]),
        title=_title(command),
        body="\n".join(lines),
        ts=int(ts) if isinstance(ts, int | float) else None,
        signal=command_signal(command, signal_code),
        provenance="observed",
        files=edited,
        meta={
            "exit": exit_code,
            "outcome": outcome,
            "cwd": record.get("cwd"),
            "session": record.get("session"),
            "tool_use_id": record.get("tool_use_id"),
            "cmd_hash": record.get("cmd_hash"),
            "edited": edited,
            "captured": "agent",
            "author": author_of(source),
            **({"sig": sig.id, "trace": sig.files} if sig else {}),
            "at": ts if isinstance(ts, int | float) else None,  # to the millisecond: order
        },
    )
