"""``git log`` output: the record splitter, the header and name-status parser, commit nodes.

The collector asks git for ``LOG_FORMAT`` records (sha, parents, committer time, author and
message, NUL-separated, each led by ``MARK``) followed by ``-z --name-status`` pairs. A message
may hold anything but NUL, the marker included; a repository may hold a commit object whose
date git prints as any run of digits.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import AsyncIterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors import git
from nexusmem_core.collectors.git import MARK, Commit, _split, commit_signal, parse_record
from nexusmem_core.ingest import commit_node

from ..conftest import Repo, run_cli
from .bounds import Target, within

HEX = "0123456789abcdef"
_sha = st.one_of(
    st.integers(min_value=0, max_value=16**40 - 1).map(lambda n: f"{n:040x}"),
    st.sampled_from(["f" * 64, "A" * 40, "a" * 39, "a" * 41, "g" * 40, "a" * 40 + "b" * 23]),
)
# What messages, authors and paths are made of; NUL never reaches them (it separates fields).
_PIECES = [b"fix: ", b"feat(x)!: ", b"Merge ", b"\n\n", b"\n", MARK, b"v1.2.3", b"\xff\xfe"]
_PIECES += [b"\xe4\xb8\xad", b"\xed\xa0\x80", b"\x1e", b"\r\n", b" ", b"a" * 300, b"body"]
_text = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=8).map(b"".join),
    st.binary(max_size=24).map(lambda b: b.replace(b"\x00", b"")),
)
_ts = st.one_of(
    st.integers(min_value=0, max_value=2**33).map(str),
    st.sampled_from(["", "-1", "1e9", " 17", "18446744073709551615", "9" * 40, "0x10"]),
)
_STATUSES = [b"A", b"M", b"D", b"T", b"R100", b"C75", b"", b"\xff"]
_PATHS = [b"src/a.py", b"a b/c", b"\xe4\xb8\xad.md", b"", b"\n", MARK, b"x" * 500]


@st.composite
def records(draw: st.DrawFn) -> bytes:
    """One ``LOG_FORMAT`` record with its name-status pairs, sometimes cut short."""
    fields = [
        draw(_sha).encode(),
        b" ".join(s.encode() for s in draw(st.lists(_sha, max_size=2))),
        draw(_ts).encode(),
        draw(_text),
        draw(_text),
    ]
    body = b"\x00".join(fields) + b"\x00"
    changes = draw(st.lists(st.tuples(st.sampled_from(_STATUSES), st.sampled_from(_PATHS))))
    for status, path in changes[:6]:
        body += b"\x00\n" + status + b"\x00" + path
    if draw(st.booleans()):
        body = body[: draw(st.integers(min_value=0, max_value=len(body)))]
    return body


def check_record(record: bytes) -> None:
    """A record parses to a commit with sane fields, or to None; never an exception."""
    with within():
        commit = parse_record(record)
    if commit is None:
        return
    assert len(commit.sha) in (40, 64)
    assert 0 <= commit.ts < 2**33, commit.ts
    assert all(len(status) <= 1 for status, _ in commit.changes)
    assert 0.05 <= commit_signal(commit) <= 1
    node = commit_node("p", commit, 4000)
    time.strftime("%Y-%m-%d", time.gmtime(node.ts))  # what every result shows of it
    assert len(node.body) <= 4000 + len("\n[truncated]")


@settings(max_examples=150, deadline=None)
@given(records())
@example(b"a" * 40 + b"\x00\x00" + b"18446744073709551615\x00me\x00msg\x00")
@example(b"a" * 40 + b"\x00\x00" + b"4611686018427387904\x00me\x00msg\x00")
def test_a_record_parses_or_is_passed_over(record: bytes) -> None:
    check_record(record)


@settings(max_examples=100, deadline=None)
@given(
    sha=st.text(HEX, min_size=40, max_size=40),
    parents=st.lists(st.text(HEX, min_size=40, max_size=40), max_size=3),
    ts=st.integers(min_value=0, max_value=2**33 - 1),
    author=st.text(max_size=20).filter(lambda a: "\x00" not in a),
    message=st.text(max_size=80).filter(lambda m: "\x00" not in m),
    changes=st.lists(
        st.tuples(
            st.sampled_from("AMDT"),
            st.text(min_size=1, max_size=20).filter(lambda p: "\x00" not in p and p.strip()),
        ),
        max_size=5,
    ),
)
def test_a_rendered_record_parses_back(
    sha: str,
    parents: list[str],
    ts: int,
    author: str,
    message: str,
    changes: list[tuple[str, str]],
) -> None:
    record = "\x00".join([sha, " ".join(parents), str(ts), author, message]) + "\x00"
    record += "".join(f"\x00\n{status}\x00{path}" for status, path in changes)
    commit = parse_record(record.encode())
    assert commit is not None
    assert (commit.sha, commit.parents, commit.ts) == (sha, parents, ts)
    assert (commit.author, commit.message) == (author, message.rstrip("\n"))
    assert commit.changes == changes


# --- the stream ------------------------------------------------------------------------------


def _stream(chunks: list[bytes]) -> list[bytes]:
    """The records ``log_records`` yields when git's output arrives in ``chunks``."""

    async def fake_stream(_cwd: object, *_args: str) -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    real = git.git_stream
    git.git_stream = fake_stream  # type: ignore[assignment]
    try:
        return _drain(git.log_records(None, []))  # type: ignore[arg-type]
    finally:
        git.git_stream = real


def _drain(records: AsyncIterator[bytes]) -> list[bytes]:
    """Run an async generator that never waits on anything to its end, without an event loop
    (starting one per example cost more than the parsing)."""
    out: list[bytes] = []
    while True:
        step = records.__anext__()
        try:
            step.send(None)
        except StopIteration as done:
            out.append(done.value)
        except StopAsyncIteration:
            return out
        else:  # pragma: no cover - the fake stream never suspends
            raise AssertionError("log_records waited on something")


def _parsed(records: list[bytes]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    commits = [parse_record(r) for r in records]
    return [(c.sha, c.message, c.changes) for c in commits if c is not None]


@st.composite
def chunked_streams(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """git's output for a few records, and the same bytes cut into chunks anywhere."""
    data = b"".join(MARK + r for r in draw(st.lists(records(), max_size=5)))
    data = draw(st.sampled_from([b"", b"junk", MARK])) + data
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    bounds = [0, *cuts, len(data)]
    return data, [data[a:b] for a, b in itertools.pairwise(bounds)]


def check_stream(stream: tuple[bytes, list[bytes]]) -> None:
    """However the output is chunked, the commits are those of the whole output at once."""
    data, chunks = stream
    with within():
        assert _parsed(_stream(chunks)) == _parsed(_split(data))


@settings(max_examples=80, deadline=None)
@given(chunked_streams())
def test_records_do_not_depend_on_where_chunks_end(stream: tuple[bytes, list[bytes]]) -> None:
    check_stream(stream)


def _huge(size: int, filler: bytes) -> list[bytes]:
    sha = b"a" * 40
    head = sha + b"\x00\x001767225600\x00me\x00subject\n\n"
    record = MARK + head + filler * (size // len(filler)) + b"\x00"
    tail = MARK + b"b" * 40 + b"\x00\x001767225601\x00me\x00next\x00"
    data = record + tail
    return [data[i : i + 65536] for i in range(0, len(data), 65536)]


@pytest.mark.parametrize(
    ("filler", "megabytes"), [(b"+x\n", 16), (MARK, 2)], ids=["patch", "markers"]
)
def test_a_huge_record_streams_whole(filler: bytes, megabytes: int) -> None:
    # A commit adding a 16 MB file is one 16 MB record of `git log -p`; re-scanning it for
    # every 64 KB chunk took 3 s (and a 32 MB one 13 s). A message made of markers glued
    # back one by one was quadratic too (2 MB of them: minutes, which the watchdog stops).
    # bench/bench_fuzz.py measures the time.
    with within():
        records = _stream(_huge(megabytes * 1024 * 1024, filler))
    assert [r[:40] for r in records] == [b"a" * 40, b"b" * 40]


def test_a_commit_dated_past_any_calendar_is_passed_over(repo: Repo) -> None:
    # git prints the digits a commit object holds: this one made sync fail on SQLite's
    # integer range, and a date just inside it made every later query fail to format it.
    parent = repo.git("rev-parse", "HEAD").strip()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    for when in ("18446744073709551615", "4611686018427387904"):
        who = f"Mallory <m@example.com> {when} +0000"
        text = f"tree {tree}\nparent {parent}\nauthor {who}\ncommitter {who}\n\nfix: odd date\n"
        sha = repo.git(
            "hash-object", "-t", "commit", "-w", "--stdin", "--literally", input=text.encode()
        )
        repo.git("update-ref", "HEAD", sha.strip())
        parent = sha.strip()
    assert run_cli("init", cwd=repo.path).returncode == 0
    synced = run_cli("sync", "--no-embed", "--json", cwd=repo.path)
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["git_skipped"] == 2  # passed over, and counted
    found = run_cli("query", "retry budget", "--json", cwd=repo.path)
    assert found.returncode == 0, found.stderr
    assert "odd date" not in found.stdout and "retry" in found.stdout


TARGETS = {
    "git log record": Target(records(), check_record),
    "git log stream": Target(chunked_streams(), check_stream),
}


def test_commit_with_no_parents_and_no_changes() -> None:
    commit = parse_record(b"c" * 40 + b"\x00\x001767225600\x00me\x00root commit\x00")
    assert isinstance(commit, Commit)
    assert (commit.parents, commit.changes) == ([], [])
