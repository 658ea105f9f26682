"""One redaction rule: a pattern, the part of a match that is the secret, and a worked example.

Standard library only: the shell hook imports this on every command typed.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator

__all__ = ["Rule", "ascii_lower", "context_rule", "fold", "token_rule"]


# What a non-ASCII character becomes in ascii_lower(): a control character no pattern names.
# Like the character it stands for, it is not a letter, digit, space or anything else a
# pattern of the table spells out (with re.ASCII, `\w` and `\s` are ASCII only), and every
# class that excludes some characters (`[^\s:/?#@]`) still takes it. `?`, the encoder's own
# replacement, would not do: URL patterns name it.
_STAND_IN = "\x1a"


def _stand_in(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeEncodeError)
    return _STAND_IN * (error.end - error.start), error.end


codecs.register_error("nexusmem-stand-in", _stand_in)


def ascii_lower(text: str) -> str:
    """``text`` in ASCII lower case, one character for one: what triggers are looked for in and
    folded patterns run on. ``str.lower`` can lengthen a text (``"İ".lower()`` is two
    characters), which would move every position after it; a non-ASCII character becomes
    ``\\x1a`` instead, which no pattern of the table (ASCII, with ``re.ASCII``) tells from the
    character it replaces."""
    if text.isascii():  # a flag of the string: most texts take this path
        return text.lower()
    return text.encode("ascii", "nexusmem-stand-in").decode("ascii").lower()


def fold(regex: str) -> str:
    """``regex`` (ASCII, case-insensitive) for text in ASCII lower case, matched case-sensitively:
    its letters in lower case, bar escapes (``\\S``, ``\\W``) and the ``P`` of ``(?P``.

    On lowercase text the two match at the same places: every letter of the text is lowercase,
    and a pattern letter, or a class's letter or range, matches it exactly when it did either
    case of it. ``re`` finds a case-sensitive literal much faster: a leading alternation of
    words gives it the set of their first letters to scan for in C.
    """
    out: list[str] = []
    at = 0
    while at < len(regex):
        char = regex[at]
        if char == "\\":
            out.append(regex[at : at + 2])
            at += 2
        elif regex.startswith("(?P", at):
            out.append("(?P")
            at += 3
        else:
            out.append(char.lower() if char.isascii() else char)
            at += 1
    return "".join(out)


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

    ``folded``: the rule is case-insensitive (context rules with ``re.IGNORECASE``), so its
    pattern is compiled from :func:`fold` of ``regex``, case-sensitively, and runs on the text's
    :func:`ascii_lower` copy; matches are replaced in the text itself (same positions).

    ``accept``, when set, is asked whether a matched secret really is one (an entropy test for
    unprefixed values next to a keyword); a refused match is left as it is.

    ``blob``, for a token format whose body may run on past a run of token characters (base64's
    ``+``, ``/`` and ``=``), is that body's ``(alphabet, least, most)``: the body is the whole
    stretch of ``alphabet`` after the prefix, and the format matches only when that stretch is
    ``least`` to ``most`` characters long. Every token start inside one stretch shares its end,
    so the engine finds the end once (:meth:`blob_end`) and tries the pattern only where it can
    match: tried at each start, a stretch of ``n`` characters with a start every few would cost
    ``n`` times ``most`` steps of backtracking.

    ``pattern`` is compiled from ``regex`` and ``flags`` on first use, then kept. Python's regex
    compiler costs about 2 microseconds per pattern character, ~10 ms for the whole table, which
    would be most of a shell hook's import; lazily, a process pays only for the rules its
    commands trigger. (A plain class, not a dataclass: importing ``dataclasses`` alone costs
    a hook 17 ms.)
    """

    __slots__ = (
        "_blob", "_pattern", "accept", "blob", "example", "expected", "flags", "folded", "group",
        "name", "prefixes", "regex", "run", "triggers",
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
        blob: tuple[str, int, int] | None = None,
    ) -> None:
        self.name, self.regex, self.example, self.expected = name, regex, example, expected
        self.triggers, self.group, self.flags = triggers, group, flags
        self.prefixes, self.accept, self.run, self.blob = prefixes, accept, run, blob
        self.folded = bool(flags & re.IGNORECASE) and not prefixes
        self._pattern: re.Pattern[str] | None = None
        self._blob: re.Pattern[str] | None = None

    def __repr__(self) -> str:
        return f"Rule({self.name!r})"

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled :attr:`regex` (folded, see :attr:`folded`: it runs on lowercase text)."""
        if self._pattern is None:
            if self.folded:
                self._pattern = re.compile(fold(self.regex), self.flags & ~re.IGNORECASE)
            else:
                self._pattern = re.compile(self.regex, self.flags)
        return self._pattern

    def blob_end(self, text: str, start: int) -> int:
        """Where the stretch of the :attr:`blob` alphabet starting at ``start`` ends."""
        if self._blob is None:
            assert self.blob is not None
            self._blob = re.compile(f"[{self.blob[0]}]*+")
        match = self._blob.match(text, start)
        assert match is not None  # `*` matches the empty stretch too
        return match.end()

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches of the rule in ``text``; their spans are positions in ``text`` (their
        groups, for a folded rule, are of its lowercase copy)."""
        return self.pattern.finditer(ascii_lower(text) if self.folded else text)


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
    blob: tuple[str, int, int] | None = None,
) -> Rule:
    """A token format: one of ``prefixes`` (exact case), then ``body`` (a regex).

    The token must not continue a longer run of token characters on either side, so the body
    should end with what may not follow it (most formats: ``(?![A-Za-z0-9_-])``). The whole
    token is the secret.

    With ``blob`` (``(alphabet, least, most)``, see :class:`Rule`), the body starts with
    ``least`` to ``most`` characters of ``alphabet`` and ``body`` is only what follows them,
    which must refuse to be followed by any character of ``alphabet``.
    """
    if blob is not None:
        alphabet, least, most = blob
        body = f"[{alphabet}]{{{least},{most}}}" + body
    alternation = "|".join(re.escape(prefix) for prefix in prefixes)
    regex = rf"(?<![A-Za-z0-9_.-])(?:{alternation}){body}"
    triggers = tuple(dict.fromkeys(prefix.lower() for prefix in prefixes))
    return Rule(name, regex, example, expected, triggers, 0, flags | re.ASCII, prefixes, blob=blob)
