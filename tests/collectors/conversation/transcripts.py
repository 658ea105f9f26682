"""The recorded transcript fixtures (tests/fixtures/transcripts), installed where Claude Code
and Codex CLI keep them, with their working directory moved to a test's repository."""

from __future__ import annotations

from pathlib import Path

from nexusmem_core.collectors.conversation.claude import claude_slug

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
RECORDED_CWD = "/home/dev/project"  # where the fixtures were recorded
CLAUDE_SESSION = "5f0c2a9e-1b7d-4c3e-9a61-2f4d8e7b3c10"
CODEX_SESSION = "019b4f2e-7c1d-7a30-9e55-3b8d2c6f1a47"
CLAUDE_FIXTURE = FIXTURES / f"claude-{CLAUDE_SESSION}.jsonl"
CODEX_FIXTURE = FIXTURES / f"rollout-2026-01-11T14-00-00-{CODEX_SESSION}.jsonl"
# The secrets planted in the fixtures: none may ever reach a database.
AWS_KEY = "AKIAZ3MQK7RT4PLW9XVB"
GITHUB_TOKEN = "ghp_R8fLw2Qx9Tz4Vb7Nc1Mk5Hs3Jd6Gp0Ya2Ue8"


def install_claude(
    claude_dir: Path, cwd: Path, session: str = CLAUDE_SESSION, text: str | None = None
) -> Path:
    """A Claude Code transcript of a session started in ``cwd``, where Claude Code puts it."""
    body = CLAUDE_FIXTURE.read_text() if text is None else text
    target = claude_dir / "projects" / claude_slug(str(cwd)) / f"{session}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body.replace(RECORDED_CWD, str(cwd)))
    return target


def install_codex(codex_dir: Path, cwd: Path, name: str | None = None) -> Path:
    """A Codex rollout of a session run in ``cwd``, in Codex's dated folders."""
    target = codex_dir / "sessions" / "2026" / "01" / "11" / (name or CODEX_FIXTURE.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(CODEX_FIXTURE.read_text().replace(RECORDED_CWD, str(cwd)))
    return target
