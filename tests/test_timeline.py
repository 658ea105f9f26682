"""The viewer's timeline: newest first, a page at a time by cursor, filtered, with each failure's
fix, the commands no sync has read yet at the top, and the Status page's monthly counts and
capture hooks."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core import handlers
from nexusmem_core.collectors.agent import AGENT_LOG
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.engine import Engine
from nexusmem_core.errors import UsageError
from nexusmem_core.handlers.feed import TimelinePage, pending, timeline
from nexusmem_core.handlers.overview import capture, history, logs

from .conftest import Repo
from .test_shell_sync import log_command

T0 = 1_767_400_000  # 2026-01-03 00:26 UTC; the fixture's four commits are on the 2nd to the 5th


@pytest.fixture
def utc() -> Iterator[None]:
    """Dates read as local time (``--as-of``'s rule), here UTC's, as the commits' days are."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def agent_run(
    home: Path,
    cmd: str,
    cwd: Path,
    ts: float,
    *,
    code: int = 0,
    agent: str = "claude",
    edited: list[str] | None = None,
) -> None:
    """One command a coding agent ran, as its hook logs it."""
    hooklog.append(
        home,
        {
            "v": 1,
            "id": f"{agent}-{cmd}-{ts}",
            "agent": agent,
            "shell": agent,
            "session": "s",
            "cwd": str(cwd),
            "cmd": cmd,
            "cmd_hash": hooklog.command_hash(home, cmd),
            "outcome": "ok" if code == 0 else "failed",
            "exit": code,
            "edited": edited or [],
            "ts": ts,
        },
        AGENT_LOG,
    )


async def sync(engine: Engine) -> None:
    await handlers.sync(engine, embed=False, link_failures=True)


async def every_row(engine: Engine) -> set[str]:
    """What the timeline shows in all, read from the store directly."""
    rows = await engine.db.fetchall(
        "select id from nodes where project_id = ? and kind != 'file_diff'", (engine.project_id,)
    )
    return {node_id for (node_id,) in rows}


async def page_through(engine: Engine, page: TimelinePage, **filters: Any) -> list[str]:
    seen = [i["id"] for i in page.items if not i["pending"]]
    while page.next is not None:
        page = await timeline(engine, before=page.next, **filters)
        assert not [i for i in page.items if i["pending"]]  # only at the top of the first page
        seen += [i["id"] for i in page.items]
    return seen


def by_title(page: TimelinePage) -> dict[str, dict[str, Any]]:
    return {item["title"]: item for item in page.items}


async def test_rows_are_newest_first_and_a_commit_counts_its_files(engine: Engine, repo: Repo):
    await sync(engine)
    page = await timeline(engine)
    commits = [item["title"] for item in page.items if item["kind"] == "git_commit"]
    assert commits == [
        "docs: explain the architecture",
        "chore: bump version",
        "fix: raise the retry budget after S3 upload timeouts",
        "feat: add the retry loop",
    ]
    assert all(item["kind"] != "file_diff" for item in page.items)
    assert [i["ts"] for i in page.items] == sorted((i["ts"] for i in page.items), reverse=True)
    first = by_title(page)["feat: add the retry loop"]
    assert first["files"] == 2 and first["author"] is None and first["outcome"] is None
    assert first["date"] == "2026-01-02" and first["time"] == "00:00:00"
    assert page.next is None and page.pending == 0


async def test_a_failure_shows_the_retry_that_fixed_it(engine: Engine, repo: Repo, home: Path):
    log_command(home, "pytest tests/test_retry.py", repo.path, 1, T0)
    log_command(home, "pytest tests/test_retry.py", repo.path, 0, T0 + 60)
    await sync(engine)
    commands = [i for i in (await timeline(engine)).items if i["kind"] == "shell_command"]
    passed, failure = commands
    assert failure["failed"] and failure["outcome"] == "failed" and failure["exit"] == 1
    assert (failure["author"], failure["cwd"], failure["duration"]) == ("you", ".", 1.5)
    assert failure["fixes"] == [
        {
            "link": "retry",
            "id": passed["id"],
            "kind": "shell_command",
            "title": "you: pytest tests/test_retry.py  (exit 0)",
            "ts": T0 + 60,
        }
    ]
    assert not passed["failed"] and passed["outcome"] == "ok" and passed["fixes"] == []


async def test_pages_cover_every_row_once_while_new_rows_arrive(
    engine: Engine, repo: Repo, home: Path
):
    for n in range(7):
        log_command(home, f"make step{n}", repo.path, 0, T0 + n * 60)
    await sync(engine)
    before = await every_row(engine)
    first = await timeline(engine, limit=3)
    assert len(first.items) == 3 and first.next is not None

    # Meanwhile: a command at the newest moment, one in the middle of what is left to page
    # through, and a commit, all synced before the next page is read.
    log_command(home, "make newest", repo.path, 0, T0 + 3600)
    log_command(home, "make middle", repo.path, 0, T0 + 90)
    repo.commit("feat: arrive while paging", {"src/new.py": "x = 1\n"})
    await sync(engine)
    arrived = await every_row(engine) - before
    assert len(arrived) == 3

    seen = await page_through(engine, first, limit=3)
    assert len(seen) == len(set(seen)) and set(seen) == before
    newer = await timeline(engine, after=first.newest, limit=2)
    assert newer.more and len(newer.items) == 2
    rest = await timeline(engine, after=newer.newest, limit=2)
    assert not rest.more
    shown = [i["id"] for i in newer.items + rest.items]
    assert len(shown) == len(set(shown)) and set(shown) == arrived
    assert (await timeline(engine, after=rest.newest)).items == []


async def test_undated_rows_come_last_and_are_paged_too(engine: Engine, repo: Repo, home: Path):
    from nexusmem_core.models import Node
    from nexusmem_core.store.nodes import upsert_nodes

    await sync(engine)
    undated = [
        Node(
            engine.project_id,
            "doc_section",
            "docs",
            f"n.md#{n}",
            f"n {n}",
            "x",
            None,
            0.5,
            "authored",
        )
        for n in range(3)
    ]
    async with engine.db.transaction():
        await upsert_nodes(engine.db, undated)
    first = await timeline(engine, limit=4)
    seen = await page_through(engine, first, limit=4)
    assert set(seen) == await every_row(engine) and len(seen) == len(set(seen))
    tail = [i for i in (await timeline(engine, limit=50)).items][-3:]
    assert [i["ts"] for i in tail] == [None, None, None]
    assert {i["date"] for i in tail} == {"date unknown"}
    assert (await timeline(engine, since="2026-01-01")).items[-1]["ts"] is not None


async def test_each_filter_keeps_only_its_rows(engine: Engine, repo: Repo, home: Path, utc: None):
    (repo.path / "web").mkdir()
    log_command(home, "npm test", repo.path / "web", 2, T0)
    log_command(home, "npm test", repo.path / "web", 0, T0 + 60)
    agent_run(home, "cargo build", repo.path, T0 + 120, code=1, edited=["src/retry.py"])
    agent_run(home, "go vet", repo.path, T0 + 180, agent="codex")
    await sync(engine)

    async def titles(**filters: Any) -> set[str]:
        return {i["title"] for i in (await timeline(engine, **filters)).items}

    assert await titles(kinds=["doc_section"]) == {
        i["title"] for i in (await timeline(engine)).items if i["kind"] == "doc_section"
    }
    assert await titles(kinds=["git_commit"]) == {
        "feat: add the retry loop",
        "fix: raise the retry budget after S3 upload timeouts",
        "chore: bump version",
        "docs: explain the architecture",
    }
    assert await titles(author="you") == {"npm test"}
    assert await titles(author="claude-code") == {"cargo build"}
    assert await titles(author="claude") == {"cargo build"}  # the agent's key, as search takes
    assert await titles(author="codex") == {"go vet"}
    assert await titles(outcome="failed") == {"npm test", "cargo build"}
    failed = (await timeline(engine, outcome="failed")).items
    assert {(i["title"], i["exit"]) for i in failed} == {("npm test", 2), ("cargo build", 1)}
    assert {i["cwd"] for i in failed} == {"web", "."}
    assert await titles(outcome="ok") == {"npm test", "go vet"}
    assert await titles(path="src/retry.py") == {
        "feat: add the retry loop",
        "fix: raise the retry budget after S3 upload timeouts",
        "cargo build",  # the file the agent edited before it ran
    }
    guide = {t for t in await titles(kinds=["doc_section"]) if t.startswith("docs/guide.rst")}
    assert await titles(path="docs/") == {*guide, "docs: explain the architecture"} and guide
    assert await titles(path="nowhere/") == set()
    assert await titles(since="2026-01-03", until="2026-01-03") == {
        "fix: raise the retry budget after S3 upload timeouts",
        "npm test",
        "cargo build",
        "go vet",
    }
    assert await titles(since="2026-01-04T12:00", kinds=["git_commit"]) == {
        "docs: explain the architecture"
    }
    assert await titles(until="2026-01-02", kinds=["git_commit"]) == {"feat: add the retry loop"}
    agent_failure = by_title(await timeline(engine, author="claude-code"))["cargo build"]
    assert agent_failure["edited"] == ["src/retry.py"] and agent_failure["failed"]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"kinds": ["file_diff"]}, "kinds"),
        ({"kinds": ["commit"]}, "kinds"),
        ({"kinds": []}, "kinds"),
        ({"author": "mallory"}, "author"),
        ({"outcome": "maybe"}, "outcome"),
        ({"path": ""}, "path"),
        ({"path": "a" * 2000}, "path"),
        ({"since": "last week"}, "since"),
        ({"until": "2026-13-40"}, "until"),
        ({"before": "page two"}, "before"),
        ({"before": "1.2.3.4"}, "before"),
        ({"after": "9" * 30 + ".."}, "after"),
        ({"before": "5..", "after": "5.."}, "after"),
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": True}, "limit"),
    ],
)
async def test_each_bad_argument_is_one_line_naming_it(
    engine: Engine, arguments: dict[str, Any], named: str
):
    with pytest.raises(UsageError) as raised:
        await timeline(engine, **arguments)
    assert raised.value.argument == named
    assert str(raised.value).startswith(f"{named}: ") and "\n" not in str(raised.value)


async def test_unsynced_commands_lead_the_page_until_a_sync_reads_them(
    engine: Engine, repo: Repo, home: Path, tmp_path: Path
):
    await sync(engine)
    page = await timeline(engine)
    assert page.pending == 0
    now = time.time()
    log_command(home, "make deploy", repo.path, 2, now - 5)
    log_command(home, "make elsewhere", tmp_path, 0, now - 4)  # another directory's
    agent_run(home, "pytest -x", repo.path, now - 3, code=1, edited=["src/retry.py"])
    agent_run(home, "export TOKEN=ghp_" + "a" * 36, repo.path, now - 2)

    waiting = await timeline(engine)
    top = waiting.items[: waiting.pending]
    assert waiting.pending == 3 and all(i["pending"] and i["cursor"] is None for i in top)
    assert [i["title"] for i in top][1:] == ["pytest -x", "make deploy"]
    assert "ghp_" + "a" * 36 not in top[0]["title"]  # redacted as sync would store it
    assert top[1]["edited"] == ["src/retry.py"] and top[1]["author"] == "claude-code"
    assert top[2]["failed"] and top[2]["exit"] == 2 and top[2]["author"] == "you"
    assert [i["title"] for i in await pending(engine)] == [i["title"] for i in top]
    assert (await timeline(engine, author="you")).pending == 1
    assert (await timeline(engine, outcome="failed")).pending == 2
    live = await timeline(engine, after=page.newest)
    assert [i["id"] for i in live.items] == [i["id"] for i in top]  # nothing synced yet

    await sync(engine)
    synced = await timeline(engine, after=page.newest)
    assert synced.pending == 0 and not any(i["pending"] for i in synced.items)
    assert {i["id"] for i in synced.items} == {i["id"] for i in top}  # the same rows, stored
    assert (await timeline(engine)).pending == 0


async def test_pending_reads_a_bounded_tail_of_a_log_no_sync_has_read(
    engine: Engine, repo: Repo, home: Path
):
    from nexusmem_core.handlers.feed import PENDING_MAX
    from nexusmem_core.handlers.pending import PENDING_BYTES

    await sync(engine)
    log_command(home, "echo first", repo.path, 0, T0)
    (line,) = (home / hooklog.LOG_FILE).read_text().splitlines()
    record = json.loads(line)
    count = 3 * PENDING_BYTES // 500  # lines of about 500 bytes: three times what is read
    with open(home / hooklog.LOG_FILE, "a") as log:
        for n in range(count):
            again = {**record, "id": f"r{n}", "cmd": f"echo {n} " + "x" * 400, "start": T0 + n}
            log.write(json.dumps(again) + "\n")
    shown = await pending(engine)
    assert len(shown) == PENDING_MAX
    assert [i["ts"] for i in shown] == list(range(T0 + count - 1, T0 + count - 1 - PENDING_MAX, -1))


async def test_history_counts_each_kind_by_month_as_status_counts_them(
    engine: Engine, repo: Repo, home: Path
):
    log_command(home, "make", repo.path, 0, T0)
    await sync(engine)
    months = await history(engine, months=3)
    assert [m["month"] for m in months] == ["2025-11", "2025-12", "2026-01"]
    assert months[0]["total"] == 0 and months[0]["counts"] == {}
    counted: dict[str, int] = {}
    for month in months:
        for kind, count in month["counts"].items():
            counted[kind] = counted.get(kind, 0) + count
        assert month["total"] == sum(month["counts"].values())
    assert counted == (await handlers.status(engine)).by_kind
    with pytest.raises(UsageError) as raised:
        await history(engine, months=0)
    assert raised.value.argument == "months"


async def test_history_ends_with_the_newest_month_even_in_december(engine: Engine):
    from nexusmem_core.models import Node
    from nexusmem_core.store.nodes import upsert_nodes

    await sync(engine)
    december = 1_796_083_200  # 2026-12-01T00:00:00Z
    nodes = [
        Node(engine.project_id, "doc_section", "docs", f"#{n}", "n", "x", ts, 0.5, "authored")
        for n, ts in enumerate((december - 1, december, december + 30 * 86_400))
    ]
    async with engine.db.transaction():
        await upsert_nodes(engine.db, nodes)
    months = await history(engine, months=2)
    assert [(m["month"], m["total"]) for m in months] == [("2026-11", 1), ("2026-12", 2)]


async def test_capture_says_which_hooks_are_installed_and_when_each_last_recorded(
    engine: Engine, repo: Repo, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from nexusmem_core.collectors.shell import hooks

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user" / ".config"))
    monkeypatch.setenv("ZDOTDIR", str(tmp_path / "user"))
    hooks.install("bash", home)
    log_command(home, "make", repo.path, 0, T0)  # ends 1.5 s later
    agent_run(home, "ls", repo.path, T0 + 10, agent="codex")
    found = await capture(engine.settings, repo.path)
    shells = {s["shell"]: s for s in found["shells"]}
    assert set(shells) == {"bash", "zsh", "fish", "pwsh"}
    assert shells["bash"]["state"] == "installed" and shells["bash"]["last_recorded"] == T0 + 1.5
    assert shells["zsh"]["state"] == "not installed" and shells["zsh"]["last_recorded"] is None
    agents = {a["agent"]: a for a in found["agents"]}
    assert set(agents) == {"claude", "codex", "gemini", "cursor", "opencode"}
    assert agents["codex"]["last_event"] == T0 + 10 and agents["claude"]["last_event"] is None
    assert {f["state"] for f in agents["claude"]["files"]} == {"not installed"}
    assert found["logs"] == logs(engine.settings)
    assert found["logs"]["shell"]["size"] == (home / hooklog.LOG_FILE).stat().st_size


async def test_a_forgotten_value_never_shows_as_pending(engine: Engine, repo: Repo, home: Path):
    """The hook log still holds a command with a value forgotten since: sync keeps it out of
    memory, and the pending rows keep it out of sight the same way."""
    await sync(engine)
    await handlers.forget(engine, "hunter2", apply=True)
    now = time.time()
    log_command(home, "mysql -p hunter2 prod", repo.path, 0, now - 2)
    log_command(home, "make deploy", repo.path, 0, now - 1)
    assert [i["title"] for i in await pending(engine)] == ["make deploy"]
    await sync(engine)
    assert not [i for i in (await timeline(engine)).items if "hunter2" in i["title"]]
