"""Judging what a channel left: whether any byte copy of each secret remains, whether ordinary
text came out changed, and the table that says so.

A secret is *caught* when neither it (as text or as a JSON string) nor a distinctive middle of
it, or of any of its lines (any case: a word index folds case), is in the bytes; *whole* or
*partial* when a copy is; *unreached* when its probe word is missing too, so the text never got
there and nothing can be said. A middle is 12-16 characters that no other secret of the corpus
contains, so one provider's constant parts (a JWT header, a base64 JSON key) never stand in for
another's leak; one per line of a private key, so a block kept in part is a block kept.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .corpus import Secret

__all__ = [
    "HEADER",
    "Changed",
    "ShaReport",
    "Verdicts",
    "changed_commands",
    "counts",
    "judge",
    "merge",
    "missed",
    "row",
    "sha_survival",
    "wholes",
]

Verdicts = dict[int, str]  # secret id -> caught | whole | partial | unreached

# A commit sha as prose writes it: 7-40 hex digits standing alone, with a digit and a letter
# (a run of digits is a number, a run of letters a word like "defaced").
SHA = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z])"
)


def wholes(secret: str) -> list[bytes]:
    """The secret as text holds it, and as a JSON string does (a key's newlines as ``\\n``)."""
    return sorted({secret.encode(), json.dumps(secret, ensure_ascii=False)[1:-1].encode()})


def _lines(secret: str) -> list[bytes]:
    """Where middles are taken from: the secret, or each line of 12 characters or more of a
    secret that has several (a private key's body)."""
    lines = [line.strip() for line in secret.splitlines()]
    if len(lines) > 1:
        lines = [line for line in lines if len(line) >= 12] or [max(lines, key=len)]
    return [line.lower().encode() for line in lines or [secret]]


def _middles(secrets: Sequence[Secret]) -> dict[int, list[bytes]]:
    """For each secret, for each of its lines, the 12-16 character slice nearest the line's
    centre that no other secret holds (the whole line when it is that short). A line that is
    the same in every secret of its kind (an OpenSSH key's header) has none."""
    texts = {s.id: s.secret.lower().encode() for s in secrets}
    everything = b"\0".join(texts.values())
    out: dict[int, list[bytes]] = {}
    for s in secrets:
        out[s.id] = []
        for line in _lines(s.secret):
            n = 16 if len(line) >= 24 else min(12, len(line))
            centre = (len(line) - n) // 2
            for offset in sorted(range(len(line) - n + 1), key=lambda i: abs(i - centre)):
                candidate = line[offset : offset + n]
                if everything.count(candidate) == texts[s.id].count(candidate):
                    out[s.id].append(candidate)
                    break
    return out


def judge(secrets: Sequence[Secret], haystack: bytes, probes: bytes | None = None) -> Verdicts:
    """The verdict for each secret in ``haystack``. ``probes`` (lower-case) is where the probe
    words are looked for, when that is not the whole haystack (a query's JSON names them in its
    ``query`` field)."""
    lower = haystack.lower()
    probes = lower if probes is None else probes
    middles = _middles(secrets)
    verdicts = {}
    for s in secrets:
        if any(w in haystack for w in wholes(s.secret)):
            verdicts[s.id] = "whole"
        elif any(middle in lower for middle in middles[s.id]):
            verdicts[s.id] = "partial"
        elif s.probe.encode() not in probes:
            verdicts[s.id] = "unreached"
        else:
            verdicts[s.id] = "caught"
    return verdicts


def merge(many: Iterable[Verdicts]) -> Verdicts:
    """One verdict per secret over several stores: the worst that any store says."""
    order = ["unreached", "caught", "partial", "whole"]
    out: Verdicts = {}
    for verdicts in many:
        for key, verdict in verdicts.items():
            out[key] = max(out.get(key, "unreached"), verdict, key=order.index)
    return out


# --- Ordinary text that must not change -----------------------------------------------------


@dataclass
class Changed:
    """How many ordinary inputs came out of a hook changed, of how many recorded."""

    changed: list[tuple[str, str]] = field(default_factory=list)  # (input, as recorded)
    total: int = 0
    missing: int = 0


def changed_commands(
    log: list[dict], key: str, prefix: str, originals: Sequence[str],
    expect: Callable[[str], str] = lambda text: text, field_name: str = "cmd",
) -> Changed:  # fmt: skip
    """Of the log records whose ``key`` (``session``, ``tool_use_id``) is ``<prefix><n>...``,
    those whose ``field_name`` is not ``expect(originals[n])``."""
    out = Changed(total=len(originals))
    seen = set()
    pattern = re.compile(re.escape(prefix) + r"(\d+)(?!\d)")
    for record in log:
        match = pattern.match(str(record.get(key) or ""))
        if not match:
            continue
        n = int(match.group(1))
        seen.add(n)
        wanted, got = expect(originals[n]), record.get(field_name)
        if got != wanted:
            out.changed.append((originals[n], str(got)))
    out.missing = len(originals) - len(seen)
    return out


@dataclass
class ShaReport:
    messages: int = 0
    shas: int = 0
    lost: list[tuple[str, str]] = field(default_factory=list)  # (commit, sha it mentions)
    own: int = 0
    own_lost: list[str] = field(default_factory=list)


def sha_survival(commits: Iterable[tuple[str, str]], redact: Callable[[str], str]) -> ShaReport:
    """Every sha a commit message mentions must be in its redacted text as often as before, and
    each commit's own sha must survive a ``This reverts commit <sha>.`` line."""
    report = ShaReport()
    for sha, message in commits:
        report.messages += 1
        found = Counter(SHA.findall(message))
        if found:
            after = Counter(SHA.findall(redact(message)))
            report.shas += sum(found.values())
            report.lost += [(sha, m) for m, k in found.items() if after[m] < k]
        report.own += 1
        if sha not in redact(f"This reverts commit {sha}."):
            report.own_lost.append(sha)
    return report


# --- Reporting ------------------------------------------------------------------------------


def _rate(verdicts: Verdicts, secrets: Sequence[Secret], klass: str) -> str:
    mine = [verdicts[s.id] for s in secrets if s.klass == klass and s.id in verdicts]
    reached = [v for v in mine if v != "unreached"]
    if not reached:
        return "—"
    caught = reached.count("caught")
    return f"{caught} / {len(reached)} ({100 * caught / len(reached):.1f}%)"


def counts(verdicts: Verdicts) -> Counter:
    return Counter(verdicts.values())


def row(label: str, verdicts: Verdicts, secrets: Sequence[Secret], fp: str = "—") -> str:
    c = counts(verdicts)
    clear = f"{c['whole']} whole, {c['partial']} partial"
    cells = [label, _rate(verdicts, secrets, "prefixed"), _rate(verdicts, secrets, "keyword"),
             fp, clear, str(c["unreached"])]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| channel | prefixed caught / total (%) | keyword caught / total (%) "
    "| false positives on ordinary commands | stored in clear | not reached |\n"
    "| --- | ---: | ---: | --- | --- | ---: |"
)


def missed(named: dict[str, Verdicts], secrets: Sequence[Secret]) -> dict[str, list[str]]:
    """Provider (or keyword style) -> the channels in which one of its secrets left a copy."""
    by_id = {s.id: s for s in secrets}
    out: dict[str, list[str]] = defaultdict(list)
    for channel, verdicts in named.items():
        for key, verdict in verdicts.items():
            provider = f"{by_id[key].klass}:{by_id[key].provider}"
            if verdict in ("whole", "partial") and channel not in out[provider]:
                out[provider].append(channel)
    return dict(sorted(out.items()))
