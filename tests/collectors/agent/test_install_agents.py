"""agent install / status / remove for every coding agent, run as a user types it: the user's
own entries kept byte for byte, bad files refused in one line, settings that switch hooks on
set only with a yes, project files kept out of git, and the agents found on this machine."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core.collectors.agent import install as agents
from nexusmem_core.collectors.agent.install import flags, plugin
from nexusmem_core.errors import ConfigError

from ...conftest import NEXUSMEM, Repo, run_cli

GIT_DIR = os.path.dirname(shutil.which("git") or "/usr/bin/git")


def dumped(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


# Each agent's user file, relative to the tmp dir, and what the user had in it.
USER: dict[str, tuple[str, bytes]] = {
    "claude": (
        "user/.claude/settings.json",
        dumped(
            {
                "model": "opus",
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
            }
        ),
    ),
    "codex": (
        "codex/hooks.json",
        dumped(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}
                    ],
                    "Stop": [{"hooks": [{"type": "command", "command": "notify", "timeout": 30}]}],
                }
            }
        ),
    ),
    "gemini": (
        "user/.gemini/settings.json",
        dumped(
            {
                "general": {"vimMode": True},
                "hooks": {
                    "BeforeTool": [
                        {
                            "matcher": "write_file",
                            "hooks": [{"name": "lint", "type": "command", "command": "lint.sh"}],
                        }
                    ]
                },
                "ui": {"theme": "GitHub ☃"},
            }
        ),
    ),
    "cursor": (
        "user/.cursor/hooks.json",
        dumped({"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}),
    ),
    # opencode has no shared file: the user's own plugin beside ours must stay as it is.
    "opencode": (
        "user/.config/opencode/plugins/mine.js",
        b"export const Mine = async () => ({})\n",
    ),
}
OURS = {
    "claude": "user/.claude/settings.json",
    "codex": "codex/hooks.json",
    "gemini": "user/.gemini/settings.json",
    "cursor": "user/.cursor/hooks.json",
    "opencode": "user/.config/opencode/plugins/nexusmem.js",
}
PROJECT = {
    "claude": ".claude/settings.local.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
    "opencode": ".opencode/plugins/nexusmem.js",
}


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in a tmp dir (CODEX_HOME is tmp/codex, from conftest), no agent on PATH: no test
    may read or write a real agent's settings, and which agents are found is the test's."""
    path = tmp_path / "user"
    monkeypatch.setenv("HOME", str(path))
    for name in ("XDG_CONFIG_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{GIT_DIR}")
    return path


def fake_executable(tmp_path: Path, name: str, prints: str = "") -> None:
    exe = tmp_path / "bin" / name
    exe.write_text(f"#!/bin/sh\necho '{prints}'\n")
    exe.chmod(0o755)


def agent(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("agent", *args)


def given(tmp_path: Path, name: str) -> tuple[Path, bytes]:
    relative, content = USER[name]
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path, content


@pytest.mark.parametrize("name", sorted(USER))
def test_install_status_remove_gives_the_users_file_back(tmp_path: Path, name: str):
    path, original = given(tmp_path, name)
    out = agent("install", "--agent", name)
    assert out.returncode == 0, out.stderr
    ours = tmp_path / OURS[name]
    assert "wrote " in out.stdout and str(ours) in out.stdout
    installed = ours.read_bytes()
    assert b"nexusmem_core/collectors/agent/hook.py" in installed
    again = agent("install", "--agent", name)
    assert again.returncode == 0 and "are up to date" in again.stdout
    assert ours.read_bytes() == installed  # idempotent
    status = json.loads(agent("status", "--agent", name, "--json").stdout)
    [report] = status["agents"]
    assert report["agent"] == name and report["files"][0]["state"] == "installed"
    assert report["files"][0]["missing"] == [] and report["files"][0]["warnings"] == []
    removed = agent("remove", "--agent", name)
    assert removed.returncode == 0 and "removed the NexusMem hooks" in removed.stdout
    assert path.read_bytes() == original
    if name == "opencode":
        assert not ours.exists() and path.parent.is_dir()  # the user's directory stays
    assert "no NexusMem hooks were installed" in agent("remove", "--agent", name).stdout


@pytest.mark.parametrize("name", sorted(USER))
def test_each_agent_gets_its_own_events_and_units(tmp_path: Path, name: str):
    assert agent("install", "--agent", name).returncode == 0
    text = (tmp_path / OURS[name]).read_text()
    if name == "opencode":
        assert text.startswith(plugin.MARKER + "\n") and '"opencode"]' in text
        return
    data = json.loads(text)
    if name == "cursor":
        assert data["version"] == 1
        entries = {e: h[0] for e, h in data["hooks"].items()}
        assert entries["beforeShellExecution"]["timeout"] == 5  # seconds
        assert entries["postToolUseFailure"]["matcher"] == "Shell"
        assert entries["afterFileEdit"]["command"].endswith(" cursor")
        return
    groups = {e: g[0] for e, g in data["hooks"].items()}
    command = groups["SessionStart"]["hooks"][0]["command"]
    if name == "claude":
        assert command.endswith("hook.py")  # today's command, so no install shows as outdated
        assert groups["PreToolUse"]["hooks"][0]["timeout"] == 5
    elif name == "codex":
        assert command.endswith("hook.py codex")
        assert groups["PreToolUse"]["matcher"] == "Bash"
        assert groups["PostToolUse"]["hooks"][0]["timeout"] == 5  # seconds
    else:
        assert command.endswith("hook.py gemini")
        assert groups["BeforeTool"]["matcher"] == "run_shell_command"
        assert groups["AfterTool"]["hooks"][0]["timeout"] == 5000  # milliseconds


BROKEN = {
    "claude": b'{"hooks": {"Stop": "x"}',
    "codex": b'{"hooks": []}',
    "gemini": b"{\n  // a comment\n}\n",
    "cursor": b'{"version": 2, "hooks": {}}\n',
    "opencode": b"export const Theirs = 1\n",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_file_the_agent_would_not_read_is_refused_in_one_line(tmp_path: Path, name: str):
    path = tmp_path / OURS[name]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(BROKEN[name])
    for action in ("install", "remove"):
        out = agent(action, "--agent", name)
        assert out.returncode == 1 and out.stdout == ""
        assert out.stderr.startswith(f"error: {path}: ") and len(out.stderr.splitlines()) == 1
        assert "Traceback" not in out.stderr
        assert path.read_bytes() == BROKEN[name]
    status = agent("status", "--agent", name)
    assert status.returncode == 0 and "user: unreadable" in status.stdout


def test_one_broken_file_stops_install_before_any_file_is_written(tmp_path: Path):
    broken = tmp_path / OURS["cursor"]
    broken.parent.mkdir(parents=True)
    broken.write_bytes(BROKEN["cursor"])
    out = agent("install", "--agent", "claude", "--agent", "cursor")
    assert out.returncode == 1 and str(broken) in out.stderr
    assert not (tmp_path / OURS["claude"]).exists()


@pytest.mark.parametrize("name", sorted(PROJECT))
def test_a_project_install_is_kept_out_of_git(repo: Repo, name: str):
    out = agent("install", "--agent", name, "--project", "-C", str(repo.path / "src"))
    assert out.returncode == 0, out.stderr
    file = repo.path / PROJECT[name]
    assert file.is_file() and f"added /{PROJECT[name]} to " in out.stdout
    assert repo.git("status", "--porcelain") == ""
    status = json.loads(agent("status", "--agent", name, "--json", "-C", str(repo.path)).stdout)
    assert status["agents"][0]["files"][1]["state"] == "installed"
    assert agent("remove", "--agent", name, "--project", "-C", str(repo.path)).returncode == 0
    assert not file.exists() and not (repo.path / PROJECT[name].split("/")[0]).exists()


# --------------------------------------------------------------- the settings that switch hooks on

CODEX_CONFIG = """\
# my Codex settings
model = "o3"  # the default

[features]
codex_hooks = false   # off while I try things
memories = true

[mcp_servers.docs]
command = "docs-server"
"""


def test_codex_hooks_are_turned_on_only_with_a_yes(tmp_path: Path):
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    out = agent("install", "--agent", "codex")
    assert out.returncode == 0, out.stderr
    assert "Codex CLI runs no hooks without [features] codex_hooks = true" in out.stderr
    assert "--agent codex --yes" in out.stderr and config.read_text() == CODEX_CONFIG
    status = agent("status", "--agent", "codex")
    assert "hooks setting: off (`codex_hooks = false` turns Codex's hooks off)" in status.stdout
    out = agent("install", "--agent", "codex", "--yes")
    assert out.returncode == 0 and f"set [features] codex_hooks = true in {config}" in out.stdout
    assert config.read_text() == CODEX_CONFIG.replace(
        "codex_hooks = false   #", "codex_hooks = true   #"
    )
    assert "hooks setting: on" in agent("status", "--agent", "codex").stdout


def test_on_a_terminal_the_user_is_asked_first(tmp_path: Path):
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    flipped = CODEX_CONFIG.replace("codex_hooks = false", "codex_hooks = true")
    for answer, expected in ((b"\n", CODEX_CONFIG), (b"y\n", flipped)):
        terminal, stdin = pty.openpty()
        os.write(terminal, answer)
        try:
            done = subprocess.run(
                [NEXUSMEM, "agent", "install", "--agent", "codex"],
                stdin=stdin,
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            os.close(stdin)
            os.close(terminal)
        assert done.returncode == 0, done.stderr
        assert f"codex_hooks = true in {config}" in done.stderr and "Set it? [y/N]" in done.stderr
        assert config.read_text() == expected
    status = agent("status", "--agent", "codex").stdout
    assert "note: Codex runs a new or changed hook only once it is trusted" in status


def test_the_key_that_is_off_is_the_one_named_and_set(tmp_path: Path):
    """Today's key is `hooks`: when that is the one set to false, it is the one named and
    turned on, not the alias."""
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = false\nother = 1\n")
    out = agent("install", "--agent", "codex")
    assert "runs no hooks without [features] hooks = true" in out.stderr
    done = agent("install", "--agent", "codex", "--yes")
    assert done.returncode == 0 and f"set [features] hooks = true in {config}" in done.stdout
    assert config.read_text() == "[features]\nhooks = true\nother = 1\n"


def test_an_old_codex_gets_a_features_table_of_one_line(tmp_path: Path):
    fake_executable(tmp_path, "codex", "codex-cli 0.120.0")
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"')  # no final newline
    out = agent("install", "--agent", "codex")
    assert "Codex 0.120.0 runs hooks only with it" in out.stderr
    assert config.read_text() == 'model = "o3"'
    assert agent("install", "--agent", "codex", "--yes").returncode == 0
    assert config.read_text() == 'model = "o3"\n\n[features]\ncodex_hooks = true\n'


def test_a_recent_codex_needs_no_setting(tmp_path: Path):
    fake_executable(tmp_path, "codex", "codex-cli 0.153.2")
    out = agent("install", "--agent", "codex", "--yes")
    assert out.returncode == 0 and "codex_hooks" not in out.stdout + out.stderr
    assert not (tmp_path / "codex" / "config.toml").exists()
    status = agent("status", "--agent", "codex").stdout
    assert "hooks setting: not set (on by default since Codex 0.124)" in status


def test_a_setting_the_line_edit_cannot_reach_is_refused(tmp_path: Path):
    config = tmp_path / "config.toml"
    text = 'features.codex_hooks = false\nmodel = "o3"\n'
    config.write_text(text)
    assert flags.codex_flag(config).state == "off"
    with pytest.raises(ConfigError) as err:
        flags.set_codex_flag(config)
    assert str(err.value).startswith(f"{config}: could not set codex_hooks = true")
    assert config.read_text() == text


def test_gemini_hooks_turned_off_are_turned_on_only_with_a_yes(tmp_path: Path):
    settings = tmp_path / OURS["gemini"]
    settings.parent.mkdir(parents=True)
    settings.write_bytes(dumped({"hooksConfig": {"enabled": False, "notifications": True}}))
    out = agent("install", "--agent", "gemini")
    assert "Gemini CLI runs no hooks without" in out.stderr
    assert json.loads(settings.read_text())["hooksConfig"]["enabled"] is False
    assert agent("install", "--agent", "gemini", "--yes").returncode == 0
    data = json.loads(settings.read_text())
    assert data["hooksConfig"] == {"enabled": True, "notifications": True}
    assert data["hooks"]["SessionStart"]


# ------------------------------------------------------------------------------- discovery


def test_without_agent_every_agent_found_here_and_claude_always(tmp_path: Path, user_home: Path):
    (user_home / ".gemini").mkdir(parents=True)  # Gemini CLI's directory
    fake_executable(tmp_path, "opencode")  # opencode on PATH, no directory yet
    out = agent("install")
    assert out.returncode == 0, out.stderr
    labels = [line.split(":")[0] for line in out.stdout.splitlines() if "wrote" in line]
    assert labels == ["Claude Code", "Gemini CLI", "opencode"]
    assert not (tmp_path / "codex").exists() and not (user_home / ".cursor").exists()
    status = agent("status").stdout.splitlines()
    assert [line for line in status if not line.startswith(" ")][:3] == labels
    assert agent("remove").returncode == 0
    assert not (tmp_path / OURS["opencode"]).exists()


# ----------------------------------------------------------------------- the opencode plugin


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to load the plugin")
def test_the_opencode_plugin_pipes_each_call_to_the_hook_and_adds_its_note(tmp_path: Path):
    hook = tmp_path / "hook.py"
    seen = tmp_path / "seen.jsonl"
    hook.write_text(
        "import json, sys\n"
        f"open({str(seen)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
        "print(json.dumps({'note': 'NexusMem: this failed before'}))\n"
    )
    module = tmp_path / "nexusmem.mjs"
    module.write_text(plugin.render([sys.executable, str(hook)]))
    broken = tmp_path / "broken.mjs"
    broken.write_text(plugin.render([str(tmp_path / "missing")]))
    script = """
const [ours, broken] = await Promise.all(process.argv.slice(1).map((p) => import(p)));
for (const mod of [ours, broken]) {
  const hooks = await mod.NexusMem({ directory: "/work/repo" });
  const input = { tool: "bash", sessionID: "ses_1", callID: "call_1" };
  await hooks["tool.execute.before"](input, { args: { command: "npm test" } });
  const output = { output: "1 failing", metadata: { exit: 1 } };
  await hooks["tool.execute.after"](input, output);
  await hooks["tool.execute.after"]({ tool: "read", callID: "c2" }, { output: "x" });
  const alone = { tool: "bash", sessionID: "ses_1", callID: "call_9", args: { command: "make" } };
  await hooks["tool.execute.after"](alone, { output: "", metadata: { exit: 0 } });
  console.log(JSON.stringify(output.output));
}
"""
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, str(module), str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line) for line in done.stdout.splitlines()]
    assert outputs == ["1 failing\n\nNexusMem: this failed before", "1 failing"]
    before, after, alone = [json.loads(line) for line in seen.read_text().splitlines()]
    assert before == {
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_1",
        "call_id": "call_1",
        "tool": "bash",
        "cwd": "/work/repo",
        "args": {"command": "npm test"},
    }
    assert after["hook_event_name"] == "tool.execute.after"
    assert after["args"] == {"command": "npm test"} and after["metadata"] == {"exit": 1}
    assert after["output"] == "1 failing"
    # An after whose before was missed (a plugin loaded mid-call) carries its own arguments.
    assert alone["call_id"] == "call_9" and alone["args"] == {"command": "make"}


@pytest.mark.parametrize("name", ["codex", "gemini", "cursor", "opencode"])
def test_hooks_from_a_moved_interpreter_show_as_outdated_with_the_fix(
    tmp_path: Path, home: Path, name: str
):
    agents.install(name, home, tmp_path, python="/gone/bin/python")
    [report] = agents.status([name], home, tmp_path).agents
    user = report.files[0]
    assert user.state == "outdated"
    assert user.warnings == [
        f"the interpreter /gone/bin/python does not exist: reinstall with "
        f"`nexusmem agent install --agent {name}`",
        "these hooks differ from what this NexusMem writes: "
        f"run `nexusmem agent install --agent {name}` to update them",
    ]
    agents.install(name, home, tmp_path)
    assert agents.status([name], home, tmp_path).agents[0].files[0].state == "installed"


def test_settings_an_older_gemini_kept_in_hooks_are_left_alone(tmp_path: Path):
    path = tmp_path / OURS["gemini"]
    path.parent.mkdir(parents=True)
    original = dumped({"hooks": {"enabled": True, "disabled": ["lint"]}})
    path.write_bytes(original)
    assert agent("install", "--agent", "gemini").returncode == 0
    assert json.loads(path.read_text())["hooks"]["enabled"] is True
    assert agent("remove", "--agent", "gemini").returncode == 0
    assert path.read_bytes() == original
