"""Registry entries that point at nothing usable: a deleted repository, an unmounted disk, a
file where the repository was, a database that is not SQLite. Each is skipped in one line by
the cross-project commands, and ``--prune`` forgets only what was really deleted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mcp import Client

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from .conftest import Repo, run_cli
from .test_disks import synced


async def _project(settings: Settings, make_repo, name: str, subject: str) -> Repo:
    """A registered repository; only the healthy one needs a sync (the rest break)."""
    r = make_repo(name)
    r.commit(subject, {"a.txt": "a\n"})
    if name == "ok":
        await synced(settings, r)
    else:
        await handlers.init_project(settings, r.path)
    return r


async def _hostile(settings: Settings, make_repo, tmp_path: Path) -> dict[str, str]:
    """One healthy repository and one of each broken kind; their roots by kind."""
    ok = await _project(settings, make_repo, "ok", "fix: retry the upload after a timeout")
    deleted = await _project(settings, make_repo, "deleted", "fix: retry the deleted thing")
    unmounted = await _project(settings, make_repo, "disk/unmounted", "fix: retry on the usb disk")
    mount_point = await _project(settings, make_repo, "mnt/empty", "fix: retry on another disk")
    now_a_file = await _project(settings, make_repo, "file", "fix: retry where a file is now")
    garbage = await _project(settings, make_repo, "garbage", "fix: retry in a broken database")
    shutil.rmtree(deleted.path)
    (tmp_path / "disk").rename(tmp_path / "disk-elsewhere")  # its whole disk is gone
    (tmp_path / "mnt").rename(tmp_path / "mnt-elsewhere")
    (tmp_path / "mnt").mkdir()  # an empty mount point, nothing mounted on it
    shutil.rmtree(now_a_file.path)
    now_a_file.path.write_text("not a repository\n")
    db = garbage.path / ".nexusmem" / "memory.db"
    db.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    return {
        name: str(r.path.resolve())
        for name, r in {
            "ok": ok,
            "deleted": deleted,
            "unmounted": unmounted,
            "mount_point": mount_point,
            "file": now_a_file,
            "garbage": garbage,
        }.items()
    }


async def test_broken_entries_are_skipped_in_one_line_and_prune_keeps_what_may_come_back(
    settings: Settings, make_repo, tmp_path
):
    roots = await _hostile(settings, make_repo, tmp_path)
    out = run_cli("query", "--all-projects", "retry")
    assert out.returncode == 0, out.stderr
    assert "[ok] fix: retry the upload after a timeout" in out.stdout
    skipped = [line for line in out.stdout.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == 5 and "Traceback" not in out.stdout + out.stderr
    text = "\n".join(skipped)
    assert f"{roots['deleted']}: not there any more: deleted or moved" in text
    assert f"{roots['unmounted']}: not there, and {tmp_path / 'disk'} is missing" in text
    assert f"{roots['mount_point']}: not there, and {tmp_path / 'mnt'} is missing or empty" in text
    assert f"{roots['file']}: a file now, not a repository" in text
    assert f"{roots['garbage']}: {roots['garbage']}/.nexusmem/memory.db is not a SQLite" in text
    async with Client(build_server(settings)) as client:  # across projects over MCP: the same
        result = await client.call_tool("search_memory", {"query": "retry", "all_projects": True})
    assert result.structured_content["projects"] == ["ok"]
    assert result.structured_content["skipped"] == [line[9:] for line in skipped]

    listed = run_cli("projects", "--json")
    states = {p["root"]: p["state"] for p in json.loads(listed.stdout)["projects"]}
    assert states == {
        roots["ok"]: "ok",
        roots["deleted"]: "gone",
        roots["file"]: "gone",
        roots["unmounted"]: "unreachable",
        roots["mount_point"]: "unreachable",
        roots["garbage"]: "not-a-database",
    }

    pruned = run_cli("projects", "--prune")
    assert pruned.returncode == 0, pruned.stderr
    assert f"pruned {roots['deleted']}\n" in pruned.stdout
    assert f"pruned {roots['file']}\n" in pruned.stdout
    for kept in ("unmounted", "mount_point", "garbage"):
        assert f"`nexusmem projects --remove {roots[kept]}`" in pruned.stdout

    (tmp_path / "disk-elsewhere").rename(tmp_path / "disk")  # the disk is back
    removed = json.loads(run_cli("projects", "--remove", roots["mount_point"], "--json").stdout)
    assert removed["pruned"] == [roots["mount_point"]]
    left = {p["root"]: p["state"] for p in removed["projects"]}
    assert left == {roots["ok"]: "ok", roots["unmounted"]: "ok", roots["garbage"]: "not-a-database"}
    unknown = run_cli("projects", "--remove", str(tmp_path / "never-registered"))
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: projects --remove: no registered repository at")


def test_a_project_is_named_owner_and_name_from_its_origin():
    from nexusmem_core.collectors.git import origin_name

    assert origin_name("git@github.com:pallets/click.git") == "pallets/click"
    assert origin_name("https://github.com/Pallets/Click") == "Pallets/Click"  # as written
    assert origin_name("ssh://git@host:2222/team/app.git") == "team/app"
    assert origin_name("/srv/git/app.git") == "app"  # a local path: its last segment
    assert origin_name("file:///srv/git/app") == "app"
    assert origin_name("C:\\repos\\app.git") == "app"


def test_two_projects_of_one_name_are_told_apart_by_where_they_are(make_repo, home: Path):
    first = make_repo("a/repo")
    second = make_repo("b/repo")
    named = make_repo("c/tool")
    named.git("remote", "add", "origin", "git@github.com:acme/tool.git")
    for r, subject in ((first, "fix: retry in a"), (second, "fix: retry in b"), (named, "retry")):
        r.commit(subject, {"a.txt": "a\n"})
        run_cli("init", "-C", str(r.path))
        run_cli("sync", "-C", str(r.path))
    out = run_cli("query", "--all-projects", "retry")
    scope = out.stdout.splitlines()[0]
    assert "acme/tool" in scope
    assert f"repo ({first.path.resolve()})" in scope or "repo (~" in scope
    assert scope.count("repo (") == 2, scope


def _cut(db: Path, size: int) -> None:
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    with open(db, "r+b") as handle:
        handle.truncate(size)


def test_an_empty_or_truncated_database_is_not_reported_ok(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    db = repo.path / ".nexusmem" / "memory.db"
    full = db.stat().st_size
    assert full >= 3 * 4096

    def listed() -> dict:
        out = run_cli("projects", "--json")
        assert out.returncode == 0, out.stderr
        (entry,) = json.loads(out.stdout)["projects"]
        return entry

    assert listed()["state"] == "ok"
    _cut(db, full // 4096 // 2 * 4096)  # whole pages, fewer than the header counts
    half = listed()
    assert half["state"] == "damaged" and "is cut short" in half["reason"]
    assert f"of the {full:,} its header gives" in half["reason"]
    _cut(db, 4096 + 100)  # part of a page
    assert listed()["state"] == "damaged"
    skipped = json.loads(run_cli("query", "--all-projects", "retry", "--json").stdout)["skipped"]
    assert len(skipped) == 1 and "is cut short" in skipped[0]
    _cut(db, 0)
    empty = listed()
    assert empty["state"] == "not-a-database" and "is empty (0 bytes)" in empty["reason"]
    assert db.is_file()  # reported, never removed


def test_an_empty_database_file_says_so_and_sync_builds_it(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    db = repo.path / ".nexusmem" / "memory.db"
    _cut(db, 0)
    out = run_cli("status", "-C", str(repo.path))
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
    assert f"{db} is empty: it holds no memory yet; run `nexusmem sync`" in out.stderr
    assert db.stat().st_size == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    assert json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)["nodes"] == 13
