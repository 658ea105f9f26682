"""Files other people also own (rc files, git hooks, Claude Code settings), as the CLI edits
them: a symlink stays a link, and a file that cannot be read or written is one error line."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from .conftest import Repo, run_cli

# chmod does not stop root, so the read-only cases only run as another user.
as_root = pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only directories"
)


def one_error_line(out, *parts: str) -> None:
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, out.stderr
    assert "Traceback" not in out.stderr
    for part in parts:
        assert part in out.stderr, out.stderr


def test_a_symlinked_rc_file_stays_a_link_to_the_edited_target(tmp_path: Path, home: Path):
    user, dotfiles = tmp_path / "user", tmp_path / "dotfiles"
    user.mkdir()
    dotfiles.mkdir()
    target = dotfiles / "bashrc"
    target.write_text("alias ll='ls -l'\n")
    target.chmod(0o640)
    (user / ".bashrc").symlink_to(target)
    environ = {"HOME": str(user), "SHELL": "/bin/bash"}
    assert run_cli("hook", "install", env=environ).returncode == 0
    assert (user / ".bashrc").is_symlink() and os.readlink(user / ".bashrc") == str(target)
    assert "# >>> nexusmem hook >>>" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == ["bashrc"]  # no temp file left
    assert run_cli("hook", "remove", env=environ).returncode == 0
    assert (user / ".bashrc").is_symlink() and target.read_text() == "alias ll='ls -l'\n"


def test_a_symlinked_git_hook_is_edited_through_the_link(repo: Repo, tmp_path: Path):
    shared = tmp_path / "shared-hooks" / "pre-commit"
    shared.parent.mkdir()
    shared.write_text("#!/bin/sh\nexit 0\n")
    shared.chmod(0o755)
    link = repo.path / ".git" / "hooks" / "pre-commit"
    link.symlink_to(shared)
    out = run_cli("hook", "git", "install", "--force", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and "# >>> nexusmem pre-commit >>>" in shared.read_text()
    assert run_cli("hook", "git", "remove", "-C", str(repo.path)).returncode == 0
    assert link.is_symlink() and shared.read_text() == "#!/bin/sh\nexit 0\n"


def test_a_hooks_directory_that_is_a_file_is_one_error_line(repo: Repo):
    hooks = repo.path / ".git" / "hooks"
    for child in hooks.iterdir():
        child.unlink()
    hooks.rmdir()
    hooks.write_text("not a directory\n")
    out = run_cli("hook", "git", "install", "-C", str(repo.path))
    one_error_line(out, f"{hooks}/pre-commit", f"{hooks} is a file, not a directory", "move it")
    assert hooks.read_text() == "not a directory\n"
    one_error_line(run_cli("hook", "git-post", "status", "-C", str(repo.path)), str(hooks))


def test_a_shell_hook_directory_that_is_a_file_is_one_error_line(tmp_path: Path, home: Path):
    home.mkdir()
    (home / "hooks").write_text("")
    user = tmp_path / "user"
    user.mkdir()
    out = run_cli("hook", "install", "--shell", "bash", env={"HOME": str(user)})
    # install reads the script first, to write it only if it differs: the read meets the file.
    one_error_line(out, f"cannot read {home / 'hooks' / 'nexusmem.bash'}", "is a file")
    assert not (user / ".bashrc").exists()


def test_a_claude_directory_that_is_a_file_is_one_error_line(tmp_path: Path):
    user = tmp_path / "user"
    user.mkdir()
    (user / ".claude").write_text("")
    for action in ("install", "remove"):
        out = run_cli("agent", action, env={"HOME": str(user)})
        one_error_line(out, f"{user / '.claude'} is a file, not a directory")


@as_root
def test_a_read_only_hooks_directory_is_one_error_line(repo: Repo):
    hooks = repo.path / ".git" / "hooks"
    hooks.chmod(0o555)
    try:
        out = run_cli("hook", "git", "install", "-C", str(repo.path))
    finally:
        hooks.chmod(0o755)
    one_error_line(out, f"cannot write {hooks / 'pre-commit'}", "Permission denied")
    assert not (hooks / "pre-commit").exists()


@as_root
def test_read_only_claude_settings_are_one_error_line(tmp_path: Path):
    user = tmp_path / "user"
    user.mkdir()
    environ = {"HOME": str(user)}
    assert run_cli("agent", "install", env=environ).returncode == 0
    settings = user / ".claude" / "settings.json"
    before = settings.read_text()
    settings.parent.chmod(0o555)
    try:
        removed = run_cli("agent", "remove", env=environ)
        kept = settings.read_text()
        settings.write_text("{}\n")  # the file stays writable, its directory does not
        installed = run_cli("agent", "install", env=environ)
    finally:
        settings.parent.chmod(0o755)
    # install created the file, so remove deletes it: the directory says no.
    one_error_line(removed, f"cannot remove {settings}", "Permission denied")
    assert kept == before and json.loads(kept)["hooks"]
    one_error_line(installed, f"cannot write {settings}", "Permission denied")
    assert settings.read_text() == "{}\n"
