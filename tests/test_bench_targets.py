"""The speed set judges each first sync against issue 18's target, and a small history against
issue 51's: 3x the git floor, but at least 0.5 s where the floor is under 0.15 s."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT


@pytest.fixture
def report(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # the benchmarks import each other so
    import report

    yield report
    for name in ("report", "_common", "gen_repo", "measure"):
        sys.modules.pop(name, None)


def _first(seconds: float) -> dict[str, float]:
    return {
        "seconds": seconds,
        "cpu_seconds": seconds,
        "self_cpu_seconds": seconds / 2,
        "self_hwm_kb": 40 * 1024,
        "tree_maxrss_kb": 40 * 1024,
    }


def _row(report: Any, capsys: pytest.CaptureFixture[str], floor: float, wall: float) -> str:
    import measure

    floors = {"tiny": [{"seconds": floor, "cpu_seconds": floor}] * 3}
    samples = {"tiny": {"editable, bytecode on": measure.Samples(first=[_first(wall)] * 3)}}
    repos = [measure.Target("tiny", Path("/nowhere"), 40, generated=False)]
    report.first_sync(floors, samples, repos)
    return next(line for line in capsys.readouterr().out.splitlines() if "| tiny" in line)


def test_a_history_with_a_floor_over_0_15_s_keeps_three_times_its_floor(report: Any) -> None:
    assert report.first_sync_limit(0.15) == pytest.approx(0.45)
    assert report.first_sync_limit(1.0) == pytest.approx(3.0)


def test_a_small_history_may_take_half_a_second(report: Any) -> None:
    assert report.first_sync_limit(0.05) == pytest.approx(0.5)
    assert report.first_sync_limit(0.149) == pytest.approx(0.5)
    assert report.first_sync_limit(0.0) == pytest.approx(0.5)


def test_a_small_history_passes_at_0_45_s_where_three_times_its_floor_would_miss(
    report: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    row = _row(report, capsys, floor=0.05, wall=0.45)
    assert "9.00x" in row  # its ratio to the floor is still shown
    assert "0.90x pass" in row
    assert "MISS" not in row


def test_a_small_history_over_half_a_second_misses(
    report: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "1.20x MISS" in _row(report, capsys, floor=0.05, wall=0.6)


def test_a_large_history_over_three_times_its_floor_misses(
    report: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "1.10x MISS" in _row(report, capsys, floor=1.0, wall=3.3)
