"""Every occurrence of many literals in one pass over a text, with ahocorasick-rs when it is there.

Redaction looks in each text for the roots of the context rules' keywords (``key``, ``pass``,
``token``...), ``-----begin`` and the literals inside long tokens, and for where the token
formats' 187 prefixes start a run of token characters. With ``str.find`` that is one scan of
the whole text per root, plus a Python step for each of the ~10 runs of 12+ token characters
per kilobyte; ahocorasick-rs (Rust's aho-corasick, with wheels for Linux, macOS and Windows)
finds them all in one pass of its own, and hands back only the few places that matter.

When it cannot be imported the engine finds the same places with ``str.find``; both ways give the
same output (the tests run both on the same texts). The library is loaded for the first text of
:data:`LEAST` characters or more, and then used for every text, however short: a shell hook
redacts one command and exits, and a 1.7 ms start would cost it more than ``str.find`` does.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing for it would cost a shell hook
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LEAST", "Literals", "loaded"]

# The shortest text that loads the library (1.7 ms to import it and build the automata, where
# str.find takes 0.2 ms over 4 KB): a sync's first batch does, a shell hook's command does not.
LEAST = 4096

_MISSING = object()
_library: Any = None  # the ahocorasick_rs module, _MISSING when it cannot be imported


def _load() -> Any:
    """The ahocorasick_rs module, or None when it is not installed."""
    global _library
    if _library is None:
        try:
            import ahocorasick_rs
        except ImportError:
            _library = _MISSING
        else:
            _library = ahocorasick_rs
    return None if _library is _MISSING else _library


def loaded() -> bool:
    """Whether ahocorasick-rs was imported: from then on it is used for short texts too."""
    return _library is not None and _library is not _MISSING


class Literals:
    """Byte strings searched for together (built on first use)."""

    __slots__ = ("_automaton", "literals")

    def __init__(self, literals: tuple[bytes, ...]) -> None:
        self.literals = literals
        self._automaton: Any = None

    def find(self, haystack: bytes) -> list[tuple[int, int, int]] | None:
        """``(literal index, start, end)`` of every occurrence of every literal in ``haystack``,
        overlapping ones included, in no particular order; None without ahocorasick-rs."""
        if self._automaton is None:
            library = _load()
            if library is None:
                return None
            self._automaton = library.BytesAhoCorasick(
                list(self.literals), implementation=library.Implementation.DFA
            )
        found: list[tuple[int, int, int]] = self._automaton.find_matches_as_indexes(
            haystack, overlapping=True
        )
        return found
