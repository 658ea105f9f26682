"""No secret leaves a copy on disk, whichever way it comes in; ordinary text comes out as it
went in. End to end: a slice of the labelled corpus through every channel's real entry point
(``channels.py``), the raw bytes searched afterwards. ``bench/bench_secret_channels.py`` runs
the whole corpus and prints the table.

The bars: in every channel at least 97% of the prefixed tokens and 90% of the keyword secrets
leave no copy; no ordinary command or failure message is changed by a hook; no sha in the
commit messages of two real repositories is redacted; a file named after a token, and
anything at all after ``scrub-secrets --yes``, leaves no copy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusmem_core.redact import redact

from .channels import ChannelRun, Negatives, Results, run_channels
from .corpus import CORPORA, corpus_commits, keyworded, ordinary_commands, prefixed
from .leaks import Verdicts, counts, sha_survival
from .ordinary import ordinary_errors

PREFIXED_BAR = 0.97
KEYWORD_BAR = 0.90


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """One run for the whole module, a fifth of the corpus (about 30 s on two cores): every
    fifth provider format, every other keyword style, every fifth ordinary command."""
    secrets = prefixed(seed=0)[::5] + keyworded(seed=0, per_style=1)[::2]
    negatives = Negatives(ordinary_commands()[::5], ordinary_errors()[::3])
    runs = run_channels(secrets, negatives, tmp=tmp_path_factory.mktemp("channels"))
    return Results(runs, secrets, negatives)


def _rows(results: Results) -> list[tuple[str, Verdicts]]:
    runs: list[tuple[str, Verdicts]] = [(r.label, r.stored) for r in results.runs]
    return [*runs, ("query --json", results.query()), ("after scrub", results.scrubbed())]


def _shortfalls(results: Results, klass: str, bar: float) -> list[str]:
    by_id = {s.id: s for s in results.secrets}
    found = []
    for label, verdicts in _rows(results):
        mine = {k: v for k, v in verdicts.items() if by_id[k].klass == klass and v != "unreached"}
        if not mine:
            continue
        caught = sum(v == "caught" for v in mine.values())
        if caught < bar * len(mine):
            left = sorted({by_id[k].provider for k, v in mine.items() if v != "caught"})
            found.append(f"{label}: {caught}/{len(mine)} caught; copies of {', '.join(left)}")
    return found


def test_prefixed_tokens_leave_no_copy_in_any_channel(results: Results):
    assert _shortfalls(results, "prefixed", PREFIXED_BAR) == []


def test_keyword_secrets_leave_no_copy_in_any_channel(results: Results):
    assert _shortfalls(results, "keyword", KEYWORD_BAR) == []


def test_every_secret_reaches_the_store_of_its_channel(results: Results):
    # Without this the bars above could pass by losing text: a dropped secret is not caught.
    assert {r.label: counts(r.stored)["unreached"] for r in results.runs} == {
        r.label: 0 for r in results.runs
    }


def _run(results: Results, name: str) -> ChannelRun:
    return next(r for r in results.runs if r.name == name)


def test_ordinary_commands_come_out_of_the_hooks_unchanged(results: Results):
    changed = {
        run.name: [pair for c in results.changes(run) for pair in c.changed]
        for run in (_run(results, "shell"), _run(results, "agent"))
    }
    missing = [c.missing for run in results.runs for c in results.changes(run)]
    assert changed == {"shell": [], "agent": []}
    assert set(missing) == {0}


def test_no_commit_sha_of_two_real_repositories_is_redacted(tmp_path: Path):
    if not (CORPORA / "click.bundle").exists():
        pytest.skip(f"the corpus bundles are not at {CORPORA}: set NEXUSMEM_CORPORA to them")
    commits = corpus_commits("click", tmp_path) + corpus_commits("httpx", tmp_path)
    report = sha_survival(commits, redact)
    assert report.messages > 4000 and report.shas > 50  # the corpora are there and mention shas
    assert (report.lost, report.own_lost) == ([], [])


def test_a_file_named_after_a_token_leaves_no_copy(results: Results):
    left = counts(_run(results, "filename").stored)
    assert (left["whole"], left["partial"]) == (0, 0)


def test_nothing_is_left_after_scrub_secrets(results: Results):
    left = {
        r.label: (counts(r.scrubbed)["whole"], counts(r.scrubbed)["partial"]) for r in results.runs
    }
    assert left == {r.label: (0, 0) for r in results.runs}
