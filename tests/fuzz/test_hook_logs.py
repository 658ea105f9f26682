"""The hook logs: ``shell-history.jsonl`` (shell hooks) and ``agent-events.jsonl`` (the Claude
Code hook), one JSON object a line, read by sync from a cursor.

Both are shared by every repository and every process of the user, and any program can append
to them: a line may be torn, not JSON, JSON of any shape, or a record whose fields hold the
wrong types, NUL bytes, lone surrogates or nesting a thousand deep. Each such line is passed
over and counted; each record kept becomes a node that SQLite stores.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.agent.nodes import agent_node
from nexusmem_core.collectors.shell.hooklog import LogCursor, read_new
from nexusmem_core.collectors.shell.nodes import hook_node
from nexusmem_core.collectors.shell.scope import inside
from nexusmem_core.hygiene.scrub_logs import scrub_line

from ..conftest import Repo, run_cli
from .bounds import PROJECT, Store, Target, within

ROOT = "/work/repo"  # the cwd records are written with; the check makes it real

_HOSTILE: list[Any] = [
    "",
    "x",
    "/work/repo/\x00x",
    "\ud800",
    "a\udc80b",
    "[REDACTED]",
    0,
    -1,
    1.5,
    2**70,
    float("nan"),
    float("inf"),
    True,
    None,
    [],
    {},
    ["a", 1],
    {"a": [1, {"b": None}]},
    json.loads("[" * 40 + "]" * 40),
]
_SHELL = {
    "v": 1,
    "id": "a1b2",
    "shell": "bash",
    "session": "s1",
    "cwd": ROOT,
    "exit": 1,
    "start": 1767225600.5,
    "duration": 2.25,
    "cmd": "pytest tests/test_upload.py",
    "cmd_hash": "9f86d081",
    "redactions": 0,
}
_AGENT = {
    **_SHELL,
    "shell": "claude-code",
    "agent": "claude",
    "tool_use_id": "toolu_1",
    "outcome": "failed",
    "exit": None,
    "error": "Exit code 1\nFAILED test_upload",
    "edited": ["src/upload.py"],
    "ts": 1767225600.25,
}
_RAW = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'"text"',
    b"\xff\xfe{}",
    b'{"id": "x", "cmd": "ls", "shell": "bash"',  # torn
    b"[" * 3000 + b"]" * 3000,
    b'{"a": ' * 3000 + b"1" + b"}" * 3000,
    b'{"id": "x", "cmd": "ls", "shell": "bash", "exit": ' + b"9" * 5000 + b"}",
    b'{"id": "x", "cmd": "ls", "shell": "bash", "start": NaN}',
]


@st.composite
def records(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """A record as the hook writes it, some fields replaced by hostile values or dropped."""
    record = dict(base)
    for key in draw(st.lists(st.sampled_from(sorted(base)), max_size=4)):
        if draw(st.booleans()):
            record[key] = draw(st.sampled_from(_HOSTILE).map(copy.deepcopy))
        else:
            record.pop(key, None)
    record["cwd"] = draw(st.sampled_from([ROOT, ROOT + "/src", "/elsewhere", record.get("cwd")]))
    return record


def _line(record: dict[str, Any], ascii_only: bool) -> bytes:
    # json.dumps writes a lone surrogate as \ud800 (ASCII) or as its raw bytes, which
    # json.loads of bytes also reads back (it decodes with surrogatepass).
    return json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def logs(draw: st.DrawFn) -> tuple[str, bytes]:
    """Which log, and its bytes: records and junk lines, the last one maybe unfinished."""
    kind = draw(st.sampled_from(["shell", "agent"]))
    base = _SHELL if kind == "shell" else _AGENT
    lines = draw(
        st.lists(
            st.one_of(
                st.builds(_line, records(base), st.booleans()),
                st.sampled_from(_RAW),
                st.binary(max_size=30),
            ),
            max_size=8,
        )
    )
    data = b"".join(line.replace(b"\n", b"") + b"\n" for line in lines)
    return kind, data + draw(st.sampled_from([b"", b'{"id": "torn']))


_TEXT_FIELDS = ("cwd", "session", "cmd_hash", "outcome", "error", "tool_use_id", "shell")


def check_log(case: tuple[str, bytes], store: Store) -> None:
    """Every complete line but a blank one is a record or counted as malformed; every record
    kept is typed as sync expects and becomes a node SQLite stores."""
    kind, data = case
    root = str(store.root)
    data = data.replace(ROOT.encode(), root.encode())
    path = store.root.parent / f"{kind}.jsonl"
    path.write_bytes(data)
    with within():
        everything = read_new(path, LogCursor())
        kept = read_new(path, LogCursor(), lambda r: inside(r.get("cwd"), [root]))
    # Blank lines are the seams of torn-line recovery (hooklog.read_new), neither kind.
    complete = sum(1 for line in data.split(b"\n")[:-1] if line.strip())
    assert len(everything.records) + everything.malformed == complete
    assert everything.cursor.offset == data.rfind(b"\n") + 1
    build = hook_node if kind == "shell" else agent_node
    nodes = []
    for record in kept.records:
        for name in _TEXT_FIELDS:
            assert record.get(name) is None or isinstance(record[name], str), name
        edited = record.get("edited")
        assert edited is None or all(isinstance(p, str) for p in edited)
        node = build(PROJECT, record, 4000, os.path.realpath(root))
        assert 0 <= node.signal <= 1
        nodes.append(node)
    store.write(nodes)
    for line in data.splitlines(keepends=True):  # `scrub-secrets` rewrites the logs line by line
        with within():
            scrubbed = scrub_line(line, Counter())
            assert scrub_line(scrubbed, Counter()) == scrubbed
        assert scrubbed.count(b"\n") == line.count(b"\n")


@settings(max_examples=100, deadline=None)
@given(case=logs())
@example(case=("shell", _line({**_SHELL, "cwd": ROOT + "/\x00"}, True) + b"\n"))
@example(case=("shell", _line({**_SHELL, "cmd": "make \ud800"}, True) + b"\n"))
@example(case=("shell", _line({**_SHELL, "session": [[[["deep"]]]]}, True) + b"\n"))
@example(case=("agent", _line({**_AGENT, "edited": 5}, True) + b"\n"))
@example(case=("agent", _line({**_AGENT, "cmd_hash": {"a": 1}}, True) + b"\n"))
@example(case=("shell", b"[" * 100_000 + b"\n"))
@example(case=("shell", b'{"cmd": "' + b"[" * 100_000 + b"\n"))
def test_a_hook_log_line_is_a_node_or_is_counted(case: tuple[str, bytes], store: Store) -> None:
    check_log(case, store)


def test_hostile_lines_leave_sync_working(repo: Repo, home: Path) -> None:
    # Each of these failed every sync, at the same line, until the line was removed by hand.
    cwd = str(repo.path.resolve())
    good = {**_SHELL, "id": "good", "cwd": cwd, "cmd": "make release"}
    shell = [
        {**good, "id": "nul", "cwd": cwd + "/\x00"},
        {**good, "id": "surrogate", "cmd": "make \ud800"},
        {**good, "id": "deep", "session": json.loads("[" * 900 + "]" * 900)},
    ]
    agent = [
        {**_AGENT, "id": "hash", "cwd": cwd, "cmd_hash": {"a": 1}, "cmd": "make agent"},
        {**_AGENT, "id": "edited", "cwd": cwd, "edited": 5, "cmd": "make agent"},
        {**_AGENT, "id": "agent-good", "cwd": cwd, "cmd": "make agent-good"},
    ]
    home.mkdir(parents=True, exist_ok=True)
    lines = [_line(r, True) for r in [*shell, good]] + [b"[" * 100_000]
    (home / "shell-history.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (home / "agent-events.jsonl").write_bytes(b"\n".join(_line(r, True) for r in agent) + b"\n")
    assert run_cli("init", cwd=repo.path).returncode == 0
    synced = run_cli("sync", "--no-embed", "--json", cwd=repo.path)
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    # The NUL cwd is no directory, so not this repository's: passed over, not malformed.
    assert (report["shell"], report["shell_skipped"]) == (1, 3)
    assert (report["agent"], report["agent_skipped"]) == (1, 2)


TARGETS = {"hook JSON lines": Target(logs(), check_log, store=True)}
