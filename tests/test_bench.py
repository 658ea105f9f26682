"""``python -m bench`` parses its arguments: the speed set is not run by the suite (bench/ is
never part of the test run), but a broken command line would only show on the day it is."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "bench", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_speed_set_shows_its_options():
    shown = _bench("--help")
    assert shown.returncode == 0, shown.stderr
    for flag in ("--sizes", "--runs", "--bytecode", "--install", "--paths"):
        assert flag in shown.stdout


def test_a_size_that_is_neither_a_corpus_nor_a_count_is_one_line_naming_it():
    refused = _bench("--sizes", "clik", "--runs", "1")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "python -m bench: argument --sizes: 'clik' is neither 'corpora', a corpus (click, "
        "werkzeug, httpx, ripgrep, cobra, axios, serde, caddy, preact, attrs, requests) nor a "
        "commit count such as 10k (see --help)"
    ]
