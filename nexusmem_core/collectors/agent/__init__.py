"""Coding-agent hooks: Claude Code."""

__all__ = ["AGENT_LOG"]

# The log the agent hook appends to in NexusMem's home, and sync reads: named here, where the
# sync and the log scrubber find it without loading the recall note's code.
AGENT_LOG = "agent-events.jsonl"
