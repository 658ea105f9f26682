"""Where a text can hold a secret: found once per version of a text, for both passes over it.

Two ways give the same places (the tests run both on the same texts): ahocorasick-rs finds
every literal of interest in one pass over a lowercase, spaced copy of the text
(:func:`_found_scan`, see :mod:`.literals`); without it, ``str.find`` does, a root at a time,
and the runs of token characters are stepped through one by one (:func:`_find_scan`). What
comes out (:class:`Scan`): where token formats are tried, the lines the line rules could
match and the keys found there, the URLs, and the whole-text rules whose triggers occur.

Standard library only, bar ahocorasick-rs, which :mod:`.literals` loads for long texts.
"""

from __future__ import annotations

import re

from .context import CONTEXT_RULES
from .literals import LEAST as _LITERALS_LEAST
from .literals import Literals, loaded
from .rule import Rule
from .rule import ascii_lower as _lower
from .tokens import TOKEN_RULES

__all__ = [
    "BY_PREFIX",
    "LENGTHS_BY_HEAD",
    "LINE_KEYS",
    "SURE",
    "Scan",
    "line_spans",
    "scan",
    "triggered",
    "whole_rules",
]

# --- Context rules: which run, and on which lines ---------------------------------------------

# Rules run over the whole text: the private key block spans lines, and the URL rules start
# with a literal (`://`, `https://hooks.`) that `re` finds faster than lines could be gathered
# (URLs are on every other line of a README).
_WHOLE_TEXT = frozenset(
    {"private_key_block", "url_credentials", "slack_webhook", "discord_webhook", "teams_webhook"}
)
_WHOLE_RULES = tuple(rule for rule in CONTEXT_RULES if rule.name in _WHOLE_TEXT)
_LINE_RULES = tuple(rule for rule in CONTEXT_RULES if rule.name not in _WHOLE_TEXT)

# Webhook URLs (`https://hooks.slack.com/...`): their triggers are part of a URL's host, so they
# are looked for in the hosts after each `://` (a text has few), not by a search of all of it.
_IN_HOSTS = frozenset({"slack_webhook", "discord_webhook", "teams_webhook"})
_HOST_RULES = tuple(rule for rule in _WHOLE_RULES if rule.name in _IN_HOSTS)
# Rules whose only trigger is `://` (URL credentials): the same walk over the URLs says whether
# they can match, so their trigger is not searched for again.
_URL_ONLY = frozenset(rule.name for rule in _WHOLE_RULES if rule.triggers == ("://",))
_HOST_LONGEST = 253  # the longest DNS name: how far past `://` a host is read
# The other whole-text rules (the private key block) run when one of their triggers occurs.
_TEXT_RULES = tuple(rule for rule in _WHOLE_RULES if rule.name not in _IN_HOSTS | _URL_ONLY)


def _roots(triggers: list[str]) -> tuple[str, ...]:
    """The triggers no other trigger is a substring of: if none of these occurs, none does."""
    unique = sorted(set(triggers), key=len)
    roots: list[str] = []
    for trigger in unique:
        if not any(root in trigger for root in roots):
            roots.append(trigger)
    return tuple(roots)


_LINE_ROOTS = _roots([trigger for rule in _LINE_RULES if not rule.run for trigger in rule.triggers])
# Roots holding a character rare in ordinary text (`sha256~`, `q~`) are looked for from the
# places that character occurs: a search for one character is several times faster than for a
# string, and most texts have none.
_RARE = "~"
_RARE_ROOTS = tuple((root, root.index(_RARE)) for root in _LINE_ROOTS if _RARE in root)
_COMMON_ROOTS = tuple(root for root in _LINE_ROOTS if _RARE not in root)
# Past this many rare characters in one text, a plain search for each root is cheaper.
_RARE_MOST = 64

# A root followed by a letter is part of a longer word (`monkeypatch`, `authored`, `passed`),
# which no rule's keyword is, except for these continuations (`pass` + `word`: `password=`).
# A root not listed here (`curl`, `login`) is taken wherever it occurs. A new keyword that
# continues a root with letters (`tokenid=`) must be added here; the tests write every rule's
# example and every secret name each way the rules take it, and check the lines are kept.
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_CONTINUATIONS: dict[str, tuple[str, ...]] = {
    "auth": ("orization",),
    "credential": ("s",),
    "key": (),
    "pass": ("word", "wd", "phrase"),
    "pwd": (),
    "secret": (),
    "sig": ("nature",),
    "token": (),
}

# Run-triggered rules (`Rule.run`): the shortest run they need, and per rule its length and
# triggers.
_RUN_RULES = tuple(
    (rule.run, trigger, rule.name) for rule in _LINE_RULES if rule.run for trigger in rule.triggers
)
_RUN_LEAST = min(run for run, _, _ in _RUN_RULES)


# The characters tokens are made of.
_TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_TOKEN_TEXT = _TOKEN_CHARS.decode("ascii")


def _as_written(rule: Rule, trigger: str) -> str:
    """``trigger`` in the case ``rule``'s example writes it, with the separator before it if
    there is one: run-triggered patterns are case-sensitive, so a run can only match where that
    case occurs (``:AA`` opens a Telegram token's run, where ``aa`` is in half the hex digests of
    a patch), and a longer literal is found faster."""
    assert not rule.folded, rule.name
    at = rule.example.lower().find(trigger)
    before = rule.example[at - 1 : at] if at > 0 else ""
    start = at - 1 if before and before not in _TOKEN_TEXT else at
    return rule.example[start : at + len(trigger)]


def _overlaps(literal: str) -> bool:
    """Whether ``literal`` can overlap itself (``aa`` in ``aaa``): found one occurrence at a
    time, a run of it would give a hit per character."""
    return any(literal.startswith(literal[-n:]) for n in range(1, len(literal)))


# The run-triggered rules' literals as the automaton looks for them (see _ROLES): a literal
# that overlaps itself only where it opens a run, if the example writes a separator before it
# (`:AA`; a run of `a` then gives one hit, not one per character); else as it is.
_RUN_OPENERS = {
    (rule.name, trigger): (" " if len(_as_written(rule, trigger)) > len(trigger) else "") + trigger
    for rule in _LINE_RULES
    if rule.run
    for trigger in rule.triggers
}
# The rest, literals that overlap themselves anywhere in a run, are looked for with str.find,
# as written (see _triggered_runs).
_RUN_LITERALS = tuple(
    (rule.run, _as_written(rule, trigger), rule.name)
    for rule in _LINE_RULES
    if rule.run
    for trigger in rule.triggers
    if _overlaps(_RUN_OPENERS[rule.name, trigger])
)


def _keys(rule: Rule) -> frozenset[str]:
    """What line gathering reports finding when ``rule`` could match: the roots in its triggers,
    or for a run-triggered rule its name."""
    if rule.run:
        return frozenset((rule.name,))
    return frozenset(root for root in _LINE_ROOTS for t in rule.triggers if root in t)


# Per line rule, its keys; and the line rules whose triggers are roots themselves: once their
# keys are found, their triggers are on the gathered lines, and need not be looked for again.
LINE_KEYS = tuple((rule, _keys(rule)) for rule in _LINE_RULES)
SURE = (
    frozenset(
        rule.name for rule in _LINE_RULES if not rule.run and set(rule.triggers) <= set(_LINE_ROOTS)
    )
    | _IN_HOSTS
    | _URL_ONLY
    | {rule.name for rule in _TEXT_RULES}
)  # a whole-text rule comes only when its trigger was found (see whole_rules)

# --- Token formats: which prefixes start which rules ------------------------------------------

BY_PREFIX: dict[str, tuple[Rule, ...]] = {}
for _rule in TOKEN_RULES:
    for _prefix in _rule.prefixes:
        BY_PREFIX[_prefix] = (*BY_PREFIX.get(_prefix, ()), _rule)
del _rule, _prefix


def _lengths_by_head() -> dict[str, tuple[int, ...]]:
    """For each head (a prefix's first two characters), the lengths of the prefixes it starts,
    longest first. A run is looked up at those lengths only, not at every length a prefix of
    the table has: a run starting ``se`` or ``te`` (``secret_``, ``test_``) needs one or two."""
    lengths: dict[str, set[int]] = {}
    for prefix in BY_PREFIX:
        lengths.setdefault(prefix[:2], set()).add(len(prefix))
    return {head: tuple(sorted(found, reverse=True)) for head, found in lengths.items()}


LENGTHS_BY_HEAD = _lengths_by_head()


# --- Where the runs of token characters are ------------------------------------------------

_CLASSES = bytes(0x61 if i in _TOKEN_CHARS else 0x20 for i in range(256))

# Every token format is looked for where a run of at least this many token characters starts.
# (A format whose body may hold other characters, `=` or `+`, can start a shorter run; those
# are not looked for.)
_MIN_RUN = 12
_RUN_NEEDLE = b" " + b"a" * _MIN_RUN


def _classes(text: str) -> bytes:
    """``text`` with a space in front, one byte per character: ``a`` for a token character
    (``[A-Za-z0-9_.-]``), a space for any other, non-ASCII ones included.

    A run of token characters of length ``n`` starting at ``text[i]`` is then ``b" " + b"a" * n``
    at ``i``: `bytes.find` looks for that in C, skipping ahead by the needle's length, where a
    regex looking for the run would stop at every character that ends a word. Encoding with
    ``replace`` keeps one byte per character, a lone surrogate included.
    """
    return (" " + text).encode("ascii", "replace").translate(_CLASSES)


# What :func:`_runs` finds: the starts of runs with a token prefix's head, and the long runs.
_Runs = tuple[list[int], list[tuple[int, int]]]


def triggered(rule: Rule, lowered: str) -> bool:
    """Whether one of ``rule``'s triggers occurs in ``lowered``: if none does, the pattern
    cannot match."""
    return any(map(lowered.__contains__, rule.triggers))  # no generator frame per trigger


def _runs(text: str) -> _Runs:
    """The runs of at least :data:`_MIN_RUN` token characters of ``text`` worth a look: the
    starts of those beginning with a token prefix's first two characters, where token formats
    are tried; and the (start, end) of those long enough for a run-triggered rule
    (``Rule.run``). One pass over the runs sorts them, so later passes see only these few."""
    classes = _classes(text)
    heads: list[int] = []
    long: list[tuple[int, int]] = []
    find, starts, needle, step = classes.find, classes.startswith, _RUN_NEEDLE, len(_RUN_NEEDLE)
    known, least, longer = LENGTHS_BY_HEAD, _RUN_LEAST, b" " + b"a" * _RUN_LEAST
    at = find(needle)  # the space before a run, so the run starts at `at` in `text`
    while at != -1:
        if text[at : at + 2] in known:
            heads.append(at)
        if starts(longer, at):  # most runs are shorter: their end is not needed
            end = find(b" ", at + least + 1)  # the run ends at `end - 1`
            if end == -1:
                long.append((at, len(text)))
                break
            long.append((at, end - 1))
            at = find(needle, end)
        else:
            at = find(needle, at + step)
    return heads, long


def _followed(lowered: str, at: int, root: str) -> bool:
    """Whether the root found at ``at`` can be part of a match: not followed by a letter, or by
    one of the letters a rule's keyword continues with (``pass`` + ``word``). ``key`` in
    ``monkeypatch`` and ``auth`` in ``Co-authored-by`` cannot be."""
    after = at + len(root)
    return lowered[after : after + 1] not in _LETTERS or lowered.startswith(
        _CONTINUATIONS[root], after
    )


def _rare_starts(lowered: str, starts: list[int], found: set[str]) -> None:
    """Add to ``starts`` where each root holding a rare character (``sha256~``) occurs, and
    those roots to ``found``: looked for from where that character is, which most texts never
    hold."""
    if _RARE not in lowered:
        return
    find = lowered.find
    if lowered.count(_RARE) > _RARE_MOST:
        for root, _ in _RARE_ROOTS:
            at = find(root)
            while at != -1:
                starts.append(at)
                found.add(root)
                at = find(root, at + 1)
        return
    at = find(_RARE)
    while at != -1:
        for root, offset in _RARE_ROOTS:
            if at >= offset and lowered.startswith(root, at - offset):
                starts.append(at)
                found.add(root)
        at = find(_RARE, at + 1)


def _line_starts(lowered: str, long: list[tuple[int, int]], found: set[str]) -> list[int]:
    """A position on every line of ``lowered`` a line rule could match: the lines holding a root
    of the line rules' triggers (one that can be part of a match, see :func:`_followed`), and
    those whose long runs of token characters (``long``, from :func:`_runs`) hold a
    run-triggered rule's trigger. Adds to ``found`` the keys found (see :func:`_keys`).

    A substring test per root is the cheap part (a few ms per MB for all of them, where one
    regex alternating between them costs four times as much); only the roots present are then
    located, one line at a time.
    """
    starts: list[int] = []
    find = lowered.find
    for root in _COMMON_ROOTS:
        at = find(root)
        checked = root in _CONTINUATIONS
        while at != -1:
            if checked and not _followed(lowered, at, root):
                at = find(root, at + 1)
                continue
            starts.append(at)
            found.add(root)
            end = find("\n", at)
            if end == -1:
                break
            at = find(root, end)
    _rare_starts(lowered, starts, found)
    _run_starts(lowered, long, starts, found)
    return starts


def _triggered_runs(text: str, spaced: bytes, starts: list[int], found: set[str]) -> None:
    """Add to ``starts`` the start of each run of token characters holding a run-triggered
    rule's trigger (as written, see :func:`_as_written`) that is as long as the rule needs, and
    the rule's name to ``found`` (``spaced`` is :func:`_spaced` of ``text``'s lowercase).

    Each trigger is looked for with ``str.find``, and after each run holding it the search
    goes on past that run: a trigger can overlap itself (``aa`` occurs at every character of a
    run of ``a``, base64 of zero bytes), and finding each occurrence, then its run, would cost
    the square of the run's length.
    """
    find, rfind, size = spaced.find, spaced.rfind, len(text)
    for least, trigger, name in _RUN_LITERALS:
        skip = trigger[0] not in _TOKEN_TEXT  # a separator before the run: not part of it
        at = text.find(trigger)
        while at != -1:
            at += skip
            # In `spaced`, text position i is at i + 1: the space before the run is where the
            # run starts in the text, the space after it where it ends.
            start, end = rfind(b" ", 0, at + 1), find(b" ", at + 1)
            end = size if end == -1 else end - 1
            if end - start >= least:
                starts.append(start)
                found.add(name)
            at = text.find(trigger, end)


def _run_starts(
    lowered: str, long: list[tuple[int, int]], starts: list[int], found: set[str]
) -> None:
    """Add to ``starts`` the start of each of the ``long`` runs that holds a run-triggered
    rule's trigger and is as long as that rule needs, and the rule's name to ``found``.

    A run is searched once per trigger, never once per occurrence (see
    :func:`_triggered_runs`).
    """
    for start, end in long:
        run = lowered[start:end]
        size = end - start
        for least, trigger, name in _RUN_RULES:
            if size >= least and trigger in run:
                starts.append(start)
                found.add(name)


def _urls(lowered: str) -> list[int]:
    """Where each ``://`` of ``lowered`` is."""
    urls = []
    find = lowered.find
    at = find("://")
    while at != -1:
        urls.append(at)
        at = find("://", at + 3)
    return urls


class Scan:
    """Where one version of a text can hold a secret, found once for both passes over it.

    ``lowered`` is its :func:`_lower` copy; ``heads``, in order, where token formats are tried
    (runs of :data:`_MIN_RUN` token characters or more, starting with a prefix's first two
    characters); ``lines``, a position on each line a line rule could match, and ``keys``, what
    was found there (see :func:`_keys`); ``urls``, where each ``://`` is; ``hosted``, the
    webhook rules whose triggers may occur (all of them, unless the text was searched for them);
    ``whole``, the names of the other whole-text rules whose triggers occur.
    """

    __slots__ = ("heads", "hosted", "keys", "lines", "lowered", "urls", "whole")

    def __init__(
        self,
        lowered: str,
        heads: list[int],
        lines: list[int],
        keys: set[str],
        urls: list[int],
        whole: set[str],
        hosted: tuple[Rule, ...] = _HOST_RULES,
    ) -> None:
        self.lowered, self.heads, self.lines, self.keys = lowered, heads, lines, keys
        self.urls, self.whole, self.hosted = urls, whole, hosted


# --- The same places, found by literals (see literals.py) -------------------------------------

# Literals are looked for in one copy of the text: lowercase, with a space in front, and every
# character that is not a token character a space. Roots, run triggers and the key block's
# marker are made of token characters, so they read there as in the lowercase text; a token
# prefix, lowercased, follows the space before the run it starts. What each literal found says
# (a role, a name and a number): a prefix; a root of the line rules, which can be part of a
# match (see _followed) when not followed by a letter, or by a continuation; a run-triggered
# rule's trigger, if the run holding it is that long; a webhook rule's trigger, which then may
# be in a URL's host; a whole-text rule's trigger. A run trigger that overlaps itself (`aa`) is
# not among them: a run of one letter would give a hit per character; it is looked for run by
# run instead (_triggered_runs). The rest (`://`, the roots holding `~`) are found with
# str.find, as without the library.
_KEPT = bytes(i if i in _TOKEN_CHARS else 0x20 for i in range(256))
_PREFIX, _ROOT, _RUN, _HOST, _WHOLE = range(5)
_ROLES: dict[bytes, list[tuple[int, str, int]]] = {}
for _root in _COMMON_ROOTS:
    _ROLES.setdefault(_root.encode("ascii"), []).append((_ROOT, _root, len(_root)))
for _least, _trigger, _name in _RUN_RULES:
    _literal = _RUN_OPENERS[_name, _trigger]
    if not _overlaps(_literal):
        _ROLES.setdefault(_literal.encode("ascii"), []).append((_RUN, _name, _least))
for _role, _rules in ((_HOST, _HOST_RULES), (_WHOLE, _TEXT_RULES)):
    for _rule in _rules:
        for _trigger in _rule.triggers:
            _ROLES.setdefault(_trigger.encode("ascii"), []).append((_role, _rule.name, 0))
assert all(literal.lstrip(b" ").translate(_KEPT) == literal.lstrip(b" ") for literal in _ROLES), (
    "a separator in a literal"
)
for _prefix in BY_PREFIX:
    _opener = b" " + _prefix.lower().encode("ascii").translate(_KEPT)
    _ROLES.setdefault(_opener, []).append((_PREFIX, "", 0))
del _root, _least, _trigger, _name, _role, _rules, _rule, _prefix, _literal, _opener
_LITERAL_ROLES = tuple(_ROLES.values())
_LITERALS = Literals(tuple(_ROLES))


def _spaced(lowered: str) -> bytes:
    """``lowered`` as literals are looked for in it (see :data:`_ROLES`): a space in front, then
    one byte per character, a space for any that is not a token character."""
    return (" " + lowered).encode("ascii").translate(_KEPT)  # _lower() leaves only ASCII


def _found_scan(text: str, lowered: str, hits: list[tuple[int, int, int]], spaced: bytes) -> Scan:
    """:class:`Scan` of ``text`` from ``hits``, the literals found in ``spaced`` (see
    :func:`_spaced`): the same places ``str.find`` would find, one Python step for each and none
    for the text between.

    Tokens are tried only where a prefix itself starts a run, not every run beginning with a
    prefix's first two characters (``se``, ``te``); the token pass skips those anyway.
    """
    # `spaced` has a space in front, as the runs' class map does: a hit's `at` there is the
    # text's `at - 1`, and the space before a run is where the run starts in the text.
    find, heads, known = spaced.find, set(), LENGTHS_BY_HEAD
    lines: list[int] = []
    keys: set[str] = set()
    hosted: set[str] = set()
    whole: set[str] = set()
    run = (0, 0)  # the (start, end) in `spaced` of the run of the last run trigger found
    for index, at, _ in hits:
        for role, name, number in _LITERAL_ROLES[index]:
            if role == _PREFIX:
                # A run of _MIN_RUN token characters or more after the space at `at`.
                long = len(spaced) > at + _MIN_RUN and find(b" ", at + 1, at + 1 + _MIN_RUN) == -1
                if long and text[at : at + 2] in known:
                    heads.add(at)
            elif role == _ROOT:
                after = at - 1 + number  # the character after the root (see _followed)
                if (
                    name not in _CONTINUATIONS
                    or lowered[after : after + 1] not in _LETTERS
                    or lowered.startswith(_CONTINUATIONS[name], after)
                ):
                    lines.append(at - 1)
                    keys.add(name)
            elif role == _RUN:
                # The run holding it, looked up once per run: hits come in order, and a
                # literal repeated through one run (`-us-us-us...`) must not scan it each time.
                if not run[0] <= at < run[1]:  # (`at + 1`: a literal may open with the space)
                    end = find(b" ", at + 1)
                    run = (spaced.rfind(b" ", 0, at + 1), end if end != -1 else len(spaced))
                if run[1] - 1 - run[0] >= number:
                    lines.append(run[0])
                    keys.add(name)
            elif role == _HOST:
                hosted.add(name)
            else:
                whole.add(name)
    _rare_starts(lowered, lines, keys)
    _triggered_runs(text, spaced, lines, keys)
    urls = _urls(lowered)
    host_rules = tuple(rule for rule in _HOST_RULES if rule.name in hosted)
    return Scan(lowered, sorted(heads), lines, keys, urls, whole, host_rules)


def _find_scan(text: str, lowered: str) -> Scan:
    """:class:`Scan` of ``text`` (``lowered`` is its :func:`_lower` copy) with ``str.find``:
    the runs of token characters, then a search of the whole text per root."""
    heads, long = _runs(text)
    keys: set[str] = set()
    lines = _line_starts(lowered, long, keys)
    whole = {rule.name for rule in _TEXT_RULES if triggered(rule, lowered)}
    return Scan(lowered, heads, lines, keys, _urls(lowered), whole)


def scan(text: str) -> Scan:
    """Where ``text`` can hold a secret (see :class:`Scan`): found by literals in one pass when
    ahocorasick-rs is there (loaded by the first long text, see literals.py), else with
    ``str.find``."""
    lowered = _lower(text)
    if len(text) >= _LITERALS_LEAST or loaded():
        spaced = _spaced(lowered)
        hits = _LITERALS.find(spaced)
        if hits is not None:
            return _found_scan(text, lowered, hits, spaced)
    return _find_scan(text, lowered)


# How a line that goes on on the next one ends: a shell word's backslash-newline, or a YAML
# block scalar's indicator after a key (`password: |`), whose value is the next line.
_GOES_ON = re.compile(r"(?:\\|:[ \t]*[|>][-+0-9]{0,2})[ \t]*\Z")
_GOES_ON_TAIL = 8  # characters of a line's end that can hold it


def line_spans(lowered: str, starts: list[int]) -> list[tuple[int, int]]:
    """The (start, end) of every line of ``lowered`` holding one of ``starts``, in order, each
    with the lines it goes on to (see :data:`_GOES_ON`): a secret begun on it can end there."""
    if not starts:
        return []
    find, rfind, spans, goes_on = lowered.find, lowered.rfind, [], _GOES_ON.search
    line_end = -1
    for at in sorted(starts):
        if at < line_end:  # the same line, found by another trigger
            continue
        line_end = find("\n", at)
        while line_end != -1 and goes_on(lowered, max(0, line_end - _GOES_ON_TAIL), line_end):
            line_end = find("\n", line_end + 1)
        if line_end == -1:
            line_end = len(lowered)
        spans.append((rfind("\n", 0, at) + 1, line_end))
    return spans


def whole_rules(where: Scan) -> tuple[Rule, ...]:
    """The whole-text rules that could match the text ``where`` was scanned from: a webhook rule
    only when its trigger is in the host of one of the text's URLs, a URL rule only when there is
    a URL, the others when one of their triggers occurs."""
    found = set(where.whole)
    if where.urls:
        found |= _URL_ONLY
    if where.urls and where.hosted:
        lowered, hosts = where.lowered, []
        for at in where.urls:
            start = at + 3
            end = lowered.find("/", start, start + _HOST_LONGEST)
            hosts.append(lowered[start : end if end != -1 else start + _HOST_LONGEST])
        joined = "\n".join(hosts)  # a trigger across two hosts only runs a rule for nothing
        for rule in where.hosted:
            if any(map(joined.__contains__, rule.triggers)):
                found.add(rule.name)
    return tuple(rule for rule in _WHOLE_RULES if rule.name in found)
