"""An error's signature: the line that names it, with what changes from run to run masked, so
that two commands dying on one error meet, and a near miss or a banner never does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusmem_core.collectors.agent.signature import (
    MAX_INPUT,
    Step,
    error_chars,
    failure_fields,
    head,
    signature,
    went_away,
)

from ...growth import costs

PYTEST_COLLECT = """Exit code 2
============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-8.0.0, pluggy-1.4.0
rootdir: /tmp/pytest-of-u/pytest-7/proj0
collected 0 items / 1 error

==================================== ERRORS ====================================
_______________________ ERROR collecting tests/test_a.py _______________________
ImportError while importing test module '/tmp/pytest-of-u/pytest-7/proj0/tests/test_a.py'.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_a.py:1: in <module>
    import yaml
E   ModuleNotFoundError: No module named 'yaml'
=========================== short test summary info ============================
ERROR tests/test_a.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.05s ==============================="""

PYTHON_TRACEBACK = """Exit code 1
Traceback (most recent call last):
  File "/home/u/proj/src/app.py", line 12, in <module>
    main()
  File "/home/u/proj/src/config.py", line 9, in load
    import yaml
ModuleNotFoundError: No module named 'yaml'"""

SAME = {
    "a traceback and pytest's collection error": (PYTEST_COLLECT, PYTHON_TRACEBACK),
    "another directory, line and duration": (
        "Exit code 1\n/tmp/a1/src/app.ts(3,5): error TS2322: Type 'string' is not assignable "
        "to type 'number'.",
        "Exit code 2\n/home/u/w/src/app.ts(41,17): error TS2322: Type 'string' is not "
        "assignable to type 'number'.\nDone in 3.2s",
    ),
    "an address and a number": (
        "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:"
        "\nmain.main()\n\t/home/u/app/main.go:8 +0x1d\nexit status 2",
        "panic: runtime error: index out of range [12] with length 4\n\ngoroutine 7 [running]:"
        "\nmain.main()\n\t/srv/app/main.go:31 +0x9f\nexit status 2",
    ),
    "a hash in a path": (
        "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/3f9a2c1b7d/out/run.json'",
        "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/77be01cd9e/out/run.json'",
    ),
    "a test's summary line and a traceback": (
        "FAILED tests/test_c.py::test_load - yaml.scanner.ScannerError: mapping values are not "
        "allowed here",
        'Traceback (most recent call last):\n  File "load.py", line 3, in <module>\n'
        "yaml.scanner.ScannerError: mapping values are not allowed here",
    ),
    "a checker run from two directories": (
        'src/app.py:3: error: Name "retry_budget" is not defined  [name-defined]',
        'app.py:14: error: Name "retry_budget" is not defined  [name-defined]',
    ),
    "one test failing under two commands": (
        "Exit code 1\n....F.\nFAILED tests/test_api.py::test_login - AssertionError: assert 1 == 2"
        "\n1 failed, 5 passed in 0.31s",
        "Exit code 1\nF\nFAILED tests/test_api.py::test_login - AssertionError: assert 7 == 2\n"
        "1 failed, 20 deselected in 0.02s",
    ),
}

DIFFERENT = {
    "another module": (PYTHON_TRACEBACK, PYTHON_TRACEBACK.replace("'yaml'", "'requests'")),
    "another test": (
        "FAILED tests/test_api.py::test_login - AssertionError",
        "FAILED tests/test_api.py::test_logout - AssertionError",
    ),
    "another error code": (
        "error[E0425]: cannot find value `x` in this scope",
        "error[E0308]: cannot find value `x` in this scope",
    ),
}

NAMED = {
    "a traceback's last line": (PYTHON_TRACEBACK, "ModuleNotFoundError: No module named 'yaml'"),
    "a chained exception's last": (
        "Traceback (most recent call last):\nKeyError: 'user_id'\n\nDuring handling of the above "
        "exception, another exception occurred:\n\nTraceback (most recent call last):\n"
        '  File "app.py", line 3, in <module>\nValueError: user record has no id',
        "ValueError: user record has no id",
    ),
    "Rust's first error, not cargo's banner": (
        "   Compiling foo v0.1.0 (/home/u/foo)\nerror[E0425]: cannot find value `x` in this "
        'scope\n --> src/main.rs:2:20\n\nerror: could not compile `foo` (bin "foo") due to 1 '
        "previous error",
        "error[E0425]: cannot find value `x` in this scope",
    ),
    "npm's message, not its log banner": (
        'npm ERR! Missing script: "tests"\nnpm ERR! \nnpm ERR! To see a list of scripts, run:\n'
        "npm ERR! A complete log of this run can be found in: /home/u/.npm/_logs/x.log",
        'npm: Missing script: "tests"',
    ),
    "a compiler's error line": (
        "main.c: In function 'main':\nmain.c:3:5: error: 'x' undeclared (first use in this "
        "function)\n    3 |     x = 1;",
        "main.c: error: 'x' undeclared (first use in this function)",
    ),
    "a Java cause": (
        'Exception in thread "main" java.lang.IllegalStateException: pool closed\n'
        "\tat com.x.Main.run(Main.java:10)\nCaused by: java.net.ConnectException: Connection "
        "refused to db.internal",
        "ConnectException: Connection refused to db.internal",
    ),
    "a Node error under its source line": (
        "/home/u/app/index.js:10\n  x.map(f)\n    ^\n\nTypeError: Cannot read properties of "
        "undefined (reading 'map')\n    at Object.<anonymous> (/home/u/app/index.js:10:5)\n\n"
        "Node.js v20.1.0",
        "TypeError: Cannot read properties of undefined (reading 'map')",
    ),
    "pip's error": (
        "ERROR: Could not find a version that satisfies the requirement nosuchpkg (from "
        "versions: none)\nERROR: No matching distribution found for nosuchpkg",
        "error: Could not find a version that satisfies the requirement nosuchpkg (from "
        "versions: none)",
    ),
    "an ANSI-coloured line": (
        "\x1b[31mE   ModuleNotFoundError: No module named 'yaml'\x1b[0m",
        "ModuleNotFoundError: No module named 'yaml'",
    ),
    # How agents and tools frame what a command printed (Gemini CLI's shell tool, a tool's
    # tag, a status before the text): the error is read from under it.
    "Gemini CLI's Output: label": (
        "<untrusted_context>\nOutput: E   ModuleNotFoundError: No module named 'yaml'\n"
        "Exit Code: 1\nProcess Group PGID: 4243\n</untrusted_context>",
        "ModuleNotFoundError: No module named 'yaml'",
    ),
    "a status before the text": (
        "Command failed with exit code 1: src/search.py:12: error: Library stubs not installed "
        'for "requests"  [import-untyped]\nFound 1 error in 1 file (checked 17 source files)',
        'search.py: error: Library stubs not installed for "requests" [import-untyped]',
    ),
    "a tool saying what it failed to do": (
        '[vite]: Rollup failed to resolve import "@acme/ui/Lightbox" from '
        '"/home/u/web/src/pages/Album.tsx".\nerror during build:',
        'failed to resolve import "Lightbox" from "Album.tsx"',
    ),
}

GENERIC = [
    "Exit code 1",
    "Exit code 1\nboom",
    "Exit code 1\nError",
    "Error: exit code 1",
    "Exit code 2\nmake: *** [Makefile:3: test] Error 1",
    "Exit code 1\nnpm ERR! Test failed.  See above for more details.",
    "Exit code 1\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1",
    "Command timed out after 2m 0.0s",
    'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 3',
    'Traceback (most recent call last):\n  File "x.py", line 1\nAssertionError',
    "AssertionError: assert 1 == 2",
    "error: command failed with exit code 1",
    "Error: Process completed with exit code 1.",
    "FAILED (failures=1)",
    "Build failed to complete",
    "Output: Error",
    "[build]: failed to run tests",
    "",
]


@pytest.mark.parametrize("case", SAME)
def test_one_error_in_two_runs_has_one_signature(case: str):
    first, second = (signature(text) for text in SAME[case])
    assert first is not None and second is not None
    assert first.id == second.id, (first.text, second.text)


@pytest.mark.parametrize("case", DIFFERENT)
def test_two_errors_have_two_signatures(case: str):
    first, second = (signature(text) for text in DIFFERENT[case])
    assert first is not None and second is not None and first.id != second.id


@pytest.mark.parametrize("case", NAMED)
def test_the_line_that_names_the_error_is_chosen(case: str):
    text, expected = NAMED[case]
    found = signature(text)
    assert found is not None and found.text == expected


@pytest.mark.parametrize("text", GENERIC)
def test_an_error_that_says_nothing_specific_has_no_signature(text: str):
    assert signature(text) is None


def test_the_printed_line_and_the_trace_files_are_kept_unmasked():
    found = signature(PYTHON_TRACEBACK)
    assert found is not None
    assert found.line == "ModuleNotFoundError: No module named 'yaml'"
    assert found.files == ["/home/u/proj/src/app.py", "/home/u/proj/src/config.py"]
    assert len(found.id) == 16


def test_the_signature_of_what_the_hook_keeps_is_redacted(tmp_path: Path):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    error, sig = failure_fields(
        f"Exit code 1\nValueError: bad token {token} for github api", str(tmp_path), str(tmp_path)
    )
    assert error is not None and sig is not None
    assert token not in error and token not in json.dumps(sig)


def test_the_setting_bounds_the_text_or_turns_it_off(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    long = "Exit code 1\n" + "x" * 5000 + "\nModuleNotFoundError: No module named 'yaml'"
    assert error_chars(str(home), {}) == 300
    error, sig = failure_fields(long, str(tmp_path), str(home))
    assert error is not None and len(error) <= 300 and sig is not None
    (home / "config.json").write_text(json.dumps({"sources": {"agent": {"errorChars": 80}}}))
    assert error_chars(str(home), {}) == 80
    assert error_chars(str(home), {"NEXUSMEM_AGENT_ERROR_CHARS": "0"}) == 0  # the variable wins
    assert error_chars(str(home), {"NEXUSMEM_AGENT_ERROR_CHARS": "lots"}) == 300
    (home / "config.json").write_text(json.dumps({"sources": {"agent": {"errorChars": 0}}}))
    assert failure_fields(long, str(tmp_path), str(home)) == (None, None)


def test_an_error_gone_is_shown_by_a_pass_of_what_failed_with_it():
    def step(title: str, ok: bool, sig: str | None = None) -> Step:
        return Step(ok, not ok, sig, title, title, [])

    steps = [
        step("pytest tests/a.py", False, "s"),
        step("pytest -k foo", False, "s"),
        step("pip install pyyaml", True),
        step("ls", True),
        step("pytest tests/b.py", True),  # the same program: the error is gone
    ]
    assert went_away(steps, "s") == (1, 4)
    assert went_away([*steps, step("pytest -x", False, "s")], "s") is None  # it came back
    assert went_away(steps[:4], "s") is None  # nothing that failed with it passed since
    assert went_away(steps, "other") is None
    assert head("FOO=1 pytest -k x") == "pytest" and head("npm run build") == "npm run"


def test_hostile_input_costs_linear_time():
    """No pattern backtracks over a long line: each is cut before any reads it, and the input
    is bounded (so sizes under the bound are the ones that can grow)."""
    quarter = MAX_INPUT // 8
    shapes = [
        "a" * quarter,  # one long line
        "Error: " + "0" * quarter,
        "at (" * (quarter // 4),
        ("E   " + "A." * 60 + "\n") * (quarter // 124),
        ("src/" * 50 + "x.py:1:" * 20 + "\n") * (quarter // 240),
        "FAILED " + "x::" * (quarter // 3),
        ("error: " + "deadbeef1" * 40 + "\n") * (quarter // 367),
    ]
    for shape in shapes:
        small, large = shape, shape * 4
        first, second = costs(signature, small, large, limit=8.0, floor=2e-4)
        assert second <= 8.0 * max(first, 2e-4), (shape[:30], first, second)
    huge = "Error: " + "x" * (50 * MAX_INPUT)
    first, second = costs(signature, huge[: 2 * MAX_INPUT], huge, limit=3.0, floor=2e-4)
    assert second <= 3.0 * max(first, 2e-4)  # past the bound, more input costs nothing more
