"""Query text: what a person or an agent asks, turned into FTS5 MATCH expressions (the word
index) and trigram pieces (the CJK index), run against the real tables the migrations build.

No text may raise an FTS5 syntax error: operators, column filters, quotes, brackets and
control characters are words or nothing. And no text may take more than linear time to parse:
each adversarial shape is parsed at two lengths in one process, and the longer may cost no
more than its length's share (with slack for noise, well short of what a quadratic step costs).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.models import Node
from nexusmem_core.retrieval.cjk import MAX_PIECES, bigrams, cjk_query, excerpt_terms
from nexusmem_core.retrieval.pack import echo_query
from nexusmem_core.retrieval.query import (
    MAX_NAMED,
    MAX_QUESTION_CHARS,
    MAX_TERMS,
    bound_question,
    fts_match,
    parse_query,
    query_terms,
)
from nexusmem_core.retrieval.words import all_of, word_candidates
from nexusmem_core.store import wordtops
from nexusmem_core.store.fts import bm25_candidates, cjk_candidates, term_counts

from ..growth import costs
from .bounds import PROJECT, Store, Target, mutated, repeated, within

_FRAGMENTS = [
    "retry",
    "budget ",
    " ",
    '"',
    "'",
    "(",
    ")",
    "*",
    "^",
    ":",
    "-",
    "+",
    "AND ",
    "OR ",
    "NOT ",
    "NEAR(",
    "title:",
    "{body paths}:",
    "\\",
    "\x00",
    "\x1a",
    "_",
    "__",
    "缓存失效",
    "为什么",
    "修复",
    "キャッシュ",
    "캐시",
    "中",
    "🔥",
    "e\u0301",
    "\ud800",
    "ＡＢＣ",
    "٣",
]
queries = st.one_of(mutated(_FRAGMENTS), repeated(_FRAGMENTS, max_repeat=500), st.text(max_size=40))


@pytest.fixture(scope="module", autouse=True)
def nodes(store: Store) -> Iterator[None]:
    """A few nodes for the queries to find, in both indexes."""
    texts = [
        ("fix: raise the retry budget", "S3 timed out; the budget goes to five."),
        ("修复缓存失效导致的崩溃", "缓存失效时重新加载配置。"),
        ("キャッシュの修正", "캐시 문제를 고쳤다"),
        ('quotes " and \\ and NEAR(a b)', "AND OR NOT title:x"),
    ]
    store.write(
        [
            Node(
                PROJECT,
                "git_commit",
                "git",
                f"ref{i}",
                title,
                body,
                1767225600 + i,
                0.5,
                "observed",
            )
            for i, (title, body) in enumerate(texts)
        ]
    )
    yield


def check_query(text: str, store: Store) -> None:
    """The terms are bounded words; every expression built from them executes."""
    with within():
        terms = query_terms(text)
        match = fts_match(text)
        grams, short = cjk_query(text)
        pairs = bigrams(text)
        excerpt_terms(text)
        parsed = parse_query(text)
        kept, cut = bound_question(text)
    assert len(parsed.terms) <= MAX_TERMS and len(parsed.paths) <= MAX_NAMED
    assert (kept, cut) == (text, None) or (len(kept) <= MAX_QUESTION_CHARS and cut)
    assert len(terms) <= MAX_TERMS and all(t and t == t.lower() for t in terms)
    assert (match is None) == (not terms)
    assert len(grams) <= MAX_PIECES and len(short) <= MAX_PIECES and len(pairs) <= MAX_PIECES
    if match is not None:
        store.portal.call(bm25_candidates, store.db, match, PROJECT)
        store.portal.call(bm25_candidates, store.db, all_of(terms), PROJECT)
        store.portal.call(term_counts, store.db, terms)
        store.portal.call(word_candidates, store.db, terms, PROJECT, 10)
        for term in terms[:3]:  # a word's list, through the index's own tokenizer
            token = store.portal.call(wordtops.token_of, store.db, term)
            assert token is None or (isinstance(token, str) and token)
            store.portal.call(wordtops.best, store.db, term, PROJECT, 10)
    store.portal.call(cjk_candidates, store.db, text, PROJECT)


@settings(max_examples=120, deadline=None)
@given(text=queries)
@example(text='"')
@example(text="NEAR(a b) AND title:x OR *")
@example(text="\ud800 缓存\ud800失效")
@example(text="_ __ ___")
def test_no_query_raises_an_fts_error(text: str, store: Store) -> None:
    check_query(text, store)


def test_a_cjk_question_finds_its_answer(store: Store) -> None:
    found = store.portal.call(cjk_candidates, store.db, "为什么缓存会失效", PROJECT)
    assert [c.ref for c in found][:1] == ["ref1"]


TARGETS = {"FTS query text": Target(queries, check_query, store=True)}


# Shapes that make a step of the parse try every split of a run: one long token of each kind
# of character, runs a path or an identifier is made of, quotes, blanks, CJK, and (the other
# attack) a flood of distinct words.
def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _distinct(n: int) -> str:
    """Distinct words of letters alone: neighbouring ones are joined into terms too."""
    rng = random.Random(n)
    words = ("".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(n // 9 + 1))
    return " ".join(words)[:n]


_UNITS = (
    "a", "A", "7", "_", "aB", "Ab", "a/", "a.", "a-", "a.b/", "x.py ", ".py", '"a" ', "a's ",
    "' ", " ", "\n", "what ", "which  ", "revert", "缓存失效", "缓a", "é", "\u0301",
)  # fmt: skip
SHAPES: dict[str, Callable[[int], str]] = {
    "bundle error": lambda n: "TypeError in bundle.min.js: " + "a" * n,
    **{f"run of {unit!r}": _repeat(unit) for unit in _UNITS},
    "distinct words": _distinct,
}
SIZE = 25_000  # characters: the smaller of the two lengths; the larger is four times it


def _cost(text: str) -> None:
    """What a search does with a question's text."""
    parse_query(text)
    echo_query(text, 2000)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_parsing_a_question_takes_time_linear_in_its_length(shape: str) -> None:
    make = SHAPES[shape]
    with within():  # a step that hangs fails here instead of stalling the suite
        small, large = costs(_cost, make(SIZE), make(4 * SIZE), limit=8, floor=0.002)
    # Linear is 4x, quadratic 16x; the floor keeps a step too quick to time out of the ratio.
    assert large <= 8 * max(small, 0.002), f"{shape}: {small:.4f} s -> {large:.4f} s at 4x"
