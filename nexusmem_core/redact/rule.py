"""One redaction rule: a pattern, the part of a match that is the secret, and a worked example.

Standard library only: the shell hook imports this on every command typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["Rule", "context_rule", "token_rule"]


class Rule:
    """One kind of secret: a pattern, the group in it that is the secret, and a worked example.

    ``group`` names the part of the match that is replaced (``0``, the default, is the whole
    match); the rest of the match is context that stays. ``example`` must redact to
    ``expected``, both by this rule alone and through the whole table, which the test suite
    checks.

    Two prefilters decide whether the pattern runs at all:

    * ``triggers``: lowercase substrings of which one must occur in the lowercased text.
      Context rules (a header, an option, an assignment) use these.
    * ``prefixes``: for token formats, the exact-case literals a token starts with (``ghp_``,
      ``AKIA``). Such a rule is only tried where a run of token characters starts with one of
      them (see :mod:`nexusmem_core.redact`), so its cost does not grow with the text. Its
      ``triggers`` are the lowercased prefixes, for tests and for :func:`apply` alone.

    ``run``, when set, says the pattern only matches inside a run of at least that many token
    characters (``[A-Za-z0-9_.-]``) holding one of the ``triggers``: a long token whose literal
    is in its middle (``..._mmk``, ``...-us14``). Such a rule is looked for in the few long runs
    of a text instead of by a substring search of all of it.

    ``accept``, when set, is asked whether a matched secret really is one (an entropy test for
    unprefixed values next to a keyword); a refused match is left as it is.

    ``pattern`` is compiled from ``regex`` and ``flags`` on first use, then kept. Python's regex
    compiler costs about 2 microseconds per pattern character, ~10 ms for the whole table, which
    would be most of a shell hook's import; lazily, a process pays only for the rules its
    commands trigger. (A plain class, not a dataclass: importing ``dataclasses`` alone costs
    a hook 17 ms.)
    """

    __slots__ = (
        "_pattern", "accept", "example", "expected", "flags", "group", "name", "prefixes",
        "regex", "run", "triggers",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        regex: str,
        example: str,
        expected: str,
        triggers: tuple[str, ...],
        group: int | str = 0,
        flags: int = 0,
        prefixes: tuple[str, ...] = (),
        accept: Callable[[str], bool] | None = None,
        run: int = 0,
    ) -> None:
        self.name, self.regex, self.example, self.expected = name, regex, example, expected
        self.triggers, self.group, self.flags = triggers, group, flags
        self.prefixes, self.accept, self.run = prefixes, accept, run
        self._pattern: re.Pattern[str] | None = None

    def __repr__(self) -> str:
        return f"Rule({self.name!r})"

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled :attr:`regex`."""
        if self._pattern is None:
            self._pattern = re.compile(self.regex, self.flags)
        return self._pattern


def context_rule(
    name: str,
    pattern: str,
    example: str,
    expected: str,
    triggers: tuple[str, ...],
    *,
    group: int | str = 0,
    flags: int = 0,
    accept: Callable[[str], bool] | None = None,
    run: int = 0,
) -> Rule:
    """A rule found by its context, run on every text holding one of ``triggers`` (with
    ``run``, in a run of that many token characters; see :class:`Rule`)."""
    # ASCII: shell syntax is ASCII, ASCII-only \w/\s/\d are faster, and case-insensitive matching
    # stays ASCII so the lowercase-substring triggers are exact prefilters.
    return Rule(
        name, pattern, example, expected, triggers, group, flags | re.ASCII, accept=accept, run=run
    )


def token_rule(
    name: str,
    prefixes: tuple[str, ...],
    body: str,
    example: str,
    expected: str,
    *,
    flags: int = 0,
) -> Rule:
    """A token format: one of ``prefixes`` (exact case), then ``body`` (a regex).

    The token must not continue a longer run of token characters on either side, so the body
    should end with what may not follow it (most formats: ``(?![A-Za-z0-9_-])``). The whole
    token is the secret.
    """
    alternation = "|".join(re.escape(prefix) for prefix in prefixes)
    regex = rf"(?<![A-Za-z0-9_.-])(?:{alternation}){body}"
    triggers = tuple(dict.fromkeys(prefix.lower() for prefix in prefixes))
    return Rule(name, regex, example, expected, triggers, 0, flags | re.ASCII, prefixes)
