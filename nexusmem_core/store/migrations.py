"""The schema, as an ordered registry of migrations.

Each migration runs in its own transaction together with its row in ``schema_migrations``, so a
crash leaves the database either before or after it. A shipped migration is never edited; a
change is a new entry at the end. ``tests/store/test_migrations.py`` pins the resulting schema.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from ..retrieval.cjk import CJK_GLOB

__all__ = ["LATEST", "MIGRATIONS", "migrate", "schema_version"]

_V1_NODES = """
create table projects (
    id          text primary key,          -- normalized origin URL, else absolute path
    name        text not null,
    root        text not null,
    origin      text,
    created_at  integer not null
);

create table nodes (
    seq          integer primary key,      -- stable rowid for the FTS external content
    id           text not null unique,     -- sha256(project id, kind, natural key)
    project_id   text not null references projects(id),
    kind         text not null,            -- git_commit, file_diff, doc_section, ...
    source       text not null,            -- the collector that wrote it: git, diff, docs
    ref          text not null,            -- natural key: sha, sha:path, path#heading
    grp          text,                     -- siblings share it: doc path, commit of a diff
    title        text not null,
    body         text not null,
    paths        text not null default '',  -- the files it touches, one per line (indexed apart)
    ts           integer,                  -- when the event happened (unix s); null = unknown
    created_at   integer not null,         -- when this store recorded it (unix s)
    signal       real not null check (signal >= 0 and signal <= 1),
    provenance   text not null
                 check (provenance in ('observed', 'authored', 'recorded', 'derived')),
    trust        text not null default 'candidate'
                 check (trust in ('candidate', 'verified', 'rejected')),
    supersedes   text,                     -- id of the older node this one replaces
    content_hash text not null,
    meta         text not null default '{}'
);
create index nodes_project_kind on nodes(project_id, kind, ts);
create index nodes_project_source_ref on nodes(project_id, source, ref);
create index nodes_supersedes on nodes(supersedes) where supersedes is not null;

create table node_files (
    node_id text not null references nodes(id) on delete cascade,
    path    text not null,
    primary key (node_id, path)
) without rowid;
create index node_files_path on node_files(path);

-- Per-source progress: the git cursor, last sync times.
create table cursors (
    project_id text not null,
    source     text not null,
    value      text not null,
    primary key (project_id, source)
) without rowid;

-- One row per tracked doc file: its content hash (unchanged files are not re-parsed) and
-- the time of the last commit that touched it.
create table doc_files (
    project_id   text not null,
    path         text not null,
    content_hash text not null,
    ts           integer,
    primary key (project_id, path)
) without rowid;
"""

_V1_FTS = """
create virtual table nodes_fts using fts5(
    title, body, paths,
    content='nodes', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
create trigger nodes_ai after insert on nodes begin
    insert into nodes_fts(rowid, title, body, paths)
    values (new.seq, new.title, new.body, new.paths);
end;
create trigger nodes_ad after delete on nodes begin
    insert into nodes_fts(nodes_fts, rowid, title, body, paths)
    values ('delete', old.seq, old.title, old.body, old.paths);
end;
create trigger nodes_au after update of title, body, paths on nodes begin
    insert into nodes_fts(nodes_fts, rowid, title, body, paths)
    values ('delete', old.seq, old.title, old.body, old.paths);
    insert into nodes_fts(rowid, title, body, paths)
    values (new.seq, new.title, new.body, new.paths);
end;
"""

# Which nodes have a vector, from which model, of which text. The vectors themselves live in a
# sqlite-vec table made on first use (its dimension is the model's, and a connection without
# the extension must still be able to migrate).
_V3_EMBEDDINGS = """
create table embeddings (
    seq          integer primary key,      -- nodes.seq (a deleted node's row is an orphan)
    model        text not null,
    dims         integer not null,
    content_hash text not null,             -- the node's content_hash when it was embedded
    embedded_at  integer not null
);
create index embeddings_model on embeddings(model);
"""

# Failure -> fix chains: a failed command and what resolved it (a later passing run of the same
# command, or the conversation that discussed it). Links belong to the project that found them
# and go with either end. The index finds every run of one command (by its keyed hash) without
# reading the JSON of every command: the agent hooks ask that on each tool call.
_V4_LINKS = """
create table links (
    src        text not null references nodes(id) on delete cascade,  -- the failed command
    dst        text not null references nodes(id) on delete cascade,  -- what resolved it
    kind       text not null check (kind in ('retry', 'discussion')),
    project_id text not null,
    created_at integer not null,
    primary key (src, dst, kind)
) without rowid;
create index links_dst on links(dst);
create index nodes_command_hash on nodes(project_id, json_extract(meta, '$.cmd_hash'), ts)
    where kind = 'shell_command';
"""

# Trust and hygiene. Every destructive operation leaves an audit row (what and how many, never
# the value it removed) and tombstones (hashes only) for the nodes it deleted. The deny list
# keeps a forgotten literal as a salted hash (salt per entry, so an entry can move to another
# checkout with --export/--import), never in clear text. Contradiction verdicts are cached per
# pair and model, so no pair is ever sent to the model twice.
_V5_HYGIENE = """
create table audit (
    id         integer primary key,
    project_id text,
    at         integer not null,
    operation  text not null,              -- forget, scrub-secrets, prune-source, review, ...
    detail     text not null default '{}', -- JSON: what was done, never a removed value
    count      integer not null default 0
);
create table tombstones (
    node_id      text primary key,         -- the removed node's id
    project_id   text not null,
    kind         text not null,
    source       text not null,
    content_hash text not null,
    removed_at   integer not null,
    operation    text not null             -- forget, scrub-secrets, prune-source
) without rowid;
create table deny_list (
    id          integer primary key,
    project_id  text not null,
    kind        text not null check (kind in ('literal', 'regex')),
    value       text not null,             -- sha256(salt + value) for a literal; the pattern
    salt        text not null default '',
    length      integer,                   -- a literal's length in characters
    ignore_case integer not null default 0,
    reason      text,
    created_at  integer not null,
    unique (project_id, kind, value, ignore_case)
);
create table contradictions (
    old_id     text not null,
    new_id     text not null,
    model      text not null,
    verdict    text not null check (verdict in ('yes', 'no', 'unknown')),
    checked_at integer not null,
    dismissed  integer not null default 0,
    primary key (old_id, new_id, model)
) without rowid;
create index nodes_project_created on nodes(project_id, created_at);
"""

# Opt-in sources (issue 7). ``source_files``: each transcript file as last read, so an unchanged
# one is not read again. ``sessions``: a conversation session's last activity and the hash of
# the prompt its stored summary came from (an unchanged hash never calls the model again).
# ``import_edges``: the file-to-file import graph. Links gain the kinds a GitHub thread brings:
# a thread that names a commit (``mentions``) or was closed by one (``closes``). SQLite cannot
# widen a check constraint in place, so the links table is rebuilt.
_V6_SOURCES = """
create table source_files (
    project_id text not null,
    source     text not null,              -- conversation:claude, conversation:codex
    path       text not null,
    size       integer not null,
    mtime_ns   integer not null,
    session    text,                       -- the session the file holds, when it holds one
    read_at    integer not null,
    primary key (project_id, source, path)
) without rowid;
create table sessions (
    project_id  text not null,
    session     text not null,
    source      text not null,
    last_ts     integer,                   -- the newest turn's time
    prompt_hash text,                      -- of the prompt the stored summary came from
    state       text not null default 'pending'
                check (state in ('pending', 'queued', 'done', 'failed')),
    node_id     text,                      -- the session_summary node, once there is one
    updated_at  integer not null,
    primary key (project_id, session)
) without rowid;
create table import_edges (
    project_id text not null,
    src        text not null,              -- the importing file, repository-relative
    dst        text not null,              -- the imported file
    lang       text not null,
    primary key (project_id, src, dst)
) without rowid;
create index import_edges_dst on import_edges(project_id, dst);
create table links_v6 (
    src        text not null references nodes(id) on delete cascade,
    dst        text not null references nodes(id) on delete cascade,
    kind       text not null check (kind in ('retry', 'discussion', 'mentions', 'closes')),
    project_id text not null,
    created_at integer not null,
    primary key (src, dst, kind)
) without rowid;
insert into links_v6 select src, dst, kind, project_id, created_at from links;
drop table links;
alter table links_v6 rename to links;
create index links_dst on links(dst);
"""

# Languages without spaces (see retrieval/cjk.py): a trigram index of the nodes that hold CJK
# text, kept by triggers like the main index. Only those nodes: a trigram index is several
# times the size of the text it indexes. Which nodes those are is the ``cjk`` column, set by
# the writer (store/nodes.py) with a regular expression: a GLOB over every body in the trigger
# made inserting 4,000 commit-sized nodes 39% slower. The GLOB here only fills the column of
# the nodes written before v7; its class is retrieval/cjk.py's. Each trigger removes the old
# row before adding the new one, in that order.
_G = "'" + CJK_GLOB + "'"
_V7_CJK = f"""
alter table nodes add column cjk integer not null default 0;
update nodes set cjk = 1 where title glob {_G} or body glob {_G};
create virtual table nodes_cjk using fts5(
    title, body,
    content='nodes', content_rowid='seq',
    tokenize='trigram'
);
create trigger nodes_cjk_ai after insert on nodes when new.cjk begin
    insert into nodes_cjk(rowid, title, body) values (new.seq, new.title, new.body);
end;
create trigger nodes_cjk_ad after delete on nodes when old.cjk begin
    insert into nodes_cjk(nodes_cjk, rowid, title, body)
    values ('delete', old.seq, old.title, old.body);
end;
create trigger nodes_cjk_au after update of title, body, cjk on nodes begin
    insert into nodes_cjk(nodes_cjk, rowid, title, body)
    select 'delete', old.seq, old.title, old.body where old.cjk;
    insert into nodes_cjk(rowid, title, body)
    select new.seq, new.title, new.body where new.cjk;
end;
insert into nodes_cjk(rowid, title, body) select seq, title, body from nodes where cjk;
"""

# Identities a project was known by before its origin changed (see identity.py): each one
# carried over into ``project_id``, when, and how many nodes came along, for ``status``.
_V8_ALIASES = """
create table project_aliases (
    old_id     text primary key,            -- the project id memory was stored under
    project_id text not null,               -- the id it was carried into
    old_origin text,                        -- the origin URL then (redacted), null for none
    old_root   text not null,
    reason     text not null,               -- same checkout (root), or same history (commit)
    nodes      integer not null,            -- how many nodes were carried over
    changed_at integer not null
) without rowid;
create index project_aliases_project on project_aliases(project_id, changed_at);
"""

# A compact copy of every vector for the approximate k-NN of big memories (store/sketches.py):
# its signs and an int8 copy, written with the vector. Vectors embedded before this are
# sketched by the next sync (vectors.backfill_sketches). ``vec_generation`` tells a process
# whether the sketch it holds is current: ``changes`` counts every row written or removed,
# ``rewrites`` those that are not an append past the highest seq (a process then reads again).
_V9_SKETCHES = """
alter table embeddings add column bits blob;
alter table embeddings add column i8 blob;
create table vec_generation (
    id       integer primary key check (id = 1),
    changes  integer not null,
    rewrites integer not null
);
insert into vec_generation values (1, 0, 0);
create trigger embeddings_added after insert on embeddings begin
    update vec_generation set changes = changes + 1,
        rewrites = rewrites + exists(select 1 from embeddings where seq > new.seq);
end;
create trigger embeddings_replaced after update on embeddings begin
    update vec_generation set changes = changes + 1, rewrites = rewrites + 1;
end;
create trigger embeddings_removed after delete on embeddings begin
    update vec_generation set changes = changes + 1, rewrites = rewrites + 1;
end;
"""

# Every vector's signs, a page of 4,096 seqs to a row, so a process reads the whole sketch in a
# few large blobs instead of row by row (store/sketches.py). Triggers mark the page of every
# row written or removed; sync rebuilds marked pages, and a reader reads a marked page's rows
# instead. Pages of vectors embedded before this start marked. The partial index finds a vector
# still without its signs at once (counting them read the whole table: 184 ms at 500k).
_V10_SIGN_PAGES = """
create table vec_sketch_pages (
    page  integer primary key,             -- seq >> 12
    seqs  blob not null,                   -- the page's seqs, int64 little-endian, ascending
    bits  blob not null                    -- their signs, vector after vector
);
create table vec_sketch_dirty (page integer primary key) without rowid;
insert into vec_sketch_dirty select distinct seq >> 12 from embeddings;
create index embeddings_unsketched on embeddings(seq) where bits is null;
create trigger embeddings_page_added after insert on embeddings begin
    insert or ignore into vec_sketch_dirty values (new.seq >> 12);
end;
create trigger embeddings_page_replaced after update on embeddings begin
    insert or ignore into vec_sketch_dirty values (new.seq >> 12);
end;
create trigger embeddings_page_removed after delete on embeddings begin
    insert or ignore into vec_sketch_dirty values (old.seq >> 12);
end;
"""

# The best rows of each word too common to score in full at query time (store/wordtops.py):
# per index token, its rows' bm25 weights (the score without the word's IDF, which every row of
# one word shares), the best ``KEEP`` kept. Rows past ``upto`` are scored live by a query, and
# so are the rows listed in ``word_top_late``: rewritten (or given a reused seq) after their
# word lists were made. Sync folds both into the lists.
_V11_WORD_TOPS = """
create table word_tops (
    token  text not null,                  -- the index's token (stemmed), as fts5vocab has it
    weight real not null,                  -- -bm25 of the token alone, divided by its IDF
    seq    integer not null,               -- nodes.seq
    primary key (token, weight, seq)
) without rowid;
create index word_tops_seq on word_tops(seq);
create table word_top_tokens (
    token text primary key,
    hits  integer not null,                -- rows holding it when last scored
    rows  integer not null,                -- rows in the index then
    floor real not null                    -- every row left out weighs at most this (0: none)
) without rowid;
create table word_top_state (
    id   integer primary key check (id = 1),
    upto  integer not null,                -- the lists cover the rows up to this seq
    avgdl real not null                    -- the index's mean row length (tokens) they saw
);
insert into word_top_state values (1, 0, 0);
create table word_top_late (id integer primary key, seq integer not null);
create trigger word_tops_rewritten after update of title, body, paths on nodes
when old.seq <= (select upto from word_top_state) begin
    delete from word_tops where seq = old.seq;
    insert into word_top_late(seq) values (old.seq);
end;
create trigger word_tops_removed after delete on nodes
when old.seq <= (select upto from word_top_state) begin
    delete from word_tops where seq = old.seq;
end;
create trigger word_tops_reused after insert on nodes
when new.seq <= (select upto from word_top_state) begin
    insert into word_top_late(seq) values (new.seq);
end;
"""

# Reverts link a revert commit to the commit it undoes (nexusmem_core/reverts.py). SQLite cannot
# widen a check constraint in place, so the links table is rebuilt, as in v6.
_V12_REVERTS = """
create table links_v12 (
    src        text not null references nodes(id) on delete cascade,
    dst        text not null references nodes(id) on delete cascade,
    kind       text not null check (kind in ('retry', 'discussion', 'mentions', 'closes',
                                              'reverts')),
    project_id text not null,
    created_at integer not null,
    primary key (src, dst, kind)
) without rowid;
insert into links_v12 select src, dst, kind, project_id, created_at from links;
drop table links;
alter table links_v12 rename to links;
create index links_dst on links(dst);
"""

# Text an operation removes (forget, prune-source, scrub-secrets) is only gone from the file
# after the compaction that follows its commit: the FTS rebuild, a VACUUM, a truncated WAL. The
# operation marks the steps it leaves to do in its own transaction, and each is cleared once
# done (store/maintenance.py): a process killed in between leaves the mark, and the next open
# finishes the work.
_V13_COMPACTION_DUE = """
create table compaction_due (
    step text primary key check (step in ('fts', 'vacuum', 'wal'))
) without rowid;
"""

# The words inside a commit's identifiers (retrieval/names.py) get a column of their own in the
# word index: FTS5 cannot add one, so the index is made again with four and rebuilt from the
# nodes, and the common words' lists, scored without it, start over (the next sync makes
# them). The column is empty until that sync fills it in.
_V14_NAMES = """
alter table nodes add column names text not null default '';
drop trigger nodes_ai;
drop trigger nodes_ad;
drop trigger nodes_au;
drop table nodes_fts;
create virtual table nodes_fts using fts5(
    title, body, paths, names,
    content='nodes', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
create trigger nodes_ai after insert on nodes begin
    insert into nodes_fts(rowid, title, body, paths, names)
    values (new.seq, new.title, new.body, new.paths, new.names);
end;
create trigger nodes_ad after delete on nodes begin
    insert into nodes_fts(nodes_fts, rowid, title, body, paths, names)
    values ('delete', old.seq, old.title, old.body, old.paths, old.names);
end;
create trigger nodes_au after update of title, body, paths, names on nodes begin
    insert into nodes_fts(nodes_fts, rowid, title, body, paths, names)
    values ('delete', old.seq, old.title, old.body, old.paths, old.names);
    insert into nodes_fts(rowid, title, body, paths, names)
    values (new.seq, new.title, new.body, new.paths, new.names);
end;
insert into nodes_fts(nodes_fts) values ('rebuild');
drop trigger word_tops_rewritten;
create trigger word_tops_rewritten after update of title, body, paths, names on nodes
when old.seq <= (select upto from word_top_state) begin
    delete from word_tops where seq = old.seq;
    insert into word_top_late(seq) values (old.seq);
end;
delete from word_tops;
delete from word_top_tokens;
delete from word_top_late;
update word_top_state set upto = 0, avgdl = 0;
"""

# A long node is embedded as passages too (store/vectors.py): the vectors of those embedded
# before, their head's alone, are forgotten so the next sync with a model embeds them whole.
# The condition is vectors.passages' (not a file diff, a body past HEAD_CHARS + OVERLAP).
_V15_PASSAGES = """
delete from embeddings where seq in (
    select seq from nodes where kind != 'file_diff' and length(body) > 900
);
"""

# A node's files are keyed by its seq, not its id: a bulk load appends them in seq order
# instead of scattering 64-character hashes through two B-trees, and knows each seq without
# a lookup in the id index (store/nodes.write_rows). 50k commits' 106k files: 0.63 s of the
# database thread's time by id, 0.41 s by seq looked up, 0.29 s by seq taken as the rows go in.
_V16_FILES_BY_SEQ = """
create table node_files_v16 (
    node_seq integer not null references nodes(seq) on delete cascade,
    path     text not null,
    primary key (node_seq, path)
) without rowid;
insert into node_files_v16
select n.seq, f.path from node_files f join nodes n on n.id = f.node_id order by 1, 2;
drop table node_files;
alter table node_files_v16 rename to node_files;
create index node_files_path on node_files(path);
"""

# A failure links to its fix by its error too (chains.py): the same error signature gone in a
# later pass in the same directory and session ('signature'), or a commit touching a file its
# stack trace names ('trace'). The links table is rebuilt to widen its check, as in v12. The
# index finds every failure with one signature (``meta.sig``) without reading every command's
# JSON: the agent hook asks it after each failure.
_V17_ERROR_SIGNATURES = """
create table links_v17 (
    src        text not null references nodes(id) on delete cascade,
    dst        text not null references nodes(id) on delete cascade,
    kind       text not null check (kind in ('retry', 'discussion', 'mentions', 'closes',
                                              'reverts', 'signature', 'trace')),
    project_id text not null,
    created_at integer not null,
    primary key (src, dst, kind)
) without rowid;
insert into links_v17 select src, dst, kind, project_id, created_at from links;
drop table links;
alter table links_v17 rename to links;
create index links_dst on links(dst);
create index nodes_error_sig on nodes(project_id, json_extract(meta, '$.sig'), ts)
    where kind = 'shell_command';
"""

# The failed commands alone, by time, with their command hash: a session start's digest asks
# which commands failed in the last two weeks, and on a memory of 20,000 recent commands
# reading them all (their meta) was most of the hook's time. The condition is the one
# collectors/agent/recall.py queries with, word for word, so the index can serve it.
_V18_FAILED_COMMANDS = """
create index nodes_failed_commands on nodes(project_id, ts, json_extract(meta, '$.cmd_hash'))
    where kind = 'shell_command' and (json_extract(meta, '$.outcome') = 'failed'
    or (json_extract(meta, '$.outcome') is null
    and json_extract(meta, '$.exit') not in (0, 130, 131)));
"""

# What the agents were told: each recall note and session digest the agent hook delivered
# (collectors/agent/told.py reads them from its log at sync). Not nodes: they are not memory
# to search, but a record of what memory said, read newest first by the viewer.
_V19_AGENT_NOTES = """
create table agent_notes (
    id         text primary key,           -- the hook's id for the note, stable across syncs
    project_id text not null references projects(id),
    ts         real not null,              -- when it was told (unix s, to the millisecond)
    agent      text not null,              -- a key of collectors.agent.AGENTS
    session    text not null,
    event      text not null,              -- PreToolUse, PostToolUseFailure, SessionStart
    kind       text not null check (kind in ('recall', 'digest')),
    cmd_hash   text,                       -- a recall's command, as its runs' meta.cmd_hash
    command    text,                       -- ... and its text, redacted
    after      text,                       -- the failed run's id a note after a failure follows
    body       text not null               -- the note itself, redacted
);
create index agent_notes_told on agent_notes(project_id, ts);
"""

# The timeline (handlers/feed.py): every node but a commit's file diffs (shown under their
# commit), newest first, a page at a time. Kind and source ride in the index so the viewer's
# filters (kinds, an author) are read from it while walking back in time, without reading the
# row of each node passed over. Without it, every first page sorted all of the project's nodes.
_V20_TIMELINE = """
create index nodes_timeline on nodes(project_id, ts, kind, source) where kind != 'file_diff';
"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "nodes", _V1_NODES),
    (2, "fts", _V1_FTS),
    (3, "embeddings", _V3_EMBEDDINGS),
    (4, "links", _V4_LINKS),
    (5, "hygiene", _V5_HYGIENE),
    (6, "sources", _V6_SOURCES),
    (7, "cjk", _V7_CJK),
    (8, "aliases", _V8_ALIASES),
    (9, "sketches", _V9_SKETCHES),
    (10, "sign pages", _V10_SIGN_PAGES),
    (11, "word tops", _V11_WORD_TOPS),
    (12, "reverts", _V12_REVERTS),
    (13, "compaction due", _V13_COMPACTION_DUE),
    (14, "names", _V14_NAMES),
    (15, "passages", _V15_PASSAGES),
    (16, "files by seq", _V16_FILES_BY_SEQ),
    (17, "error signatures", _V17_ERROR_SIGNATURES),
    (18, "failed commands", _V18_FAILED_COMMANDS),
    (19, "agent notes", _V19_AGENT_NOTES),
    (20, "timeline", _V20_TIMELINE),
]


LATEST = MIGRATIONS[-1][0]


class Database(Protocol):
    """What migrating needs of a connection (store.db.Database; named so, db.py, which
    migrates every database it opens, is not imported back)."""

    async def execute(self, sql: str, params: Sequence[Any] = ...) -> int: ...
    async def fetchone(self, sql: str, params: Sequence[Any] = ...) -> tuple[Any, ...] | None: ...
    async def fetchall(self, sql: str, params: Sequence[Any] = ...) -> list[tuple[Any, ...]]: ...
    def transaction(self) -> AbstractAsyncContextManager[Any]: ...


async def schema_version(db: Database) -> int:
    """The newest migration applied; 0 for a database that has none."""
    exists = await db.fetchone(
        "select 1 from sqlite_master where type = 'table' and name = 'schema_migrations'"
    )
    if not exists:
        return 0
    row = await db.fetchone("select max(version) from schema_migrations")
    return int(row[0] or 0) if row else 0


async def migrate(db: Database) -> list[int]:
    """Apply every migration the database has not had yet; return their versions."""
    await db.execute(
        "create table if not exists schema_migrations "
        "(version integer primary key, name text not null, applied_at integer not null)"
    )
    done = {row[0] for row in await db.fetchall("select version from schema_migrations")}
    applied = []
    for version, name, sql in MIGRATIONS:
        if version in done:
            continue
        async with db.transaction():
            # Another process may have migrated while we waited for the write lock.
            if await db.fetchone("select 1 from schema_migrations where version = ?", (version,)):
                continue
            for statement in _statements(sql):
                await db.execute(statement)
            await db.execute(
                "insert into schema_migrations values (?, ?, ?)", (version, name, int(time.time()))
            )
        applied.append(version)
    return applied


def _statements(script: str) -> list[str]:
    """Split a migration into statements; triggers keep their inner semicolons."""
    out, current = [], []
    for line in script.splitlines():
        stripped = line.split("--", 1)[0].rstrip()
        if not stripped:
            continue
        current.append(stripped)
        text = "\n".join(current)
        if stripped.endswith(";") and (
            not text.lstrip().startswith("create trigger") or stripped.strip() == "end;"
        ):
            out.append(text)
            current = []
    if current:
        out.append("\n".join(current))
    return out
