"""Which threads changed since the last sync, and what they say, in few ``gh`` calls.

Two calls per page of work, whatever the size of the threads:

* the REST list ``repos/{o}/{r}/issues?state=all&sort=updated&direction=asc&since=...``
  (issues and pull requests together, oldest change first, up to 100 a call) says which
  threads changed since the cursor. It is exact: GitHub's search index, which can lag, is not
  involved;
* one GraphQL query per 25 of them reads each thread whole: first post, the newest comments,
  for a pull request its reviews with their inline comments, its files and merge commit, for
  an issue what closed it.

So a sync of ``maxThreads`` threads makes about ``maxThreads / 100 + maxThreads / 25`` calls
(6 at the default 100), a sync with nothing new one. ``timeoutSeconds`` bounds the whole
read, not each call: the sync holds its write transaction meanwhile.

The cursor is the ``updated_at`` of the newest thread read and the numbers read at exactly
that time (GitHub's ``since`` is inclusive, and a bulk label edit gives many threads one
second). When ``maxThreads``, the time bound or a failure cuts a read short, the cursor stops
at the last thread actually read and the next sync reads on from there.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio

from .gh import GhUnavailable, run_gh

__all__ = ["Cursor", "Fetched", "fetch_threads"]

LIST_PAGE = 100  # GitHub's largest page
DETAIL_BATCH = 25  # threads per GraphQL query: 25 x 100 comments stays far below its limits
REVIEW_COMMENTS = 30  # inline comments read per review
MAX_CONNECTION = 100  # GraphQL's largest `first`/`last`

# One thread, whichever it is. `last:` comments: the newest say how the thread ended, and the
# first post says what it was about; both are kept when a thread is long.
_THREAD = """
fragment Thread on IssueOrPullRequest {
  __typename
  ... on Issue {
    number title body url state stateReason createdAt updatedAt closedAt
    author { login }
    labels(first: 20) { nodes { name } }
    comments(last: $comments) { totalCount nodes { author { login } body createdAt } }
    timelineItems(itemTypes: [CLOSED_EVENT], last: 1) {
      nodes { ... on ClosedEvent { closer { __typename
        ... on Commit { oid }
        ... on PullRequest { number mergeCommit { oid } } } } }
    }
  }
  ... on PullRequest {
    number title body url state createdAt updatedAt closedAt merged
    author { login }
    labels(first: 20) { nodes { name } }
    mergeCommit { oid }
    files(first: 100) { nodes { path } }
    comments(last: $comments) { totalCount nodes { author { login } body createdAt } }
    reviews(last: $comments) { totalCount nodes { author { login } body state submittedAt
      comments(first: $reviewComments) { nodes { author { login } body path createdAt } } } }
  }
}
"""


@dataclass(frozen=True)
class Cursor:
    """How far the threads were read: see the module docstring."""

    since: str | None = None
    seen: frozenset[int] = frozenset()

    def encode(self) -> str:
        return json.dumps({"since": self.since, "seen": sorted(self.seen)})

    @classmethod
    def decode(cls, raw: str | None) -> Cursor:
        """A missing or unreadable cursor reads everything again (upserts make that safe)."""
        try:
            value = json.loads(raw or "{}")
            since, seen = value.get("since"), value.get("seen") or []
            if since is not None and not isinstance(since, str):
                return cls()
            return cls(since, frozenset(n for n in seen if isinstance(n, int)))
        except (json.JSONDecodeError, AttributeError, TypeError):
            return cls()


@dataclass
class Fetched:
    threads: list[dict[str, Any]] = field(default_factory=list)  # oldest change first
    cursor: Cursor = Cursor()
    unreadable: int = 0  # records of an unexpected shape, or threads GitHub did not return
    more: bool = False  # maxThreads cut the read short
    note: str = "ok"  # or why the read stopped early (what was read before is kept)
    calls: int = 0


@dataclass
class _Listed:
    number: int
    updated_at: str


Call = Callable[[list[str]], Awaitable[Any]]


async def fetch_threads(
    root: Path,
    owner: str,
    name: str,
    cursor: Cursor,
    *,
    max_threads: int,
    max_comments: int,
    timeout: float,
) -> Fetched:
    """Read up to ``max_threads`` threads changed since ``cursor``, oldest change first."""
    out = Fetched(cursor=cursor)
    deadline = anyio.current_time() + timeout

    async def call(args: list[str]) -> Any:
        left = deadline - anyio.current_time()
        if left <= 0:
            raise GhUnavailable(f"skipped: gh did not answer within {timeout:g}s")
        out.calls += 1
        return await run_gh(args, root, left, bound=timeout)

    listed: list[_Listed] = []
    done = 0  # how many of `listed` were read whole
    try:
        out.more = await _list(call, owner, name, cursor, max_threads, listed, out)
        for start in range(0, len(listed), DETAIL_BATCH):
            batch = listed[start : start + DETAIL_BATCH]
            out.threads += await _details(call, owner, name, batch, max_comments, out)
            done = start + len(batch)
    except GhUnavailable as err:
        out.note, out.more = str(err), False
    out.cursor = _advance(cursor, listed[:done])
    return out


async def _list(
    call: Call,
    owner: str,
    name: str,
    cursor: Cursor,
    max_threads: int,
    listed: list[_Listed],
    out: Fetched,
) -> bool:
    """Fill ``listed`` with the threads changed since ``cursor``; True when more are left.

    Each page asks ``since`` the newest time seen so far rather than for page n+1: a thread
    updated while this runs moves to the end of the order, which would shift page n+1 past a
    thread never seen. Only a page whose threads all share one second needs ``page``.
    """
    since, page, taken = cursor.since, 1, set()
    while len(listed) < max_threads:
        query = f"state=all&sort=updated&direction=asc&per_page={LIST_PAGE}&page={page}"
        if since:
            query += f"&since={quote(since, safe=':')}"
        items = await call([f"repos/{owner}/{name}/issues?{query}"])
        if not isinstance(items, list):
            raise GhUnavailable("skipped: the issue list from gh is not a list")
        for item in items:
            entry = _listed(item)
            if entry is None:
                out.unreadable += 1
                continue
            if entry.number in taken or (
                entry.updated_at == cursor.since and entry.number in cursor.seen
            ):
                continue  # read in this sync already, or at the cursor by the last one
            if len(listed) == max_threads:
                return True
            listed.append(entry)
            taken.add(entry.number)
        if len(items) < LIST_PAGE:
            return False
        newest = _listed(items[-1])
        if newest is None or newest.updated_at == since:
            page += 1
        else:
            since, page = newest.updated_at, 1
    return True


def _listed(item: Any) -> _Listed | None:
    if not isinstance(item, dict):
        return None
    number, updated = item.get("number"), item.get("updated_at")
    if not isinstance(number, int) or not isinstance(updated, str) or not updated:
        return None
    return _Listed(number, updated)


async def _details(
    call: Call, owner: str, name: str, batch: list[_Listed], max_comments: int, out: Fetched
) -> list[dict[str, Any]]:
    """Each thread of ``batch`` whole, by number; one that GitHub does not return is counted
    unreadable and passed over (it is deleted, or transferred away)."""
    wanted = " ".join(
        f"t{t.number}: issueOrPullRequest(number: {t.number}) {{ ...Thread }}" for t in batch
    )
    query = (
        "query($owner: String!, $name: String!, $comments: Int!, $reviewComments: Int!) "
        f"{{ repository(owner: $owner, name: $name) {{ {wanted} }} }}\n{_THREAD}"
    )
    per = max(1, min(max_comments, MAX_CONNECTION))
    answer = await call(
        [
            "graphql",
            "-f",
            f"query={query}",
            "-f",
            f"owner={owner}",
            "-f",
            f"name={name}",
            "-F",
            f"comments={per}",
            "-F",
            f"reviewComments={min(per, REVIEW_COMMENTS)}",
        ]
    )
    data = answer.get("data") if isinstance(answer, dict) else None
    repo = data.get("repository") if isinstance(data, dict) else None
    if not isinstance(repo, dict):
        raise GhUnavailable("skipped: gh's GraphQL answer holds no repository")
    found = []
    for entry in batch:
        thread = repo.get(f"t{entry.number}")
        if isinstance(thread, dict) and thread.get("number") == entry.number:
            found.append(thread)
        else:
            out.unreadable += 1
    return found


def _advance(cursor: Cursor, read: list[_Listed]) -> Cursor:
    """The cursor after ``read`` (oldest change first): every thread changed before its
    ``since`` has been read, and so have the ``seen`` ones at that very second."""
    if not read:
        return cursor
    newest = max(entry.updated_at for entry in read)
    seen = {entry.number for entry in read if entry.updated_at == newest}
    if newest == cursor.since:
        seen |= cursor.seen
    return Cursor(newest, frozenset(seen))
