"""Run the agent hook exactly as a coding agent does: the installed command (with the agent's
name as its argument), a payload on stdin, its stdout read back as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nexusmem_core

HOOK = Path(nexusmem_core.__file__).resolve().parent / "collectors" / "agent" / "hook.py"
PAYLOADS = json.loads((Path(__file__).with_name("payloads.json")).read_text())
FIXTURES = Path(__file__).with_name("fixtures")  # <agent>/<event>.json, from each agent's docs


def fixture(agent: str, name: str, cwd: Path) -> dict[str, Any]:
    """The recorded payload ``fixtures/<agent>/<name>.json`` with ``{cwd}`` filled in."""
    text = (FIXTURES / agent / f"{name}.json").read_text().replace("{cwd}", str(cwd))
    data: dict[str, Any] = json.loads(text)
    return data


def payload(name: str, cwd: Path, **changes: Any) -> dict[str, Any]:
    """A recorded payload with ``{cwd}`` filled in and top-level or tool_input fields changed."""
    text = json.dumps(PAYLOADS[name]).replace("{cwd}", str(cwd))
    data: dict[str, Any] = json.loads(text)
    for key, value in changes.items():
        if key in ("command", "file_path"):
            data["tool_input"][key] = value
        else:
            data[key] = value
    return data


def run_hook(
    data: dict[str, Any] | bytes, agent: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``<python> -S -P hook.py [agent]`` with ``data`` on stdin (no agent: Claude Code's
    command as installs before the other agents wrote it)."""
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    argv = [sys.executable, "-S", "-P", str(HOOK), *([agent] if agent else [])]
    return subprocess.run(argv, input=raw, capture_output=True, timeout=30)


def context(result: subprocess.CompletedProcess[bytes]) -> str | None:
    """The note the hook gave the agent, or None when it stayed silent."""
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    if not result.stdout:
        return None
    answer = json.loads(result.stdout)
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str) and text
    return text


def log_records(home: Path) -> list[dict[str, Any]]:
    path = home / "agent-events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
