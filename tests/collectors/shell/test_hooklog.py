"""The hook log: read from a cursor, survive truncation and rotation, skip what is broken."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.collectors.shell.hooklog import LogCursor, read_new

from ...conftest import modules_loaded_by


def rec(i: int, cmd: str = "make test") -> dict:
    return {"v": 1, "id": f"id{i}", "cmd": cmd, "shell": "bash", "cwd": "/r", "exit": 0}


def test_append_creates_a_private_file_and_reads_back(tmp_path: Path):
    hooklog.append(tmp_path, rec(1))
    path = tmp_path / hooklog.LOG_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    result = read_new(path, LogCursor())
    assert [r["id"] for r in result.records] == ["id1"]


def test_reading_resumes_at_the_cursor(tmp_path: Path):
    for i in range(3):
        hooklog.append(tmp_path, rec(i))
    path = tmp_path / hooklog.LOG_FILE
    first = read_new(path, LogCursor())
    hooklog.append(tmp_path, rec(3))
    second = read_new(path, LogCursor.decode(first.cursor.encode()))
    assert [r["id"] for r in second.records] == ["id3"] and not second.restarted


def test_truncated_or_rotated_logs_are_read_from_the_start(tmp_path: Path):
    path = tmp_path / hooklog.LOG_FILE
    for i in range(5):
        hooklog.append(tmp_path, rec(i))
    cursor = read_new(path, LogCursor()).cursor
    path.write_text(json.dumps(rec(9)) + "\n")  # rotated: shorter, another first line
    result = read_new(path, cursor)
    assert result.restarted and [r["id"] for r in result.records] == ["id9"]
    os.truncate(path, 0)
    assert read_new(path, cursor).records == []


def test_malformed_lines_are_counted_and_a_partial_last_line_waits(tmp_path: Path):
    path = tmp_path / hooklog.LOG_FILE
    lines = [
        json.dumps(rec(1)),
        "{not json",
        json.dumps({"id": "x"}),
        "[1,2]",
        "x" * (hooklog.MAX_LINE + 10),
        json.dumps(rec(2)),
    ]
    path.write_text("\n".join(lines) + "\n" + json.dumps(rec(3))[:20])
    result = read_new(path, LogCursor())
    assert [r["id"] for r in result.records] == ["id1", "id2"]
    assert result.malformed == 4
    with open(path, "a") as handle:
        handle.write(json.dumps(rec(3))[20:] + "\n")
    assert [r["id"] for r in read_new(path, result.cursor).records] == ["id3"]


def test_two_writers_after_a_torn_line_lose_nothing_and_count_nothing(tmp_path: Path):
    path = tmp_path / hooklog.LOG_FILE
    path.write_text(json.dumps(rec(1)) + "\n" + json.dumps(rec(2))[:15])  # a writer died
    # Both writers saw the torn end before either wrote, so each starts a fresh line.
    with open(path, "a") as handle:
        handle.write("\n" + json.dumps(rec(3)) + "\n" + "\n" + json.dumps(rec(4)) + "\n")
    hooklog.append(tmp_path, rec(5))  # a later writer sees a clean end
    result = read_new(path, LogCursor())
    assert [r["id"] for r in result.records] == ["id1", "id3", "id4", "id5"]
    assert result.malformed == 1  # the torn record alone


def test_a_log_of_other_records_is_read_with_its_own_parser_and_mark(tmp_path: Path):
    """Records without a command (the notes the agents were told) read through ``parse``;
    lines without ``mark`` are passed over unparsed and uncounted, and the cursor still
    moves past them."""
    path = tmp_path / "notes.jsonl"
    mine = [{"root": "/r", "text": f"note {i}"} for i in range(3)]
    for i, note in enumerate(mine):
        hooklog.append(tmp_path, note, path.name)
        hooklog.append(tmp_path, {"root": "/other", "text": f"theirs {i}"}, path.name)
    hooklog.append(tmp_path, {"root": "/r", "text": 7}, path.name)  # malformed: no text
    seen: list[bytes] = []

    def parse(line: bytes) -> dict | None:
        seen.append(line)
        record = json.loads(line)
        return record if isinstance(record["text"], str) else None

    first = read_new(path, LogCursor(), most=2, parse=parse, mark=b'"root":"/r"')
    assert first.records == mine[:2] and first.malformed == 0
    rest = read_new(path, first.cursor, parse=parse, mark=b'"root":"/r"')
    assert rest.records == mine[2:] and rest.malformed == 1
    assert rest.cursor.offset == path.stat().st_size
    assert len(seen) == 4 and not any(b"/other" in line for line in seen)
    plain = read_new(path, LogCursor())  # the default parser wants a command: none has one
    assert plain.records == [] and plain.malformed == 7


def test_command_hash_is_keyed_and_stable(tmp_path: Path):
    a = hooklog.command_hash(tmp_path, "mysql -psecret1")
    assert a == hooklog.command_hash(tmp_path, "mysql -psecret1")
    assert a != hooklog.command_hash(tmp_path, "mysql -psecret2")
    assert stat.S_IMODE((tmp_path / "hook.key").stat().st_mode) == 0o600
    other = tmp_path / "other"
    assert hooklog.command_hash(other, "mysql -psecret1") != a  # another key, another hash


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    junk=st.lists(
        st.one_of(
            st.binary(max_size=300),
            st.just(json.dumps(rec(7)).encode()),
            st.just(b"\xff\xfe\x00{]"),
            st.just(b"x" * 5000),
        ),
        max_size=30,
    )
)
def test_any_bytes_are_read_without_error(tmp_path_factory, junk: list[bytes]):
    path = tmp_path_factory.mktemp("log") / hooklog.LOG_FILE
    path.write_bytes(b"\n".join(junk) + b"\n")
    result = read_new(path, LogCursor())
    assert all(isinstance(r["id"], str) and r["cmd"] for r in result.records)
    assert result.cursor.offset <= path.stat().st_size
    again = read_new(path, result.cursor)  # nothing new after reading to the cursor
    assert again.records == [] and again.malformed == 0


def test_the_shell_recorder_imports_nothing_heavy():
    """It runs after every command at the prompt: no mcp, ollama, pydantic or numpy, and not
    typing either (~3 ms of each command's recorder)."""
    loaded = modules_loaded_by("nexusmem_core.collectors.shell.record")
    assert "nexusmem_core.collectors.shell.record" in loaded
    assert loaded & {"mcp", "ollama", "pydantic", "numpy", "aiosqlite", "typing"} == set()


def test_a_token_across_the_recorders_size_limit_is_redacted_before_the_cut(tmp_path: Path):
    """The recorder as the shell hooks run it: text on stdin, facts as options."""
    import subprocess
    import sys

    from nexusmem_core.collectors.shell.record import MAX_COMMAND

    secret = "glpat-" + "Qw3rTy8uIoP1aSdFgH2j"
    command = "echo " + "y" * (MAX_COMMAND - 5 - 15) + " " + secret + " done"  # 14 chars before
    done = subprocess.run(
        [sys.executable, "-m", "nexusmem_core.collectors.shell.record", "--home", str(tmp_path),
         "--shell", "bash", "--exit", "0", "--cwd", str(tmp_path)],
        input=command.encode(),
        capture_output=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = (tmp_path / hooklog.LOG_FILE).read_text()
    assert secret[:14] not in log and secret[-6:] not in log
    (record,) = [json.loads(line) for line in log.splitlines()]
    assert len(record["cmd"]) <= MAX_COMMAND and record["redactions"] == 1


def test_last_record_reads_back_across_chunks_and_over_long_lines(tmp_path: Path):
    """The last record of each shell, found from the end of a log far larger than one read,
    with an over-long line and a half-written one in the way."""
    import random

    rng = random.Random(7)
    shells = ["bash", "zsh", "fish"]
    written = []
    for i in range(3000):
        record = {**rec(i, "x" * rng.randrange(1, 400)), "shell": rng.choice(shells[:2])}
        written.append(record)
        hooklog.append(tmp_path, record)
        if i == 2990:
            with open(tmp_path / hooklog.LOG_FILE, "a") as handle:
                handle.write('{"shell":"zsh"' + "y" * (hooklog.MAX_LINE * 3) + "\n")
    path = tmp_path / hooklog.LOG_FILE
    with open(path, "a") as handle:
        handle.write(json.dumps({**rec(9999), "shell": "zsh"})[:30])  # still being written
    for shell in shells:
        got = hooklog.last_record(path, lambda r, s=shell: r["shell"] == s, shell.encode())
        expected = [r for r in written if r["shell"] == shell]
        assert (got and got["id"]) == (expected[-1]["id"] if expected else None)
    assert hooklog.last_record(tmp_path / "missing.jsonl", bool, b"") is None


def test_a_byte_order_mark_before_the_command_is_not_part_of_it(tmp_path: Path):
    """Windows PowerShell's stdin writer puts a BOM first when the console is set to UTF-8."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "nexusmem_core.collectors.shell.record", "--home", str(tmp_path),
         "--shell", "pwsh", "--exit", "0", "--cwd", str(tmp_path)],
        input="\ufeffGet-ChildItem café".encode(),
        capture_output=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = read_new(tmp_path / hooklog.LOG_FILE, LogCursor()).records
    assert record["cmd"] == "Get-ChildItem café"


def test_the_recorder_file_runs_without_site_packages_and_ignores_the_current_folder(
    tmp_path: Path,
):
    """As the scripts run it (``python -S -P hook.py``): a command lands in the log, and a
    ``nexusmem_core`` folder where the command was typed (a checkout of NexusMem, say) is
    not what runs. ``-m`` would have put that folder first on the path."""
    import subprocess
    import sys

    from nexusmem_core.collectors.shell.scripts import RECORDER, render

    decoy = tmp_path / "work" / "nexusmem_core"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise SystemExit('the decoy ran')\n")
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-S", "-P", RECORDER, "--home", str(home), "--shell", "bash",
         "--exit", "2", "--cwd", str(decoy.parent)],
        input=b"make test",
        capture_output=True,
        cwd=decoy.parent,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    (record,) = read_new(home / hooklog.LOG_FILE, LogCursor()).records
    assert (record["cmd"], record["exit"], record["shell"]) == ("make test", 2, "bash")
    for shell in ("bash", "zsh", "fish", "pwsh"):
        assert RECORDER in render(shell, sys.executable, str(home))
