"""`sync --auto` and its lock: one automatic sync at a time, and a dead owner's lock taken over."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nexusmem_core.lock import GRACE, STALE_AFTER, LockBusy, acquire

from .conftest import Repo, run_cli


@pytest.fixture
def synced(repo: Repo) -> Repo:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "--no-embed", "-C", str(repo.path)).returncode == 0
    return repo


def lock_file(repo: Repo) -> Path:
    return repo.path / ".nexusmem" / "sync.lock"


def test_a_second_auto_sync_while_one_runs_says_so_in_one_line(synced: Repo):
    synced.commit("feat: something new", {"new.py": "x = 1\n"})
    with acquire(lock_file(synced)):  # this test process is the running sync
        out = run_cli("sync", "--auto", "-C", str(synced.path))
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"sync already running (pid {os.getpid()}); skipped\n"
        assert out.stderr == ""
        quiet = run_cli("sync", "--auto", "--quiet", "-C", str(synced.path))
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    after = run_cli("sync", "--auto", "-C", str(synced.path))
    assert after.returncode == 0 and ": 1 commit" in after.stdout
    assert not lock_file(synced).exists()


def test_a_plain_sync_does_not_look_at_the_lock(synced: Repo):
    synced.commit("feat: something new", {"new.py": "x = 1\n"})
    with acquire(lock_file(synced)):
        out = run_cli("sync", "-C", str(synced.path))
    assert out.returncode == 0 and ": 1 commit" in out.stdout


def test_the_lock_of_a_process_that_died_is_taken_over(synced: Repo):
    crash = (
        "import os, sys; from pathlib import Path; from nexusmem_core.lock import acquire; "
        "acquire(Path(sys.argv[1])); os._exit(0)"  # dies holding it, like a kill -9
    )
    subprocess.run([sys.executable, "-c", crash, str(lock_file(synced))], check=True)
    assert lock_file(synced).exists()
    synced.commit("feat: something new", {"new.py": "x = 1\n"})
    out = run_cli("sync", "--auto", "-C", str(synced.path))
    assert out.returncode == 0 and ": 1 commit" in out.stdout
    assert not lock_file(synced).exists()


def test_an_unreadable_lock_is_waited_on_briefly_then_taken_over(tmp_path: Path):
    path = tmp_path / "sync.lock"
    path.write_text("")  # created, content not written yet
    with pytest.raises(LockBusy):
        acquire(path)
    old = time.time() - GRACE - 1
    os.utime(path, (old, old))
    with acquire(path):
        assert path.read_text().startswith(f"{os.getpid()} ")
    assert not path.exists()


def test_a_lock_older_than_an_hour_is_not_trusted_even_if_its_pid_lives(tmp_path: Path):
    path = tmp_path / "sync.lock"
    first = acquire(path)
    later = time.time() + STALE_AFTER + 1  # the pid may have been reused by now
    with acquire(path, now=later):
        first.release()  # the first owner finishing must not free the new owner's lock
        assert path.exists()
    assert not path.exists()


def test_the_lock_is_released_when_the_sync_fails(tmp_path: Path):
    path = tmp_path / "sync.lock"
    with pytest.raises(RuntimeError), acquire(path):
        raise RuntimeError("ingest failed")
    assert not path.exists()


def test_a_lock_is_never_visible_without_its_owner(tmp_path: Path, monkeypatch):
    path = tmp_path / "sync.lock"
    seen = []
    real_link = os.link

    def link(src, dst):  # the instant the lock appears, it already names its owner
        real_link(src, dst)
        seen.append(Path(dst).read_text())

    monkeypatch.setattr(os, "link", link)
    with acquire(path) as lock:
        assert seen == [lock.token] and lock.token.startswith(f"{os.getpid()} ")
        with pytest.raises(LockBusy):
            acquire(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no private file left behind


def test_without_hard_links_the_lock_still_works(tmp_path: Path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "sync.lock"
    with acquire(path) as lock:
        assert path.read_text() == lock.token
        with pytest.raises(LockBusy):
            acquire(path)
    assert not path.exists() and list(tmp_path.iterdir()) == []
