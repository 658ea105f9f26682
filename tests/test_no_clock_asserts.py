"""The suite asserts nothing about wall-clock time: a loaded machine is slow, not wrong.

Speed is measured in bench/, on a quiet machine, as medians. A test may still stop a hang
(tests/fuzz/bounds.within, a subprocess timeout), which fails it for that reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time", "process_time", "monotonic_ns", "perf_counter_ns"}


def _is_clock_call(node: ast.AST) -> bool:
    """Whether ``node`` is ``time.<clock>()``."""
    func = node.func if isinstance(node, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and func.attr in CLOCKS
        and isinstance(func.value, ast.Name)
        and func.value.id == "time"
    )


def _reads_a_clock(node: ast.AST, clocked: set[str]) -> bool:
    """Whether ``node`` calls ``time.<clock>()`` or names a variable that holds a reading."""
    return any(
        _is_clock_call(inner) or (isinstance(inner, ast.Name) and inner.id in clocked)
        for inner in ast.walk(node)
    )


def clock_asserts(source: str) -> list[int]:
    """The lines of ``source`` whose assert compares a clock reading."""
    tree = ast.parse(source)
    clocked: set[str] = set()
    for node in ast.walk(tree):  # names assigned a clock reading: `started = time.monotonic()`
        if not isinstance(node, ast.Assign):
            continue
        value = node.value
        while isinstance(value, ast.BinOp):  # `deadline = time.monotonic() + 60`
            value = value.left
        if _is_clock_call(value):
            clocked |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert) and _reads_a_clock(node.test, clocked)
    ]


def test_no_test_asserts_on_wall_clock_time() -> None:
    found = {
        str(path.relative_to(TESTS)): lines
        for path in sorted(TESTS.rglob("*.py"))
        if (lines := clock_asserts(path.read_text()))
    }
    assert found == {}


def test_the_check_finds_a_clock_assert() -> None:
    source = (
        "import time\n"
        "def test_x():\n"
        "    started = time.monotonic()\n"
        "    work()\n"
        "    assert time.monotonic() - started < 1\n"
        "    assert started\n"
        "    assert time.time() > 0\n"
        "    assert work() == 1\n"
    )
    assert clock_asserts(source) == [5, 6, 7]
