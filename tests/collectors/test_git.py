"""Git parsing: origins, signal, and records whose messages contain the separator."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusmem_core.collectors.git import (
    MARK,
    Commit,
    _parse_record,
    _split,
    commit_signal,
    normalize_origin,
    read_repo,
)
from nexusmem_core.errors import UsageError


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widget.git",
        "https://github.com/acme/widget",
        "https://user:token@github.com/Acme/Widget.git/",
        "ssh://git@github.com:22/acme/widget.git",
    ],
)
def test_origins_normalize_to_one_identity(url: str):
    assert normalize_origin(url) == "github.com/acme/widget"


def make(subject: str, body: str = "", parents: int = 1) -> Commit:
    return Commit("a" * 40, ["b" * 40] * parents, 0, "x", f"{subject}\n\n{body}".strip())


def test_signal_orders_commit_types():
    fix = commit_signal(make("fix: crash on empty input", "Explains why. " * 20))
    feat = commit_signal(make("feat(api): add export"))
    chore = commit_signal(make("chore: tidy"))
    bump = commit_signal(make("chore(deps): bump lodash from 4.1 to 4.2"))
    merge = commit_signal(make("Merge branch 'x'", parents=2))
    assert fix > feat > chore > bump
    assert merge < chore
    assert commit_signal(make("fix: x", "long " * 60)) > commit_signal(make("fix: x"))


def test_a_plain_subject_that_reports_a_fix_weighs_as_one():
    plain = commit_signal(make("Add the export button"))
    for subject in (
        "Fixing issue for HEAD method and gziped response (#2666)",
        "Minor bugfix to CacheControl datastructure",
        "Fix #630: Bash completion for nested commands broken",
        "Reverted the cache change",
    ):
        assert commit_signal(make(subject)) > plain, subject
    assert commit_signal(make("Prefix bash functions with the root command name")) == plain


def test_a_marker_inside_a_message_stays_in_that_message():
    sha1, sha2 = "1" * 40, "2" * 40
    record1 = (
        f"{sha1}\x00\x001700000000\x00me\x00subject\n\nbody ".encode()
        + MARK
        + b" more body\x00\x00\nM\x00a.txt\x00"
    )
    record2 = f"{sha2}\x00{sha1}\x001700000001\x00me\x00second\x00\x00\nA\x00b.txt\x00".encode()
    records = _split(MARK + record1 + MARK + record2)
    commits = [_parse_record(r) for r in records]
    assert [c.sha for c in commits] == [sha1, sha2]
    assert "more body" in commits[0].message
    assert commits[0].changes == [("M", "a.txt")]
    assert commits[1].parents == [sha1]


@pytest.mark.parametrize("path", ["a\x00b", "a\ud800b"], ids=["nul", "surrogate"])
async def test_a_repository_path_no_file_can_have_is_a_one_line_usage_error(path: str):
    # Every adapter's path meets git here; the CLI prints the message as its one line.
    with pytest.raises(UsageError) as caught:
        await read_repo(Path(path))
    message = str(caught.value)
    assert message.startswith(f"the repository path {path!r} contains")
    assert message.endswith("pass the repository's real path") and "\n" not in message
