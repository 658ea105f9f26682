"""A thread is linked to the commits it names or that closed it, and a failure to the one
thread its own text stands in; a missed link is better than a wrong one."""

from __future__ import annotations

from pathlib import Path

from nexusmem_core.collectors.agent.recall import AGENT_LOG
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.collectors.shell.record import build_record
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine

from ...conftest import Repo
from .conftest import FakeGh
from .test_step import sync

T0 = 1_767_400_000


async def links(settings: Settings, repo: Repo) -> set[tuple[str, str, str]]:
    """(kind, from, to): a thread or commit by its ref, a command by its text."""
    async with open_engine(settings, repo.path) as engine:
        rows = await engine.db.fetchall(
            "select l.kind, s.kind, s.ref, s.title, d.kind, d.ref from links l "
            "join nodes s on s.id = l.src join nodes d on d.id = l.dst"
        )
    return {
        (kind, title if src_kind == "shell_command" else src, dst)
        for kind, src_kind, src, title, _, dst in rows
    }


def shas(repo: Repo) -> list[str]:
    return repo.git("rev-list", "--reverse", "HEAD").split()


def typed(home: Path, command: str, cwd: Path, exit_code: int) -> None:
    record = build_record(
        command,
        {"shell": "bash", "exit": str(exit_code), "cwd": str(cwd), "start": str(T0)},
        home,
    )
    assert record is not None
    hooklog.append(home, record)


def agent_ran(home: Path, ident: str, command: str, cwd: Path, error: str) -> None:
    record = {
        "v": 1,
        "id": ident,
        "shell": "claude-code",
        "session": "s",
        "cwd": str(cwd),
        "cmd": command,
        "cmd_hash": hooklog.command_hash(home, command),
        "outcome": "failed",
        "exit": 1,
        "error": error,
        "edited": [],
        "ts": T0,
    }
    hooklog.append(home, record, AGENT_LOG)


async def test_a_thread_is_linked_to_the_commit_that_closed_it_and_the_commits_it_names(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    await sync(settings, gh_repo)
    feat, fix = shas(gh_repo)[:2]
    # Issue 1 was closed by the fix (GitHub's close event); it does not also "mention" it.
    # Pull request 2 names the feature commit by its short sha; its merge commit is not here.
    assert await links(settings, gh_repo) == {
        ("closes", "issue#1", fix),
        ("mentions", "pr#2", feat),
    }


async def test_a_commit_that_says_it_fixes_a_thread_closes_it_when_it_arrives(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    await sync(settings, gh_repo)
    docs = gh_repo.commit(
        "docs: how to resume an upload\n\nCloses #3. Also fixes other/repo#4.",
        {"docs/resume.md": "# Resume\n"},
    )
    report = await sync(settings, gh_repo)  # no thread changed: the new commit is enough
    assert report.github == 0
    found = await links(settings, gh_repo)
    assert ("closes", "issue#3", docs) in found
    assert not any(dst == docs for kind, src, dst in found if src == "issue#4")


async def test_a_failure_is_linked_to_the_one_thread_its_error_or_command_stands_in(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh, home: Path
):
    timeout = (
        "Exit code 1\nTraceback (most recent call last):\n"
        '  File "widget/upload.py", line 41, in upload\n'
        "botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL: "
        '"https://s3.amazonaws.com/widget-uploads"'
    )
    agent_ran(home, "a1", "python -m widget.upload big.iso", gh_repo.path, timeout)
    # In two threads: names neither.
    denied = "Exit code 1\nPermissionError: [Errno 13] Permission denied: '/var/cache/widget'"
    agent_ran(home, "a2", "touch /var/cache/widget/lock", gh_repo.path, denied)
    # Nothing in it that could single out one discussion.
    agent_ran(home, "a3", "pytest", gh_repo.path, "Exit code 2\nTraceback (most recent call last):")
    typed(home, "npm run build", gh_repo.path, 1)  # in issue 3 too, but says too little
    typed(home, "python -m widget.upload --resume other.iso", gh_repo.path, 1)  # in none
    await sync(settings, gh_repo)
    # A failure that comes in after the threads is linked too (looked up on its own).
    typed(home, "python -m widget.upload --resume big.iso", gh_repo.path, 1)  # in issue 3
    report = await sync(settings, gh_repo)
    assert report.github == 0 and report.agent == 0
    found = {link for link in await links(settings, gh_repo) if link[0] == "discussion"}
    assert found == {
        ("discussion", "python -m widget.upload big.iso", "issue#1"),
        ("discussion", "python -m widget.upload --resume big.iso", "issue#3"),
    }


async def test_a_thread_edited_to_drop_a_sha_loses_its_link(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    await sync(settings, gh_repo)
    pr = fake_gh.thread(2)
    pr["body"] = "Follow-up to #1: the retry loop gives up too early under load."
    pr["updatedAt"] = "2026-01-20T00:00:00Z"
    fake_gh.save()
    report = await sync(settings, gh_repo)
    assert report.github == 1
    assert not any(src == "pr#2" for _, src, _ in await links(settings, gh_repo))
    assert "0 failure discussion(s) added, 1 removed" in report.notes[-1]


async def test_a_commit_named_before_it_was_here_is_linked_when_it_arrives(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    gh_repo.git("checkout", "-q", "-b", "side")
    side = gh_repo.commit("feat: resumable uploads", {"src/resume.py": "PARTS = 8\n"})
    gh_repo.git("checkout", "-q", "main")
    fake_gh.thread(3)["body"] += f"\n\nPrototype on a branch: {side[:9]}"
    fake_gh.save()
    await sync(settings, gh_repo)
    assert not any(src == "issue#3" for _, src, _ in await links(settings, gh_repo))
    gh_repo.git("merge", "-q", "--ff-only", "side")
    report = await sync(settings, gh_repo)
    assert report.github == 0 and report.commits == 1
    assert ("mentions", "issue#3", side) in await links(settings, gh_repo)
