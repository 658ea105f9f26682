"""Secret redaction, applied to every text before it reaches disk.

Every captured shell command passes through :func:`redact` on the shell hook's hot path, and
every commit message and patch of a first sync does too, so the package imports the standard
library only (ahocorasick-rs is loaded by the first long text, see :mod:`.literals`) and is built
for speed: its cost is linear in the text and nearly independent of the number of rules.

* Importing it compiles nothing: each rule's pattern is compiled once, on first use.
* Token formats (:mod:`.tokens`: ``ghp_...``, ``AKIA...``, ``xoxb-...``) are tried only where a
  run of 12 token characters or more starts with some prefix's first two characters (a
  dictionary lookup), and nothing else is: identifiers, paths and words start with no prefix.
  The text is mapped to one byte per character, ``a`` for a token character and a space for
  any other (``bytes.translate``), and the runs are found with ``bytes.find``, in C; or, with
  ahocorasick-rs, the prefixes themselves after a space are found in one pass. The same runs
  serve the formats whose literal sits in their middle (``..._mmk``, ``...-us14``): they are
  looked for in the long runs only.
* Context rules (:mod:`.context`: headers, options, assignments) are line-local, bar the
  multi-line private key block. One substring test per root of their keywords on the lowercased
  text (or one pass for all of them, with ahocorasick-rs) finds which occur at all; only the
  lines holding one are gathered, and only where the keyword can be one (``key`` in
  ``monkeypatch`` or ``auth`` in ``Co-authored-by`` cannot). The rules whose keywords were found
  then run over those lines, not over the whole text. A patch of 2,000 lines with three lines
  mentioning a token costs three lines of rule work.

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
from .rule import ascii_lower as _lower
from .scan import (
    BY_PREFIX,
    LENGTHS_BY_HEAD,
    LINE_KEYS,
    SURE,
    Scan,
    line_spans,
    scan,
    triggered,
    whole_rules,
)
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
    "warm_up",
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

# A backslash-newline inside a shell word, with the next line's indentation (after a patch's
# `+` or `-`).
_CONTINUATION = re.compile(r"(\\\n[+-]?[ \t]*)")


def _hide(secret: str) -> str:
    """The replacement for a secret: ``[REDACTED]``, keeping any placeholder already inside it.

    A match can span an earlier redaction (``TOKEN=abc[REDACTED]``); swallowing it would make
    ``[REDACTED]`` disappear, so only the pieces between placeholders are hidden. Pieces that are
    only quotes or whitespace are not secrets and stay, so ``"[REDACTED]"`` is left as it is. A
    shell word continued on the next line (``abc\\<newline>def``) keeps its backslash-newline:
    no rule may add or remove a line (see :func:`_context_pass`).
    """
    if "\\\n" in secret:
        pieces = _CONTINUATION.split(secret)  # the joints are kept, at the odd indexes
        return "".join(piece if n % 2 else _hide(piece) for n, piece in enumerate(pieces))
    if PLACEHOLDER not in secret:
        return PLACEHOLDER if secret.strip(_NOT_SECRET) else secret
    pieces = secret.split(PLACEHOLDER)
    return PLACEHOLDER.join(PLACEHOLDER if piece.strip(_NOT_SECRET) else piece for piece in pieces)


def _apply(rule: Rule, text: str, lowered: str) -> tuple[str, int]:
    """Replace the secret group of every match of one rule; return the text and the count.
    ``lowered`` is :func:`_lower` of ``text``, which a folded rule runs on."""
    count = 0
    pieces: list[str] = []
    last = 0
    group, accept = rule.group, rule.accept
    for match in rule.pattern.finditer(lowered if rule.folded else text):
        start, end = match.span(group)
        secret = text[start:end]
        hidden = _hide(secret)
        if hidden == secret:  # nothing left to hide (empty, quotes, placeholders)
            continue
        if accept is not None and not accept(secret):
            continue
        pieces += (text[last:start], hidden)
        last = end
        count += 1
    if not count:
        return text, 0
    pieces.append(text[last:])
    return "".join(pieces), count


def _run_rules(
    rules: tuple[Rule, ...], text: str, lowered: str, tally: dict[str, int]
) -> tuple[str, int]:
    """Apply each of ``rules`` whose triggers occur in ``text`` (``lowered`` is its lowercase),
    in order. Line rules come here only when their keys were found (see :data:`SURE`)."""
    found = 0
    for rule in rules:
        if rule.name not in SURE and not triggered(rule, lowered):
            continue
        text, count = _apply(rule, text, lowered)
        if count:
            tally[rule.name] = tally.get(rule.name, 0) + count
            found += count
            lowered = _lower(text)
    return text, found


def _context_pass(text: str, tally: dict[str, int], where: Scan) -> tuple[str, int]:
    """One pass of the context rules: whole-text rules, then line rules on the lines they could
    match (``where`` is :func:`.scan.scan` of ``text``)."""
    text, found = _run_rules(whole_rules(where), text, where.lowered, tally)
    if found:
        where = scan(text)
    spans = line_spans(where.lowered, where.lines)
    if not spans:
        return text, found
    rules = tuple(rule for rule, needs in LINE_KEYS if not needs.isdisjoint(where.keys))
    if len(spans) == 1:
        start, end = spans[0]
        if start == 0 and end == len(text):
            text, count = _run_rules(rules, text, where.lowered, tally)
            return text, found + count
    # The candidate lines, joined, go through the rules once; no rule adds or removes a newline,
    # so the result splits back into the same lines (a span holds more than one when a line
    # goes on to the next, see .scan.line_spans).
    excerpt = "\n".join(text[start:end] for start, end in spans)
    redacted, count = _run_rules(rules, excerpt, _lower(excerpt), tally)
    if not count:
        return text, found
    pieces: list[str] = []
    last = 0
    lines = redacted.split("\n")
    taken = 0
    for start, end in spans:
        size = text.count("\n", start, end) + 1
        pieces.append(text[last:start])
        pieces.append("\n".join(lines[taken : taken + size]))
        taken += size
        last = end
    pieces.append(text[last:])
    return "".join(pieces), found + count


def _may_fit(rule: Rule, text: str, start: int, stretches: dict[str, tuple[int, int]]) -> bool:
    """Whether ``rule`` (one with a :attr:`Rule.blob`) is worth trying with its body at
    ``start``: the first time a stretch of its alphabet is reached, and only if it is as long
    as the format allows.

    The body is the whole stretch, so its length decides; and a start inside a stretch already
    tried is a piece of that blob, not a token of its own (tried, each later start would match
    the blob's last ``most`` characters, one more piece per pass). ``stretches`` holds per rule
    the ``(start, end)`` of the stretch last measured; token starts come in order, so each
    stretch is measured once.
    """
    known = stretches.get(rule.name)
    if known is not None and known[0] <= start < known[1]:
        return False
    end = rule.blob_end(text, start)
    stretches[rule.name] = (start, end)
    assert rule.blob is not None  # a blob rule: the caller asks only those
    _, least, most = rule.blob
    return least <= end - start <= most


# A run of token characters, and the line break (with the next line's indentation, or a
# quoted commit's `> `) a wrapped token may continue after.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_.-]*")
_WRAP = re.compile(r"\n[ \t>]{0,8}")


def _wrapped(
    text: str, at: int, end: int, rules: tuple[Rule, ...]
) -> tuple[tuple[tuple[int, int], tuple[int, int]], str] | None:
    """A token starting at ``at`` that no rule took, but one of ``rules`` takes once the run it
    starts (to ``end``, a line's end) is joined to the run opening the next line: a token a
    commit message wrapped. Both pieces are its, ``((start, end), (start, end))``, and the
    rule's name; else None."""
    wrap = _WRAP.match(text, end)
    if wrap is None:
        return None
    after = _TOKEN_RUN.match(text, wrap.end()).end()  # type: ignore[union-attr]
    if after == wrap.end():
        return None
    joined = text[at:end] + text[wrap.end() : after]
    for rule in rules:
        match = rule.pattern.match(joined)
        if match is not None and match.end() > end - at:
            return ((at, end), (wrap.end(), wrap.end() + match.end() - (end - at))), rule.name
    return None


def _token_pass(text: str, tally: dict[str, int], heads: list[int]) -> tuple[str, int]:
    """One pass of the token formats over ``heads`` (from :func:`.scan.scan`): a run is tried
    against the formats whose prefix it starts with."""
    spans: list[tuple[int, int]] = []
    reached = 0
    lengths = LENGTHS_BY_HEAD
    stretches: dict[str, tuple[int, int]] = {}  # see _may_fit
    for at in heads:
        if at < reached:
            continue
        for length in lengths[text[at : at + 2]]:
            rules = BY_PREFIX.get(text[at : at + length])
            if rules is None:
                continue
            for rule in rules:
                if rule.blob is not None and not _may_fit(rule, text, at + length, stretches):
                    continue
                match = rule.pattern.match(text, at)
                if match is not None:
                    spans.append((at, match.end()))
                    reached = match.end()
                    tally[rule.name] = tally.get(rule.name, 0) + 1
                    break
            else:
                end = _TOKEN_RUN.match(text, at).end()  # type: ignore[union-attr]
                wrapped = _wrapped(text, at, end, rules) if text[end : end + 1] == "\n" else None
                if wrapped is None:
                    continue
                (first, second), name = wrapped
                spans += (first, second)
                reached = second[1]
                tally[name] = tally.get(name, 0) + 1
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


def warm_up() -> Iterator[None]:
    """Compile the table's patterns, one a step (each is compiled when a text first needs it
    otherwise): for a process with time on its hands before its work comes, as the walk's
    second process has while the sync starts up (walker.py). ~20 ms in all."""
    for rule in RULES:
        rule.pattern  # noqa: B018  (compiled on first read, then kept)
        yield


def redact_tally(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with every secret replaced by ``[REDACTED]``, and how many secrets each
    rule replaced (by rule name; never the secrets themselves)."""
    tally: dict[str, int] = {}
    where = scan(text)
    for _ in range(_MAX_PASSES):
        text, context = _context_pass(text, tally, where)
        if context:
            where = scan(text)
        text, tokens = _token_pass(text, tally, where.heads)
        if not context + tokens:
            break
        if tokens:
            where = scan(text)
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
    if type(value) is dict and not keys:  # a node's meta: flat, and read for every node
        for inner in value.values():
            if type(inner) is str:
                strings.append(inner)
            elif type(inner) is list and all(type(item) is str for item in inner):
                strings.extend(inner)
            elif isinstance(inner, dict | list | tuple | str):
                strings.extend(value_strings(inner, keys=False))
        return strings

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
                if type(inner) is str:  # most are: a commit's 500 changed paths
                    strings.append(inner)
                else:
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
