"""Rewriting a hook log: only lines with a secret change, appends that land meanwhile are kept,
and cursors taken on the old file read on the new one as if nothing had moved."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.hygiene import scrub_logs
from nexusmem_core.hygiene.scrub_logs import scrub_line, scrub_log
from nexusmem_core.redact import RULES, redact, redact_count, redact_tally

from ..test_redact import SECRET_COMMANDS

TOKEN = "ghp_" + "Z9y8X7w6" * 4 + "Q1r2"


def record(n: int, cmd: str) -> dict[str, object]:
    return {"v": 1, "id": f"r{n}", "shell": "bash", "cwd": "/w", "cmd": cmd, "redactions": 0}


@pytest.fixture
def log(home: Path) -> Path:
    """Five records, the third and the fifth with a secret."""
    for n, cmd in enumerate(["make", "ls", f"echo {TOKEN}", "make test", "mysql -pS3cret db"]):
        hooklog.append(home, record(n, cmd))
    return home / hooklog.LOG_FILE


@pytest.mark.parametrize("text", [r.example for r in RULES] + [c for c, _ in SECRET_COMMANDS])
def test_the_tally_redacts_exactly_as_redact_does(text: str):
    redacted, tally = redact_tally(text)
    assert redacted == redact(text) and sum(tally.values()) == redact_count(text)[1]
    assert tally and set(tally) <= {r.name for r in RULES}


@given(st.text(alphabet="abcAKIA0123456789 =-_:/@'\"ghp\n", max_size=120))
def test_the_tally_agrees_with_redact_on_any_text(text: str):
    assert redact_tally(text)[0] == redact(text)


def test_a_dry_run_counts_and_changes_nothing(log: Path):
    before = log.read_bytes()
    result, remap = scrub_log(log, apply=False)
    assert (result.lines, result.rules, remap) == (
        2,
        {"github_token": 1, "mysql_password": 1},
        None,
    )
    assert log.read_bytes() == before


def test_only_lines_with_a_secret_change(log: Path):
    before = log.read_bytes().splitlines(keepends=True)
    os.utime(log, (1_767_225_600, 1_767_225_600))
    result, remap = scrub_log(log, apply=True)
    assert log.stat().st_mtime == 1_767_225_600  # still when the last command was recorded
    after = log.read_bytes().splitlines(keepends=True)
    assert result.lines == 2 and remap is not None
    assert after[0] == b" " + before[0]  # the head moves: see scrub_logs' docstring
    assert after[1] == before[1] and after[3] == before[3]
    assert TOKEN.encode() not in log.read_bytes() and b"S3cret" not in log.read_bytes()
    records = hooklog.read_new(log, hooklog.LogCursor()).records
    assert [r["cmd"] for r in records][2:] == [
        "echo [REDACTED]",
        "make test",
        "mysql -p[REDACTED] db",
    ]
    assert records[4]["redactions"] == 1
    assert log.stat().st_mode & 0o777 == 0o600
    assert scrub_log(log, apply=True) == (scrub_logs.LogScrub(str(log)), None)  # nothing left


def test_cursors_move_to_the_same_line_of_the_new_log(log: Path):
    ends = [0]
    for line in log.read_bytes().splitlines(keepends=True):
        ends.append(ends[-1] + len(line))
    head = hooklog.read_new(log, hooklog.LogCursor()).cursor.head
    old = {at: hooklog.LogCursor(at, head).encode() for at in ends}
    _, remap = scrub_log(log, apply=True)
    assert remap is not None
    for n, at in enumerate(ends):
        moved = hooklog.LogCursor.decode(remap.cursor(old[at]))
        read = hooklog.read_new(log, moved)
        assert not read.restarted and [r["id"] for r in read.records] == [
            f"r{i}" for i in range(n, 5)
        ]
    stale = hooklog.LogCursor(ends[2], "another-head").encode()
    assert remap.cursor(stale) == stale  # its reader restarts from 0, as it would have
    unmoved = hooklog.read_new(log, hooklog.LogCursor.decode(old[ends[2]]))
    assert unmoved.restarted  # a cursor that escaped the remapping re-reads, never mis-reads


def test_lines_appended_during_the_copy_or_at_the_rename_are_kept(
    log: Path, home: Path, monkeypatch: pytest.MonkeyPatch
):
    calls = Counter[str]()
    real_scrub, real_replace = scrub_logs.scrub_line, os.replace

    def scrub_and_append(line: bytes, tally: Counter[str], fields: tuple[str, ...]) -> bytes:
        calls["scrub"] += 1
        if calls["scrub"] == 2:  # a shell records a command while the copy runs
            hooklog.append(home, record(5, f"curl -u bob:{TOKEN[4:]} x"))
        return real_scrub(line, tally, fields)

    def append_then_replace(src: str, dst: str) -> None:
        # A hook that opened the old file just before the rename writes after it.
        hooklog.append(home, record(6, f"echo late {TOKEN}"))
        real_replace(src, dst)
        hooklog.append(home, record(7, "make after"))  # opened the new file

    monkeypatch.setattr(scrub_logs, "scrub_line", scrub_and_append)
    monkeypatch.setattr(scrub_logs.os, "replace", append_then_replace)
    result, _ = scrub_log(log, apply=True)
    records = hooklog.read_new(log, hooklog.LogCursor()).records
    assert sorted(r["id"] for r in records) == [f"r{n}" for n in range(8)]
    assert [r["id"] for r in records][:6] == [f"r{n}" for n in range(6)]  # order kept
    assert TOKEN[4:].encode() not in log.read_bytes() and result.lines == 4


def test_a_torn_line_is_redacted_as_text(home: Path):
    hooklog.append(home, record(0, "make"))
    log = home / hooklog.LOG_FILE
    with open(log, "ab") as handle:
        handle.write(f'{{"id":"r1","cmd":"echo {TOKEN}'.encode())  # its writer died here
    result, _ = scrub_log(log, apply=True)
    assert result.lines == 1 and log.read_bytes().endswith(b'"cmd":"echo [REDACTED]')
    hooklog.append(home, record(2, "make test"))
    read = hooklog.read_new(log, hooklog.LogCursor())
    assert [r["id"] for r in read.records] == ["r0", "r2"] and read.malformed == 1


def test_an_agent_record_loses_the_secrets_of_its_command_and_its_error(home: Path):
    agent = {"id": "t", "cmd": f"gh auth login --with-token {TOKEN}", "error": f"bad {TOKEN}"}
    hooklog.append(home, agent, "agent-events.jsonl")
    tally: Counter[str] = Counter()
    line = (home / "agent-events.jsonl").read_bytes()
    assert scrub_line(line, tally).count(b"[REDACTED]") == 2
    assert tally == {"secret_option": 1, "github_token": 1}
    assert scrub_line(b"make\n", tally) == b"make\n"


def test_an_agent_records_error_line_is_scrubbed_with_its_command_and_error():
    """The line an error signature was taken from is text the agent printed: an older table
    may have missed a secret in it, as in the error it came from."""
    line = f"fatal: could not read from https://{TOKEN}@github.com/acme/app.git"
    agent = {**record(1, "git push"), "error": line, "sig": {"id": "ab", "line": line}}
    raw = (json.dumps(agent) + "\n").encode()
    tally: Counter[str] = Counter()
    scrubbed = json.loads(scrub_line(raw, tally))
    assert TOKEN not in json.dumps(scrubbed)
    assert scrubbed["sig"]["line"] == redact(line) and scrubbed["error"] == redact(line)
    assert tally == Counter({"github_token": 2})


def test_a_note_loses_the_secrets_of_its_text_and_command_and_counts_its_text_s(home: Path):
    """The notes the agents were told: their own log, whose text is ``text`` (what
    ``redactions`` counts) beside the recall's ``cmd``; a command log's fields stay as
    they were for it."""
    (notes,) = [log for log in scrub_logs.LOGS if log.file == "agent-notes.jsonl"]
    note = {"id": "n1", "root": "/w", "cmd": f"echo {TOKEN}", "text": f"`echo {TOKEN}` failed"}
    hooklog.append(home, {**note, "redactions": 0}, notes.file)
    path = home / notes.file
    assert scrub_log(path, apply=False, fields=notes.fields)[0].lines == 1
    assert scrub_log(path, apply=False)[0].lines == 1  # a command log's fields: cmd alone
    result, remap = scrub_log(path, apply=True, fields=notes.fields)
    assert result.lines == 1 and remap is not None and notes.cursor == "agent:notes"
    (scrubbed,) = hooklog.read_new(path, hooklog.LogCursor(), parse=json.loads).records
    assert TOKEN not in json.dumps(scrubbed)
    assert scrubbed["text"] == redact(note["text"]) and scrubbed["cmd"] == redact(note["cmd"])
    assert scrubbed["redactions"] == 1
