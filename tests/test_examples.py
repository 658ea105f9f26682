"""The examples run, so they cannot rot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .conftest import ROOT, Repo

EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str, home: Path) -> str:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NEXUSMEM_HOME": str(home)},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_core_api_example(repo: Repo, home: Path):
    out = run_example("core_api.py", str(repo.path), "retry budget", home=home)
    assert "synced 4 commit(s)" in out
    assert "[observed] [backfilled] fix: raise the retry budget" in out


def test_mcp_client_example(repo: Repo, home: Path):
    out = run_example("mcp_client.py", str(repo.path), "retry budget", home=home)
    tools = "forget_memory, get_status, list_contradictions, list_recent_memory, list_stale, "
    tools += "mark_stale, review_memory, search_memory, sync_project"
    assert f"tools: {tools}" in out
    assert "fix: raise the retry budget" in out


@pytest.mark.parametrize("name", ["claude-code.mcp.json", "cursor.mcp.json", "vscode.mcp.json"])
def test_json_configs_launch_our_server(name: str):
    config = json.loads((EXAMPLES / "mcp-config" / name).read_text())
    (server,) = (config.get("mcpServers") or config["servers"]).values()
    assert [server["command"], *server["args"]] in (
        ["nexusmem", "mcp"],
        ["python", "-m", "nexusmem_mcp"],
    )


def test_codex_config_launches_our_server():
    config = tomllib.loads((EXAMPLES / "mcp-config" / "codex.config.toml").read_text())
    assert config["mcp_servers"]["nexusmem"] == {"command": "nexusmem", "args": ["mcp"]}
