"""Coding-agent hooks: Claude Code."""
