"""No user text can raise an FTS or SQL error."""

from __future__ import annotations

import re

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusmem_core import handlers
from nexusmem_core.engine import Engine
from nexusmem_core.errors import UsageError
from nexusmem_core.retrieval.query import (
    MAX_NAMED,
    MAX_QUESTION_CHARS,
    MAX_QUESTION_TERMS,
    MAX_TERMS,
    bound_question,
    fts_match,
    parse_query,
    path_tokens,
    query_terms,
)

HOSTILE = [
    '"',
    '""',
    "'",
    "AND",
    "OR NOT",
    "NEAR(a b)",
    "c++",
    "foo-bar",
    "a:b",
    "title:retry",
    "(unbalanced",
    "unbalanced)",
    "[x",
    "{y}",
    "*",
    "retry*",
    "^retry",
    "🔥 emoji 🚀",
    "\x00\x01\x1b[31m",
    "NOT retry",
    "retry AND",
    "-retry",
    "+budget",
    "a OR OR b",
    "col:",
    '"retry budget',
    "\\",
    ";drop table nodes;--",
    "%_",
    "ünïcödé",
    "中文 检索",
]


@pytest.mark.parametrize("text", HOSTILE)
async def test_hostile_text_never_raises(engine: Engine, text: str):
    await handlers.sync(engine)
    response = await handlers.search(engine, text)
    assert response.tokens_used <= response.budget


async def test_operators_are_searched_as_words(engine: Engine):
    await handlers.sync(engine)
    response = await handlers.search(engine, "retry AND budget")
    assert response.results and "retry" in response.results[0].title.lower()


def test_terms_are_quoted_words():
    assert query_terms("Why did the C++ build fail?") == ["c", "build", "fail"]
    assert fts_match('say "hi" NEAR(x)') == '"say" OR "hi" OR "near" OR "x"'
    assert fts_match("!!! ???") is None
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == MAX_TERMS


def test_only_stop_words_are_still_searched():
    assert query_terms("why was it") == ["why", "was", "it"]


async def test_blank_query_is_a_usage_error(engine: Engine):
    with pytest.raises(UsageError):
        await handlers.search(engine, "   ")


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=st.text(min_size=1, max_size=200))
def test_any_text_is_safe(synced_db_path, text: str):
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine

    settings_obj, path = synced_db_path

    async def run() -> None:
        async with open_engine(settings_obj, path, read_only=True) as engine:
            if not text.strip():
                with pytest.raises(UsageError):
                    await handlers.search(engine, text)
                return
            response = await handlers.search(engine, text)
            assert response.tokens_used <= response.budget

    assert isinstance(settings_obj, Settings)
    anyio.run(run)


@pytest.fixture
def synced_db_path(settings, repo):
    from nexusmem_core.engine import open_engine

    async def prepare() -> None:
        async with open_engine(settings, repo.path, create=True) as engine:
            await handlers.sync(engine)

    anyio.run(prepare)
    return settings, repo.path


def test_a_clitic_is_not_a_term_of_its_own():
    """ "json's" asks for json, not for json and the letter s (in a large share of an
    English index's rows); a single letter typed as one is still a term."""
    assert query_terms("rg --json's summary isn’t right; we'll see") == [
        "rg",
        "json",
        "summary",
        "isn",
        "right",
        "see",
    ]
    assert query_terms("rg -s beats -x") == ["rg", "s", "beats", "x"]


def test_an_ordinary_question_is_not_cut():
    question = "  why was the retry budget raised after the S3 upload timeouts?  "
    assert bound_question(question) == (question, None)
    blanks = "retry budget" + " " * (2 * MAX_QUESTION_CHARS)  # nothing but blanks past the cap
    assert bound_question(blanks) == (blanks, None)


def test_a_long_question_is_cut_to_the_character_cap_after_its_leading_blanks():
    question = "\n" * 50 + "TypeError in bundle.min.js: " + "a" * 100_000
    kept, cut = bound_question(question)
    assert kept == question.lstrip()[:MAX_QUESTION_CHARS]
    assert cut == (
        f"the question was cut to {MAX_QUESTION_CHARS:,} characters / 6 terms "
        f"(it had {len(question):,} characters)"
    )


def test_a_question_of_many_distinct_words_is_cut_before_the_first_word_past_the_cap():
    words = [f"w{i}" for i in range(MAX_QUESTION_TERMS + 10)]
    repeated = " ".join(["again"] * 50 + words)  # a word said twice counts once
    kept, cut = bound_question(repeated)
    assert kept.split()[-1] == f"w{MAX_QUESTION_TERMS - 2}"  # "again" is one of the terms
    assert cut is not None and f"/ {MAX_QUESTION_TERMS:,} terms" in cut


async def test_the_cut_question_is_searched_and_the_response_says_so(engine: Engine):
    await handlers.sync(engine, embed=False)
    response = await handlers.search(engine, "retry budget " + "z" * 50_000, vector=False)
    assert response.cut is not None and response.cut.startswith("the question was cut to")
    assert response.to_dict()["cut"] == response.cut
    assert "retry budget" in response.results[0].title
    whole = await handlers.search(engine, "retry budget", vector=False)
    assert whole.cut is None and whole.to_dict()["cut"] is None
    everywhere = await handlers.search_all(engine.settings, "retry " + "z" * 50_000, vector=False)
    assert everywhere.cut == bound_question("retry " + "z" * 50_000)[1]


# What import expansion read as file names before it was linear: the same tokens, in order.
_FINDALL = re.compile(r"[\w./-]*\w\.[A-Za-z]\w*")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ_9./- \t:é"), max_size=60))
def test_file_names_are_read_as_the_search_read_them_before(text: str):
    before = list(dict.fromkeys(t.strip("./") for t in _FINDALL.findall(text)))[:MAX_NAMED]
    assert path_tokens(text) == before
    assert parse_query(text).paths == before


def test_file_names_are_read_from_a_question():
    question = "why does src/app/upload.py fail, and ./upload.py? see README.md, v1.2 and x."
    assert path_tokens(question) == ["src/app/upload.py", "upload.py", "README.md"]
    assert path_tokens("a" * 5000 + ".py") == []  # longer than any path a file system holds
