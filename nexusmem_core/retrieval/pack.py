"""Packing ranked candidates into a token budget, and the context block the model reads.

Greedy by score: each candidate is rendered (header line plus an excerpt focused on the query),
measured, and kept if it fits. At most ``sibling_cap`` nodes of one group (the sections of one
document, the file diffs of one commit) are kept, so one heavily sectioned file cannot crowd out
the node that answers the question.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from ..store.fts import Candidate

__all__ = ["estimate_tokens", "excerpt", "format_date", "header_line", "pack"]

EXCERPT_LINES = 4
EXCERPT_CHARS = 360
DIFF_LINES = 12


def estimate_tokens(text: str) -> int:
    """Tokens as BPE tokenizers count them, roughly and on the high side: about 3.6 ASCII
    characters per token for English and code, one per non-ASCII character (CJK, emoji)."""
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return math.ceil((len(text) - non_ascii) / 3.6) + non_ascii


def format_date(ts: int | None) -> str:
    if ts is None:
        return "date unknown"
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def _hits(line: str, terms: Sequence[str]) -> int:
    low = line.lower()
    return sum(1 for t in terms if t in low)


def _window(lines: list[str], terms: Sequence[str], size: int) -> list[str]:
    """``size`` lines starting at the first line that mentions a query term (else the top)."""
    start = next((i for i, line in enumerate(lines) if _hits(line, terms)), 0)
    start = max(0, min(start, len(lines) - size))
    return lines[start : start + size]


def _diff_excerpt(body: str, terms: Sequence[str]) -> list[str]:
    """The hunk that best matches the query, from its header, at most DIFF_LINES lines."""
    hunks: list[list[str]] = []
    for line in body.split("\n"):
        if line.startswith("@@") or not hunks:
            hunks.append([])
        hunks[-1].append(line)
    best = max(hunks, key=lambda h: sum(_hits(line, terms) for line in h))
    if len(best) <= DIFF_LINES:
        return best
    head, rest = best[0], best[1:]
    return [head, *_window(rest, terms, DIFF_LINES - 1)]


def excerpt(candidate: Candidate, terms: Sequence[str]) -> str:
    """The few lines under a result's header that show why it matched."""
    body = candidate.body
    if candidate.kind == "file_diff":
        lines = _diff_excerpt(body, terms)
    else:
        if candidate.kind == "git_commit":
            # The subject is already the header; show the message body, else the files.
            _, _, rest = body.partition("\n")
            body = rest.strip()
        lines = [line.rstrip() for line in body.split("\n") if line.strip()]
        lines = _window(lines, terms, EXCERPT_LINES)
    text = "\n".join(line[:200] for line in lines)
    if len(text) > EXCERPT_CHARS and candidate.kind != "file_diff":
        text = text[:EXCERPT_CHARS].rstrip() + "..."
    return text


def header_line(c: Candidate, project: str | None = None) -> str:
    tags = [f"[{c.provenance}]"]
    if c.trust in ("verified", "rejected"):
        tags.append(f"[{c.trust}]")
    if c.superseded:
        tags.append("[superseded]")
    if project:
        tags.append(f"[{project}]")
    return f"- {format_date(c.ts)} {' '.join(tags)} {c.title}"


def render_entry(c: Candidate, summary: str, project: str | None) -> str:
    lines = [header_line(c, project)]
    lines += ["  " + line for line in summary.split("\n") if summary]
    return "\n".join(lines)


def pack(candidates: Sequence[Candidate], terms: Sequence[str], budget: int, sibling_cap: int,
         projects: dict[str, str] | None = None) -> list[tuple[Candidate, str, str, int]]:
    """Choose what fits: ``(candidate, summary, rendered entry, tokens)`` in score order.

    ``projects`` maps project ids to names; given, each entry is tagged with its project.
    """
    chosen = []
    used = 0
    per_group: dict[str, int] = {}
    for c in sorted(candidates, key=lambda c: c.score, reverse=True):
        group = f"{c.project_id}\x00{c.grp}" if c.grp else None
        if group and per_group.get(group, 0) >= sibling_cap:
            continue
        project = projects.get(c.project_id) if projects else None
        summary = excerpt(c, terms)
        entry = render_entry(c, summary, project)
        tokens = estimate_tokens(entry) + 1  # the newline that joins entries
        if used + tokens > budget:
            # Try the header alone before giving the slot up.
            summary, entry = "", render_entry(c, "", project)
            tokens = estimate_tokens(entry) + 1
            if used + tokens > budget:
                continue
        used += tokens
        if group:
            per_group[group] = per_group.get(group, 0) + 1
        chosen.append((c, summary, entry, tokens))
    return chosen
