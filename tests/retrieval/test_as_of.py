"""Bi-temporal reads: ``--as-of`` sees memory as it was recorded then, on both arms; capture
tags say how each event reached memory."""

from __future__ import annotations

import json
import sqlite3

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine

from ..conftest import DAY, Repo, changed, run_cli
from ..fake_ollama import FakeOllama

JAN_10 = 1_768_003_200  # 2026-01-10T00:00:00Z: when the first sync "ran"


@pytest.fixture
def late_repo(repo: Repo) -> Repo:
    """Four commits recorded on Jan 10; then a teammate's backdated commit (its event is Jan 2,
    older than all of them) recorded only now."""
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    with sqlite3.connect(repo.path / ".nexusmem" / "memory.db") as conn:
        conn.execute("update nodes set created_at = ?", (JAN_10,))
        conn.execute("update projects set created_at = ?", (JAN_10,))
    repo.clock -= 10 * DAY
    repo.commit("fix: the upload retry budget was read from the wrong file", {"src/cfg.py": "x"})
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    return repo


def titles(repo: Repo, *flags: str) -> list[str]:
    out = run_cli("query", "--json", "-C", str(repo.path), "retry budget", *flags)
    assert out.returncode == 0, out.stderr
    return [r["title"] for r in json.loads(out.stdout)["results"]]


def test_as_of_excludes_what_was_recorded_later_even_if_it_happened_earlier(late_repo: Repo):
    late = "fix: the upload retry budget was read from the wrong file"
    assert late in titles(late_repo)
    before = titles(late_repo, "--as-of", "2026-01-15")
    assert late not in before and "fix: raise the retry budget after S3 upload timeouts" in before
    assert titles(late_repo, "--as-of", "2026-01-08") == []  # nothing was recorded yet


def test_an_unreadable_date_is_one_line(late_repo: Repo):
    out = run_cli("query", "-C", str(late_repo.path), "retry", "--as-of", "last tuesday")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert out.stderr.startswith("error: --as-of: 'last tuesday' is not a date")


async def test_the_vector_arm_reads_as_of_too(settings: Settings, late_repo: Repo):
    with FakeOllama() as fake:
        live = changed(settings, ollama_host=fake.url, embed_model=fake.model)
        async with open_engine(live, late_repo.path) as engine:
            await handlers.sync(engine)
            now = await handlers.search(engine, "wrong file", as_of=None)
            then = await handlers.search(engine, "wrong file", as_of="2026-01-15")
    assert now.vector == then.vector == "used"
    late = "fix: the upload retry budget was read from the wrong file"
    assert late in [r.title for r in now.results]
    assert late not in [r.title for r in then.results]
    assert all("vector" not in r.arms or r.title != late for r in then.results)


def test_capture_tags_say_how_an_event_reached_memory(late_repo: Repo):
    out = run_cli("query", "--json", "-C", str(late_repo.path), "retry budget")
    tags = {r["title"]: r["capture"] for r in json.loads(out.stdout)["results"]}
    assert tags["fix: raise the retry budget after S3 upload timeouts"] == "backfilled"
    text = run_cli("query", "-C", str(late_repo.path), "retry budget").stdout
    assert "[observed] [backfilled] fix: raise the retry budget" in text


def test_events_after_set_up_are_post_install_and_undated_ones_unknown(repo: Repo, home):
    import time

    from ..test_shell_sync import log_command

    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    log_command(home, "make upload-retry", repo.path, 2, time.time() + 5)
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    out = run_cli("query", "--json", "-C", str(repo.path), "upload retry")
    tags = {r["title"]: r["capture"] for r in json.loads(out.stdout)["results"]}
    assert tags["you: make upload-retry  (exit 2)"] == "post-install"
    with sqlite3.connect(repo.path / ".nexusmem" / "memory.db") as conn:
        conn.execute("update nodes set ts = null where title like 'feat:%'")
    out = run_cli("query", "--json", "-C", str(repo.path), "retry loop")
    undated = [r for r in json.loads(out.stdout)["results"] if r["title"].startswith("feat:")]
    assert undated and undated[0]["capture"] == "origin-unknown"
    assert undated[0]["date"] == "date unknown"


def test_a_rebuild_keeps_when_each_node_was_recorded(late_repo: Repo):
    before = titles(late_repo, "--as-of", "2026-01-15")
    assert (
        run_cli("sync", "-q", "--rebuild", "--no-embed", "-C", str(late_repo.path)).returncode == 0
    )
    assert titles(late_repo, "--as-of", "2026-01-15") == before


def test_the_first_moment_is_a_moment_and_out_of_range_dates_are_one_line(late_repo: Repo):
    assert titles(late_repo, "--as-of", "1970-01-01T00:00:00+00:00") == []
    out = run_cli("query", "-C", str(late_repo.path), "retry", "--as-of", "0001-01-01")
    assert out.returncode == 1 and out.stderr.startswith("error: --as-of:")
    assert "Traceback" not in out.stderr
