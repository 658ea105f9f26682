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


# Secrets the table once missed, as a repository carries them: a token a commit message wraps,
# a key named in prose, a YAML block scalar, two literals Python joins into one, a word the
# shell continues on the next line (issue 47, attack 9). Each piece must leave no copy.
WRAPPED = ("ghp_16C7e42F292c6912E77", "10c838347Ae178B4a")
PROSE = "Qm9vM2xvbmc4NzY1NDMyMQx"
BLOCK = "Zx9!qL2#mP7wVb4tR8"
HALVES = ("9f8e7d6c5b4a3f", "2e1d0c9b8a7f6e")
CONTINUED = ("7Hq2Lm9Xv4Rt8", "Kp3Wn6Z2Bd5Fj")


def publish_missed(make_repo: Callable[[str], Repo]) -> Repo:
    source = make_repo("missed")
    source.commit(
        "Fix the staging deploy\n\nThe job failed because the CLI was given "
        f"{WRAPPED[0]}\n{WRAPPED[1]} from an old runbook; it reads the environment now.",
        {
            "docs/rotation.md": f"# Rotation\n\nThe upload failed for key {PROSE} after it.\n",
            "config/db.yaml": f"db:\n  password: |\n    {BLOCK}\n  host: db\n",
            "src/settings.py": f'API_KEY = ("{HALVES[0]}" "{HALVES[1]}")\n',
            "scripts/deploy.sh": f"export DEPLOY_TOKEN={CONTINUED[0]}\\\n  {CONTINUED[1]}\n",
        },
    )
    return source


def _stored(clone: Path, home: Path) -> bytes:
    files = [*(clone / ".nexusmem").rglob("*"), *home.rglob("*")]
    return b"\0".join(path.read_bytes() for path in files if path.is_file())


def test_secrets_written_the_ways_once_missed_leave_no_copy(make_repo, cloned, home):
    clone = cloned(publish_missed(make_repo), "missed-clone")
    init_and_sync(clone)
    done = run_cli("query", "staging deploy rotation settings", "--json", "-C", str(clone))
    assert done.returncode == 0, done.stderr
    stored = _stored(clone, home) + done.stdout.encode()
    assert b"old runbook" in stored and b"API_KEY" in stored  # the text is there
    pieces = [*WRAPPED, PROSE, BLOCK, *HALVES, *CONTINUED]
    assert [piece for piece in pieces if piece.encode() in stored] == []
