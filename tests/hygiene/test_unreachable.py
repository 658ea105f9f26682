"""After a rebase: the commits no ref reaches leave memory, at once on request, else after a
grace period (hygiene/unreachable.py)."""

from __future__ import annotations

import json
import sqlite3
import time

from ..conftest import DAY, Repo, run_cli


def sync(repo: Repo, *flags: str) -> dict:  # type: ignore[type-arg]
    out = run_cli("sync", "--json", "--no-embed", "-C", str(repo.path), *flags)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def commit_titles(repo: Repo) -> set[str]:
    with sqlite3.connect(repo.path / ".nexusmem" / "memory.db") as conn:
        return {t for (t,) in conn.execute("select title from nodes where kind = 'git_commit'")}


def rebased(repo: Repo) -> Repo:
    """Four commits synced, then the last two rewritten (reset and committed again)."""
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    sync(repo)
    repo.git("reset", "-q", "--hard", "HEAD~2")
    repo.commit("chore: bump version to 1.0.2", {"VERSION": "1.0.2\n"})
    return repo


def test_a_rebase_leaves_old_commits_waiting_then_the_grace_period_removes_them(
    repo: Repo,
) -> None:
    rebased(repo)
    report = sync(repo)
    assert report["full_walk"] and report["unreachable_waiting"] == 2
    assert report["unreachable_pruned"] == 0
    assert "docs: explain the architecture" in commit_titles(repo)  # not yet: 14 days' grace
    # Fifteen days later (the first sighting is moved back) the next sync removes them.
    db = repo.path / ".nexusmem" / "memory.db"
    with sqlite3.connect(db) as conn:
        (seen,) = conn.execute(
            "select value from cursors where source = 'git:unreachable'"
        ).fetchone()
        old = {sha: int(time.time() - 15 * DAY) for sha in json.loads(seen)}
        conn.execute(
            "update cursors set value = ? where source = 'git:unreachable'", (json.dumps(old),)
        )
    report = sync(repo)
    assert report["unreachable_pruned"] >= 4  # two commits and their diffs
    titles = commit_titles(repo)
    assert "docs: explain the architecture" not in titles
    assert "chore: bump version" not in titles
    assert {"chore: bump version to 1.0.2", "feat: add the retry loop"} <= titles
    with sqlite3.connect(db) as conn:
        diffs = conn.execute(
            "select count(*) from nodes where kind = 'file_diff' and ref like ?",
            (f"{next(iter(old))}%",),
        ).fetchone()[0]
        audit = conn.execute("select count from audit where operation = 'prune-unreachable'")
        assert audit.fetchone()[0] == report["unreachable_pruned"]
    assert diffs == 0


def test_prune_unreachable_is_a_dry_run_until_yes(repo: Repo) -> None:
    rebased(repo)
    sync(repo)
    dry = run_cli("sync", "--prune-unreachable", "-C", str(repo.path))
    assert dry.returncode == 0, dry.stderr
    assert "would remove 2 unreachable commit(s)" in dry.stdout
    assert "docs: explain the architecture" in dry.stdout and "dry run" in dry.stdout
    assert "docs: explain the architecture" in commit_titles(repo)
    done = run_cli("sync", "--prune-unreachable", "--yes", "-C", str(repo.path))
    assert done.returncode == 0 and "removed 2 unreachable commit(s)" in done.stdout
    assert "docs: explain the architecture" not in commit_titles(repo)
    again = run_cli("sync", "--prune-unreachable", "-C", str(repo.path))
    assert "nothing to prune" in again.stdout


def test_a_commit_another_branch_keeps_is_not_unreachable(repo: Repo) -> None:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    sync(repo)
    repo.git("branch", "keep")  # the old tip stays on a branch
    repo.git("reset", "-q", "--hard", "HEAD~2")
    repo.commit("fix: another way", {"x.py": "x = 2\n"})
    report = sync(repo)
    assert report["full_walk"] and report["unreachable_waiting"] == 0
    out = run_cli("sync", "--prune-unreachable", "-C", str(repo.path))
    assert "nothing to prune" in out.stdout


def test_a_commit_back_in_reach_is_no_longer_waiting(repo: Repo) -> None:
    rebased(repo)
    assert sync(repo)["unreachable_waiting"] == 2
    repo.git("reset", "-q", "--hard", "HEAD@{2}")  # undo: the reflog brings the old tip back
    report = sync(repo)
    assert report["unreachable_waiting"] == 1  # only the discarded "bump version to 1.0.2"
    assert "docs: explain the architecture" in commit_titles(repo)


def test_zero_days_never_prunes_by_itself(repo: Repo) -> None:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    config = repo.path / ".nexusmem" / "config.json"
    data = json.loads(config.read_text())
    data["sources"]["git"]["pruneUnreachableDays"] = 0
    config.write_text(json.dumps(data))
    sync(repo)
    repo.git("reset", "-q", "--hard", "HEAD~2")
    repo.commit("chore: again", {"VERSION": "3\n"})
    report = sync(repo)
    assert report["unreachable_waiting"] == 0 and report["unreachable_pruned"] == 0
    assert "docs: explain the architecture" in commit_titles(repo)
