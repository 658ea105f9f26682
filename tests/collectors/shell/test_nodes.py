"""What a command is worth, and whether it belongs to this repository."""

from __future__ import annotations

import os
from pathlib import Path

from nexusmem_core.collectors.shell.nodes import command_signal
from nexusmem_core.collectors.shell.scope import inside


def test_noise_is_near_zero_and_work_is_high():
    assert command_signal("ls -la", 0) < 0.1
    assert command_signal("cd src", 0) < 0.1
    assert command_signal("git status", 0) < 0.1
    assert command_signal("pytest -x tests/", 0) > 0.6
    assert command_signal("rm -rf build", 0) > 0.7
    assert command_signal("pip install -e .", 0) > 0.6


def test_a_failure_raises_any_command():
    assert command_signal("pytest", 1) > command_signal("pytest", 0)
    assert command_signal("./deploy.sh", 2) > command_signal("./deploy.sh", 0)
    assert command_signal("sleep 100", 130) < command_signal("sleep 100", 1)


def test_inside_resolves_symlinks_and_dots(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    link = tmp_path / "link"
    os.symlink(repo, link)
    roots = [os.path.realpath(repo)]
    assert inside(str(repo / "src"), roots)
    assert inside(str(link / "src"), roots)
    assert inside(str(repo / "src" / ".." / "src"), roots)
    assert not inside(str(tmp_path / "repo-other"), roots)
    assert not inside(str(repo / ".." / "elsewhere"), roots)
    assert not inside("relative/path", roots) and not inside(None, roots)
