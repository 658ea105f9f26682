"""The text both adapters show: a search's context block, one result at a time.

The CLI prints it and the MCP server returns it beside the structured content, so it is made in
one place. It reads the shapes of models.py and nothing else (the packer measures a result by
the text made here).
"""

from __future__ import annotations

from .models import SearchResponse, SearchResult

__all__ = ["QUERY_HEADER", "render_entry", "render_search"]

QUERY_HEADER = "Relevant history for: "

_LINKED = {
    "retry": "  -- linked as the fix (the same command passed)",
    "discussion": "  -- linked as the fix (discussed here)",
}


def render_entry(r: SearchResult, tag_project: bool) -> str:
    """One result as the model reads it: a dated, tagged header and an indented excerpt."""
    tags = [f"[{r.provenance}]"] + ([f"[{r.capture}]"] if r.capture else [])
    if r.trust in ("verified", "rejected"):
        tags.append(f"[{r.trust}]")
    if r.superseded:
        tags.append("[superseded]")
    if tag_project:
        tags.append(f"[{r.project}]")
    lines = [f"- {r.date} {' '.join(tags)} {r.title}{_LINKED.get(r.link or '', '')}"]
    if r.copies:
        lines.append(f"  (the same text is in {', '.join(r.copies)})")
    lines += ["  " + line for line in r.summary.split("\n") if r.summary]
    return "\n".join(lines)


def render_search(response: SearchResponse) -> str:
    """The context block: what an agent reads."""
    header = f"{QUERY_HEADER}{response.query}"
    if response.all_projects:
        names = ", ".join(response.projects)
        header = f"scope   {len(response.projects)} project(s): {names}\n\n" + header
    body = "\n".join(render_entry(r, response.all_projects) for r in response.results)
    text = f"{header}\n\n{body or '(nothing in memory matches)'}\n"
    if response.skipped:
        text += "\n" + "".join(f"skipped: {why}\n" for why in response.skipped)
    return text
