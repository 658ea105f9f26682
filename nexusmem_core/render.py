"""The text both adapters show: a search's context block, one result at a time, and a
project's status.

The CLI prints it and the MCP server returns it beside the structured content, so it is made in
one place. It reads the shapes of models.py and nothing else (the packer measures a result by
the text made here).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from .models import SearchResponse, SearchResult, Status
from .sync_line import waiting_text
from .textguard import body_lines, one_line, terminal

__all__ = [
    "MCP_COMMANDS",
    "QUERY_HEADER",
    "Commands",
    "format_date",
    "handle",
    "render_entry",
    "render_explained",
    "render_search",
    "share_text",
    "status_text",
    "terminal",
]

QUERY_HEADER = "Relevant history for: "

# The header's own tags: a title that holds one (a commit subject "[verified] run this") has
# its bracket escaped, so the tags before the title are the only ones a reader can take.
_HEADER_TAGS = re.compile(
    r"\[(?=(?:observed|authored|recorded|derived|verified|rejected|superseded|post-install|"
    r"backfilled|origin-unknown)\])",
    re.IGNORECASE,
)

_LINKED = {
    "retry": "  -- linked as the fix (the same command passed)",
    "discussion": "  -- linked as the fix (discussed here)",
    "signature": "  -- linked as the fix (its error was gone after it)",
    "trace": "  -- linked as the fix (a commit to a file its stack trace names)",
}


def format_date(ts: int | None) -> str:
    """A node's day, UTC, as results and status show it."""
    if ts is None:
        return "date unknown"
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def render_entry(r: SearchResult, tag_project: bool) -> str:
    """One result as the model reads it: a dated, named, tagged header and an indented excerpt.

    The frame: a result begins with the one line this function writes at the margin, ``- DATE
    ID [commit SHA] [tags] title``; what was stored (the title and the excerpt) never begins a
    line there. The excerpt's lines are indented, a line of it shaped like a header is escaped
    with ``\\``, a tag-like ``<`` is written ``&lt;`` and control characters are dropped
    (textguard.py). The structured result keeps the stored text as it is."""
    tags = [f"[{r.provenance}]"] + ([f"[{r.capture}]"] if r.capture else [])
    if r.trust in ("verified", "rejected"):
        tags.append(f"[{r.trust}]")
    if r.superseded:
        tags.append("[superseded]")
    if tag_project:
        tags.append(f"[{one_line(r.project)}]")
    title = _HEADER_TAGS.sub(r"\\[", one_line(r.title))
    lines = [f"- {r.date} {handle(r)} {' '.join(tags)} {title}{_LINKED.get(r.link or '', '')}"]
    if r.copies:
        lines.append(f"  (the same text is in {', '.join(one_line(c) for c in r.copies)})")
    lines += ["  " + line for line in body_lines(r.summary) if r.summary]
    return "\n".join(lines)


SHORT_ID = 12  # characters of a node id, as every output shows it and the tools accept
SHORT_SHA = 7  # of a commit's sha, as git shows it


def handle(r: SearchResult) -> str:
    """What a result is called: its short node id (which ``review``, ``node`` and the tools
    take), and for a commit or one of its file diffs the commit's short sha. Written before
    the tags and the title, so no stored text can stand in for it."""
    if r.kind in ("git_commit", "file_diff") and r.ref:
        return f"{r.id[:SHORT_ID]} commit {r.ref.partition(':')[0][:SHORT_SHA]}"
    return r.id[:SHORT_ID]


def render_search(response: SearchResponse) -> str:
    """The context block: what an agent reads."""
    header = f"{QUERY_HEADER}{one_line(response.query)}"
    if response.all_projects:
        names = ", ".join(one_line(name) for name in response.projects)
        header = f"scope   {len(response.projects)} project(s): {names}\n\n" + header
    if response.cut:
        header += f"\nnote: {response.cut}"
    body = "\n".join(render_entry(r, response.all_projects) for r in response.results)
    text = f"{header}\n\n{body or '(nothing in memory matches)'}\n"
    if response.skipped:
        text += "\n" + "".join(f"skipped: {one_line(why)}\n" for why in response.skipped)
    return text


def render_explained(response: SearchResponse, notes: dict[str, list[str]]) -> str:
    """``render_search``'s block with ``notes[result id]`` (``query --why``) under each
    result's excerpt. The notes name stored titles and paths, so they go out as the excerpt
    does: indented, terminal-safe, no line shaped like a result's header."""
    noted = [
        replace(r, summary="\n".join([*([r.summary] if r.summary else []), *notes[r.id]]))
        if notes.get(r.id)
        else r
        for r in response.results
    ]
    return render_search(replace(response, results=noted))


@dataclass(frozen=True)
class Commands:
    """How the text names the caller's own commands: the CLI's by default; the MCP server
    passes its tools'."""

    sync: str = "run `nexusmem sync`"
    stale: str = "see `nexusmem stale`"
    prune: str = "`nexusmem sync --prune-unreachable --yes`"


# No tool prunes: the CLI does, and the text says it is the CLI's.
MCP_COMMANDS = Commands(
    sync="call sync_project",
    stale="see list_stale",
    prune="the CLI's `nexusmem sync --prune-unreachable --yes`",
)


def status_text(s: Status, commands: Commands = Commands()) -> str:
    span = f"{format_date(s.first_ts)} .. {format_date(s.last_ts)}" if s.nodes else "empty"
    lines = [f"{s.project}  {s.root}", f"{s.nodes} node(s)  {span}"]
    lines += [f"{count:>10}  {kind}" for kind, count in s.by_kind.items()]
    lines += [
        f"last sync  {_last_sync_text(s, commands)}",
        *([f"rewritten  {_rewritten_text(s, commands)}"] if s.unreachable_waiting else []),
        f"shell      {s.shell}",
        *([f"origin     {s.identity}"] if s.identity else []),
        f"chains     {_chains_text(s.chains)}",
        f"imports    {_imports_text(s.import_edges, s.structure)}",
        f"vectors    {s.vector}",
        f"flagged    {_flagged_text(s.flagged, commands)}",
        *([f"sessions   {_sessions_text(s.sessions)}"] if s.sessions else []),
        f"database   {s.database} (schema v{s.schema_version})",
        *([f"           cannot be written: {s.unwritable}"] if s.unwritable else []),
    ]
    return "\n".join(lines)


def _last_sync_text(s: Status, commands: Commands) -> str:
    """When memory was last synced, and whether HEAD has moved since: a repository never
    synced has no cursor, and nothing has moved in it yet."""
    if s.last_sync is None:
        return f"never ({commands.sync} to read the history)"
    behind = "" if s.cursor == s.head else f"  (HEAD has moved: {commands.sync})"
    return f"{s.last_sync}{behind}"


def _rewritten_text(s: Status, commands: Commands) -> str:
    return waiting_text(s.unreachable_waiting, s.prune_unreachable_days, commands.prune)


def _imports_text(edges: dict[str, int], structure: str) -> str:
    if not edges:
        return structure
    langs = ", ".join(f"{lang} {count}" for lang, count in edges.items())
    return f"{sum(edges.values())} file-to-file import edge(s): {langs}"


def _flagged_text(flagged: int, commands: Commands) -> str:
    if not flagged:
        return "no stale node is flagged as likely superseded"
    return f"{flagged} stale node(s) likely superseded: {commands.stale}"


def _sessions_text(states: dict[str, int]) -> str:
    """Conversation sessions by summary state (see collectors/session)."""
    text = f"{states.get('done', 0)} summarised, {states.get('queued', 0)} queued"
    pending = states.get("pending", 0)
    if pending:  # only then is there a model that did not answer to speak of
        text += f", {pending} pending (the chat model did not answer)"
    failed = states.get("failed", 0)
    return text + (f", {failed} summary(ies) kept out by the deny list" if failed else "")


def _chains_text(chains: dict[str, int]) -> str:
    if not chains.get("failures"):
        return "no failed commands recorded"
    return (
        f"{chains['failures']} failed command(s) examined: {chains['retry']} linked by retry, "
        f"{chains['discussion']} by discussion, {chains.get('signature', 0)} by their error "
        f"going away, {chains.get('trace', 0)} by a commit to a traced file, "
        f"{chains['unresolved']} with no fix recorded"
    )


def share_text(s: Status) -> str:
    """A plain summary to paste elsewhere: no local paths, no ids, nothing from node bodies."""
    span = f"{format_date(s.first_ts)} .. {format_date(s.last_ts)}" if s.nodes else "empty"
    lines = [f"NexusMem memory of {s.project}", f"{s.nodes} node(s)  {span}"]
    lines += [f"{count:>10}  {kind}" for kind, count in s.by_kind.items()]
    lines.append(f"search     {'hybrid (BM25 + vectors)' if s.embedded else 'BM25'}")
    return "\n".join(lines)
