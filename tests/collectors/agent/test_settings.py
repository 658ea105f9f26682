"""agent install / remove / status: other tools' hooks kept, bad files refused, health shown."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core.collectors.agent import settings as claude
from nexusmem_core.errors import ConfigError

from ...conftest import Repo, run_cli

HOOK = "/opt/nm/lib/nexusmem_core/collectors/agent/hook.py"
OTHERS: dict[str, dict[str, Any]] = {
    "other tools' hooks": {
        "permissions": {"allow": ["Bash(git status)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard --check"}]}
            ],
            "PostToolUse": [
                {"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt", "timeout": 3}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        },
        "model": "opus",
    },
    "no hooks, non-ASCII text": {"env": {"GREETING": "naïve ☃ 日本"}, "cleanupPeriodDays": 30},
    "empty object": {},
}


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in a tmp dir: no test may read or write the real ~/.claude."""
    path = tmp_path / "user"
    monkeypatch.setenv("HOME", str(path))
    return path


def claude_format(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


def settings_file(user_home: Path, content: bytes) -> Path:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    return path


def ours(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Our matcher groups by event."""
    return {
        event: [g for g in groups if any(claude.MARK in h["command"] for h in g["hooks"])]
        for event, groups in data.get("hooks", {}).items()
    }


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_install_then_remove_gives_the_file_back_byte_for_byte(user_home: Path, name: str):
    before = claude_format(OTHERS[name])
    path = settings_file(user_home, before)
    assert claude.install(path, "/opt/py", Path(HOOK)).changed
    installed = path.read_bytes()
    assert not claude.install(path, "/opt/py", Path(HOOK)).changed
    assert path.read_bytes() == installed  # idempotent
    assert claude.remove(path) is True
    assert path.read_bytes() == before
    assert claude.remove(path) is False


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_install_keeps_every_other_entry(user_home: Path, name: str):
    original = OTHERS[name]
    path = settings_file(user_home, claude_format(original))
    claude.install(path, "/opt/py", Path(HOOK))
    data = json.loads(path.read_bytes())
    for key, value in original.items():
        if key != "hooks":
            assert data[key] == value
    for event, groups in original.get("hooks", {}).items():
        assert data["hooks"][event][: len(groups)] == groups
    assert list(data)[: len(original)] == list(original)  # keys keep their places


def test_the_entries_written(user_home: Path):
    path = user_home / ".claude" / "settings.json"  # neither the file nor ~/.claude exist
    result = claude.install(path, "/opt/my env/bin/python", Path(HOOK))
    command = "'/opt/my env/bin/python' -S -P " + HOOK
    assert result.command == command and shlex.split(command)[0] == "/opt/my env/bin/python"
    hook = {"type": "command", "command": command}
    assert json.loads(path.read_text()) == {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{**hook, "timeout": 5}]}],
            "PostToolUse": [{"matcher": claude.TOOLS, "hooks": [{**hook, "timeout": 5}]}],
            "PostToolUseFailure": [{"matcher": claude.TOOLS, "hooks": [{**hook, "timeout": 5}]}],
            "SessionStart": [{"hooks": [{**hook, "timeout": 10}]}],
        }
    }


def test_the_default_command_runs_this_interpreter_and_this_package(user_home: Path):
    words = shlex.split(claude.hook_command())
    assert words[0] == os.path.abspath(sys.executable) and words[1:3] == ["-S", "-P"]
    assert Path(words[3]).is_absolute() and words[3].endswith(claude.MARK)


def test_entries_from_a_moved_copy_are_replaced_and_removed(user_home: Path):
    old = {"type": "command", "command": "/old/venv/bin/python -P /old/" + claude.MARK}
    windows = {
        "type": "command",
        "command": r'"C:\py.exe" -P "C:\nexusmem_core\collectors\agent\hook.py"',
    }
    mine = {"type": "command", "command": "my-logger"}
    original = {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [old]}],
            "SessionStart": [{"hooks": [windows]}, {"hooks": [mine]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [mine, old]}],  # a shared group
        }
    }
    path = settings_file(user_home, claude_format(original))
    claude.install(path, "/opt/py", Path(HOOK))
    data = json.loads(path.read_bytes())
    assert {e: len(g) for e, g in ours(data).items() if g} == {e: 1 for e, _, _ in claude.EVENTS}
    assert data["hooks"]["SessionStart"][0] == {"hooks": [mine]}
    assert data["hooks"]["PostToolUse"][0] == {"matcher": "Bash", "hooks": [mine]}
    claude.remove(path)
    assert json.loads(path.read_bytes()) == {
        "hooks": {
            "SessionStart": [{"hooks": [mine]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [mine]}],
        }
    }


def test_another_layout_comes_back_as_equal_json(user_home: Path):
    original = OTHERS["other tools' hooks"]
    path = settings_file(user_home, json.dumps(original).encode())  # one line, no newline
    claude.install(path, "/opt/py", Path(HOOK))
    claude.remove(path)
    assert json.loads(path.read_bytes()) == original


def test_the_file_mode_is_kept_and_a_symlink_stays_a_symlink(user_home: Path, tmp_path: Path):
    target = tmp_path / "dotfiles" / "claude.json"
    target.parent.mkdir()
    target.write_bytes(b"{}\n")
    target.chmod(0o640)
    link = user_home / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    claude.install(link, "/opt/py", Path(HOOK))
    assert link.is_symlink() and ours(json.loads(target.read_bytes()))["PreToolUse"]
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["claude.json"]  # no temp file left


REFUSED = {
    "not json": (b"{nope", "not valid JSON (line 1, column 2"),
    "empty file": (b"", "not valid JSON (line 1, column 1"),
    "not utf-8": (b'{"a": "\xff"}', "not valid JSON"),
    "top level list": (b"[]\n", "the top level is a list, not an object"),
    "hooks a list": (b'{"hooks": []}', '"hooks" is a list, not an object'),
    "event an object": (b'{"hooks": {"Stop": {}}}', '"hooks.Stop" is an object, not a list'),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_that_is_not_claude_settings_is_refused_and_kept(user_home: Path, name: str):
    content, message = REFUSED[name]
    path = settings_file(user_home, content)
    for action in (claude.install, claude.remove):
        with pytest.raises(ConfigError) as err:
            action(path)
        assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
        assert "\n" not in str(err.value)
        assert path.read_bytes() == content
    assert claude.file_status("user", path).state == "unreadable"


def test_status_reports_each_state(user_home: Path, tmp_path: Path):
    python, hook = tmp_path / "python", tmp_path / claude.MARK
    hook.parent.mkdir(parents=True)
    python.touch()
    hook.touch()
    path = user_home / ".claude" / "settings.json"
    assert claude.file_status("user", path).state == "not installed"
    claude.install(path, str(python), hook)
    state = claude.file_status("user", path, str(python), hook)
    assert (state.state, state.missing, state.warnings) == ("installed", [], [])
    assert state.events == [e for e, _, _ in claude.EVENTS]
    data = json.loads(path.read_text())
    del data["hooks"]["SessionStart"]
    path.write_text(json.dumps(data))
    state = claude.file_status("user", path, str(python), hook)
    assert (state.state, state.missing) == ("partial", ["SessionStart"])
    claude.install(path, str(python), hook)
    assert claude.file_status("user", path, "/another/python", hook).state == "outdated"


def test_status_names_the_paths_that_no_longer_exist(tmp_path: Path):
    path = tmp_path / "repo" / ".claude" / "settings.local.json"
    claude.install(path, "/gone/bin/python", Path(HOOK))
    state = claude.file_status("project", path, "/gone/bin/python", Path(HOOK))
    assert state.state == "installed"
    assert state.warnings == [
        "the interpreter /gone/bin/python does not exist: "
        "reinstall with `nexusmem agent install --project`",
        f"the hook {HOOK} does not exist: reinstall with `nexusmem agent install --project`",
    ]


def test_capture_health_reads_the_last_event_and_the_drops(home: Path):
    assert claude.last_event(home) is None and claude.read_drops(home) == {}
    home.mkdir()
    log = home / claude.EVENTS_FILE
    log.write_text('{"ts": 1767225600.5}\n{"ts": 1767229200.25, "cmd": "make"}\n{"ts": 17')
    assert claude.last_event(home) == 1767229200.25  # a torn last line is skipped
    (home / claude.DROPS_FILE).write_text('{"malformed": 1, "oversize": 2, "odd": "x"}')
    assert claude.read_drops(home) == {"oversize": 2, "malformed": 1}


@pytest.mark.parametrize(
    "log, drops",
    [(b'\xff\xfe garbage\n[1]\n"ts"\n', b"[1, 2]"), (b'{"ts": 1e300}\n', b"{bad"), (b"", b"")],
)
def test_garbled_health_files_read_as_none(home: Path, log: bytes, drops: bytes):
    home.mkdir()
    (home / claude.EVENTS_FILE).write_bytes(log)
    (home / claude.DROPS_FILE).write_bytes(drops)
    assert claude.last_event(home) is None and claude.read_drops(home) == {}


# ------------------------------------------------------------------------ as a user types it


def test_cli_install_status_remove(user_home: Path, home: Path, tmp_path: Path):
    original = claude_format(OTHERS["other tools' hooks"])
    path = settings_file(user_home, original)
    out = run_cli("agent", "install", "--agent", "claude")
    assert out.returncode == 0, out.stderr
    assert str(path) in out.stdout and "restart Claude Code to load the hooks" in out.stdout
    home.mkdir()
    (home / claude.EVENTS_FILE).write_text(json.dumps({"ts": 1767225600.0}) + "\n")
    (home / claude.DROPS_FILE).write_text('{"oversize": 2, "malformed": 1}')
    status = run_cli("agent", "status", "--agent", "claude", "-C", str(tmp_path))
    assert status.returncode == 0, status.stderr
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1767225600.0))
    assert status.stdout.splitlines() == [
        "Claude Code",
        f"  user: installed: {path}",
        "  project: no repository (-C <repository> to check one)",
        "  notes: reach the agent",
        f"  last event: {when}",
        "drops: oversize 2, malformed 1",
    ]
    removed = run_cli("agent", "remove", "--agent", "claude")
    assert removed.returncode == 0 and "removed" in removed.stdout
    assert path.read_bytes() == original
    again = run_cli("agent", "remove", "--agent", "claude").stdout
    assert "no NexusMem hooks were installed" in again


def test_cli_project_install_goes_to_the_repository_root(user_home: Path, repo: Repo):
    out = run_cli(
        "agent", "install", "--agent", "claude", "--project", "-C", str(repo.path / "src")
    )
    assert out.returncode == 0, out.stderr
    local = repo.path / ".claude" / "settings.local.json"
    assert str(local) in out.stdout and ours(json.loads(local.read_text()))["SessionStart"]
    status = json.loads(
        run_cli("agent", "status", "--agent", "claude", "--json", "-C", str(repo.path)).stdout
    )
    states = {f["scope"]: (f["state"], f["path"]) for f in status["files"]}
    assert states == {
        "user": ("not installed", str(user_home / ".claude" / "settings.json")),
        "project": ("installed", str(local)),
    }
    assert status["last_event"] is None and status["drops"] == {}
    assert not (user_home / ".claude").exists()
    assert (
        run_cli(
            "agent", "remove", "--agent", "claude", "--project", "-C", str(repo.path)
        ).returncode
        == 0
    )
    assert not (repo.path / ".claude").exists()  # install made both; remove takes both away


def test_cli_project_remove_deletes_only_what_install_created(user_home: Path, repo: Repo):
    local = repo.path / ".claude" / "settings.local.json"
    claude_cli = ("agent", "--agent", "claude", "--project", "-C", str(repo.path))
    assert run_cli(*claude_cli[:1], "install", *claude_cli[1:]).returncode == 0
    (repo.path / ".claude" / "commands.md").write_text("mine\n")  # the directory is in use now
    out = run_cli(*claude_cli[:1], "remove", *claude_cli[1:])
    assert out.returncode == 0, out.stderr
    assert f"removed the NexusMem hooks from {local} and deleted it" in out.stdout
    assert not local.exists() and (repo.path / ".claude" / "commands.md").exists()
    # A file that was there before install is the user's, even with nothing but {} in it.
    local.write_bytes(b"{}\n")
    run_cli(*claude_cli[:1], "install", *claude_cli[1:])
    removed = json.loads(run_cli(*claude_cli[:1], "remove", "--json", *claude_cli[1:]).stdout)
    assert [(r["removed"], r["deleted"]) for r in removed["agents"]] == [(True, False)]
    assert local.read_bytes() == b"{}\n"


def test_remove_keeps_what_the_user_added_to_a_file_install_created(user_home: Path):
    path = user_home / ".claude" / "settings.json"
    claude.install(path, "/opt/py", Path(HOOK))
    data = json.loads(path.read_text())
    path.write_bytes(claude_format({"model": "opus", **data}))
    assert claude.remove(path) is True
    assert path.read_bytes() == claude_format({"model": "opus"})
    claude.install(path, "/opt/py", Path(HOOK))  # the file is the user's now, not ours
    path.write_bytes(claude_format({"hooks": json.loads(path.read_text())["hooks"]}))
    assert claude.remove(path) is True and path.read_bytes() == b"{}\n"


def test_cli_refuses_a_broken_file_in_one_line(user_home: Path):
    path = settings_file(user_home, b'{"hooks": {"Stop": "x"}')
    out = run_cli("agent", "install", "--agent", "claude")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith(f"error: {path}: not valid JSON")
    assert len(out.stderr.strip().splitlines()) == 1
    assert path.read_bytes() == b'{"hooks": {"Stop": "x"}'
    status = run_cli("agent", "status", "--agent", "claude")
    assert status.returncode == 0 and "user: unreadable" in status.stdout


def test_cli_project_outside_a_repository_is_one_line(tmp_path: Path):
    out = run_cli("agent", "install", "--agent", "claude", "--project", "-C", str(tmp_path))
    assert out.returncode == 1 and "not inside a git repository" in out.stderr
    assert "Traceback" not in out.stderr
