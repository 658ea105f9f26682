"""User text to an FTS5 MATCH expression that cannot raise a syntax error.

Every term is taken from ``\\w+`` runs and double-quoted, so operators (AND/OR/NOT/NEAR), column
filters (``a:b``), brackets, ``*``, ``^``, quotes and control characters are just text. Terms are
OR-ed: BM25 already ranks documents that match more of them higher.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TERMS", "fts_match", "query_terms", "quote_term"]

MAX_TERMS = 24
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    (
        "a an and are as at be but by can did do does for from has have how i if in into is it "
        "its me my of on or our should so that the their then there these this to was we were "
        "what when where which who why will with would you your"
    ).split()
)


def query_terms(text: str) -> list[str]:
    """Lower-cased word terms, stop words dropped unless nothing else is left, de-duplicated."""
    words = [w.lower() for w in _WORD.findall(text) if w.strip("_")]
    seen: dict[str, None] = {}
    for word in words:
        seen.setdefault(word, None)
    terms = list(seen)
    content = [t for t in terms if t not in _STOP]
    return (content or terms)[:MAX_TERMS]


def quote_term(term: str) -> str:
    """One term as an FTS5 string: always a plain phrase, never an operator or a filter."""
    return '"' + term.replace('"', '""') + '"'


def fts_match(text: str | list[str]) -> str | None:
    """The MATCH expression for ``text`` (or its terms), or None when there is no word."""
    terms = query_terms(text) if isinstance(text, str) else text
    if not terms:
        return None
    return " OR ".join(quote_term(t) for t in terms)
