"""Packing ranked candidates into a token budget, and the context block the model reads.

Greedy by score: each candidate is rendered (header line plus an excerpt focused on the query),
measured, and kept if it fits. At most ``sibling_cap`` nodes of one group (the sections of one
document, the file diffs of one commit) are kept, so one heavily sectioned file cannot crowd out
the node that answers the question. On the generated story a cap of 1 costs MRR@10 (0.671 vs
0.676 BM25, 0.669 vs 0.675 hybrid) and caps of 2, 3 and 5 score the same (bench/eval/sweep.py).
On the real set 2 was too tight: a guide's third section on the question, or the one release
of a changelog that answers after two that mention its words, was left out. Cap 3: BM25
MRR@10 0.723 -> 0.727, Recall@10 0.856 -> 0.870 (howto 0.701 -> 0.717, release 0.798 ->
0.807); 5 scores as 3.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from typing import Any, Protocol

from ..collectors.agent import AGENTS, SHELL_AUTHOR
from ..models import Node, SearchResult
from ..render import QUERY_HEADER, format_date, render_entry
from ..store.fts import Candidate

__all__ = [
    "Packer",
    "echo_query",
    "estimate_tokens",
    "excerpt",
    "pack",
    "preview_row",
]

EXCERPT_LINES = 4
EXCERPT_CHARS = 360
DIFF_LINES = 12
HUNK_LEAD = 2  # message lines shown above a commit's best hunk
ECHO_SHARE = 4  # the header repeating the query takes at most 1/4 of the budget


def estimate_tokens(text: str) -> int:
    """Tokens as BPE tokenizers count them, roughly and on the high side: about 3.6 ASCII
    characters per token for English and code, one per non-ASCII character (CJK, emoji)."""
    if text.isascii():  # the common case, without a Python-level loop over characters
        return math.ceil(len(text) / 3.6)
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    return math.ceil((len(text) - non_ascii) / 3.6) + non_ascii


def echo_query(text: str, budget: int) -> tuple[str, int]:
    """The query as the context block's header repeats it, and the tokens that header takes:
    on one line, cut with "..." to a quarter of ``budget``. A pasted 100 KB log is a fine
    query, but repeated whole it would be the whole answer, far past the budget."""
    line = " ".join(text.split())

    def cost(echo: str) -> int:
        return estimate_tokens(f"{QUERY_HEADER}{echo}\n\n")

    room = budget // ECHO_SHARE
    if cost(line) <= room:
        return line, cost(line)
    low, high = 0, len(line)  # the longest cut that fits: cost grows with the length
    while low < high:
        mid = (low + high + 1) // 2
        if cost(line[:mid].rstrip() + "...") <= room:
            low = mid
        else:
            high = mid - 1
    echo = line[:low].rstrip() + "..."
    return echo, cost(echo)


def _hits(line: str, terms: Sequence[str]) -> int:
    low = line.lower()
    return sum(1 for t in terms if t in low)


def _window(lines: list[str], terms: Sequence[str], size: int) -> list[str]:
    """``size`` lines starting at the first line that mentions a query term (else the top)."""
    start = next((i for i, line in enumerate(lines) if _hits(line, terms)), 0)
    start = max(0, min(start, len(lines) - size))
    return lines[start : start + size]


def _line_hits(body: str, terms: Sequence[str]) -> list[int]:
    """``_hits`` of every line of ``body``, from one lowered copy and one search per term (a
    term holds no newline, so each match lies inside one line, counted once per line). A
    patch runs to hundreds of lines: asking each line about each term was half of a search's
    time with a large budget."""
    text = body.lower()
    ends = list(itertools.accumulate(len(line) + 1 for line in text.split("\n")))
    starts = [0, *ends[:-1]]
    hits = [0] * len(starts)
    for term in terms:
        if not term:  # "" is in every line
            hits = [n + 1 for n in hits]
            continue
        at = text.find(term)
        while at != -1:
            line = bisect.bisect_right(starts, at) - 1
            hits[line] += 1
            at = text.find(term, ends[line])
    return hits


def _diff_excerpt(body: str, terms: Sequence[str]) -> list[str]:
    """The hunk that best matches the query, from its header, at most DIFF_LINES lines."""
    lines = body.split("\n")
    hits = _line_hits(body, terms)
    hunks: list[tuple[int, int]] = []  # (first line, end) of each hunk
    for i, line in enumerate(lines):
        if line.startswith("@@") or not hunks:
            hunks.append((i, i + 1))
        hunks[-1] = (hunks[-1][0], i + 1)
    first, end = max(hunks, key=lambda h: sum(hits[h[0] : h[1]]))
    best = lines[first:end]
    if len(best) <= DIFF_LINES:
        return best
    size = DIFF_LINES - 1
    rest = range(first + 1, end)
    start = next((i - first - 1 for i in rest if hits[i]), 0)
    start = max(0, min(start, len(rest) - size))
    return [best[0], *best[1 + start : 1 + start + size]]


def _files_line(paths: str, shown: int = 4) -> str:
    files = [p for p in paths.split("\n") if p]
    if not files:
        return ""
    more = f" (+{len(files) - shown} more)" if len(files) > shown else ""
    return "files: " + ", ".join(files[:shown]) + more


def excerpt(candidate: Candidate, terms: Sequence[str]) -> str:
    """The few lines under a result's header that show why it matched."""
    body = candidate.body
    hunk = candidate.hunk
    if candidate.kind == "file_diff":
        return "\n".join(line[:200] for line in _diff_excerpt(body, terms))
    if candidate.kind == "git_commit":
        # The subject is already the header; show the message body, else the files.
        _, _, rest = body.partition("\n")
        body = rest.strip() or ("" if hunk else _files_line(candidate.paths))
    lines = [line.rstrip() for line in body.split("\n") if line.strip()]
    lines = _window(lines, terms, EXCERPT_LINES if hunk is None else HUNK_LEAD)
    text = "\n".join(line[:200] for line in lines)
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS].rstrip() + "..."
    if hunk is not None and hunk.body:  # a commit shows its best-matching hunk too
        shown = [f"{hunk.meta.get('path', '')}:", *_diff_excerpt(hunk.body, terms)]
        text = "\n".join([*([text] if text else []), *(line[:200] for line in shown)])
    return text


class _Titled(Protocol):
    @property
    def kind(self) -> str: ...  # read-only, so a Node's NodeKind is one too

    title: str

    @property
    def meta(self) -> dict[str, Any]: ...  # read-only: a Candidate decodes it when asked


def display_title(c: _Titled) -> str:
    """A diff is shown with its commit's subject (stored, not indexed, in meta); a command with
    who ran it and its exit code, or the admission that it is not known."""
    if c.kind == "file_diff" and c.meta.get("subject"):
        return f"{c.title} — {c.meta['subject']}"
    if c.kind == "shell_command":
        code = c.meta.get("exit")
        return (
            f"{command_author(c.meta)}: {c.title}  (exit {code if code is not None else 'unknown'})"
        )
    return c.title


def command_author(meta: dict[str, Any]) -> str:
    """Who ran a command: the agent its node names, else ``you`` (typed at a prompt). An agent's
    command recorded before nodes named their author was Claude Code's, the one agent then."""
    author = meta.get("author")
    if isinstance(author, str) and author:
        return author
    return AGENTS["claude"] if meta.get("captured") == "agent" else SHELL_AUTHOR


def preview_row(n: Node) -> dict[str, Any]:
    """One node as the ``scan-*`` dry runs show it: what a sync would write, and its score."""
    return {
        "id": n.id,
        "kind": n.kind,
        "ref": n.ref,
        "title": display_title(n),
        "date": format_date(n.ts),
        "signal": n.signal,
        "provenance": n.provenance,
        "chars": len(n.body),
    }


def _result(c: Candidate, summary: str, project: str) -> SearchResult:
    return SearchResult(
        id=c.id,
        kind=c.kind,
        title=display_title(c),
        ts=c.ts,
        date=format_date(c.ts),
        provenance=c.provenance,
        trust=c.trust,
        score=round(c.score, 6),
        signal=c.signal,
        tokens=0,
        summary=summary,
        project=project,
        ref=c.ref,
        superseded=c.superseded,
        arms=list(c.arms),
        capture=c.capture,
        fix_for=c.meta.get("fix_of"),
        link=c.meta.get("link"),
        copies=list(c.meta.get("copies", [])),
    )


MIN_ENTRY_TOKENS = 12  # no header line is shorter: below this much room, packing is done


class Packer:
    """Greedy packing, one candidate at a time, best score first.

    Incremental so the caller can load bodies (which can be large) only for the candidates
    that get a look before the budget is full.
    """

    def __init__(
        self,
        budget: int,
        sibling_cap: int,
        terms: Sequence[str],
        names: dict[str, str],
        tag_project: bool = False,
    ) -> None:
        self.budget, self.sibling_cap, self.terms = budget, sibling_cap, terms
        self.names, self.tag_project = names, tag_project
        self.used = 0
        self.chosen: list[SearchResult] = []
        self.per_group: dict[str, int] = {}

    @property
    def full(self) -> bool:
        return self.budget - self.used < MIN_ENTRY_TOKENS

    def offer(self, c: Candidate) -> bool:
        """Keep ``c`` if its group has room and it fits (with its excerpt, else header only)."""
        group = f"{c.project_id}\x00{c.grp}" if c.grp else None
        if group and self.per_group.get(group, 0) >= self.sibling_cap:
            return False
        project = self.names.get(c.project_id, c.project_id)
        result = _result(c, excerpt(c, self.terms), project)
        # +1: the newline that joins entries.
        result.tokens = estimate_tokens(render_entry(result, self.tag_project)) + 1
        if self.used + result.tokens > self.budget:
            result.summary = ""
            result.tokens = estimate_tokens(render_entry(result, self.tag_project)) + 1
            if self.used + result.tokens > self.budget:
                return False
        self.used += result.tokens
        if group:
            self.per_group[group] = self.per_group.get(group, 0) + 1
        self.chosen.append(result)
        return True


def pack(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    budget: int,
    sibling_cap: int,
    names: dict[str, str],
    tag_project: bool = False,
) -> list[SearchResult]:
    """Choose what fits the budget, best score first; ``names`` maps project ids to names."""
    packer = Packer(budget, sibling_cap, terms, names, tag_project)
    for c in sorted(candidates, key=lambda c: c.score, reverse=True):
        if packer.full:
            break
        packer.offer(c)
    return packer.chosen
