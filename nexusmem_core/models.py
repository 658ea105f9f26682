"""The shapes that cross module boundaries. Plain dataclasses: cheap to import."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Generic, Literal, TypeVar, get_args

__all__ = [
    "NODE_KINDS",
    "PROVENANCE_ORDER",
    "Node",
    "NodeKind",
    "Provenance",
    "SearchResponse",
    "SearchResult",
    "Status",
    "SyncReport",
    "Writer",
    "node_id",
]

Provenance = Literal["observed", "authored", "recorded", "derived"]
PROVENANCE_ORDER: tuple[Provenance, ...] = ("observed", "authored", "recorded", "derived")

# Every kind of node a source writes: the one list adapters validate against and show.
NodeKind = Literal[
    "git_commit",
    "file_diff",
    "doc_section",
    "shell_command",
    "conversation_turn",
    "session_summary",
    "github_thread",
]
NODE_KINDS: tuple[NodeKind, ...] = get_args(NodeKind)
T = TypeVar("T")


class cached(Generic[T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes one on every read
    until the value is set): computed on first read, then an instance attribute. A sync
    reads three of them on every node."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]  # the class's attribute: the descriptor
        value = instance.__dict__[self.name] = self.func(instance)
        return value


_META_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str).encode
# The C encoder that ``_META_JSON`` makes on every call (in ``encode`` and ``iterencode``, both
# Python), made once and without its guard against circular values (a dict of the ids of the
# containers being encoded): the same text, for 20 ms where a 10k-commit walk's metas took 32.
# A circular value recurses until RecursionError, and is then encoded again by ``_META_JSON``
# to raise as it did. An interpreter without json's C accelerator uses ``_META_JSON``.
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_META_FAST = (
    _C_ENCODER(None, str, json.encoder.encode_basestring, None, ": ", ", ", True, False, True)
    if _C_ENCODER is not None
    else None
)


def node_id(project_id: str, kind: str, key: str) -> str:
    """Content-addressed id: the same event always gets the same id, so ingest is idempotent."""
    return hashlib.sha256(f"{project_id}\x00{kind}\x00{key}".encode()).hexdigest()


@dataclass
class Node:
    """One remembered thing, whatever its source."""

    project_id: str
    kind: NodeKind
    source: str
    ref: str
    title: str
    body: str
    ts: int | None
    signal: float
    provenance: Provenance
    grp: str | None = None
    files: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    # Cached: a sync computes these for every node, and JSON encoding was a tenth of the
    # first sync's time when done twice. Nodes are not mutated after they are built.
    @cached
    def id(self) -> str:
        return node_id(self.project_id, self.kind, self.ref)

    @cached
    def meta_json(self) -> str:
        if _META_FAST is None:
            return _META_JSON(self.meta)
        try:
            return "".join(_META_FAST(self.meta, 0))
        except RecursionError:
            return _META_JSON(self.meta)

    @cached
    def content_hash(self) -> str:
        parts = [
            self.title,
            self.body,
            str(self.ts),
            repr(self.signal),
            self.grp or "",
            "\x1f".join(self.files),
            self.meta_json,
        ]
        return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


Writer = Callable[[AsyncIterator[Node], str], Awaitable[int]]
"""How a sync step writes its nodes: ``await write(nodes, stage)`` upserts them in batches
(leaving out those holding a forgotten value) and returns the rows changed."""


@dataclass
class SearchResult:
    """One packed hit, as both adapters show it."""

    id: str
    kind: str
    title: str
    ts: int | None
    date: str  # ISO day, or "date unknown"
    provenance: str
    trust: str
    score: float
    signal: float
    tokens: int
    summary: str
    project: str
    ref: str
    superseded: bool = False
    arms: list[str] = field(default_factory=list)  # which searches found it: bm25, vector
    capture: str = ""  # post-install, backfilled, origin-unknown
    fix_for: str | None = None  # the failure (id) this follows as its fix
    link: str | None = None  # how it was linked to that failure: retry or discussion
    copies: list[str] = field(default_factory=list)  # other sections with the same text

    def to_dict(self) -> dict[str, Any]:
        return _shallow_dict(self, _RESULT_FIELDS)


def _shallow_dict(value: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """``asdict`` of a dataclass whose fields are flat (scalars and lists of scalars): the
    same value, lists copied, without asdict's recursive deep copy of every field (~1 ms of a
    30-result response, on every search)."""
    return {
        name: list(item) if isinstance(item, list) else item
        for name in names
        for item in (getattr(value, name),)
    }


_RESULT_FIELDS = tuple(f.name for f in fields(SearchResult))


@dataclass
class SearchResponse:
    query: str  # as the header repeats it: on one line, cut to fit the budget
    budget: int
    tokens_used: int
    matched: int
    results: list[SearchResult]
    all_projects: bool = False
    projects: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # projects that could not be read
    vector: str = "off"  # "used", "off", or why it was skipped
    cut: str | None = None  # how the question was cut to its caps (retrieval/query.py), if it was

    def to_dict(self) -> dict[str, Any]:
        out = _shallow_dict(self, _RESPONSE_FIELDS)
        out["results"] = [result.to_dict() for result in self.results]
        return out


_RESPONSE_FIELDS = tuple(f.name for f in fields(SearchResponse))


@dataclass
class SyncReport:
    project: str
    root: str
    commits: int = 0
    git_skipped: int = 0  # git log records that could not be read (a corrupt commit object)
    diffs: int = 0
    diffs_left_out: int = 0  # file patches past a commit's caps, not written (diffs.py)
    reverts: int = 0  # revert commits linked to the commit they undo (nexusmem_core/reverts.py)
    docs_sections: int = 0
    docs_files_parsed: int = 0
    docs_skipped: int = 0  # doc files not read: binary, a link out of the work tree (ingest.py)
    docs_cut: int = 0  # doc files read in part: past MAX_DOC_BYTES or MAX_SECTIONS (docs.py)
    removed: int = 0
    shell: int = 0
    shell_mode: str = "off"  # hook, scraped, or off
    shell_skipped: int = 0  # malformed hook-log lines passed over
    agent: int = 0  # commands the coding agent ran, written
    agent_skipped: int = 0  # malformed agent-log lines passed over
    conversation: int = 0  # conversation turns written
    conversation_files: int = 0  # transcript files read (unchanged ones are not)
    conversation_skipped: int = 0  # broken lines and unknown records passed over
    redacted: int = 0  # secrets replaced in transcripts and threads before they were stored
    sessions: int = 0  # session summaries written
    sessions_queued: int = 0  # settled sessions left for the next sync (maxSessions)
    session_note: str = "off"  # "ok", "off", or why the summary pass stopped
    github: int = 0  # issue and pull-request threads written
    github_note: str = "off"  # "ok", "off", or why the GitHub pass was skipped
    import_edges: int = 0  # file-to-file import edges in the rebuilt graph
    denied: int = 0  # nodes holding a forgotten value, not written (see hygiene/deny.py)
    deny_timeouts: int = 0  # of them, kept out because a deny-list pattern ran too long
    failures_examined: int = 0  # failed commands looked at by the failure -> fix linker
    linked_retry: int = 0  # links added this sync
    linked_discussion: int = 0
    linked_signature: int = 0  # its error was gone after a later pass (chains.py)
    linked_trace: int = 0  # a commit touched a file its stack trace names
    embedded: int = 0
    vectors: str = "off"  # "ok", "off", or why the embedding pass stopped
    judged: int = 0  # new contradiction verdicts from the chat model (cached pairs are free)
    contradictions: str = "off"  # "ok", "off", or why the contradiction check stopped
    flagged: int = 0  # stale nodes with an open "likely superseded" suggestion
    unreachable_pruned: int = 0  # nodes of commits no ref reaches, past their grace period
    unreachable_waiting: int = 0  # unreachable commits still inside the grace period
    word_lists: int = -1  # common words whose best rows were listed this sync (-1: not due)
    index_compacted: bool = False  # the word index's segments were merged (store/fts.compact)
    full_walk: bool = False
    rebuilt: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    skipped: str = ""  # why nothing was done: another `sync --auto` holds the lock

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Status:
    project: str
    project_id: str
    root: str
    database: str
    nodes: int
    by_kind: dict[str, int]
    first_ts: int | None
    last_ts: int | None
    last_sync: str | None
    head: str | None
    cursor: str | None
    vector: str
    schema_version: int
    shell: str = ""  # how shell commands are captured
    embedded: int = 0  # nodes with a vector from the configured model
    chains: dict[str, int] = field(default_factory=dict)  # failure -> fix links (see chains.py)
    flagged: int = 0  # stale nodes with an open "likely superseded" suggestion
    sessions: dict[str, int] = field(default_factory=dict)  # summary state -> sessions
    import_edges: dict[str, int] = field(default_factory=dict)  # import graph, by language
    structure: str = ""  # why there is no import graph, when there is none
    identity: str = ""  # the origin changed: when, from what, and what was carried over
    unwritable: str = ""  # why the database cannot be written now (full disk, read-only)
    unreachable_waiting: int = 0  # commits a rebase left, waiting out the grace (last sync's)
    prune_unreachable_days: int = 0  # that grace: sources.git.pruneUnreachableDays

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
