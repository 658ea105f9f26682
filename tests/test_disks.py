"""Hostile disks, for real: a full disk and a read-only mount are small tmpfs file systems
mounted over ``.nexusmem/`` or ``$NEXUSMEM_HOME``. Every failure is one line that names the
file and the remedy, the exit code is 1, and memory is what it was before.

Mounting needs root (or CAP_SYS_ADMIN); elsewhere these tests skip and say so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from nexusmem_core import handlers
from nexusmem_core.collectors.agent.recall import AGENT_LOG
from nexusmem_core.collectors.shell.hooklog import LOG_FILE
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_mcp.server import build_server

from .collectors.agent.hookrun import payload, run_hook
from .conftest import Repo, run_cli
from .test_shell_sync import log_command


class Disks:
    """Small tmpfs mounts, unmounted when the test ends."""

    def __init__(self) -> None:
        self.mounted: list[Path] = []

    def mount(self, path: Path, kib: int) -> Path:
        """A ``kib`` KiB file system at ``path``, its root 0700 as NexusMem makes its own
        directories (a looser one is tightened on the next open, with a line of its own)."""
        path.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={kib}k,mode=0700", "tmpfs", str(path)],
                capture_output=True,
                text=True,
            )
        except FileNotFoundError:
            pytest.skip("no mount command: cannot make a small file system here")
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small file system here (needs root): {done.stderr}")
        self.mounted.append(path)
        return path

    @staticmethod
    def remount(path: Path, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(path)], check=True)

    @staticmethod
    def fill(path: Path, leave_kib: int = 0) -> Path:
        """Fill the file system under ``path`` until ``leave_kib`` is free; return the filler."""
        stats = os.statvfs(path)
        filler = path / "filler"
        with open(filler, "wb") as handle:
            try:
                handle.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave_kib * 1024))
                handle.flush()
            except OSError:
                pass  # full already: that is the point
        return filler

    def unmount_all(self) -> None:
        for path in reversed(self.mounted):
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def disks() -> Iterator[Disks]:
    made = Disks()
    try:
        yield made
    finally:
        made.unmount_all()


def nexusmem(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-C", str(repo.path))


async def nodes(settings: Settings, repo: Repo) -> int:
    """How many nodes memory holds, read as ``status`` reads it (read-only)."""
    async with open_engine(settings, repo.path, read_only=True) as engine:
        return (await handlers.status(engine)).nodes


def one_error(out: subprocess.CompletedProcess[str], *parts: str) -> str:
    """The command failed with exit 1 and exactly one line on stderr holding ``parts``."""
    assert out.returncode == 1, (out.stdout, out.stderr)
    (line,) = out.stderr.splitlines()
    assert line.startswith("error: ") and "Traceback" not in out.stderr
    for part in parts:
        assert part in line, line
    return line


async def synced(settings: Settings, repo: Repo) -> int:
    """``init`` and ``sync`` (in-process: only what is under test runs as a command); the
    number of nodes."""
    await handlers.init_project(settings, repo.path)
    async with open_engine(settings, repo.path) as engine:
        await handlers.sync(engine, embed=False)
        return (await handlers.status(engine)).nodes


async def test_a_full_disk_fails_in_one_line_and_the_sync_after_freeing_space_completes(
    settings: Settings, repo: Repo, disks: Disks
):
    # 1.5 MiB: the second sync's write-ahead log (~750 KB) must fit once the filler is gone.
    workspace = disks.mount(repo.path / ".nexusmem", 1536)
    before = await synced(settings, repo)
    files = {f"data/{n}.txt": os.urandom(1500).hex() + "\n" for n in range(40)}
    repo.commit("feat: forty data files", files)
    filler = disks.fill(workspace, leave_kib=96)  # room to open, not for forty diffs

    one_error(
        nexusmem(repo, "sync", "--no-embed"),
        f"cannot write {workspace / 'memory.db'}: the disk holding {workspace} is full",
        "free some space, then run the command again (memory is unchanged",
    )
    assert await nodes(settings, repo) == before
    found = nexusmem(repo, "query", "why was the retry budget raised")
    assert found.returncode == 0 and "fix: raise the retry budget" in found.stdout

    filler.unlink()
    again = nexusmem(repo, "sync", "--no-embed")
    assert again.returncode == 0, again.stderr
    assert await nodes(settings, repo) == before + 41  # the commit and its forty diffs


async def test_a_read_only_workspace_still_answers_and_refuses_writes_in_one_line(
    settings: Settings, repo: Repo, disks: Disks
):
    workspace = disks.mount(repo.path / ".nexusmem", 1024)
    before = await synced(settings, repo)
    disks.remount(workspace, "ro")

    found = nexusmem(repo, "query", "why was the retry budget raised")
    assert found.returncode == 0, found.stderr
    assert "fix: raise the retry budget" in found.stdout
    status = nexusmem(repo, "status")
    assert f"cannot be written: {workspace} is on a file system mounted read-only" in status.stdout
    remedy = f"{workspace} is on a file system mounted read-only: make it writable"
    one_error(nexusmem(repo, "sync", "--no-embed"), "cannot write", remedy)
    one_error(nexusmem(repo, "forget", "retry", "--yes"), remedy)

    disks.remount(workspace, "rw")
    repo.commit("chore: after the remount")
    assert nexusmem(repo, "sync", "--no-embed").returncode == 0
    assert await nodes(settings, repo) == before + 1


def test_init_on_a_read_only_or_full_disk_names_the_file(make_repo, tmp_path: Path, disks):
    mount = disks.mount(tmp_path / "ro", 1024)
    repo = make_repo("ro/project")
    repo.commit("feat: first")
    disks.remount(mount, "ro")
    one_error(
        nexusmem(repo, "init"),
        f"cannot create {repo.path / '.nexusmem'}: Read-only file system",
        "make it writable",
    )
    disks.remount(mount, "rw")
    disks.fill(mount)
    one_error(nexusmem(repo, "init"), f"{repo.path / '.nexusmem'}", "free some disk space")


async def test_hooks_say_in_one_line_that_their_log_is_full_and_keep_what_it_held(
    settings: Settings, repo: Repo, home: Path, disks: Disks
):
    disks.mount(home, 256)  # first: the workspace is marked with the key this home holds
    await handlers.init_project(settings, repo.path)
    user = {"HOME": str(repo.path.parent / "user"), "SHELL": "/bin/bash"}
    assert run_cli("hook", "install", env=user).returncode == 0
    log_command(home, "make build", repo.path, 0)  # creates the log and the hook key
    assert run_hook(payload("post_bash_ok", repo.path)).returncode == 0
    for name in (LOG_FILE, AGENT_LOG):  # a log ending on a page boundary: no slack to use
        with open(home / name, "ab") as log:
            log.write(b" " * (-(log.tell() + 1) % 4096) + b"\n")
    logs = {name: (home / name).read_bytes() for name in (LOG_FILE, AGENT_LOG)}
    disks.fill(home)

    shell = subprocess.run(
        [sys.executable, "-m", "nexusmem_core.collectors.shell.record", "--home", str(home)],
        input=b"make test",
        capture_output=True,
    )
    agent = run_hook(payload("post_bash_ok", repo.path, tool_use_id="toolu_02"))
    for done in (shell, agent):
        assert done.returncode == 1
        (line,) = done.stderr.decode().splitlines()
        assert line.startswith(f"nexusmem: cannot write {home}/") and "free some disk space" in line
    assert {name: (home / name).read_bytes() for name in logs} == logs
    status = run_cli("hook", "status", env=user)
    assert status.returncode == 0 and "bash: installed" in status.stdout
    assert f"warning: commands cannot be recorded now: the disk holding {home} is full" in (
        status.stderr
    )


async def test_a_sync_whose_registry_cannot_be_written_still_lands(
    settings: Settings, repo: Repo, home: Path, disks: Disks
):
    disks.mount(home, 256)
    await handlers.init_project(settings, repo.path)
    disks.fill(home)
    out = nexusmem(repo, "sync", "--no-embed")
    assert out.returncode == 0
    (note,) = out.stderr.splitlines()
    assert note.startswith("note: the project registry was not updated: cannot write ")
    assert await nodes(settings, repo) > 0


async def test_mcp_searches_a_read_only_workspace_and_says_why_sync_cannot_write(
    settings: Settings, repo: Repo, disks: Disks
):
    workspace = disks.mount(repo.path / ".nexusmem", 1024)
    before = await synced(settings, repo)
    disks.remount(workspace, "ro")
    root = {"project_root": str(repo.path)}
    async with Client(build_server(settings)) as client:
        found = await client.call_tool("search_memory", {"query": "retry budget", **root})
        status = await client.call_tool("get_status", root)
        refused = await client.call_tool("sync_project", root)
        disks.remount(workspace, "rw")
        repo.commit("chore: after the remount")
        synced_now = await client.call_tool("sync_project", root)
    assert not found.is_error and found.structured_content["results"]
    assert status.structured_content["nodes"] == before
    assert refused.is_error
    (line,) = refused.content[0].text.splitlines()
    assert "cannot write" in line and "mounted read-only: make it writable" in line
    assert not synced_now.is_error and synced_now.structured_content["commits"] == 1
