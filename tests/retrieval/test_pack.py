"""Packing: the budget holds, siblings are capped, excerpts focus on the query."""

from __future__ import annotations

from nexusmem_core import handlers
from nexusmem_core.engine import Engine
from nexusmem_core.retrieval.pack import estimate_tokens, excerpt, pack
from nexusmem_core.store.fts import Candidate

from ..conftest import Repo


def cand(
    id_: str,
    score: float,
    grp: str | None = None,
    kind: str = "doc_section",
    body: str = "text",
    title: str = "t",
) -> Candidate:
    c = Candidate(
        id_,
        "p",
        kind,
        id_,
        grp,
        title,
        1_767_225_600,
        0,
        0.5,
        "authored",
        "candidate",
        "{}",
        False,
        1.0,
    )
    c.score, c.body = score, body
    return c


def test_budget_is_never_exceeded():
    cands = [cand(str(i), 10 - i, body="word " * 200) for i in range(10)]
    for budget in (50, 120, 400, 2000):
        chosen = pack(cands, ["word"], budget, 2, {"p": "proj"})
        assert sum(r.tokens for r in chosen) <= budget


def test_at_most_two_siblings_of_one_group():
    cands = [cand(f"s{i}", 10 - i, grp="README.md") for i in range(6)] + [cand("other", 1)]
    chosen = pack(cands, [], 2000, 2, {"p": "proj"})
    assert [r.id for r in chosen] == ["s0", "s1", "other"]


def test_header_alone_when_the_excerpt_does_not_fit():
    big = cand("big", 2, body=("alpha beta " * 30 + "\n") * 40)
    chosen = pack([big], ["alpha"], 30, 2, {"p": "proj"})
    assert len(chosen) == 1 and chosen[0].summary == ""


def test_diff_excerpt_is_the_hunk_that_matches():
    body = (
        "@@ -1,3 +1,3 @@\n-import os\n+import sys\n"
        "@@ -40,3 +40,3 @@\n-RETRY_BUDGET = 3\n+RETRY_BUDGET = 5\n"
    )
    text = excerpt(cand("d", 1, kind="file_diff", body=body), ["budget"])
    assert text.startswith("@@ -40,3 +40,3 @@") and "+RETRY_BUDGET = 5" in text


def test_token_estimate_counts_cjk_per_character():
    assert estimate_tokens("中文检索") == 4
    assert 20 <= estimate_tokens("x" * 80) <= 25


async def test_the_diffs_of_one_commit_take_one_place(engine: Engine, repo: Repo):
    files = {f"src/mod{i}.py": f"TIMEOUT_BUDGET = {i}\n" for i in range(5)}
    sha = repo.commit("fix: tune timeouts everywhere", files)
    await handlers.sync(engine)
    response = await handlers.search(engine, "timeout budget")
    refs = [r.ref for r in response.results]
    assert refs.count(sha) == 1  # the commit, once, standing for its five diffs
    assert not [r for r in refs if r.startswith(f"{sha}:")]


def test_a_long_hunk_is_shown_from_its_first_matching_line_and_terms_count_once_a_line():
    filler = "".join(f" line {i}\n" for i in range(40))
    body = (
        "@@ -1,40 +1,40 @@\n"
        + filler
        + "+Timeout = 5  # timeout of the upload\n"
        + filler
        # One line holding the term three times scores one, not three: the hunk above, with
        # two terms on its line, is the better match.
        + "@@ -90,2 +90,2 @@\n-upload upload upload\n+x = 1\n"
    )
    text = excerpt(cand("d", 1, kind="file_diff", body=body), ["timeout", "upload"])
    lines = text.split("\n")
    assert lines[0] == "@@ -1,40 +1,40 @@"
    assert lines[1] == "+Timeout = 5  # timeout of the upload"
