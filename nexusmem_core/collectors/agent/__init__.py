"""Coding-agent hooks: Claude Code, Codex CLI, Gemini CLI, Cursor and opencode.

Each agent's hook payloads are read by an adapter of its own into one event shape
(``payload.AgentEvent``); everything after that (the log, the failure -> fix chains, the notes,
the quotas, redaction, the session digest) is shared.
"""

__all__ = [
    "AGENTS",
    "AGENT_LOG",
    "AGENT_NOTES",
    "MAX_COMMAND",
    "MAX_NOTE",
    "SHELL_AUTHOR",
    "author_of",
]

# The log the agent hooks append to in NexusMem's home, and sync reads: named here, where the
# sync and the log scrubber find it without loading the recall note's code.
AGENT_LOG = "agent-events.jsonl"
# What the hooks told the agents (a recall note, a session digest), beside it: a log of its own,
# so no reader of the commands (sync, recall's unsynced tail, `agent status`) meets a note.
AGENT_NOTES = "agent-notes.jsonl"
MAX_COMMAND = 64 * 1024  # a command as the logs keep it, redacted first
MAX_NOTE = 4 * 1024  # a note or digest as the notes log keeps it: several times the digest's cap

# Each agent: the name a log record's ``agent`` field and a node's ``source`` (``agent:<name>``)
# carry, and the ``author`` results show and ``query --author`` selects.
AGENTS = {
    "claude": "claude-code",
    "codex": "codex",
    "gemini": "gemini-cli",
    "cursor": "cursor",
    "opencode": "opencode",
}
SHELL_AUTHOR = "you"  # a command typed at a prompt (the shell hook, a history file)


def author_of(source: str) -> str | None:
    """Who ran a command node of ``source``: ``you``, an agent's author name, or None for a
    node that is not a command."""
    kind, _, name = source.partition(":")
    if kind == "shell":
        return SHELL_AUTHOR
    if kind == "agent":
        return AGENTS.get(name, name)
    return None
