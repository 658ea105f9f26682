"""Dry runs: what a sync would write for one source, written nowhere."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..collectors.git import Commit, RepoInfo, walk_commits
from ..engine import Engine
from ..errors import UsageError
from ..retrieval.pack import preview_row

if TYPE_CHECKING:
    from ..collectors.session.scan import SessionScan
    from ..config import ProjectConfig, Settings
    from ..models import Node


@dataclass
class ScanPreview:
    """A dry run's nodes (the first ``limit``; of shell commands, the last) as preview rows,
    and how many a sync would write in all."""

    nodes: list[dict[str, Any]]
    total: int

    def counted(self) -> str:
        """How many are shown of how many a sync would write: "the first 2 of 4 nodes ..."."""
        nodes = f"node{'' if self.total == 1 else 's'}"
        if len(self.nodes) < self.total:
            return f"the first {len(self.nodes):,} of the {self.total:,} {nodes} a sync would write"
        return f"{self.total:,} {nodes} would be written"


async def scan(
    settings: Settings, repo: RepoInfo, cfg: ProjectConfig, source: str, limit: int | None = None
) -> ScanPreview:
    """What a sync would write for one source, without writing: ``git``, ``diff``, ``docs``
    or ``shell``. Past ``limit`` the rest are only counted, in the same one pass."""
    from .. import ingest
    from ..collectors.shell.hooklog import LogCursor

    _check_limit(f"scan-{source}", limit, "nodes")
    pid = repo.project_id
    nodes: list[Node] = []
    total = 0
    if source == "git" and repo.head:
        # One node per commit (ingest.commit_nodes): the commits past the limit are counted,
        # not redacted and built.
        kept: list[Commit] = []
        async for commit in walk_commits(repo.root, repo.head):
            total += 1
            if not limit or len(kept) < limit:
                kept.append(commit)
        nodes = ingest.commit_batch(pid, kept, cfg.limits.max_body_chars)
    elif source == "diff" and repo.head:
        rev = ["-n", str(cfg.sources.diff.max_commits), repo.head]
        async for node in ingest.diff_nodes(pid, repo.root, rev, cfg):
            total += 1
            if not limit or len(nodes) < limit:
                nodes.append(node)
    elif source == "shell":
        found = await ingest.shell_nodes(repo, cfg, settings.home, LogCursor())
        every = [node async for node in found.nodes]
        nodes, total = every[-limit:] if limit else every, len(every)
    elif source == "docs":
        docs = await ingest.read_doc_files(repo.root, cfg)
        # Dated as a sync dates them: by the last commit that changed the file, else its mtime.
        dates = {}
        if cfg.sources.git.enabled and repo.head:
            dates = await ingest.last_changed(repo.root, repo.head, [d.path for d in docs])
        for doc in docs:
            ts = dates.get(doc.path) or doc.mtime
            nodes += ingest.doc_nodes(pid, doc, ts, cfg.limits.max_body_chars)
        nodes, total = nodes[:limit] if limit else nodes, len(nodes)
    return ScanPreview([preview_row(n) for n in nodes], total)


def _check_limit(command: str, limit: int | None, what: str) -> None:
    """A dry run's ``--limit``: none, or 1 or more. Below 1 is refused: the scans would read 0
    as no limit at all and -1 as one node (or as all but the last)."""
    if limit is not None and limit < 1:
        raise UsageError(f"{command} --limit: give a number of {what}, 1 or more")


async def scan_structure(
    repo: RepoInfo, cfg: ProjectConfig, limit: int | None = None
) -> dict[str, Any]:
    """The import graph a sync would store, built from the working tree and not stored (so it
    works before ``init``): the first ``limit`` edges, and the counts."""
    import anyio.to_thread

    from ..collectors.structure import build_graph, list_tree

    _check_limit("scan-structure", limit, "edges")
    listing = await list_tree(repo.root, cfg.sources.diff.skip_globs)
    graph, _ = await anyio.to_thread.run_sync(build_graph, listing)
    return graph.to_dict(limit)


async def scan_conversation(
    settings: Settings, repo: RepoInfo, cfg: ProjectConfig, limit: int | None = None
) -> dict[str, Any]:
    """What a sync with the conversation source on would write, without writing: the turns
    and the commands the agents ran (with the secrets replaced in each), files read, lines
    skipped and secrets in total, and those totals by agent."""
    from ..collectors.conversation.step import preview

    _check_limit("scan-conversation", limit, "nodes")
    return (await preview(settings, repo, cfg, limit)).to_dict()


async def scan_session(
    engine: Engine, limit: int | None = None, *, call_model: bool = False
) -> SessionScan:
    """The prompts the due sessions' summaries would come from, newest first, writing
    nothing; with ``call_model``, also what the chat model makes of each."""
    from ..collectors.session.scan import scan_sessions

    _check_limit("scan-session", limit, "sessions")
    return await scan_sessions(engine, limit=limit, call_model=call_model)


async def scan_github(
    repo: RepoInfo, cfg: ProjectConfig, limit: int | None = None
) -> dict[str, Any]:
    """What a first sync with the GitHub source on would write, without writing: the threads,
    the secrets replaced in them, and ``github``: "ok" or why gh gave nothing."""
    from ..collectors.github.step import preview_github

    _check_limit("scan-github", limit, "threads")
    return (await preview_github(repo, cfg, limit)).to_dict()
