"""``query --all-projects`` over the registry: one origin is one project, however many clones
of it have a memory on this machine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import Repo, run_cli


def _clone(source: Repo, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(source.path), str(where)], check=True)
    subprocess.run(
        ["git", "-C", str(where), "remote", "set-url", "origin", "git@github.com:acme/tool.git"],
        check=True,
    )
    return where


def test_two_clones_of_one_origin_are_one_project_searched_once(make_repo, tmp_path: Path):
    source = make_repo("upstream")
    source.commit("fix: retry the upload after a timeout", {"r.py": "R = 5\n"})
    source.commit("feat: retry the login once", {"l.py": "x = 1\n"})
    older, newer = _clone(source, tmp_path / "older"), _clone(source, tmp_path / "newer")
    for root in (older, newer):  # `newer` synced last: the fresher memory
        assert run_cli("init", "-C", str(root)).returncode == 0
        assert run_cli("sync", "-q", "--no-embed", "-C", str(root)).returncode == 0

    out = run_cli("query", "--all-projects", "--no-vector", "retry")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("scope   1 project(s): acme/tool\n"), out.stdout
    assert out.stdout.count("fix: retry the upload after a timeout") == 1, out.stdout
    assert out.stdout.count("feat: retry the login once") == 1, out.stdout
    (note,) = [line for line in out.stdout.splitlines() if line.startswith("skipped: ")]
    assert note.startswith(f"skipped: {older.resolve()}: another clone of acme/tool")
    assert str(newer.resolve()) in note

    data = json.loads(run_cli("query", "--all-projects", "--no-vector", "retry", "--json").stdout)
    assert data["projects"] == ["acme/tool"]
    titles = [r["title"] for r in data["results"] if r["kind"] == "git_commit"]
    assert sorted(titles) == ["feat: retry the login once", "fix: retry the upload after a timeout"]
    assert data["skipped"] == [note[len("skipped: ") :]]
