"""The shell commands a transcript says the agent ran, as ``shell_command`` nodes.

The same kind of node the agent hooks write, so a failure read from a past session ranks,
links to its fix and warns before a repeat as one recorded live does; ``source`` is
``conversation:<agent>``. A session from before NexusMem was set up reads as ``[backfilled]``
(search.py tells by the node's date). The command is redacted (then cut to the body's size)
and the error text redacted whole before its tail is kept; the keyed hash of the raw command
lets a retry that passed be found, as for a command the hooks recorded.
"""

from __future__ import annotations

import os

from ...models import Node
from ...redact import redact_count, redact_cut
from ..agent import AGENTS
from ..agent.nodes import agent_label, outcome_text
from ..agent.signature import Signature, error_chars, signature
from ..commands import is_predicate
from ..shell.hooklog import command_hash
from ..shell.nodes import _relative, _title, command_signal
from .transcript import Command, Transcript
from .turns import Built

__all__ = ["ERROR_CHARS", "command_nodes"]

# Of what a failed command printed, its end: where a test runner, a compiler or a traceback
# says why. The first line leads when it is short (``Exit Code 1``, ``Error: ...``).
ERROR_CHARS = 300


def _judged(ran: Command) -> tuple[str | None, int | None]:
    """The outcome as the failure linker reads it: a non-zero exit is a failure, but exit 1 of
    a search or comparison is an answer."""
    if ran.outcome is not None:
        return ran.outcome, ran.exit
    if ran.exit == 1 and is_predicate(ran.command):
        return "false", 1
    if ran.exit not in (None, 0):
        return "failed", ran.exit
    return None, ran.exit


def _tail(text: str) -> str:
    text = text.strip()
    if len(text) <= ERROR_CHARS:
        return text
    first = text.split("\n", 1)[0]
    if len(first) < ERROR_CHARS // 3:
        return f"{first} ... {text[-(ERROR_CHARS - len(first) - 5) :].lstrip()}"
    return "... " + text[-(ERROR_CHARS - 4) :].lstrip()


def _signed(found: Signature, cwd: str) -> dict[str, object]:
    """The error signature's fields of the node's meta, its trace's files as real paths."""
    files = [os.path.realpath(os.path.join(cwd, f)) for f in found.files]
    return {"sig": found.id, "trace": files}


def command_nodes(
    project_id: str, transcript: Transcript, home: str, root: str, max_chars: int
) -> Built:
    """Each command of ``transcript`` as a node, with the secrets replaced in it."""
    built = Built()
    agent = transcript.agent
    keep_errors = error_chars(home) > 0  # the hooks' setting: 0 keeps no error text, no signature
    for ran in transcript.commands:
        command, secrets = redact_cut(ran.command, max_chars)
        outcome, exit_code = _judged(ran)
        error, error_secrets = ("", 0)
        if keep_errors and ran.error and outcome in ("failed", "interrupted", "denied"):
            error, error_secrets = redact_count(ran.error)
        found = signature(error) if error else None  # as a hook's failure has one
        facts = {
            "outcome": outcome_text(outcome, exit_code),
            "error": _tail(error).replace("\n", " / ") if error else None,
            "error line": found.line if found else None,
            "cwd": _relative(ran.cwd, root),
            "ran by": f"the coding agent ({agent_label('agent:' + agent)}), read from its session",
        }
        lines = [command, ""] + [f"{k}: {v}" for k, v in facts.items() if v not in (None, "")]
        signal_code = 0 if outcome in ("false", "denied") else exit_code
        if signal_code is None and outcome == "failed":
            signal_code = 1  # for the prior, a failure whose code is unknown weighs as one
        built.nodes.append(
            Node(
                project_id=project_id,
                kind="shell_command",
                source=f"conversation:{agent}",
                ref=f"{agent}:{transcript.session}:{ran.call}",
                title=_title(command),
                body="\n".join(lines),
                ts=ran.ts,
                signal=command_signal(command, signal_code),
                provenance="observed",
                meta={
                    "exit": exit_code,
                    "outcome": outcome,
                    "cwd": os.path.normpath(ran.cwd) if ran.cwd else None,
                    "session": transcript.session,
                    "tool_use_id": ran.call,
                    "cmd_hash": command_hash(home, ran.command),
                    "captured": "transcript",
                    "author": AGENTS.get(agent, agent),
                    **(_signed(found, ran.cwd or root) if found else {}),
                    "at": ran.ts,
                },
            )
        )
        built.redacted.append(secrets + error_secrets)
    return built
