"""`nexusmem precheck`: staged files named by unresolved failures, or changing very often."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nexusmem_core.chains import UnresolvedFailure
from nexusmem_core.precheck import _failure_warnings

from .conftest import DAY, Repo, run_cli
from .test_shell_sync import log_command

HOUR = 3600


@pytest.fixture
def app(make_repo: Callable[[str], Repo]) -> Repo:
    """A repository with recent history, initialised and synced, nothing staged."""
    r = make_repo("app")
    r.clock = int(time.time()) - 20 * DAY
    r.commit(
        "feat: uploads with retries",
        {
            "src/__init__.py": "",
            "src/retry.py": "BUDGET = 3\n",
            "src/upload.py": "def upload():\n    pass\n",
            "tests/__init__.py": "",
            "tests/test_upload.py": "def test_upload():\n    assert False\n",
            "build": "#!/bin/sh\nmake\n",
        },
    )
    assert run_cli("init", "-C", str(r.path)).returncode == 0
    return r


def failed(home: Path, repo: Repo, command: str, cwd: str = ".", hours_ago: float = 2) -> None:
    """A command the shell hook recorded as failing ``hours_ago``."""
    start = time.time() - hours_ago * HOUR
    log_command(home, command, repo.path / cwd, exit_code=1, start=start)


def sync(repo: Repo) -> None:
    out = run_cli("sync", "--no-embed", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr


def stage(repo: Repo, *names: str) -> None:
    for name in names:
        target = repo.path / name
        repo.write(name, (target.read_text() if target.exists() else "") + "# changed\n")
    repo.git("add", *names)


def test_a_staged_file_named_by_an_unresolved_failure_is_warned(app: Repo, home: Path):
    failed(home, app, "pytest tests/test_upload.py -x")
    sync(app)
    stage(app, "tests/test_upload.py", "src/retry.py")
    out = run_cli("precheck", "-C", str(app.path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "tests/test_upload.py: is named by `pytest tests/test_upload.py -x`, which failed "
        "2 hours ago and has not passed since",
        "precheck: 1 warning(s) on 1 of 2 file(s); advisory (run `nexusmem query` on a file "
        "for its history)",
    ]
    strict = run_cli("precheck", "--strict", "-C", str(app.path))
    assert strict.returncode == 1 and strict.stdout == out.stdout


def test_a_later_passing_run_silences_the_warning(app: Repo, home: Path):
    failed(home, app, "pytest tests/test_upload.py", hours_ago=3)
    log_command(home, "pytest tests/test_upload.py", app.path, start=time.time() - HOUR)
    sync(app)
    stage(app, "tests/test_upload.py")
    out = run_cli("precheck", "--strict", "-C", str(app.path))
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_a_failure_linked_to_its_fix_is_silent(app: Repo, home: Path):
    failed(home, app, "pytest tests/test_upload.py")
    sync(app)
    db = sqlite3.connect(app.path / ".nexusmem" / "memory.db")
    with db:
        (failure, pid) = db.execute(
            "select id, project_id from nodes where kind = 'shell_command'"
        ).fetchone()
        (fix,) = db.execute("select id from nodes where kind = 'git_commit'").fetchone()
        db.execute("insert into links values (?, ?, 'discussion', ?, ?)", (failure, fix, pid, 0))
    db.close()
    stage(app, "tests/test_upload.py")
    out = run_cli("precheck", "--strict", "-C", str(app.path))
    assert (out.returncode, out.stdout) == (0, "")


def test_names_resolve_from_the_command_directory_and_ambiguous_names_do_not_count(
    app: Repo, home: Path
):
    failed(home, app, "python -m pytest test_upload.py", cwd="tests")  # resolves from tests/
    failed(home, app, "python -c 'import src' # __init__.py")  # two files have that name
    failed(home, app, "npm run build")  # a word, not the file ./build
    failed(home, app, "cat ../other/retry.py", cwd="src")  # another directory's retry.py
    failed(home, app, "pytest tests/test_upload.py", hours_ago=24 * 40)  # too old to count
    sync(app)
    stage(app, "tests/test_upload.py", "src/__init__.py", "build", "src/retry.py")
    out = run_cli("precheck", "--json", "-C", str(app.path))
    warnings = json.loads(out.stdout)["warnings"]
    assert [(w["path"], w["kind"]) for w in warnings] == [("tests/test_upload.py", "failure")]
    assert "`python -m pytest test_upload.py`" in warnings[0]["message"]


def test_a_unique_bare_file_name_counts(app: Repo, home: Path):
    failed(home, app, "python upload.py --dry-run", cwd="src")
    failed(home, app, "mypy retry.py")  # run at the top: still the only retry.py
    sync(app)
    out = run_cli("precheck", "--files", "src/retry.py", "src/upload.py", "-C", str(app.path))
    assert [line.split(":", 1)[0] for line in out.stdout.splitlines()[:-1]] == [
        "src/retry.py",
        "src/upload.py",
    ]


def test_working_checks_changed_and_untracked_files(app: Repo, home: Path):
    failed(home, app, "python scratch/try_retry.py")
    failed(home, app, "mypy src/upload.py")
    sync(app)
    app.write("scratch/try_retry.py", "print('x')\n")  # untracked
    app.write("src/upload.py", "def upload():\n    return 1\n")  # changed, not staged
    assert run_cli("precheck", "--strict", "-C", str(app.path)).returncode == 0  # none staged
    out = run_cli("precheck", "--working", "--json", "-C", str(app.path))
    report = json.loads(out.stdout)
    assert report["files"] == ["src/upload.py", "scratch/try_retry.py"]
    assert [w["path"] for w in report["warnings"]] == report["files"]


def test_high_churn_is_the_top_five_percent_with_at_least_five_commits(
    make_repo: Callable[[str], Repo], home: Path
):
    r = make_repo("busy")
    r.clock = int(time.time()) - 200 * DAY
    for i in range(8):  # busy long ago: outside the 30-day window
        r.commit(f"old {i}", {"old.py": f"v = {i}\n"})
    r.clock = int(time.time()) - 25 * DAY
    for i in range(30):
        r.commit(f"spread {i}", {f"f{i}.py": "x\n"}, days=0.1)
    for i in range(7):
        files = {"hot.py": f"{i}\n", "warm.py": f"{min(i, 5)}\n", "mild.py": f"{min(i, 4)}\n"}
        r.commit(f"hot {i}", files, days=0.5)
    run_cli("init", "-C", str(r.path))
    sync(r)
    # 33 files changed in the window, so the top 5% is 2 files: hot.py (7) and warm.py (6);
    # mild.py's 5 commits are enough, but not among the top; old.py was busy long ago.
    stage(r, "hot.py", "warm.py", "mild.py", "old.py", "f1.py")
    out = run_cli("precheck", "-C", str(r.path))
    assert out.stdout.splitlines()[:2] == [
        "hot.py: changed in 7 commits in the last 30 days (high churn: among this "
        "repository's most-changed files)",
        "warm.py: changed in 6 commits in the last 30 days (high churn: among this "
        "repository's most-changed files)",
    ]
    assert len(out.stdout.splitlines()) == 3


def test_a_repository_without_memory_is_clean_and_quiet(repo: Repo):
    stage(repo, "src/retry.py")
    out = run_cli("precheck", "--strict", "-C", str(repo.path))
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert not (repo.path / ".nexusmem").exists()


def test_an_unreadable_memory_is_one_line_and_not_a_failure(app: Repo):
    (app.path / ".nexusmem" / "memory.db").write_bytes(b"not a database" * 100)
    stage(app, "src/retry.py")
    out = run_cli("precheck", "-C", str(app.path))
    assert out.returncode == 0 and out.stdout == ""
    assert out.stderr.startswith("precheck skipped: ") and len(out.stderr.splitlines()) == 1


def test_files_the_agent_edited_before_a_failure_are_warned():
    failure = UnresolvedFailure(
        "n1", "npm test", int(time.time()) - 3 * DAY, "/repo/web", ["/repo/web/app.ts", "b.ts"]
    )
    found = _failure_warnings(
        ["web/app.ts", "web/b.ts", "web/c.ts"], [failure], {}, {}, "/repo", time.time()
    )
    assert [w.message for w in found] == [
        "web/app.ts: was edited just before `npm test`, which failed 3 days ago and has not "
        "passed since",
        "web/b.ts: was edited just before `npm test`, which failed 3 days ago and has not "
        "passed since",
    ]


def test_a_file_the_agent_edited_before_a_failing_command_is_warned(app: Repo, home: Path):
    from .collectors.agent.hookrun import payload, run_hook

    sync(app)
    edit = payload("post_edit", app.path, file_path=str(app.path / "src" / "retry.py"))
    failure = payload("failure_bash_exit", app.path, command="make release")
    for data in (edit, failure):
        assert run_hook(data).returncode == 0
    sync(app)
    stage(app, "src/retry.py", "src/upload.py")
    out = run_cli("precheck", "-C", str(app.path))
    assert out.stdout.splitlines()[0] == (
        "src/retry.py: was edited just before `make release`, which failed 1 min ago and has "
        "not passed since"
    )
    assert "src/upload.py" not in out.stdout
