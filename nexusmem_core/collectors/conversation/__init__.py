"""Assistant transcripts (Claude Code, Codex CLI): each exchange a ``conversation_turn`` node."""
