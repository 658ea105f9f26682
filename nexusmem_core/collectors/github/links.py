"""Links between GitHub threads and the commits and failures they are about.

Three rules, each a row in ``links``; a missed link is better than a wrong one.

* **mentions** (thread -> commit): the thread names a commit of this project by a 7-40 digit
  hex word that is the prefix of exactly one commit's sha here (an ambiguous prefix is no
  link). GitHub's own commit links are such words too.
* **closes** (thread -> commit): GitHub says the commit closed it (an issue's close event
  names a commit, or a merged pull request whose merge commit is here; a merged pull request
  is closed by its own merge commit), or a commit message here says ``fixes #N`` /
  ``closes #N`` / ``resolves #N`` (GitHub's keywords, ``owner/repo#N`` only for this
  repository). A commit that closes a thread is not also listed as mentioned by it.
* **discussion** (failed command -> thread): the failure's own text stands whole in exactly
  one thread, as one of its lines or in an inline code span (quote marks, ``$`` prompts and
  pytest's ``E`` prefix aside, spaces normalised). Commands keep no output; what a failure
  has is its command line and, for the coding agent's, the tail of the error it reported
  (stored as the ``error:`` line of the node). The text compared is each of the last two
  lines of that error that say something (20 characters and three words at least, not a
  generic line like "Traceback (most recent call last):" or "Exit code 1"), and the command
  line itself when it is specific: 24 characters and three words that are neither everyday
  English nor truncated. Text found in two threads or more names none of them.

When a sync wrote threads, the pass recomputes every link from every thread, commit and
failure, adding the missing and removing those no longer true (a thread edited to drop a sha).
When only commits or commands came in since the last pass (cursor ``github:links``), those
alone are looked up, SQLite narrowing the threads down (``instr``: a sha's first 7 digits, a
failure's text verbatim) before any is read whole; a sync with nothing new does no linking
work.
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass
from typing import Any

from ...chains import ENGLISH, FAILED, significant_words
from ...models import node_id
from ...store.db import Database
from ...store.nodes import decode_meta, get_cursor, set_cursor
from .nodes import KIND

__all__ = ["LinkCounts", "error_lines", "link_threads"]

CURSOR = "github:links"
# New commits and failures looked up one by one (each a scan of the threads' text); past this
# many together, one full pass costs less (measured: 2,000 threads, 0.1 s a scan).
ARRIVALS = 10
Link = tuple[str, str, str]  # (src, dst, kind)
_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{7,40}(?![0-9A-Za-z])")
_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+([\w.-]+/[\w.-]+)?#(\d+)\b",
    re.IGNORECASE,
)
_CODE_SPAN = re.compile(r"`([^`\n]{20,})`")
_PREFIX = re.compile(r"^(?:>\s*)+|^(?:\$|>>>|E)\s+")
_MARKED = ">$E`"
_WORDS = re.compile(r"[A-Za-z]{2,}")
_GENERIC = re.compile(
    r"^(?:exit code|traceback \(most recent call last\)|during handling of the above|"
    r"the above exception was|error: process completed with exit code|command failed|"
    r"npm err! (?:code|errno|a complete log|this is probably not a problem)|make: \*\*\*|"
    r"file \"|at [\w.$<>]+ ?\()",
    re.IGNORECASE,
)


@dataclass
class LinkCounts:
    mentions: int = 0  # links added this pass
    closes: int = 0
    discussion: int = 0
    removed: int = 0  # links no longer true


def normalize(line: str) -> str:
    """A line as compared: spaces one, quote marks, prompts and surrounding backticks off."""
    text = " ".join(line.split())
    if text[:1] in _MARKED:  # the cheap test first: this runs on every line of every thread
        for _ in range(2):
            text = _PREFIX.sub("", text).strip("` ")
    return text


def error_lines(error: str) -> list[str]:
    """The last two lines of an error text that could single out one discussion of it."""
    lines = [normalize(piece) for piece in re.split(r"\n| / ", error)]
    distinctive = [
        line
        for line in lines
        if len(line) >= 20 and len(_WORDS.findall(line)) >= 3 and not _GENERIC.match(line)
    ]
    return distinctive[-2:]


def _command_line(title: str) -> str | None:
    """The command as a needle, when it is specific enough to name one discussion."""
    if title.endswith(" ..."):
        return None  # cut at 200 characters, or several lines: not what anyone pasted
    line = normalize(title)
    words = [w for w in significant_words(line) if w not in ENGLISH]
    return line if len(line) >= 24 and len(words) >= 3 else None


def needles(source: str, title: str, body: str) -> list[str]:
    """What of a failed command may stand in a thread: its error's tail, its command line."""
    found = error_lines(_error_text(source, body) or "")
    command = _command_line(title)
    return [*found, command] if command else found


def _lines(body: str) -> set[str]:
    """A thread's lines and inline code spans, as compared."""
    return {normalize(x) for x in [*body.splitlines(), *_CODE_SPAN.findall(body)] if len(x) >= 20}


def _error_text(source: str, body: str) -> str | None:
    """The ``error:`` fact of an agent's command node (the last block of its body)."""
    if not source.startswith("agent:"):
        return None
    for line in reversed(body.rsplit("\n\n", 1)[-1].splitlines()):
        if line.startswith("error: "):
            return line[len("error: ") :]
    return None


async def link_threads(
    db: Database, project_id: str, repo_slug: str | None, *, written: int
) -> LinkCounts:
    """Bring this project's thread links up to date (inside the caller's transaction).

    ``written`` is how many threads this sync changed; ``repo_slug`` (``owner/name``,
    lower case) lets ``owner/name#N`` in a commit message count for this repository.
    """
    top = await db.fetchone(
        "select max(seq) from nodes where project_id = ? "
        "and kind in ('git_commit', 'shell_command', ?)",
        (project_id, KIND),
    )
    newest = int(top[0]) if top and top[0] is not None else 0
    done = int(await get_cursor(db, project_id, CURSOR) or 0)
    if not written and newest <= done:
        return LinkCounts()
    if written or not done:
        counts = await _relink(db, project_id, repo_slug)
    else:
        counts = await _link_arrivals(db, project_id, repo_slug, done)
    await set_cursor(db, project_id, CURSOR, str(newest))
    return counts


async def _relink(db: Database, project_id: str, repo_slug: str | None) -> LinkCounts:
    """Every thread link from scratch: the missing added, those no longer true removed."""
    threads = await db.fetchall(
        "select id, body, meta from nodes where project_id = ? and kind = ?", (project_id, KIND)
    )
    wanted: set[Link] = set()
    if threads:
        commits = await db.fetchall(
            "select ref, id from nodes where project_id = ? and kind = 'git_commit' order by ref",
            (project_id,),
        )
        by_sha = dict(commits)
        closes = {
            (thread_id, by_sha[sha], "closes")
            for thread_id, _, meta in threads
            if (sha := decode_meta(meta).get("closed_by")) in by_sha
        }
        messages = await db.fetchall(
            "select id, body from nodes where project_id = ? and kind = 'git_commit' "
            "and instr(body, '#') > 0",
            (project_id,),
        )
        ids = {thread_id for thread_id, _, _ in threads}
        closes |= _closing_messages(project_id, repo_slug, messages, ids)
        closed = {(src, dst) for src, dst, _ in closes}
        wanted = closes | {link for link in _mentions(threads, commits) if link[:2] not in closed}
        wanted |= await _discussions(db, project_id, threads)
    existing = set(
        await db.fetchall(
            "select l.src, l.dst, l.kind from links l join nodes t on t.id = "
            "(case when l.kind = 'discussion' then l.dst else l.src end) "
            "where l.project_id = ? and t.kind = ? "
            "and l.kind in ('mentions', 'closes', 'discussion')",
            (project_id, KIND),
        )
    )
    counts = await _insert(db, project_id, wanted - existing)
    for src, dst, kind in sorted(existing - wanted):
        counts.removed += await db.execute(
            "delete from links where src = ? and dst = ? and kind = ?", (src, dst, kind)
        )
    return counts


async def _link_arrivals(
    db: Database, project_id: str, repo_slug: str | None, done: int
) -> LinkCounts:
    """Links of the commits and failures that came in since the pass at ``done`` (a node seq),
    to the threads already here."""
    commits = await db.fetchall(
        "select id, ref, body from nodes where project_id = ? and kind = 'git_commit' and seq > ?",
        (project_id, done),
    )
    failures = await db.fetchall(
        f"select id, source, title, body from nodes where project_id = ? "
        f"and kind = 'shell_command' and seq > ? and {FAILED}",
        (project_id, done),
    )
    if len(commits) + len(failures) > ARRIVALS:
        return await _relink(db, project_id, repo_slug)
    ids = {
        i
        for (i,) in await db.fetchall(
            "select id from nodes where project_id = ? and kind = ?", (project_id, KIND)
        )
    }
    if not ids:
        return LinkCounts()
    by_sha = {ref: commit_id for commit_id, ref, _ in commits}
    messages = [(commit_id, body) for commit_id, _, body in commits]
    closes = _closing_messages(project_id, repo_slug, messages, ids)
    if by_sha:
        marks = ",".join("?" * len(by_sha))
        closes |= {
            (thread_id, by_sha[sha], "closes")
            for thread_id, sha in await db.fetchall(
                f"select id, json_extract(meta, '$.closed_by') from nodes where project_id = ? "
                f"and kind = ? and json_extract(meta, '$.closed_by') in ({marks})",
                (project_id, KIND, *by_sha),
            )
        }
    closed = {(src, dst) for src, dst, _ in closes}
    wanted = set(closes)
    for commit_id, ref, _ in commits:
        for thread_id in await _naming(db, project_id, ref):
            if (thread_id, commit_id) not in closed:
                wanted.add((thread_id, commit_id, "mentions"))
    for failure_id, source, title, body in failures:
        hits = set()
        for needle in needles(source, title, body):
            found = await _standing_in(db, project_id, needle)
            if len(found) == 1:
                hits |= found
        if len(hits) == 1:
            wanted.add((failure_id, hits.pop(), "discussion"))
    return await _insert(db, project_id, wanted)


async def _insert(db: Database, project_id: str, links: set[Link]) -> LinkCounts:
    """Add ``links`` (those already there stay as they are); count the added by kind."""
    counts = LinkCounts()
    now = int(time.time())
    for src, dst, kind in sorted(links):
        added = await db.execute(
            "insert into links (src, dst, kind, project_id, created_at) values (?, ?, ?, ?, ?) "
            "on conflict do nothing",
            (src, dst, kind, project_id, now),
        )
        setattr(counts, kind, getattr(counts, kind) + added)
    return counts


def _mentions(threads: list[Any], commits: list[Any]) -> set[Link]:
    """Thread -> the one commit each hex word of its body is a prefix of (``commits`` are
    ``(sha, id)`` in sha order)."""
    refs = [ref for ref, _ in commits]
    out = set()
    for thread_id, body, _ in threads:
        for word in {w.lower() for w in _HEX.findall(body)}:
            at = bisect.bisect_left(refs, word)
            hits = [ref for ref in refs[at : at + 2] if ref.startswith(word)]
            if len(hits) == 1:
                out.add((thread_id, commits[at][1], "mentions"))
    return out


async def _naming(db: Database, project_id: str, sha: str) -> list[str]:
    """The threads with a hex word that is a prefix of ``sha`` and of no other commit here."""
    rows = await db.fetchall(
        "select id, body from nodes where project_id = ? and kind = ? "
        "and instr(lower(body), ?) > 0",
        (project_id, KIND, sha[:7]),
    )
    out = []
    for thread_id, body in rows:
        for word in {w.lower() for w in _HEX.findall(body)}:
            if sha.startswith(word) and await _unique_prefix(db, project_id, word):
                out.append(thread_id)
                break
    return out


async def _unique_prefix(db: Database, project_id: str, prefix: str) -> bool:
    """Whether exactly one commit's sha here starts with ``prefix`` (hex sorts below g)."""
    rows = await db.fetchall(
        "select 1 from nodes where project_id = ? and source = 'git' and ref >= ? and ref < ? "
        "limit 2",
        (project_id, prefix, prefix + "g"),
    )
    return len(rows) == 1


def _closing_messages(
    project_id: str, repo_slug: str | None, messages: list[Any], threads: set[str]
) -> set[Link]:
    """Thread -> the commit whose message (``(id, body)``) says it fixes or closes it."""
    out = set()
    for commit_id, message in messages:
        for repo, number in _CLOSING.findall(message):
            if repo and repo.lower() != repo_slug:
                continue  # closes a thread of another repository
            for ref in (f"issue#{number}", f"pr#{number}"):
                thread_id = node_id(project_id, KIND, ref)
                if thread_id in threads:
                    out.add((thread_id, commit_id, "closes"))
    return out


async def _discussions(db: Database, project_id: str, threads: list[Any]) -> set[Link]:
    """Failed command -> the one thread its error tail or command line stands in."""
    failures = await db.fetchall(
        f"select id, source, title, body from nodes where project_id = ? "
        f"and kind = 'shell_command' and {FAILED}",
        (project_id,),
    )
    wanted = {row[0]: needles(*row[1:]) for row in failures}
    every = {n for found in wanted.values() for n in found}
    if not every:
        return set()
    where: dict[str, set[str]] = {}
    for thread_id, body, _ in threads:
        for line in [*body.splitlines(), *_CODE_SPAN.findall(body)]:
            if len(line) >= 20 and (text := normalize(line)) in every:
                where.setdefault(text, set()).add(thread_id)
    out = set()
    for failure_id, found in wanted.items():
        hits = {next(iter(at)) for n in found if len(at := where.get(n, set())) == 1}
        if len(hits) == 1:
            out.add((failure_id, hits.pop(), "discussion"))
    return out


async def _standing_in(db: Database, project_id: str, needle: str) -> set[str]:
    """The threads ``needle`` stands in. SQLite finds those holding it verbatim; a copy with
    other spacing waits for the next full pass."""
    rows = await db.fetchall(
        "select id, body from nodes where project_id = ? and kind = ? and instr(body, ?) > 0",
        (project_id, KIND, needle),
    )
    return {thread_id for thread_id, body in rows if needle in _lines(body)}
