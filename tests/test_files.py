"""Files other people also own (rc files, git hooks, Claude Code settings), as the CLI edits
them: a symlink stays a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .conftest import Repo, run_cli


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
