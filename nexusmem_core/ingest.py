"""From collector records to nodes: titles, bodies, signal and provenance for each kind.

Shared by ``sync`` (which writes) and the ``scan-*`` dry runs (which only print).
"""

from __future__ import annotations

import contextlib
import hashlib
import operator
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from .collectors.agent import AGENT_LOG
from .collectors.diffs import FilePatch, PatchCap, is_skipped_path, walk_patches
from .collectors.docs import (
    MAX_DOC_BYTES,
    SECTIONS_VERSION,
    Section,
    doc_text,
    list_doc_files,
    parse_sections,
)
from .collectors.git import Commit, RepoInfo, commit_signal, walk_commits
from .collectors.shell import history, hooklog
from .collectors.shell.nodes import hook_node, scraped_node
from .collectors.shell.scope import inside, repository_roots
from .collectors.worktree import WorkTree
from .models import Node, cached
from .redact import redact_many
from .retrieval.asked import RATIONALE

if TYPE_CHECKING:
    from .config import ProjectConfig

__all__ = [
    "DocFile",
    "agent_records",
    "commit_batch",
    "commit_node",
    "commit_nodes",
    "diff_node",
    "diff_nodes",
    "doc_nodes",
    "last_changed",
    "patch_nodes",
    "read_doc_files",
    "shell_nodes",
]

MAX_FILES = 500  # per commit; a vendoring commit can touch 50,000
COMMIT_BATCH = 64  # commits whose messages are redacted together
PATHS_PER_WALK = 200  # paths given to one git log: its command line stays far under any limit


def cap(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters at a line boundary; say whether it was cut."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit] + "\n[truncated]", True


def _head(text: str, limit: int) -> str:
    """The part of ``text`` that :func:`cap` can keep of it once redacted: through the end of the
    line at ``limit``. Redacting a 5 MB lockfile diff to keep its first 64 KiB would spend the
    time on text that is dropped; cutting at a line end first keeps every line that can be
    stored whole, so no secret is seen in half (every rule but a key block is line-local, and a
    key block without its end is redacted to the end of the text)."""
    if len(text) <= limit:
        return text
    end = text.find("\n", limit)
    return text if end == -1 else text[:end]


def redacted_capped(redacted: str, original: str, limit: int) -> tuple[str, bool]:
    """:func:`cap` for the redaction of ``original``'s :func:`_head`: marked as cut whenever the
    head was, even when redaction shortened it below ``limit``."""
    if len(redacted) <= limit and len(original) <= limit:
        return redacted, False  # nothing to cut (most commit messages: no call of either)
    body, truncated = cap(redacted, limit)
    if not truncated and len(_head(original, limit)) < len(original):
        return body + "\n[truncated]", True
    return body, truncated


def commit_node(
    project_id: str,
    commit: Commit,
    max_chars: int,
    redacted: tuple[str, str] | None = None,
) -> Node:
    """A commit: subject and message body, and the changed files beside them.

    The files are indexed in their own low-weight column, not in the body: as body text, the
    words every path shares ("src", "py", "Files") matched nine nodes in ten and made every
    query rank the whole corpus.
    """
    # Commit messages and patches are where a pasted or committed credential sits: redacted
    # here, before anything reaches disk, with the same table as the shell hooks. `redacted`
    # is (message, subject) already redacted, when the caller did many commits at once.
    message, subject = redacted or tuple(
        redact_many([_head(commit.message, max_chars), commit.subject])
    )
    body, _ = redacted_capped(message, commit.message, max_chars)
    changes = commit.changes[:MAX_FILES]
    # A first sync builds one for every commit of the history, so the node is built by
    # position (by keyword, the call took twice as long: 0.64 us, 0.29) and its paths and
    # "M path" lines are mapped in C, not by a comprehension's loop.
    return Node(
        project_id,
        "git_commit",  # kind
        "git",  # source
        commit.sha,  # ref
        subject or "(no message)",  # title
        body,
        commit.ts,
        commit_signal(commit),  # signal
        "observed",  # provenance
        None,  # grp
        sorted(set(map(_path, changes))),  # files
        {  # meta
            "parents": commit.parents,
            "author": commit.author,
            "changes": list(map(" ".join, changes)),
            "files_changed": len(commit.changes),
        },
    )


_path = operator.itemgetter(1)  # of a commit's (status, path)


def diff_node(
    project_id: str,
    commit: Commit,
    patch: FilePatch,
    max_chars: int,
    redacted: tuple[str, str] | None = None,
) -> Node:
    """One changed file of one commit, its patch kept whole up to ``max_chars``. ``redacted``
    is (patch, subject) already redacted, when the caller did a whole commit at once."""
    text, subject = redacted or tuple(redact_many([_head(patch.patch, max_chars), commit.subject]))
    body, truncated = redacted_capped(text, patch.patch, max_chars)
    return Node(
        project_id=project_id,
        kind="file_diff",
        source="diff",
        ref=f"{commit.sha}:{patch.path}",
        # Only the path is indexed as the title: the subject belongs to the commit node, and
        # repeating it here made every diff outrank the commit that explains it.
        title=f"{patch.path} @ {commit.sha[:7]}",
        body=body,
        ts=commit.ts,
        signal=commit_signal(commit),
        provenance="observed",
        grp=f"commit:{commit.sha}",
        files=[patch.path],
        meta={
            "sha": commit.sha,
            "subject": subject,
            "path": patch.path,
            "status": patch.status,
            "added": patch.added,
            "deleted": patch.deleted,
            "truncated": truncated,
        },
    )


async def commit_nodes(
    project_id: str,
    root: Path,
    rev_range: str,
    config: ProjectConfig,
    since: str | None = None,
    passed_over: Callable[[bytes], object] | None = None,
) -> AsyncIterator[tuple[Commit, Node]]:
    limit = config.limits.max_body_chars
    batch: list[Commit] = []
    async for commit in walk_commits(root, rev_range, since, passed_over):
        batch.append(commit)
        if len(batch) == COMMIT_BATCH:
            for pair in zip(batch, commit_batch(project_id, batch, limit), strict=True):
                yield pair
            batch = []
    for pair in zip(batch, commit_batch(project_id, batch, limit), strict=True):
        yield pair


def commit_batch(project_id: str, commits: Sequence[Commit], limit: int) -> list[Node]:
    """The nodes of ``commits``: their messages and subjects in one pass of the redaction
    table (up to ``COMMIT_BATCH`` commits at a time pays its per-call cost once)."""
    texts = redact_many([t for c in commits for t in (_head(c.message, limit), c.subject)])
    return [
        commit_node(project_id, c, limit, (texts[2 * i], texts[2 * i + 1]))
        for i, c in enumerate(commits)
    ]


def patch_nodes(
    project_id: str, commit: Commit, patches: Sequence[FilePatch], skip: Sequence[str], limit: int
) -> list[Node]:
    """The diff nodes of one commit's ``patches``, but those of the paths a diff skips."""
    kept = [patch for patch in patches if not is_skipped_path(patch.path, skip)]
    if not kept:
        return []
    # A commit's patches and its subject in one pass of the redaction table.
    texts = redact_many([commit.subject, *(_head(patch.patch, limit) for patch in kept)])
    return [
        diff_node(project_id, commit, patch, limit, (text, texts[0]))
        for patch, text in zip(kept, texts[1:], strict=True)
    ]


async def diff_nodes(
    project_id: str,
    root: Path,
    rev_args: list[str],
    config: ProjectConfig,
    paths: Sequence[str] = (),
    output: AsyncIterator[bytes] | None = None,
    cap: PatchCap | None = None,
) -> AsyncIterator[Node]:
    """The file diffs of the commits ``rev_args`` selects (of the files at ``paths`` only,
    when given), read from ``output`` when their git was started earlier; ``cap`` (made here
    when None) cuts them as they are read, and counts the files left out."""
    skip = config.sources.diff.skip_globs
    limit = config.limits.max_body_chars
    cap = cap or PatchCap(limit, skip)
    async for commit, patches in walk_patches(root, rev_args, cap, paths, output):
        for node in patch_nodes(project_id, commit, patches, skip, limit):
            yield node


class DocFile:
    """A tracked doc file as it is in the work tree (its first ``MAX_DOC_BYTES``)."""

    def __init__(self, path: str, text: str, digest: str, mtime: int, cut: bool = False) -> None:
        self.path, self.text, self.digest, self.mtime = path, text, digest, mtime
        self.cut = cut  # longer than MAX_DOC_BYTES: only its head was read

    @cached
    def sections(self) -> list[tuple[Section, str, str]]:
        """Its sections, each with its text and label redacted: what its nodes are made of,
        but their date (a first sync cuts them up while the history walk, which dates
        them, is still running)."""
        sections = list(parse_sections(self.path, self.text))
        # A file's sections and labels go through the table in one call: a README of 40
        # sections pays its fixed cost per call once, not 80 times.
        redacted = redact_many([s.text for s in sections] + [s.label for s in sections])
        n = len(sections)
        return list(zip(sections, redacted[:n], redacted[n:], strict=True))

    @property
    def folded(self) -> bool:
        """Whether it had more headings than MAX_SECTIONS (the rest are its last one's text)."""
        return any(section.folded for section, _, _ in self.sections)


async def read_doc_files(
    root: Path, config: ProjectConfig, skipped: Counter[str] | None = None
) -> list[DocFile]:
    """Every tracked doc file that exists in the work tree (a deleted one is absent), each cut
    at ``MAX_DOC_BYTES``. What is not read is counted in ``skipped`` by why: ``"binary"``, or
    ``"outside"`` (a link leading out of the work tree, or into ``.git``: a cloned
    repository's links are a stranger's), or ``"not a file"``."""
    paths = await list_doc_files(root, config.sources.docs.extensions)
    return await anyio.to_thread.run_sync(_read_docs, WorkTree(root), paths, skipped)


def _read_docs(tree: WorkTree, paths: list[str], skipped: Counter[str] | None) -> list[DocFile]:
    files = []
    for path in paths:
        read = tree.read(path, MAX_DOC_BYTES)
        text = None if isinstance(read, str) else doc_text(read[0])
        if isinstance(read, str) or text is None:
            if skipped is not None and read != "unreadable":  # unreadable: gone, as before
                skipped[read if isinstance(read, str) else "binary"] += 1
            continue
        data, cut, st = read
        # How the file is cut into sections is part of its digest: when that changes, every
        # doc file is parsed again once, not only those edited since.
        digest = hashlib.sha256(SECTIONS_VERSION + data).hexdigest()
        files.append(DocFile(path, text, digest, int(st.st_mtime), cut))
    return files


async def last_changed(root: Path, rev: str, paths: Iterable[str]) -> dict[str, int]:
    """When the newest commit reachable from ``rev`` that touched each of ``paths`` was made:
    the date a sync gives a doc file's sections. A sync notes it for every path its walk
    passed; this finds it for the others (a dry run, a ``--since`` walk that stopped before
    them). git looks only at those paths, a few hundred at a time, and each of its walks
    stops once it has found them all; a path in no commit is absent."""
    found: dict[str, int] = {}
    todo = sorted(set(paths))
    for start in range(0, len(todo), PATHS_PER_WALK):
        wanted = set(todo[start : start + PATHS_PER_WALK])
        async with contextlib.aclosing(walk_commits(root, rev, paths=sorted(wanted))) as walk:
            async for commit in walk:
                for _, path in commit.changes:
                    if path in wanted:
                        found.setdefault(path, commit.ts)
                if wanted <= found.keys():
                    break
    return found


def _doc_signal(path: str, heading: str, text: str, release: bool = False) -> float:
    """A changelog's release section is a record of what shipped, as strong as a section of
    the docs; the rest of a changelog (its preamble, its link list) is weak."""
    name = path.rsplit("/", 1)[-1].lower()
    signal = 0.5
    if not release and name.startswith(("changelog", "history", "changes", "news")):
        signal = 0.3
    elif name.startswith("readme"):
        signal = 0.55
    if RATIONALE.search(heading):
        signal += 0.15
    if len(text) >= 400:
        signal += 0.05
    return round(min(1.0, signal), 3)


def doc_nodes(project_id: str, doc: DocFile, ts: int | None, max_chars: int) -> list[Node]:
    """One node per section; a repeated heading in one file gets `` (2)``, `` (3)`` ..."""
    nodes = []
    seen: dict[str, int] = {}
    for section, text, label in doc.sections:
        count = seen[section.heading] = seen.get(section.heading, 0) + 1
        heading = section.heading if count == 1 else f"{section.heading} ({count})"
        body, _ = cap(text, max_chars)
        nodes.append(
            Node(
                project_id=project_id,
                kind="doc_section",
                source="docs",
                ref=f"{doc.path}#{heading}",
                title=f"{doc.path} — {label or heading}",
                body=body,
                ts=section.ts or ts,  # a release is dated by its release, not its last edit
                signal=_doc_signal(doc.path, heading, section.text, release=bool(section.label)),
                provenance="authored",
                grp=doc.path,
                files=[doc.path],
                meta={"path": doc.path, "heading": heading, "level": section.level},
            )
        )
    return nodes


# Hook-log records read at a time: their nodes are built and written before the next ones
# are read. A first sync of a 100k-line log (50k of its records this repository's) peaked at
# 175 MB holding them all, 100 MB by 5,000 and 91 MB by 1,000, 2% slower there.
LOG_BATCH = 5000


@dataclass
class ShellNodes:
    """Commands to write. From the hook log, ``nodes`` reads it a batch at a time (in a worker
    thread: the event loop may be an MCP server's) as it is iterated: ``cursor`` (where it was
    read up to) and ``malformed`` are final once it has been, whole."""

    nodes: AsyncIterator[Node]
    mode: str  # "hook", "scraped" or "off"
    cursor: hooklog.LogCursor | None = None  # where the hook log was read up to
    malformed: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)
    read: dict[str, history.LastRead] = field(default_factory=dict)  # by shell, when scraped


async def shell_nodes(
    repo: RepoInfo,
    config: ProjectConfig,
    home: Path,
    cursor: hooklog.LogCursor,
    last: Mapping[str, history.LastRead | None] | None = None,
) -> ShellNodes:
    """The hook log's new commands run inside this repository; without a hook log, the tail of
    the shell history files (attributed to this repository, with no cwd or exit code).
    ``last``: what the previous sync read of each shell's file (``read`` of its result)."""
    limit = config.limits.max_body_chars
    log = home / hooklog.LOG_FILE
    if log.exists():
        roots = await repository_roots(repo.root)

        def ours(record: dict[str, Any]) -> bool:
            return inside(record.get("cwd"), roots)

        root = os.path.realpath(repo.root)
        found = ShellNodes(_listed([]), "hook", cursor)

        async def logged() -> AsyncIterator[Node]:
            # Built one by one as they are written, read a batch at a time: 50k records and
            # their 50k nodes at once pushed a first sync of a 100k-line log to 230 MB.
            at = cursor
            while True:
                read = await anyio.to_thread.run_sync(hooklog.read_new, log, at, ours, LOG_BATCH)
                at = found.cursor = read.cursor
                found.malformed += read.malformed
                for record in read.records:
                    yield hook_node(repo.project_id, record, limit, root)
                if len(read.records) < LOG_BATCH:
                    return

        found.nodes = logged()
        return found
    if not config.sources.shell.scrape:
        return ShellNodes(_listed([]), "off")
    nodes: list[Node] = []
    read: dict[str, history.LastRead] = {}
    tail = config.sources.shell.scrape_tail_lines
    for shell, path in history.default_history_files(Path.home(), os.environ).items():
        data, whole = await anyio.to_thread.run_sync(history.read_tail, path, tail)
        entries = history.PARSERS[shell](data)
        now = history.LastRead.of(path, entries)
        before = (last or {}).get(shell)
        seen = before.overlap(now) if whole and before else range(0)
        if data or whole:  # nothing of a file cut while it was read: it says nothing
            read[shell] = now
        for entry in history.settled(entries, whole, seen):
            nodes.append(
                scraped_node(
                    repo.project_id,
                    shell,
                    entry.key,
                    entry.command,
                    entry.ts,
                    entry.duration,
                    limit,
                )
            )
    return ShellNodes(_listed(nodes), "scraped", read=read)


async def _listed(nodes: list[Node]) -> AsyncIterator[Node]:
    for node in nodes:
        yield node


async def agent_records(repo: RepoInfo, home: Path, cursor: hooklog.LogCursor) -> ShellNodes:
    """The agent log's records of commands run inside this repository since ``cursor``
    (as ``records``; the caller builds the nodes once it has completed them)."""
    log = home / AGENT_LOG
    if not log.exists():
        return ShellNodes(_listed([]), "off")
    roots = await repository_roots(repo.root)

    def ours(record: dict[str, Any]) -> bool:
        return inside(record.get("cwd"), roots) and isinstance(record.get("cmd"), str)

    result = await anyio.to_thread.run_sync(hooklog.read_new, log, cursor, ours)
    return ShellNodes(_listed([]), "hook", result.cursor, result.malformed, result.records)
