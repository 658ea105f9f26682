"""``git log`` output: the header and name-status parser, commit nodes.

The collector asks git for ``LOG_FORMAT`` records (sha, parents, committer time, author and
message, NUL-separated, each led by ``MARK``) followed by ``-z --name-status`` pairs. A message
may hold anything but NUL, the marker included; a repository may hold a commit object whose
date git prints as any run of digits.
"""

from __future__ import annotations

import time

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.git import MARK, Commit, _parse_record, commit_signal
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
        commit = _parse_record(record)
    if commit is None:
        return
    assert len(commit.sha) in (40, 64)
    assert 0 <= commit.ts < 2**33, commit.ts
    assert all(len(status) <= 1 for status, _ in commit.changes)
    assert 0.05 <= commit_signal(commit) <= 1
    node = commit_node("p", commit, 4000)
    time.strftime("%Y-%m-%d", time.gmtime(node.ts))  # what every result shows of it
    assert len(node.body) <= 4000 + len("\n[truncated]")


@settings(max_examples=300, deadline=None)
@given(records())
@example(b"a" * 40 + b"\x00\x00" + b"18446744073709551615\x00me\x00msg\x00")
@example(b"a" * 40 + b"\x00\x00" + b"4611686018427387904\x00me\x00msg\x00")
def test_a_record_parses_or_is_passed_over(record: bytes) -> None:
    check_record(record)


@settings(max_examples=150, deadline=None)
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
    commit = _parse_record(record.encode())
    assert commit is not None
    assert (commit.sha, commit.parents, commit.ts) == (sha, parents, ts)
    assert (commit.author, commit.message) == (author, message.rstrip("\n"))
    assert commit.changes == changes


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
    synced = run_cli("sync", "--no-embed", cwd=repo.path)
    assert synced.returncode == 0, synced.stderr
    found = run_cli("query", "retry budget", "--json", cwd=repo.path)
    assert found.returncode == 0, found.stderr
    assert "odd date" not in found.stdout and "retry" in found.stdout


TARGETS = {
    "git log record": Target(records(), check_record),
}


def test_commit_with_no_parents_and_no_changes() -> None:
    commit = _parse_record(b"c" * 40 + b"\x00\x001767225600\x00me\x00root commit\x00")
    assert isinstance(commit, Commit)
    assert (commit.parents, commit.changes) == ([], [])
