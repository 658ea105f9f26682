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
    MAX_TERMS,
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
