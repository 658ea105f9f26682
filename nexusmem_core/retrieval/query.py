"""User text to an FTS5 MATCH expression that cannot raise a syntax error.

Every term is taken from ``\\w+`` runs and double-quoted, so operators (AND/OR/NOT/NEAR), column
filters (``a:b``), brackets, ``*``, ``^``, quotes and control characters are just text. Terms are
OR-ed: BM25 already ranks documents that match more of them higher.

A question is anyone's text (an agent pastes a log, a minified bundle's error line), so it is
bounded before it is read: ``bound_question`` cuts it to ``MAX_QUESTION_CHARS`` characters and
``MAX_QUESTION_TERMS`` distinct words, and every step of the parse is linear in what is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

from ..store.fts import quote_term
from .asked import asks_commit, asks_howto, asks_release, asks_undone, asks_why
from .cjk import excerpt_terms, has_cjk

__all__ = [
    "MAX_NAMED",
    "MAX_PATH",
    "MAX_QUESTION_CHARS",
    "MAX_QUESTION_TERMS",
    "MAX_TERMS",
    "STOP_WORDS",
    "Query",
    "bound_question",
    "fts_match",
    "parse_query",
    "path_tokens",
    "query_terms",
    "quote_term",
]

MAX_TERMS = 24
# A question past these is pasted text (a log, a file): the word index is asked for its first
# MAX_TERMS words and the file names among its first few, so what lies further reaches no
# stage and would only cost time. Ten thousand characters hold a question and the top of a
# traceback; five hundred distinct words are twenty times the terms the index is asked for.
MAX_QUESTION_CHARS = 10_000
MAX_QUESTION_TERMS = 500
MAX_NAMED = 5  # file names a question is taken to name (retrieval/imports.py)
MAX_PATH = 4096  # characters: no file system names a longer path, so no import edge holds one
_WORD = re.compile(r"\w+", re.UNICODE)
STOP_WORDS = frozenset(
    (
        "a an and are as at be but by can did do does for from has have how i if in into is it "
        "its me my of on or our should so that the their then there these this to was we were "
        "what when where which who why will with would you your"
    ).split()
)


# An English clitic: "json's", "isn't", "we'll". ``\w+`` reads the letters after the apostrophe
# as a word of their own, and "s" or "t" is in a large share of an English index's rows: a
# term that adds nothing but cost, and a pair ("json", "s") that coverage rewards for nothing.
_CLITIC = re.compile(r"(?<=\w)['\u2019](?:s|t|re|ll|ve|d|m)\b", re.IGNORECASE)


def bound_question(text: str) -> tuple[str, str | None]:
    """``text`` cut to ``MAX_QUESTION_CHARS`` characters (after its leading blanks) and before
    its ``MAX_QUESTION_TERMS + 1``-th distinct word, and the note that says so; None when
    nothing was cut."""
    start = len(text) - len(text.lstrip()) if len(text) > MAX_QUESTION_CHARS else 0
    kept = text[start : start + MAX_QUESTION_CHARS]
    seen: set[str] = set()
    for word in _WORD.finditer(kept):
        seen.add(word.group().lower())
        if len(seen) > MAX_QUESTION_TERMS:
            seen.discard(word.group().lower())
            kept = kept[: word.start()].rstrip()
            break
    if not text[start + len(kept) :].strip():
        return text, None
    return kept, (
        f"the question was cut to {len(kept):,} characters / {len(seen):,} terms "
        f"(it had {len(text):,} characters)"
    )


def _words(text: str) -> list[str]:
    """The text's words, lower-cased, in order, clitics left out."""
    return [w.lower() for w in _WORD.findall(_CLITIC.sub("", text)) if w.strip("_")]


def query_terms(text: str) -> list[str]:
    """Lower-cased word terms, stop words dropped unless nothing else is left, de-duplicated."""
    words = _words(text)
    seen: dict[str, None] = {}
    for word in words:
        seen.setdefault(word, None)
    terms = list(seen)
    content = [t for t in terms if t not in STOP_WORDS]
    return (content or terms)[:MAX_TERMS]


def fts_match(text: str | list[str]) -> str | None:
    """The MATCH expression for ``text`` (or its terms), or None when there is no word."""
    terms = query_terms(text) if isinstance(text, str) else text
    if not terms:
        return None
    return " OR ".join(quote_term(t) for t in terms)


_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# A run of the characters a path is written with, and in it the longest prefix that ends in a
# stem and an extension. The prefix is tried once, at the run's start: searched for anywhere
# (findall), it was tried again from every character of a run holding no extension, and a
# question holding one 100k-letter word took minutes.
_RUN = re.compile(r"[\w./-]+")
_PATHLIKE = re.compile(r"[\w./-]*\w\.[A-Za-z]\w*")


def path_tokens(text: str) -> list[str]:
    """The first ``MAX_NAMED`` distinct words of ``text`` that look like a file name: a stem
    and an extension (``src/app/upload.py``, ``upload.py``)."""
    found: dict[str, None] = {}
    for run in _RUN.finditer(text):
        named = _PATHLIKE.match(text, run.start(), run.end())
        token = named.group().strip("./") if named is not None else ""
        if token and len(token) <= MAX_PATH:
            found.setdefault(token, None)
            if len(found) == MAX_NAMED:
                break
    return list(found)


@dataclass(frozen=True)
class Query:
    """A query, parsed once; every stage of the pipeline reads this value.

    ``terms`` are what the word index is asked for. An identifier (``paramsSerializer``) is
    one of them as typed, which is how the index holds it; its parts (``params``,
    ``serializer``) come after the query's own words, for the text that spells them apart;
    so do neighbouring words joined (``base URL``: ``baseurl``), for the code that runs them
    together.
    ``excerpt_terms`` is what an excerpt looks for in a line (with pieces of CJK runs).
    ``undone``, ``release`` and ``howto``: the question asks after something tried and undone,
    for a release, or how to do something (retrieval/asked.py). ``joins``:
    the terms that are two neighbouring words joined (``baseurl``), with those words.
    ``paths``: the words that look like a file name (retrieval/imports.py).
    """

    text: str
    terms: list[str]
    cjk: bool
    excerpt_terms: list[str] = field(default_factory=list)
    undone: bool = False
    release: bool = False
    howto: bool = False
    commit: bool = False
    why: bool = False
    joins: dict[str, tuple[str, str]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)


def _identifier_parts(text: str) -> list[str]:
    parts: list[str] = []
    for word in _WORD.findall(text):
        pieces = [p.lower() for p in _CAMEL.findall(word)]
        if len(pieces) > 1 and not word.islower() and not word.isupper():
            parts += [p for p in pieces if len(p) > 2 and p not in STOP_WORDS]
    return parts


def _joined(text: str) -> dict[str, tuple[str, str]]:
    """Neighbouring words written together, the way code names them: "base URL" is
    ``baseURL`` (the index's term ``baseurl``), "man pages" ``manpage``; each with the two
    words it joins. A join the index does not hold is dropped with the other terms it does
    not hold (TermCounts.informative).
    Real set, BM25: R@10 0.898 -> 0.903, MRR@10 0.747 -> 0.746 (axios-03 in, at rank 5)."""
    return {
        a + b: (a, b)
        for a, b in pairwise(_words(text))
        if a not in STOP_WORDS and b not in STOP_WORDS and a.isalpha() and b.isalpha()
    }


def parse_query(text: str) -> Query:
    """The one parse of the user's text."""
    words = query_terms(text)
    joined = _joined(text)
    found = [*_identifier_parts(text), *joined]
    extra = [p for p in dict.fromkeys(found) if p not in words]
    terms = (words + extra)[: max(MAX_TERMS, len(words))]
    added = set(extra)  # looked up once per join: a list made that quadratic in the words
    cjk = has_cjk(text)
    shown = words + (excerpt_terms(text) if cjk else [])
    undone, release = asks_undone(text), asks_release(text)
    commit = asks_commit(text) and not (undone or release)
    why = asks_why(text) and not (undone or release or commit)
    return Query(
        text=text,
        terms=terms,
        cjk=cjk,
        excerpt_terms=shown,
        undone=undone,
        release=release,
        howto=asks_howto(text) and not (undone or release or commit or why),
        commit=commit,
        why=why,
        joins={join: parts for join, parts in joined.items() if join in added},
        paths=path_tokens(text),
    )
