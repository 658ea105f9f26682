"""Shell commands reach memory: from the hook log when there is one, else scraped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.collectors.shell.record import build_record
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine

from .conftest import Repo, run_cli


def log_command(
    home: Path, cmd: str, cwd: Path | str, exit_code: int = 0, start: float = 1_767_400_000.0
) -> None:
    record = build_record(
        cmd,
        {
            "shell": "bash",
            "exit": str(exit_code),
            "cwd": str(cwd),
            "start": str(start),
            "duration": "1.5",
            "session": "s1",
        },
        home,
    )
    assert record is not None
    hooklog.append(home, record)


async def test_hook_commands_inside_the_repository_are_remembered(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    (repo.path / "src").mkdir(exist_ok=True)
    log_command(settings.home, "pytest tests/test_upload.py", repo.path / "src", exit_code=1)
    log_command(settings.home, "npm whoami", tmp_path / "elsewhere", exit_code=1)
    log_command(settings.home, "export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx", repo.path)
    report = await handlers.sync(engine)
    assert report.shell_mode == "hook" and report.shell == 2
    response = await handlers.search(engine, "why did the upload test fail")
    top = next(r for r in response.results if r.kind == "shell_command")
    assert top.title == "you: pytest tests/test_upload.py  (exit 1)"
    node = await handlers.get_node(engine, top.id)
    assert node["meta"]["exit"] == 1 and node["meta"]["cwd"].endswith("src")
    bodies = [b for (b,) in await engine.db.fetchall("select body from nodes")]
    assert not any("sk-abcdefghijklmnopqrstuvwx" in b for b in bodies)
    assert not any("npm whoami" in b for b in bodies)  # run in another directory


async def test_the_log_is_read_incrementally_and_idempotently(
    engine: Engine, repo: Repo, settings: Settings
):
    log_command(settings.home, "make build", repo.path)
    assert (await handlers.sync(engine)).shell == 1
    assert (await handlers.sync(engine)).shell == 0
    log_command(settings.home, "make test", repo.path, exit_code=2)
    assert (await handlers.sync(engine)).shell == 1
    log = settings.home / hooklog.LOG_FILE
    with open(log, "a") as handle:
        handle.write("{garbage\n")
    report = await handlers.sync(engine)
    assert report.shell == 0 and report.shell_skipped == 1
    os.truncate(log, 0)  # rotated away: the next records are read from the start
    log_command(settings.home, "make lint", repo.path)
    assert (await handlers.sync(engine)).shell == 1
    count = await engine.db.fetchone("select count(*) from nodes where kind = 'shell_command'")
    assert count == (3,)


async def test_worktrees_of_the_repository_count_as_inside(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    worktree = tmp_path / "wt"
    repo.git("worktree", "add", "-q", str(worktree))
    log_command(settings.home, "cargo test", worktree)
    assert (await handlers.sync(engine)).shell == 1


async def test_without_a_hook_history_files_are_scraped(
    engine: Engine, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    user = tmp_path / "user"
    user.mkdir()
    (user / ".bash_history").write_text(
        "#1767300000\nmake test\n#1767300060\nmysql -u root -phunter2 app\n#1767300120\nls\n"
    )
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("HISTFILE", raising=False)
    report = await handlers.sync(engine)
    assert report.shell_mode == "scraped" and report.shell == 3
    rows = await engine.db.fetchall(
        "select title, ts, meta from nodes where kind = 'shell_command' order by ts"
    )
    assert [r[0] for r in rows] == ["make test", "mysql -u root -p[REDACTED] app", "ls"]
    assert rows[0][1] == 1767300000
    assert json.loads(rows[0][2])["exit"] is None and json.loads(rows[0][2])["cwd"] is None
    again = await handlers.sync(engine)
    assert again.shell == 0


async def scraped(engine: Engine) -> list[str]:
    rows = await engine.db.fetchall(
        "select title from nodes where source = 'shell:bash' order by title"
    )
    return [title for (title,) in rows]


async def test_a_short_history_trimmed_from_the_front_stores_each_command_once(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    user = tmp_path / "user"
    user.mkdir()
    history = user / ".bash_history"
    history.write_text("cd app\nmake build\nmake test\ngit push\n")  # shorter than the tail
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("HISTFILE", raising=False)
    assert (await handlers.sync(engine, embed=False)).shell == 4
    # bash keeps its last HISTFILESIZE lines: the oldest goes as a new one comes.
    history.write_text("make build\nmake test\ngit push\nmake deploy\n")
    assert (await handlers.sync(engine, embed=False)).shell == 1
    assert await scraped(engine) == ["cd app", "git push", "make build", "make deploy", "make test"]
    history.write_text("make test\ngit push\nmake deploy\nmake deploy\nls\n")
    assert (await handlers.sync(engine, embed=False)).shell == 2
    assert len(await scraped(engine)) == 7  # make deploy twice: it ran twice
    # Pruned, the history is read as new again: nothing of what is in it now is held back.
    pruned = await handlers.prune_source(engine, "shell:bash", apply=True)
    assert pruned.reset == ["the shell:bash:read cursor"]
    assert (await handlers.sync(engine, embed=False)).shell == 5


def test_scan_shell_previews_without_writing(repo: Repo, home: Path):
    log_command(home, "docker build -t app .", repo.path, exit_code=1)
    out = run_cli("scan-shell", "--json", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["kind"] for r in rows] == ["shell_command"]
    assert rows[0]["title"] == "you: docker build -t app .  (exit 1)"
    assert not (repo.path / ".nexusmem").exists()


async def test_a_huge_line_in_the_log_is_passed_over_in_bounded_memory(
    engine: Engine, repo: Repo, settings: Settings
):
    """Both records around a 16 MB line reach memory, and reading never held the line: the
    peak of what the sync allocated stays far below its size."""
    import tracemalloc

    await handlers.sync(engine)  # the repository's commits first: this sync reads the log only
    huge = 64 * hooklog.MAX_LINE
    log_command(settings.home, "make build", repo.path)
    with open(settings.home / hooklog.LOG_FILE, "ab") as handle:
        handle.write(b'{"cmd":"' + b"x" * huge + b'"}\n')
    log_command(settings.home, "make test", repo.path, exit_code=2)
    tracemalloc.start()
    try:
        report = await handlers.sync(engine)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.shell == 2 and report.shell_skipped == 1
    assert peak < huge / 4, f"the sync held {peak} bytes at once"
    rows = await engine.db.fetchall("select title from nodes where kind = 'shell_command'")
    assert sorted(t for (t,) in rows) == ["make build", "make test"]


async def test_a_log_read_a_batch_at_a_time_loses_nothing(
    engine: Engine,
    repo: Repo,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    """A long log is read a few records at a time (ingest.LOG_BATCH), its nodes written
    before the next are read: every command of the repository still lands once, the others
    and the malformed lines (counted) are passed over in every batch, and the cursor ends
    after the last whole line, whatever batch it fell in."""
    from nexusmem_core import ingest

    monkeypatch.setattr(ingest, "LOG_BATCH", 3)
    log = settings.home / hooklog.LOG_FILE
    ours = []
    for i in range(17):
        if i % 4 == 1:
            log_command(settings.home, f"ls elsewhere-{i}", tmp_path / "elsewhere")
        if i % 5 == 2:
            with open(log, "a") as handle:
                handle.write("{not json\n")
        log_command(settings.home, f"make step-{i}", repo.path, exit_code=i % 3)
        ours.append(f"make step-{i}")
    with open(log, "a") as handle:
        handle.write('{"v":1,"cmd":"still being wri')  # no newline: left for the next sync
    report = await handlers.sync(engine)
    assert (report.shell, report.shell_skipped) == (17, 3)
    rows = await engine.db.fetchall(
        "select title, json_extract(meta, '$.exit') from nodes where kind = 'shell_command'"
    )
    assert sorted(rows) == sorted((c, i % 3) for i, c in enumerate(ours))
    assert (await handlers.sync(engine)).shell == 0  # read to the end: nothing twice
    with open(log, "a") as handle:
        handle.write('ten"}\n')  # the torn line ends: malformed, and the one after it counts
    log_command(settings.home, "make last", repo.path)
    report = await handlers.sync(engine)
    assert (report.shell, report.shell_skipped) == (1, 1)
