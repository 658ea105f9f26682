"""Secret redaction, applied to every text before it reaches disk.

Every captured shell command passes through :func:`redact` on the shell hook's hot path, and
every commit message and patch of a first sync does too, so the package uses the standard
library only and is built for speed: its cost is linear in the text and nearly independent of
the number of rules.

* Importing it compiles nothing: each rule's pattern is compiled once, on first use.
* Token formats (:mod:`.tokens`: ``ghp_...``, ``AKIA...``, ``xoxb-...``) are found in one pass.
  One regex lists the runs of token characters long enough to hold a token; a run is tried
  against the formats whose prefix it starts with (a dictionary lookup), and nothing else is.
  Most runs (identifiers, paths, words) start with no prefix and cost one lookup.
* Context rules (:mod:`.context`: headers, options, assignments) are line-local, bar the
  multi-line private key block. A handful of substring tests on the lowercased text find which
  of their keywords occur at all; only the lines holding one are gathered, and each rule whose
  triggers occur in those lines runs over them, not over the whole text. A patch of 2,000 lines
  with three lines mentioning a token costs three lines of rule work.

A secret is replaced by the literal ``[REDACTED]`` while the non-secret context is kept, so the
stored text still says what was done: ``DB_PASSWORD=[REDACTED]``,
``Authorization: Bearer [REDACTED]``, ``https://user:[REDACTED]@host``,
``mysql -u root -p[REDACTED]``, ``--token [REDACTED]``. A quoted value is replaced whole, quotes
included. Context rules run before token formats, which would otherwise redact only part of a
quoted value.

Secret names. ``NAME=value`` is redacted when the name *ends* with a secret word, in any case:
PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL(S), AUTH, API_KEY/APIKEY, ACCESS_KEY,
PRIVATE_KEY, SECRET_KEY and a few other ``*_KEY`` names; PWD and PASS only after an underscore
(``DB_PWD``, ``SMTP_PASS``), so the shell's own ``PWD``/``OLDPWD`` stay visible. An upper-case
environment name whose secret word is followed by ``_`` (``SECRET_KEY_BASE``, ``TOKEN_FILE``)
is redacted too. So ``GITHUB_TOKEN``, ``PGPASSWORD`` and ``BASIC_AUTH`` are secret names, while
``TOKENIZER``, ``AUTHOR`` and ``MAX_TOKENS`` are not. Written with spaces, as code and config
files do (``api_key = "..."``, ``token: ...``), the value must also look random (see
:mod:`.entropy`), so ``password = "changeme"`` in a test fixture stays readable.

Never redacted: git shas (``This reverts commit <sha>``), UUIDs, version strings, hex colours
and digests are not token formats, and values that are variable references (``$TOKEN``,
``"${TOKEN}"``, ``"$(gh auth token)"``) are left alone: they are not secrets, and the reference
is useful context.

Guarantees: ``redact(redact(x)) == redact(x)``, and an existing ``[REDACTED]`` is never matched
again or swallowed (every secret group refuses to start with it, optionally after a quote, and a
match that spans one keeps it).

Known limits, by design: a lowercase ``secret_key_base=x`` (secret word followed by ``_``) is not
a secret name; ``${TOKEN=default}`` and ``sed 's/token=x/'`` are redacted (the ``=`` anchor cannot
see what starts the name); command-scoped rules (``mysql -p``, ``docker login -p``, ``curl -u``)
take the first such option of a command only; an Authorization value is cut at the first quote
(``Digest username="..."``); a private key without an END marker is redacted to the end of the
text; a token glued to the end of a longer run of token characters (``abc-ghp_...``) is not
recognised, since tokens are looked for where a run starts.
"""

from __future__ import annotations

import hashlib
import re

from .context import CONTEXT_RULES
from .rule import Rule
from .tokens import TOKEN_RULES

TYPE_CHECKING = False  # importing typing for it would cost a shell hook
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "PLACEHOLDER",
    "RULES",
    "TABLE_VERSION",
    "Rule",
    "redact",
    "redact_count",
    "redact_cut",
    "redact_lines",
    "redact_many",
    "redact_tally",
    "value_strings",
    "with_strings",
]

PLACEHOLDER = "[REDACTED]"

RULES: tuple[Rule, ...] = CONTEXT_RULES + TOKEN_RULES

# Identifies the table: a memory redacted by an older table may hold what this one would catch
# (see hygiene/scrub.py). Any change to a rule's pattern, group or prefixes changes it.
TABLE_VERSION = hashlib.sha256(
    "\n".join(
        f"{rule.name}\x1f{rule.regex}\x1f{rule.group}\x1f{rule.flags}\x1f{rule.prefixes}"
        for rule in RULES
    ).encode()
).hexdigest()[:16]

# A pass over the table can expose a secret an earlier rule would have matched: a redacted value
# that swallowed the next client name (`--token=abcmysql -pX`) no longer stops mysql's scan.
# Repeating until a pass changes nothing makes the output a fixed point, i.e. idempotent. A pass
# repeats only when it replaced something (texts without secrets take one pass), real commands
# settle in one, and the bound only guards against a rule bug turning into a hang.
_MAX_PASSES = 4

# Characters that alone are not a secret (an empty quoted value, the space around a key body).
_NOT_SECRET = "'\" \t\r\n"

# --- Context rules: which run, and on which lines ---------------------------------------------

# Rules run over the whole text: the private key block spans lines, and the URL rules start
# with a literal (`://`, `https://hooks.`) that `re` finds faster than lines could be gathered
# (URLs are on every other line of a README).
_WHOLE_TEXT = frozenset(
    {"private_key_block", "url_credentials", "slack_webhook", "discord_webhook", "teams_webhook"}
)
_WHOLE_RULES = tuple(rule for rule in CONTEXT_RULES if rule.name in _WHOLE_TEXT)
_LINE_RULES = tuple(rule for rule in CONTEXT_RULES if rule.name not in _WHOLE_TEXT)


def _roots(triggers: list[str]) -> tuple[str, ...]:
    """The triggers no other trigger is a substring of: if none of these occurs, none does."""
    unique = sorted(set(triggers), key=len)
    roots: list[str] = []
    for trigger in unique:
        if not any(root in trigger for root in roots):
            roots.append(trigger)
    return tuple(roots)


_LINE_ROOTS = _roots([trigger for rule in _LINE_RULES for trigger in rule.triggers])

# --- Token formats: which prefixes start which rules ------------------------------------------

_BY_PREFIX: dict[str, tuple[Rule, ...]] = {}
for _rule in TOKEN_RULES:
    for _prefix in _rule.prefixes:
        _BY_PREFIX[_prefix] = (*_BY_PREFIX.get(_prefix, ()), _rule)
del _rule, _prefix


def _lengths_by_head() -> dict[str, tuple[int, ...]]:
    """For each head (a prefix's first two characters), the lengths of the prefixes it starts,
    longest first. A run is looked up at those lengths only, not at every length a prefix of
    the table has: a run starting ``se`` or ``te`` (``secret_``, ``test_``) needs one or two."""
    lengths: dict[str, set[int]] = {}
    for prefix in _BY_PREFIX:
        lengths.setdefault(prefix[:2], set()).add(len(prefix))
    return {head: tuple(sorted(found, reverse=True)) for head, found in lengths.items()}


_LENGTHS_BY_HEAD = _lengths_by_head()


def _trie(words: list[str]) -> str:
    """A regex matching any of ``words``, as a trie (``g(?:h|l)``): `re` tries the alternatives
    of a flat list one after another, of a trie only those sharing the first character."""
    tree: dict[str, dict] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(tree)


_run: re.Pattern[str] | None = None


def _runs() -> re.Pattern[str]:
    """Where a token can start, scanning the text with a space in front: a character that is not
    a token character, then 12 token characters (no format is shorter) that begin with the
    first two characters of some prefix. Runs of token characters are maximal, so every format
    is looked for where a run starts. The length is checked first, the prefixes after: most
    runs are short words, and the length test is cheaper. Compiled on first use: a shell hook
    whose command holds no long run never pays for it."""
    global _run
    if _run is None:
        heads = sorted({prefix[:2] for prefix in _BY_PREFIX})
        _run = re.compile(r"[^A-Za-z0-9_.-](?=[A-Za-z0-9_.-]{12})(?=" + _trie(heads) + ")")
    return _run


def _hide(secret: str) -> str:
    """The replacement for a secret: ``[REDACTED]``, keeping any placeholder already inside it.

    A match can span an earlier redaction (``TOKEN=abc[REDACTED]``); swallowing it would make
    ``[REDACTED]`` disappear, so only the pieces between placeholders are hidden. Pieces that are
    only quotes or whitespace are not secrets and stay, so ``"[REDACTED]"`` is left as it is.
    """
    if PLACEHOLDER not in secret:
        return PLACEHOLDER if secret.strip(_NOT_SECRET) else secret
    pieces = secret.split(PLACEHOLDER)
    return PLACEHOLDER.join(PLACEHOLDER if piece.strip(_NOT_SECRET) else piece for piece in pieces)


def _apply(rule: Rule, text: str) -> tuple[str, int]:
    """Replace the secret group of every match of one rule; return the text and the count."""
    count = 0
    group = rule.group
    accept = rule.accept

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        start, end = match.span(group)
        secret = text[start:end]
        hidden = _hide(secret)
        if hidden == secret:  # nothing left to hide (empty, quotes, placeholders)
            return match.group(0)
        if accept is not None and not accept(secret):
            return match.group(0)
        count += 1
        whole_start, whole_end = match.span()
        return text[whole_start:start] + hidden + text[end:whole_end]

    return rule.pattern.sub(replace, text), count


def _run_rules(
    rules: tuple[Rule, ...], text: str, lowered: str, tally: dict[str, int]
) -> tuple[str, int]:
    """Apply each of ``rules`` whose triggers occur in ``text`` (``lowered`` is its lowercase),
    in order."""
    found = 0
    for rule in rules:
        for trigger in rule.triggers:
            if trigger in lowered:
                break
        else:
            continue  # no trigger: the pattern cannot match
        text, count = _apply(rule, text)
        if count:
            tally[rule.name] = tally.get(rule.name, 0) + count
            found += count
            lowered = text.lower()
    return text, found


def _line_spans(lowered: str) -> list[tuple[int, int]]:
    """The (start, end) of every line of ``lowered`` holding a line rule's trigger, in order.

    A substring test per trigger is the cheap part (a few ms per MB for all of them, where one
    regex alternating between them costs four times as much); only the triggers present are
    then located, one line at a time.
    """
    spans: list[tuple[int, int]] = []
    find, rfind = lowered.find, lowered.rfind
    for root in _LINE_ROOTS:
        if root not in lowered:
            continue
        at = find(root)
        while at != -1:
            end = find("\n", at)
            if end == -1:
                end = len(lowered)
            spans.append((rfind("\n", 0, at) + 1, end))
            at = find(root, end)
    if len(spans) < 2:
        return spans
    spans.sort()
    merged = [spans[0]]
    for span in spans[1:]:
        if span[0] <= merged[-1][1]:  # the same line, found by another trigger
            continue
        merged.append(span)
    return merged


def _context_pass(text: str, tally: dict[str, int]) -> tuple[str, int]:
    """One pass of the context rules: whole-text rules, then line rules on the lines they could
    match."""
    lowered = text.lower()
    text, found = _run_rules(_WHOLE_RULES, text, lowered, tally)
    if found:
        lowered = text.lower()
    spans = _line_spans(lowered)
    if not spans:
        return text, found
    if len(spans) == 1:
        start, end = spans[0]
        if start == 0 and end == len(text):
            text, count = _run_rules(_LINE_RULES, text, lowered, tally)
            return text, found + count
    # The candidate lines, joined, go through the rules once; no rule adds or removes a newline,
    # so the result splits back into the same lines.
    excerpt = "\n".join(text[start:end] for start, end in spans)
    redacted, count = _run_rules(_LINE_RULES, excerpt, excerpt.lower(), tally)
    if not count:
        return text, found
    pieces: list[str] = []
    last = 0
    for (start, end), line in zip(spans, redacted.split("\n"), strict=True):
        pieces.append(text[last:start])
        pieces.append(line)
        last = end
    pieces.append(text[last:])
    return "".join(pieces), found + count


def _token_pass(text: str, tally: dict[str, int]) -> tuple[str, int]:
    """One pass of the token formats over the runs of token characters."""
    spans: list[tuple[int, int]] = []
    reached = 0
    for run in _runs().finditer(" " + text):
        start = run.start()  # the run's start in `text`: the space in front shifts it by one
        if start < reached:
            continue
        for length in _LENGTHS_BY_HEAD[text[start : start + 2]]:  # the run's head is a key
            rules = _BY_PREFIX.get(text[start : start + length])
            if rules is None:
                continue
            for rule in rules:
                match = rule.pattern.match(text, start)
                if match is not None:
                    spans.append((start, match.end()))
                    reached = match.end()
                    tally[rule.name] = tally.get(rule.name, 0) + 1
                    break
            else:
                continue
            break
    if not spans:
        return text, 0
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(PLACEHOLDER)
        last = end
    pieces.append(text[last:])
    return "".join(pieces), len(spans)


def redact_tally(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with every secret replaced by ``[REDACTED]``, and how many secrets each
    rule replaced (by rule name; never the secrets themselves)."""
    tally: dict[str, int] = {}
    for _ in range(_MAX_PASSES):
        text, context = _context_pass(text, tally)
        text, tokens = _token_pass(text, tally)
        if not context + tokens:
            break
    return text, tally


def redact_cut(text: str, limit: int) -> tuple[str, int]:
    """Redact ``text``, then cut it to ``limit`` characters; return it and the secrets replaced.

    In that order: cut first, a token across the limit would be stored half in clear, its
    prefix gone or its body too short for any pattern. A cut through a placeholder moves to
    before it.
    """
    text, count = redact_count(text)
    if len(text) <= limit:
        return text, count
    start = text.rfind(PLACEHOLDER, max(0, limit - len(PLACEHOLDER) + 1), limit)
    return text[: start if start != -1 else limit], count


def redact_count(text: str) -> tuple[str, int]:
    """Return ``text`` with every secret replaced by ``[REDACTED]``, and how many were replaced."""
    text, tally = redact_tally(text)
    return text, sum(tally.values())


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``[REDACTED]``; see the module docstring."""
    return redact_count(text)[0]


# Between the texts of one :func:`redact_many` call: a line of its own, which no line-local rule
# crosses, and which the one multi-line rule (a private key body) would swallow, changing the
# number of pieces, so that case is caught and redone text by text.
_SEPARATOR = "\n\x00\n"


def redact_many(texts: list[str]) -> list[str]:
    """:func:`redact` each of ``texts``, in one pass over them all.

    A sync redacts tens of thousands of short texts (subjects, messages, patches); joined, they
    pay the table's fixed cost per call once instead of once each. The result is the same as
    redacting each alone: a text holding the separator, or a key block running into the next
    text, is redone alone.
    """
    if len(texts) < 2:
        return [redact(text) for text in texts]
    joined = _SEPARATOR.join(texts)
    redacted = redact(joined)
    if redacted == joined:
        return list(texts)
    pieces = redacted.split(_SEPARATOR)
    return pieces if len(pieces) == len(texts) else [redact(text) for text in texts]


def redact_lines(values: list[str]) -> list[str]:
    """:func:`redact` each of many short strings (paths, names, metadata) in one pass; return
    ``values`` itself when nothing changed.

    Joined by newlines they go through the table once, instead of paying its per-call cost for
    every path of a 500-file commit. No rule adds or removes a newline in one-line values (the
    only multi-line rule needs a ``-----BEGIN`` line); a value that holds a newline itself is
    redacted alone.
    """
    if not values:
        return values
    alone = {i: redact(v) for i, v in enumerate(values) if "\n" in v}
    if alone:
        rest = [v for i, v in enumerate(values) if i not in alone]
        done = iter(redact_lines(rest))
        out = [alone[i] if i in alone else next(done) for i in range(len(values))]
        return values if out == values else out
    joined = "\n".join(values)
    redacted = redact(joined)
    if redacted == joined:
        return values
    lines = redacted.split("\n")
    return lines if len(lines) == len(values) else [redact(value) for value in values]


def value_strings(value: object, keys: bool = True) -> list[str]:
    """Every string in ``value`` (JSON-like: dicts, lists, strings, numbers), with the keys of
    its objects unless ``keys`` is false, in the order :func:`with_strings` puts them back."""
    strings: list[str] = []

    def collect(item: object) -> None:
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            for key, inner in item.items():
                if keys:
                    strings.append(str(key))
                collect(inner)
        elif isinstance(item, list | tuple):
            for inner in item:
                collect(inner)

    collect(value)
    return strings


def with_strings(value: object, strings: Iterator[str], keys: bool = True) -> object:
    """``value`` with its strings (as :func:`value_strings` lists them, with the same ``keys``)
    taken from ``strings``; the structure is kept, so the result still encodes to valid JSON."""

    def rebuild(item: object) -> object:
        if isinstance(item, str):
            return next(strings)
        if isinstance(item, dict):  # a key comes before its value, as in value_strings()
            if not keys:
                return {key: rebuild(inner) for key, inner in item.items()}
            return {next(strings): rebuild(inner) for inner in item.values()}
        if isinstance(item, list | tuple):
            return [rebuild(inner) for inner in item]
        return item

    return rebuild(value)
