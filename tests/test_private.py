"""Nobody else reads it: the workspace is 0700 and everything in it and in the home 0600,
under any umask, and a workspace left readable by others is tightened on its next open."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nexusmem_core.store.migrations import MIGRATIONS

from .conftest import NEXUSMEM, Repo, run_cli

TOKEN = "ghp_" + "Q7w8E9r0" * 4 + "T1y2"  # a GitHub token: scrub-secrets backs up, then redacts


def as_typed(umask: int, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``nexusmem ARGS`` run under ``umask``, as a user with that umask types it."""
    done = subprocess.run(
        [NEXUSMEM, *args], capture_output=True, text=True, input=input, umask=umask, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def record_command(umask: int, home: Path, cmd: str, cwd: Path) -> None:
    """What the shell hook starts after each command, under the shell's umask."""
    options = ["--home", str(home), "--shell", "bash", "--exit", "0", "--cwd", str(cwd)]
    subprocess.run(
        [sys.executable, "-m", "nexusmem_core.collectors.shell.record", *options],
        input=cmd.encode(),
        umask=umask,
        check=True,
    )


def store_like_an_old_version(db: Path) -> None:
    """A token in a stored node, as an older NexusMem, before its redaction rule, kept it."""
    with sqlite3.connect(db) as conn:
        conn.execute("update nodes set body = body || ? where seq = 1", (f" {TOKEN}",))
    conn.close()


def loose(*roots: Path) -> dict[str, str]:
    """Every directory not 0700 and every file not 0600 under ``roots``, with its mode."""
    found = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode != (0o700 if path.is_dir() else 0o600):
                found[str(path)] = f"{mode:04o}"
    return found


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_memory_and_logs_are_private_whatever_the_umask(repo: Repo, home: Path, umask: int):
    ws = repo.path / ".nexusmem"
    at = ("-C", str(repo.path))
    seen: set[str] = set()

    def check() -> None:
        assert loose(ws, home) == {}
        seen.update(p.name for p in ws.rglob("*"))
        seen.update(p.name for p in home.rglob("*"))

    as_typed(umask, "init", *at)
    check()
    record_command(umask, home, "make deploy-orchid", repo.path)
    as_typed(umask, "sync", *at)
    check()
    as_typed(umask, "query", "retry budget", *at)  # read-only: leaves its -wal and -shm
    check()
    store_like_an_old_version(ws / "memory.db")
    scrub = as_typed(umask, "scrub-secrets", "--yes", *at)
    assert "backup" in scrub.stdout
    check()
    as_typed(umask, "forget", "--yes", "orchid", *at)
    as_typed(umask, "forget", "--export", str(ws / "deny.json"), *at)
    check()

    wanted = {"memory.db", "memory.db-wal", "memory.db-shm", "config.json", "deny.json"}
    wanted |= {"backups", "shell-history.jsonl", "hook.key", "projects.json"}
    assert wanted <= seen
    assert any(name.endswith(".db") and name.startswith("memory-") for name in seen)


def test_a_workspace_readable_by_others_is_tightened_on_its_next_open_in_one_line(
    repo: Repo, home: Path
):
    at = ("-C", str(repo.path))
    assert run_cli("init", *at).returncode == 0
    record_command(0o022, home, "make test", repo.path)
    assert run_cli("sync", *at).returncode == 0
    ws = repo.path / ".nexusmem"
    # What an older NexusMem left under umask 022, and a backup copied by hand.
    (ws / "backups").mkdir(mode=0o755)
    (ws / "backups" / "memory-old.db").write_bytes((ws / "memory.db").read_bytes())
    for path, mode in [
        (ws, 0o755),
        (ws / "memory.db", 0o644),
        (ws / "config.json", 0o644),
        (ws / "backups", 0o755),
        (ws / "backups" / "memory-old.db", 0o644),
        (home / "shell-history.jsonl", 0o644),
    ]:
        os.chmod(path, mode)

    out = run_cli("status", *at)
    assert out.returncode == 0, out.stderr
    assert loose(ws, home) == {}
    (line,) = [line for line in out.stderr.splitlines() if "permissions_tightened" in line]
    assert f"{ws} 0755 -> 0700" in line and f"{ws / 'memory.db'} 0644 -> 0600" in line
    assert "memory-old.db 0644 -> 0600" in line and "shell-history.jsonl 0644" in line
    assert out.stderr.count("\n") == 1

    again = run_cli("status", *at)
    assert again.returncode == 0 and "permissions_tightened" not in again.stderr


def test_an_older_schema_is_tightened_by_the_read_only_command_that_refuses_it(
    repo: Repo, home: Path
):
    at = ("-C", str(repo.path))
    assert run_cli("init", *at).returncode == 0
    db = repo.path / ".nexusmem" / "memory.db"
    latest = MIGRATIONS[-1][0]
    with sqlite3.connect(db) as conn:  # as an older NexusMem left it
        conn.execute("delete from schema_migrations where version = ?", (latest,))
    conn.close()
    os.chmod(db, 0o644)

    out = run_cli("status", *at)
    assert out.returncode == 1 and "run `nexusmem sync` to upgrade it" in out.stderr
    assert "permissions_tightened" in out.stderr
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_symbolic_link_in_the_workspace_is_not_followed(repo: Repo, tmp_path: Path):
    at = ("-C", str(repo.path))
    assert run_cli("init", *at).returncode == 0
    shared = tmp_path / "shared.txt"
    shared.write_text("not NexusMem's\n")
    shared.chmod(0o644)
    (repo.path / ".nexusmem" / "notes.txt").symlink_to(shared)
    assert run_cli("status", *at).returncode == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644


@pytest.mark.parametrize("umask", [0o022, 0o002], ids=["umask-022", "umask-002"])
def test_the_hooks_set_up_privately_whatever_the_umask(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int
):
    """The first thing a user may run is a hook install: it creates the home, its hooks/ and
    scripts, the note of what it created, and Claude Code's settings file, all private."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    assert not home.exists()
    as_typed(umask, "hook", "install", "--shell", "bash")
    as_typed(umask, "agent", "install")
    assert loose(home) == {}
    assert sorted(p.name for p in (home / "hooks").iterdir()) == ["nexusmem.bash"]
    assert (home / "agent-created.json").is_file()
    claude = user / ".claude" / "settings.json"
    assert stat.S_IMODE(claude.stat().st_mode) == 0o600
    assert stat.S_IMODE(claude.parent.stat().st_mode) == 0o700


def test_a_settings_file_that_exists_keeps_its_owners_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    user = tmp_path / "user"
    (user / ".claude").mkdir(parents=True)
    claude = user / ".claude" / "settings.json"
    claude.write_text("{}\n")
    claude.chmod(0o644)
    monkeypatch.setenv("HOME", str(user))
    as_typed(0o022, "agent", "install")
    assert stat.S_IMODE(claude.stat().st_mode) == 0o644
