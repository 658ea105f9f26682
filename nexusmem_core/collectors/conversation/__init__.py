"""Assistant transcripts (Claude Code, Codex CLI, Gemini CLI, opencode): each exchange a
``conversation_turn`` node, and the shell commands a Codex CLI, Gemini CLI or opencode
session ran ``shell_command`` nodes."""
