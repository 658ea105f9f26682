"""Languages written without spaces: Chinese, Japanese (and Korean, whose words carry their
particles). The word tokenizer of the main index reads a whole run of such text as one token,
so "缓存失效" never matches a commit saying "修复缓存失效导致的崩溃". A second index, trigram-
tokenized and holding only the nodes that contain CJK text, answers instead: a CJK run of the
query becomes its overlapping three-character pieces, OR-ed (BM25 ranks the nodes holding more
of them, in order, higher). A run of one or two characters has no trigram; and a question
rarely holds three characters of its answer in a row ("为什么缓存会失效" shares no trigram
with "修复缓存失效"). So when the trigram index finds little, the query's two-character
pieces are looked up as substrings among the most recent nodes, and a node holding more
of them ranks higher.
"""

from __future__ import annotations

import re

__all__ = ["CJK_GLOB", "bigrams", "cjk_query", "excerpt_terms", "has_cjk"]

# CJK Unified Ideographs and Extension A, Hiragana, Katakana, Hangul syllables, and the CJK
# compatibility ideographs. The same class feeds the GLOB that decides which nodes the trigram
# index holds (migration v7), so a query and the index agree on what is CJK.
_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff"
_RUN = re.compile(f"[{_CLASS}]+")
CJK_GLOB = f"*[{_CLASS}]*"
MAX_PIECES = 32


# UTF-8 lead bytes of U+3000..U+FFFF, where every CJK character lives.
_NOT_LEADS = bytes(b for b in range(256) if not 0xE3 <= b <= 0xEF)


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds CJK text. Every node written asks, so the common answers are
    cheap: ASCII text reads one flag, and other text is first checked for a lead byte of a
    character at or above U+3000 by a C loop (13 us for a 3 KB body) before the regular
    expression (110 us) looks: 4,000 commit-sized bodies cost 50 ms, not 550."""
    if text.isascii():
        return False
    if not text.encode("utf-8", "surrogatepass").translate(None, _NOT_LEADS):
        return False
    return _RUN.search(text) is not None


def cjk_query(text: str) -> tuple[list[str], list[str]]:
    """The trigrams of the query's CJK runs, and its runs too short to have one.

    Both de-duplicated in order of appearance and bounded: a pasted paragraph must not make a
    query of hundreds of terms.
    """
    grams: dict[str, None] = {}
    short: dict[str, None] = {}
    for run in _RUN.findall(text):
        if len(run) < 3:
            short.setdefault(run, None)
        for i in range(len(run) - 2):
            grams.setdefault(run[i : i + 3], None)
    return list(grams)[:MAX_PIECES], list(short)[:MAX_PIECES]


def bigrams(text: str) -> list[str]:
    """The two-character pieces of the query's CJK runs (a one-character run as itself)."""
    pairs: dict[str, None] = {}
    for run in _RUN.findall(text):
        for i in range(max(1, len(run) - 1)):
            pairs.setdefault(run[i : i + 2], None)
    return list(pairs)[:MAX_PIECES]


def excerpt_terms(text: str) -> list[str]:
    """Pieces of the query's CJK runs an excerpt can look for in a line (the word terms of a
    CJK run are the whole run, which a line seldom holds verbatim)."""
    grams, _ = cjk_query(text)
    return [*grams, *bigrams(text)]
