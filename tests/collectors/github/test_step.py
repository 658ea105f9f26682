"""Issues and pull requests reach memory through gh: whole, redacted, incrementally, bounded,
and never at the cost of the rest of the sync."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import ensure_workspace, open_engine, read_project
from nexusmem_core.models import SyncReport

from ...conftest import Repo, run_cli
from .conftest import FakeGh

SECRET = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def configure(repo: Repo, **github: Any) -> None:
    workspace = repo.path / ".nexusmem"
    ensure_workspace(repo.path, Settings.from_env().home)
    config = {"sources": {"github": github}}
    (workspace / "config.json").write_text(json.dumps(config), encoding="utf-8")


async def sync(settings: Settings, repo: Repo, **options: Any) -> SyncReport:
    """One ``sync --github``, as its own run: the engine is opened and closed around it."""
    async with open_engine(settings, repo.path, create=True) as engine:
        return await handlers.sync(engine, github=True, embed=False, **options)


async def threads(settings: Settings, repo: Repo) -> dict[str, dict[str, Any]]:
    async with open_engine(settings, repo.path) as engine:
        rows = await engine.db.fetchall(
            "select ref, title, body, source, provenance, signal, meta, "
            "(select group_concat(path) from node_files f where f.node_seq = n.seq) "
            "from nodes n where kind = 'github_thread' order by ref"
        )
    keys = ("title", "body", "source", "provenance", "signal", "meta", "files")
    return {
        ref: dict(zip(keys, rest, strict=True)) | {"meta": json.loads(rest[5])}
        for ref, *rest in rows
    }


def listed_since(fake: FakeGh) -> list[str | None]:
    """The ``since`` each issue-list call asked for (None: from the start)."""
    out = []
    for argv in fake.calls():
        target = next((a for a in argv if a.startswith("repos/")), None)
        if target:
            params = dict(p.split("=", 1) for p in target.split("?", 1)[1].split("&"))
            out.append(params.get("since"))
    return out


def read_numbers(fake: FakeGh) -> list[int]:
    """The thread numbers the GraphQL calls asked for, in order."""
    import re

    return [
        int(n)
        for argv in fake.calls()
        if "graphql" in argv
        for n in re.findall(r"t(\d+): issueOrPullRequest", " ".join(argv))
    ]


async def test_issues_and_pull_requests_become_threads_with_their_comments_and_reviews(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    report = await sync(settings, gh_repo)
    assert (report.github, report.github_note, report.commits) == (5, "ok", 4)
    found = await threads(settings, gh_repo)
    assert sorted(found) == ["issue#1", "issue#3", "issue#4", "pr#2", "pr#5"]
    pr = found["pr#2"]
    assert pr["title"] == "#2 Double the upload backoff"
    assert (pr["source"], pr["provenance"], pr["files"]) == ("github", "recorded", "src/retry.py")
    assert pr["body"].startswith("Double the upload backoff\n\nFollow-up to #1")
    # Conversation comments, review summaries and inline review comments, in time order.
    assert (
        pr["body"].index("erin (review, changes requested): Please cap the backoff.")
        < (pr["body"].index("erin (on src/retry.py): This backoff never caps"))
        < pr["body"].index("dave: Benchmarks look good.")
    )
    facts = {key: pr["meta"][key] for key in ("number", "is_pr", "state", "author", "url")}
    assert facts == {
        "number": 2,
        "is_pr": True,
        "state": "merged",
        "author": "carol",
        "url": "https://github.com/acme/widget/pull/2",
    }
    issue = found["issue#1"]
    assert issue["meta"]["closed_by"] == gh_repo.git("rev-list", "HEAD").split()[2]
    assert issue["meta"]["labels"] == ["bug"] and issue["meta"]["comments"] == 2
    # A bug closed by its fix outranks a feature request, which outranks a bot's bump.
    signals = {ref: t["signal"] for ref, t in found.items()}
    assert signals["issue#1"] > signals["pr#2"] > signals["issue#3"] > signals["pr#5"]
    assert signals["issue#4"] < signals["issue#3"]  # closed as not planned
    async with open_engine(settings, gh_repo.path) as engine:
        response = await handlers.search(engine, "backoff never caps", vector=False)
    assert response.results[0].title == "#2 Double the upload backoff"


async def test_a_secret_in_a_comment_never_reaches_the_database(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    report = await sync(settings, gh_repo)
    assert report.redacted == 1
    body = (await threads(settings, gh_repo))["issue#1"]["body"]
    assert "GITHUB_TOKEN=[REDACTED] if that matters" in body
    files = [p for p in (gh_repo.path / ".nexusmem").iterdir() if p.is_file()]
    assert not any(SECRET.encode() in p.read_bytes() for p in files)


async def test_a_later_sync_asks_since_its_cursor_and_rereads_only_what_changed(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    await sync(settings, gh_repo)
    fake_gh.forget_calls()
    again = await sync(settings, gh_repo)
    assert again.github == 0 and again.github_note == "ok"
    assert listed_since(fake_gh) == ["2026-01-09T09:00:00Z"] and read_numbers(fake_gh) == []

    thread = fake_gh.thread(3)
    thread["updatedAt"] = "2026-01-12T08:00:00Z"
    thread["comments"]["nodes"].append(
        {
            "author": {"login": "bob"},
            "body": "Multipart resume landed upstream.",
            "createdAt": "2026-01-12T08:00:00Z",
        }
    )
    fake_gh.save()
    fake_gh.forget_calls()
    changed = await sync(settings, gh_repo)
    assert changed.github == 1 and read_numbers(fake_gh) == [3]
    assert (
        "bob: Multipart resume landed upstream."
        in (await threads(settings, gh_repo))["issue#3"]["body"]
    )
    async with open_engine(settings, gh_repo.path) as engine:
        (count,) = await engine.db.fetchone(
            "select count(*) from nodes where kind = ?", ("github_thread",)
        )
    assert count == 5  # the same node, updated in place


async def test_max_threads_bounds_a_sync_and_the_next_one_reads_on(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    configure(gh_repo, maxThreads=2)
    first = await sync(settings, gh_repo)
    assert first.github == 2 and "more are left" in first.github_note
    assert sorted(await threads(settings, gh_repo)) == ["issue#1", "pr#2"]
    second = await sync(settings, gh_repo)
    assert second.github == 2 and sorted(await threads(settings, gh_repo)) == [
        "issue#1",
        "issue#3",
        "issue#4",
        "pr#2",
    ]
    third = await sync(settings, gh_repo)
    fourth = await sync(settings, gh_repo)
    assert (third.github, fourth.github, fourth.github_note) == (1, 0, "ok")
    assert read_numbers(fake_gh) == [1, 2, 3, 4, 5]  # each thread read once


async def test_threads_changed_in_one_second_are_read_across_syncs_without_a_gap(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    """A bulk label edit gives many threads one update time; GitHub's since is inclusive."""
    for thread in fake_gh.threads:
        thread["updatedAt"] = "2026-02-01T00:00:00Z"
    fake_gh.save()
    configure(gh_repo, maxThreads=2)
    counts = [(await sync(settings, gh_repo)).github for _ in range(4)]
    assert counts == [2, 2, 1, 0]
    assert sorted(read_numbers(fake_gh)) == [1, 2, 3, 4, 5]


async def test_a_long_list_is_paged_and_read_in_batches(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    template = fake_gh.thread(4)
    fake_gh.threads = [
        template
        | {
            "number": n,
            "title": f"Report {n}",
            "updatedAt": f"2026-03-{1 + n // 24:02d}T{n % 24:02d}:00:00Z",
        }
        for n in range(1, 131)
    ]
    fake_gh.save()
    configure(gh_repo, maxThreads=1000)
    report = await sync(settings, gh_repo)
    assert report.github == 130 and report.github_note == "ok"
    assert sorted(read_numbers(fake_gh)) == list(range(1, 131))
    assert len(listed_since(fake_gh)) == 2  # 100 a page
    assert sum("graphql" in argv for argv in fake_gh.calls()) == 6  # 25 a query


@pytest.mark.parametrize(
    ("mode", "note"),
    [
        ("nologin", "off: gh is not logged in: run `gh auth login`"),
        ("ratelimit", "skipped: GitHub's rate limit is reached; a later sync reads on from here"),
        ("network", "skipped: GitHub cannot be reached (error connecting to api.github.com)"),
        ("badjson", "skipped: gh api repos/acme/widget/issues answered with something not JSON"),
    ],
)
async def test_when_gh_cannot_answer_the_sync_says_why_in_one_line_and_goes_on(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh, mode: str, note: str
):
    fake_gh.fail(mode)
    report = await sync(settings, gh_repo)
    assert (report.github_note, report.github, report.commits) == (note, 0, 4)
    assert "\n" not in report.github_note


async def test_without_gh_on_path_the_sync_goes_on(
    settings: Settings, gh_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    (bare / "git").symlink_to(
        next(
            Path(d) / "git"
            for d in os.environ["PATH"].split(os.pathsep)
            if (Path(d) / "git").exists()
        )
    )
    monkeypatch.setenv("PATH", str(bare))
    report = await sync(settings, gh_repo)
    assert report.github_note == "off: gh is not installed (https://cli.github.com)"
    assert report.commits == 4


async def test_a_gh_that_hangs_is_stopped_at_the_time_bound(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    configure(gh_repo, timeoutSeconds=1)
    fake_gh.fail("slow")
    report = await sync(settings, gh_repo)
    assert report.github_note == "skipped: gh did not answer within 1s"
    assert report.commits == 4


async def test_a_failure_midway_keeps_the_cursor_before_what_was_not_read(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    fake_gh.fail("ratelimit", after=1)  # the list answers, the threads do not
    report = await sync(settings, gh_repo)
    assert report.github == 0 and "rate limit" in report.github_note
    fake_gh.answer()
    assert (await sync(settings, gh_repo)).github == 5


async def test_a_thread_github_no_longer_returns_is_skipped_and_counted(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    fake_gh.thread(3)["gone"] = True
    fake_gh.save()
    report = await sync(settings, gh_repo)
    assert report.github == 4
    assert report.github_note == "ok; 1 unreadable record(s) skipped"


async def test_a_repository_not_on_github_is_skipped_without_calling_gh(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    gh_repo.git("remote", "set-url", "origin", "git@gitlab.com:acme/widget.git")
    report = await sync(settings, gh_repo)
    assert report.github_note == "off: no github.com remote"
    assert fake_gh.calls() == [] and report.commits == 4


def test_sync_github_says_how_many_threads_and_why_it_stopped(gh_repo: Repo, fake_gh: FakeGh):
    run_cli("init", "-C", str(gh_repo.path))
    done = run_cli("sync", "--github", "--no-embed", "-C", str(gh_repo.path))
    assert done.returncode == 0, done.stderr
    assert "github: 5 issue and pull-request thread(s) written" in done.stdout
    assert "github:" not in done.stderr
    fake_gh.fail("nologin")
    again = run_cli("sync", "--github", "--no-embed", "-C", str(gh_repo.path))
    assert again.returncode == 0
    assert "github: off: gh is not logged in: run `gh auth login`" in again.stderr
    assert "github: 0" not in again.stdout  # it did not run


def test_scan_github_previews_the_threads_and_writes_nothing(gh_repo: Repo, fake_gh: FakeGh):
    done = run_cli("scan-github", "-C", str(gh_repo.path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "0.75  2026-01-03  issue#1  #1 Upload times out on files over 2 GB"
    assert len(lines) == 5
    assert "5 thread node(s) would be written; 1 secret(s) redacted" in done.stderr
    assert not (gh_repo.path / ".nexusmem").exists()


async def test_scan_github_reads_at_most_its_limit(gh_repo: Repo, fake_gh: FakeGh):
    repo, config = await read_project(Settings.from_env(), gh_repo.path)
    found = await handlers.scan_github(repo, config, limit=2)
    assert [row["ref"] for row in found["threads"]] == ["issue#1", "pr#2"]
    assert found["github"] == "ok; 2 thread(s) read, the most one run reads; more are left"
    assert found["redacted"] == 1 and read_numbers(fake_gh) == [1, 2]
    assert not (gh_repo.path / ".nexusmem").exists()


def test_scan_github_says_why_when_gh_cannot_answer(gh_repo: Repo, fake_gh: FakeGh):
    fake_gh.fail("nologin")
    done = run_cli("scan-github", "-C", str(gh_repo.path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: gh is not logged in: run `gh auth login`\n"


async def test_pruning_the_source_removes_the_threads_and_reads_them_again_later(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    await sync(settings, gh_repo)
    async with open_engine(settings, gh_repo.path) as engine:
        pruned = await handlers.prune_source(engine, "github", apply=True)
    assert pruned.removed == 5 and pruned.reset == ["the github:since cursor"]
    assert "sources.github.enabled to false" in pruned.keep_out
    assert await threads(settings, gh_repo) == {}
    assert (await sync(settings, gh_repo)).github == 5


async def test_a_rebuild_without_github_keeps_the_threads_and_their_links(
    settings: Settings, gh_repo: Repo, fake_gh: FakeGh
):
    from .test_links import links

    await sync(settings, gh_repo)
    before, linked = await threads(settings, gh_repo), await links(settings, gh_repo)
    assert linked  # the fixture's threads name and close commits
    fake_gh.forget_calls()
    async with open_engine(settings, gh_repo.path) as engine:
        report = await handlers.sync(engine, embed=False, rebuild=True)
    assert fake_gh.calls() == [] and report.commits == 4
    assert await threads(settings, gh_repo) == before
    assert await links(settings, gh_repo) == linked
    assert any("the rebuild kept 5 GitHub thread(s)" in note for note in report.notes)
    await sync(settings, gh_repo)  # the cursor was kept: asked from where it was
    assert None not in listed_since(fake_gh)
