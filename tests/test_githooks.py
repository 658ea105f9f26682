"""`nexusmem hook git|git-post`: NexusMem's blocks in git's hooks, and git running them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from nexusmem_core import githooks

from .conftest import DAY, Repo, run_cli
from .test_shell_sync import log_command

FOREIGN = "#!/bin/sh\n# lint-staged\nnpx lint-staged\n"


def hook(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("hook", *args, "-C", str(repo.path))


def git_commit(repo: Repo, message: str) -> subprocess.CompletedProcess[str]:
    """``git commit`` as a user runs it: hooks and all."""
    return subprocess.run(
        ["git", "commit", "-q", "-m", message],
        cwd=repo.path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_install_status_remove_round_trip(repo: Repo):
    path = repo.path / ".git" / "hooks" / "pre-commit"
    assert hook(repo, "git", "status").stdout == f"pre-commit: not installed ({path})\n"
    out = hook(repo, "git", "install")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"pre-commit hook {path}: installed; ")
    text = path.read_text()
    assert text.startswith("#!/bin/sh\n# >>> nexusmem pre-commit >>>\n")
    assert text.endswith("# <<< nexusmem pre-commit <<<\n") and " precheck || exit $?" in text
    assert os.access(path, os.X_OK)
    again = hook(repo, "git", "install")
    assert "already installed" in again.stdout and path.read_text() == text
    assert hook(repo, "git", "status").stdout == f"pre-commit: installed ({path})\n"
    assert hook(repo, "git", "remove").stdout == f"pre-commit hook {path}: removed\n"
    assert not path.exists()
    assert "not installed" in hook(repo, "git", "status").stdout


def test_the_post_commit_hook_is_its_own_block(repo: Repo):
    assert hook(repo, "git-post", "install").returncode == 0
    text = (repo.path / ".git" / "hooks" / "post-commit").read_text()
    assert "# >>> nexusmem post-commit >>>" in text and "sync --auto --quiet" in text
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists()
    assert "post-commit: installed" in hook(repo, "git-post", "status").stdout


def test_core_hooks_path_is_honoured(repo: Repo):
    repo.git("config", "core.hooksPath", ".githooks")
    out = hook(repo, "git", "install")
    assert out.returncode == 0, out.stderr
    path = repo.path / ".githooks" / "pre-commit"
    assert path.is_file() and not (repo.path / ".git" / "hooks" / "pre-commit").exists()
    sub = repo.path / "src"
    status = run_cli("hook", "git", "status", "-C", str(sub))  # from a subdirectory too
    assert status.stdout == f"pre-commit: installed ({path})\n"


def test_a_foreign_hook_is_refused_then_kept_under_force(repo: Repo):
    path = repo.path / ".git" / "hooks" / "pre-commit"
    path.write_text(FOREIGN)
    path.chmod(0o755)
    refused = hook(repo, "git", "install")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (
        f"error: {path} is another tool's pre-commit hook: add --force to put NexusMem's "
        "block at its top (the rest is kept)\n"
    )
    assert path.read_text() == FOREIGN
    assert "foreign hook present" in hook(repo, "git", "status").stdout
    forced = hook(repo, "git", "install", "--force")
    assert "added at the top of the existing hook" in forced.stdout
    text = path.read_text()
    assert text.startswith("#!/bin/sh\n# >>> nexusmem pre-commit >>>\n")
    assert text.endswith("# <<< nexusmem pre-commit <<<\n# lint-staged\nnpx lint-staged\n")
    assert "already installed" in hook(repo, "git", "install").stdout
    assert "removed" in hook(repo, "git", "remove").stdout
    assert path.read_text() == FOREIGN


def test_a_hook_in_another_language_is_refused_even_with_force(repo: Repo):
    path = repo.path / ".git" / "hooks" / "pre-commit"
    path.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    out = hook(repo, "git", "install", "--force")
    assert out.returncode == 1 and "is not a shell script" in out.stderr
    assert path.read_text() == "#!/usr/bin/env python3\nprint('hi')\n"


def test_a_moved_interpreter_reads_as_outdated_and_reinstall_keeps_strict(repo: Repo):
    _, path = githooks.install(repo.path, "pre-commit", python="/old/venv/bin/python")
    assert "pre-commit: outdated" in hook(repo, "git", "status").stdout
    path.write_text(path.read_text().replace(" precheck ", " precheck --strict "))
    assert "updated" in hook(repo, "git", "install").stdout
    assert " precheck --strict || exit $?" in path.read_text()
    assert "/old/venv" not in path.read_text()
    assert "pre-commit: installed" in hook(repo, "git", "status").stdout


def test_a_hook_whose_interpreter_is_gone_does_nothing(repo: Repo):
    githooks.install(repo.path, "pre-commit", python="/gone/bin/python")
    githooks.install(repo.path, "post-commit", python="/gone/bin/python")
    repo.write("src/retry.py", "RETRY_BUDGET = 6\n")
    repo.git("add", "-A")
    out = git_commit(repo, "fix: six")
    assert (out.returncode, out.stderr) == (0, "")


def test_git_commit_runs_precheck_and_warns_without_blocking(make_repo, home: Path):
    r = make_repo("app")
    r.clock = int(time.time()) - 10 * DAY
    r.commit("feat: upload", {"src/upload.py": "def upload(): ...\n"})
    run_cli("init", "-C", str(r.path))
    log_command(home, "python src/upload.py", r.path, exit_code=1, start=time.time() - 600)
    assert run_cli("sync", "--no-embed", "-C", str(r.path)).returncode == 0
    assert hook(r, "git", "install").returncode == 0
    r.write("src/upload.py", "def upload(): return 1\n")
    r.git("add", "-A")
    out = git_commit(r, "fix: upload returns")
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith(
        "src/upload.py: is named by `python src/upload.py`, which failed 10 min ago"
    )
    assert r.git("log", "-1", "--format=%s").strip() == "fix: upload returns"
    # A user who wants the warning to stop the commit says so in the block.
    path = r.path / ".git" / "hooks" / "pre-commit"
    path.write_text(path.read_text().replace(" precheck ", " precheck --strict "))
    r.write("src/upload.py", "def upload(): return 2\n")
    r.git("add", "-A")
    blocked = git_commit(r, "fix: upload returns two")
    assert blocked.returncode == 1 and "src/upload.py: is named by" in blocked.stderr
    assert r.git("log", "-1", "--format=%s").strip() == "fix: upload returns"


async def test_git_commit_starts_a_sync_in_the_background(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "--no-embed", "-C", str(repo.path)).returncode == 0
    assert hook(repo, "git-post", "install").returncode == 0
    assert hook(repo, "git", "install").returncode == 0
    repo.write("src/retry.py", "RETRY_BUDGET = 6\n")
    repo.git("add", "-A")
    out = git_commit(repo, "fix: six retries")
    # Nothing to warn about and a detached sync: the commit prints nothing at all.
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    sha = repo.git("rev-parse", "HEAD").strip()
    db = repo.path / ".nexusmem" / "memory.db"
    lock = repo.path / ".nexusmem" / "sync.lock"

    def synced() -> bool:
        with sqlite3.connect(db) as conn:
            row = conn.execute("select 1 from nodes where ref = ?", (sha,)).fetchone()
        conn.close()
        return row is not None and not lock.exists()

    with anyio.fail_after(30):
        while not synced():
            await anyio.sleep(0.05)


@pytest.mark.parametrize("args", [("git",), ("install", "remove")])
def test_a_malformed_hook_command_is_a_usage_error(repo: Repo, args: tuple[str, ...]):
    out = hook(repo, *args)
    assert out.returncode == 2 and out.stderr.startswith("error: ") and out.stdout == ""


def worktree(repo: Repo, name: str = "feature") -> Repo:
    """A linked worktree of ``repo`` on a new branch, beside it."""
    path = repo.path.parent / f"{repo.path.name}-{name}"
    repo.git("worktree", "add", "-q", "-b", name, str(path))
    linked = Repo.__new__(Repo)  # the worktree shares the repository: no git init
    linked.path, linked.clock = path, repo.clock
    return linked


def commands(db: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select source, title from nodes where kind = 'shell_command'")
        found = set(rows.fetchall())
    conn.close()
    return found


async def test_a_commit_in_a_worktree_syncs_the_main_checkout_memory(repo: Repo, home: Path):
    from .collectors.agent.hookrun import payload, run_hook

    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "--no-embed", "-C", str(repo.path)).returncode == 0
    assert hook(repo, "git-post", "install").returncode == 0
    assert hook(repo, "git", "install").returncode == 0
    main_head = repo.git("rev-parse", "HEAD").strip()
    wt = worktree(repo)
    log_command(home, "make lint", wt.path / "src", exit_code=2)
    agent = payload("failure_bash_exit", wt.path, command="npm run e2e")
    assert run_hook(agent).returncode == 0
    wt.write("src/retry.py", "RETRY_BUDGET = 7\n")
    wt.git("add", "-A")
    out = git_commit(wt, "fix: seven retries")
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    db = repo.path / ".nexusmem" / "memory.db"
    lock = repo.path / ".nexusmem" / "sync.lock"
    wanted = {("shell:hook", "make lint"), ("agent:claude", "npm run e2e")}
    with anyio.fail_after(30):
        while not (wanted <= commands(db) and not lock.exists()):
            await anyio.sleep(0.05)
    # The main checkout's memory follows the main checkout's HEAD, not the worktree's branch.
    with sqlite3.connect(db) as conn:
        (cursor,) = conn.execute("select value from cursors where source = 'git'").fetchone()
        shas = {ref for (ref,) in conn.execute("select ref from nodes where kind = 'git_commit'")}
    conn.close()
    assert cursor == main_head and wt.git("rev-parse", "HEAD").strip() not in shas
    assert not (wt.path / ".nexusmem").exists()
    by_hand = run_cli("sync", "--no-embed", "--json", "-C", str(wt.path / "src"))
    assert by_hand.returncode == 0, by_hand.stderr
    assert json.loads(by_hand.stdout)["root"] == str(repo.path.resolve())


def test_git_commit_in_a_worktree_runs_precheck_against_the_main_memory(make_repo, home: Path):
    r = make_repo("app")
    r.clock = int(time.time()) - 10 * DAY
    r.commit("feat: upload", {"src/upload.py": "def upload(): ...\n", "src/retry.py": "R = 1\n"})
    run_cli("init", "-C", str(r.path))
    assert hook(r, "git", "install").returncode == 0
    wt = worktree(r)
    log_command(home, "python src/upload.py", r.path, exit_code=1, start=time.time() - 600)
    log_command(home, "mypy retry.py", wt.path / "src", exit_code=1, start=time.time() - 300)
    assert run_cli("sync", "--no-embed", "-C", str(wt.path)).returncode == 0
    wt.write("src/upload.py", "def upload(): return 1\n")
    wt.write("src/retry.py", "R = 2\n")
    wt.git("add", "-A")
    out = git_commit(wt, "fix: upload returns")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[:2] == [
        "src/retry.py: is named by `mypy retry.py`, which failed 5 min ago and has not passed "
        "since",
        "src/upload.py: is named by `python src/upload.py`, which failed 10 min ago and has not "
        "passed since",
    ]
    assert wt.git("log", "-1", "--format=%s").strip() == "fix: upload returns"
    checked = run_cli("precheck", "--files", "src/upload.py", "--json", "-C", str(wt.path))
    assert [w["path"] for w in json.loads(checked.stdout)["warnings"]] == ["src/upload.py"]
