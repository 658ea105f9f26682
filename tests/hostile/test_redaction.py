"""Redaction against a published repository built to slow it down (issue 47, attack 4): a
commit holding one line of base64 of zero bytes, a megabyte of `A`, once cost a sync more than
a minute and 359 MB, since redaction looked up the run around every `aa` it found in it."""

from __future__ import annotations

import json
import resource
from collections.abc import Callable
from pathlib import Path

from ..conftest import Repo, run_cli

QUARTER = 256 * 1024
WHOLE = 4 * QUARTER


def publish(make_repo: Callable[[str], Repo], name: str, size: int) -> Repo:
    """A stranger's repository whose one commit adds ``size`` bytes of base64 zeros on one line,
    as a file and in a Markdown page (whose sections reach redaction whole, where a patch is cut
    first)."""
    zeros = "A" * size
    source = make_repo(name)
    source.commit(
        "Add the fixture",
        {"fixtures/zeros.b64": f"{zeros}\n", "docs/fixtures.md": f"# Fixtures\n\n{zeros}\n"},
    )
    return source


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def init_and_sync(clone: Path) -> float:
    """Run ``nexusmem init`` and ``nexusmem sync`` in ``clone``; return the CPU time they used."""
    before = _children_cpu()
    for command in ("init", "sync"):
        done = run_cli(command, "-C", str(clone))
        assert done.returncode == 0, done.stderr
    return _children_cpu() - before


def test_a_megabyte_of_base64_zeros_syncs_in_time_linear_in_its_size(make_repo, cloned):
    quarter = cloned(publish(make_repo, "quarter", QUARTER), "quarter-clone")
    whole = cloned(publish(make_repo, "whole", WHOLE), "whole-clone")
    small, large = init_and_sync(quarter), init_and_sync(whole)
    # Four times the line: a fixed start-up plus linear work costs at most four times as much,
    # the old redaction sixteen.
    assert large <= 6 * small, f"{large / small:.1f} times the CPU for 4 times the line"
    done = run_cli("query", "zeros.b64 fixture", "--json", "--no-vector", "-C", str(whole))
    assert done.returncode == 0, done.stderr
    summaries = [result["summary"] for result in json.loads(done.stdout)["results"]]
    assert any("zeros.b64" in text and "A" * 64 in text for text in summaries), summaries
