"""The Claude Code hook as a process: it records what the agent ran, silently, and never fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nexusmem_core.collectors.agent.payload import MAX_PAYLOAD

from ...conftest import Repo, modules_loaded_by, run_cli
from .hookrun import context, log_records, payload, run_hook


@pytest.fixture
def project(repo: Repo) -> Repo:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "-C", str(repo.path)).returncode == 0
    return repo


def test_each_bash_outcome_is_recorded_silently(project: Repo, home: Path):
    cwd = project.path
    for name in ("post_bash_ok", "post_bash_background", "post_bash_interrupted"):
        assert context(run_hook(payload(name, cwd))) is None
    assert context(run_hook(payload("failure_bash_no_code", cwd))) is None  # first failure
    records = {r["id"]: r for r in log_records(home)}
    assert (records["toolu_01OK"]["outcome"], records["toolu_01OK"]["exit"]) == ("ok", 0)
    assert records["toolu_01BG"]["outcome"] == "background"
    assert records["toolu_01INT"]["outcome"] == "interrupted"
    failed = records["toolu_01TIMEOUT"]
    assert (failed["outcome"], failed["exit"]) == ("failed", None)
    assert failed["error"] == "Command timed out after 2m 0.0s"
    assert failed["session"] == "sess-1" and failed["cwd"] == str(cwd)
    assert failed["tool_use_id"] == "toolu_01TIMEOUT"


def test_a_failure_keeps_its_exit_line_and_its_end_with_secrets_redacted(project: Repo, home: Path):
    key = "AKIA" + "Q3EGRT7XMPLE2KDI"  # an AWS access key id, in the end the excerpt keeps
    output = "=" * 30 + " test session starts " + "=" * 30 + "\n" + "." * 1180 + f" {key}\n"
    output += "FAILED tests/test_api.py::test_login - AssertionError: 401 != 200\n"
    run_hook(payload("failure_bash_exit", project.path, error=f"Exit code 1\n{output}"))
    (record,) = log_records(home)
    assert record["error"].startswith("Exit code 1\n…\n")
    assert record["error"].endswith("test_login - AssertionError: 401 != 200")
    assert len(record["error"]) <= 300 and "[REDACTED" in record["error"]
    assert key not in (home / "agent-events.jsonl").read_text()
    assert key[:12] not in (home / "agent-events.jsonl").read_text()


def test_edits_attach_to_the_next_command_as_paths_only(project: Repo, home: Path):
    cwd = project.path
    for name in ("post_edit", "post_write", "failure_edit", "post_read"):
        assert context(run_hook(payload(name, cwd))) is None
    run_hook(payload("post_edit", cwd, file_path="/etc/hosts"))  # outside the repository
    run_hook(payload("failure_bash_exit", cwd))
    run_hook(payload("post_bash_ok", cwd))
    first, second = log_records(home)
    assert first["edited"] == ["src/app.js", "test/app.test.js"]
    assert first["exit"] == 2
    assert second["edited"] == []  # each edit is told once, before the command it preceded
    log = (home / "agent-events.jsonl").read_text()
    assert "SECRET-CONTENT" not in log and "sk-live" not in log


def test_a_secret_in_a_command_never_reaches_the_log(project: Repo, home: Path):
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    run_hook(payload("post_bash_ok", project.path, command=f"GITHUB_TOKEN={secret} gh pr list"))
    (record,) = log_records(home)
    assert secret not in json.dumps(record) and record["redactions"] >= 1
    assert secret not in (home / "agent-events.jsonl").read_text()


def test_nothing_is_recorded_where_nexusmem_never_ran(repo: Repo, home: Path):
    assert context(run_hook(payload("failure_bash_exit", repo.path))) is None
    assert log_records(home) == []


def test_broken_payloads_are_dropped_and_counted_without_a_word(project: Repo, home: Path):
    for raw in (b"garbage", b"{}", b'{"hook_event_name": 3}', b"x" * (MAX_PAYLOAD + 10)):
        result = run_hook(raw)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    drops = json.loads((home / "agent-drops.json").read_text())
    assert drops == {"malformed": 3, "oversize": 1}
    assert log_records(home) == []


def test_the_hook_fails_open_when_its_home_cannot_be_written(
    project: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a directory should be")
    monkeypatch.setenv("NEXUSMEM_HOME", str(blocked / "home"))
    result = run_hook(payload("failure_bash_exit", project.path))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_a_hook_file_without_its_package_is_silent(tmp_path: Path):
    """A half-removed install (the file is there, the package beside it is not)."""
    copy = tmp_path / "pkg" / "nexusmem_core" / "collectors" / "agent" / "hook.py"
    copy.parent.mkdir(parents=True)
    copy.write_text(
        (Path(__file__).parents[3] / "nexusmem_core/collectors/agent/hook.py").read_text()
    )
    result = subprocess.run(
        [sys.executable, "-S", "-P", str(copy)], input=b"{}", capture_output=True
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_the_hook_path_imports_nothing_heavy():
    """Start-up is paid on every tool call: no mcp, ollama or pydantic, and not even pathlib
    or dataclasses (20 and 17 ms here), or typing (~3 ms)."""
    runner = modules_loaded_by("nexusmem_core.collectors.agent.runner")
    loaded = runner | modules_loaded_by("nexusmem_core.redact")  # it redacts what it keeps
    assert "nexusmem_core.collectors.agent.runner" in runner
    heavy = {"mcp", "ollama", "pydantic", "numpy", "anyio", "aiosqlite", "pathlib", "dataclasses"}
    assert loaded & (heavy | {"typing"}) == set()


def test_the_installed_command_works_outside_the_virtual_environment(
    project: Repo, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    user = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user))
    assert run_cli("agent", "install").returncode == 0
    settings = json.loads((user / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["PostToolUseFailure"]
    command = group["hooks"][0]["command"]
    # What Claude Code does: hand the string to a shell, in its own environment.
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(user), "NEXUSMEM_HOME": str(home)}
    data = json.dumps(payload("failure_bash_exit", project.path)).encode()
    result = subprocess.run(
        ["sh", "-c", command], input=data, env=bare, cwd="/", capture_output=True, timeout=30
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    (record,) = log_records(home)
    assert (record["cmd"], record["outcome"], record["exit"]) == ("npm test", "failed", 2)


def test_a_corrupt_session_state_is_started_afresh(project: Repo, home: Path):
    from nexusmem_core.collectors.agent.state import _path

    for garbage in ('{"edits": "abc", "noted": [], "notes": "x"}', "not json", "[1]"):
        state = Path(_path(str(home), "sess-1"))
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(garbage)
        assert context(run_hook(payload("post_edit", project.path))) is None
        assert context(run_hook(payload("failure_bash_exit", project.path))) is None
        assert log_records(home)[-1]["edited"] == ["src/app.js"]


def test_a_token_across_the_command_size_limit_is_redacted_before_the_cut(
    project: Repo, home: Path
):
    from nexusmem_core.collectors.agent.runner import MAX_COMMAND

    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    pad = "echo " + "x" * (MAX_COMMAND - 5 - 20) + " "
    run_hook(payload("post_bash_ok", project.path, command=pad + secret))
    log = (home / "agent-events.jsonl").read_text()
    assert secret[:12] not in log and secret[-12:] not in log
    (record,) = log_records(home)
    assert len(record["cmd"]) <= MAX_COMMAND and record["redactions"] == 1
