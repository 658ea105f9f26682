"""A GitHub issue or pull request as one ``github_thread`` node.

The body is the title, the first post and the comments in order (``author: text``; a review
or an inline review comment says so, with its file), redacted before anything else sees it.
A long thread keeps its first post (up to half the body's budget) and its newest comments,
which say how it ended; the comments left out in between are counted in one line.

``ts`` is the thread's last activity (``updatedAt``): the body holds everything up to then,
and a thread that was just discussed again is news again.

Signal, before any query: a thread is a discussion (0.45) unless it says more.

* a bug (a ``bug``/``regression``/``crash`` label, or a title that reports an error) is 0.6;
* done, that is closed by a commit or a merged pull request, or a merged pull request
  itself: +0.15, so a bug closed by its fix is 0.75 and a merged change 0.6;
* a long discussion (5 comments or more): +0.05;
* closed as not planned or a duplicate, or a pull request closed unmerged: 0.25, and a bot's
  thread (dependabot, renovate) 0.1, whatever else is true.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ...ingest import cap
from ...models import Node, NodeKind
from ...redact import redact_tally

__all__ = ["KIND", "SOURCE", "Unreadable", "thread_node", "thread_signal"]

KIND: NodeKind = "github_thread"
SOURCE = "github"

_BUG_LABEL = re.compile(r"bug|regression|crash|defect|incident", re.IGNORECASE)
_BUG_TITLE = re.compile(
    r"\b(bug|errors?|fail(s|ed|ure|ing)?|crash(es|ed|ing)?|broken|breaks|regression|"
    r"exceptions?|traceback|panics?|timeouts?|timed out|not working)\b",
    re.IGNORECASE,
)
_DROPPED_LABEL = re.compile(r"duplicate|wontfix|won't fix|invalid|not planned", re.IGNORECASE)
_BOTS = ("dependabot", "renovate", "github-actions")


class Unreadable(ValueError):
    """A thread record without the fields a node needs."""


def thread_node(
    project_id: str, thread: dict[str, Any], max_comments: int, max_chars: int
) -> tuple[Node, int]:
    """The node for one thread as the GraphQL query returns it, and how many secrets were
    redacted from it. Raises :class:`Unreadable` for a record of an unexpected shape."""
    number, title = thread.get("number"), thread.get("title")
    if not isinstance(number, int) or not isinstance(title, str):
        raise Unreadable("no number or title")
    is_pr = thread.get("__typename") == "PullRequest"
    secrets = 0

    def clean(text: Any) -> str:
        nonlocal secrets
        redacted, tally = redact_tally(text if isinstance(text, str) else "")
        secrets += sum(tally.values())
        return redacted.strip()

    title = clean(title) or "(no title)"
    entries = _comments(thread, clean)
    labels = _names(thread.get("labels"))
    closed_by, closer_pr = _closer(thread, is_pr)
    # Conversation comments GitHub counts (read or not), plus the reviews' text read.
    total = max(_total(thread.get("comments")) + _review_comments(thread), len(entries))
    post = clean(thread.get("body"))
    body, kept = _body(title, post, entries, total, max_comments, max_chars)
    meta = {
        "number": number,
        "url": thread.get("url") if isinstance(thread.get("url"), str) else None,
        "state": str(thread.get("state") or "").lower() or None,
        "state_reason": str(thread.get("stateReason") or "").lower() or None,
        "is_pr": is_pr,
        "merged": bool(thread.get("merged")) if is_pr else None,
        "author": _login(thread.get("author")),
        "labels": labels,
        "closed_by": closed_by,
        "closed_by_pr": closer_pr,
        "created_at": thread.get("createdAt"),
        "updated_at": thread.get("updatedAt"),
        "comments": total,
        "comments_read": kept,
    }
    node = Node(
        project_id=project_id,
        kind=KIND,
        source=SOURCE,
        ref=f"{'pr' if is_pr else 'issue'}#{number}",
        title=f"#{number} {title}",
        body=body,
        ts=_epoch(thread.get("updatedAt")) or _epoch(thread.get("createdAt")),
        signal=thread_signal(meta, title),
        provenance="recorded",
        files=_files(thread) if is_pr else [],
        meta=meta,
    )
    return node, secrets


def thread_signal(meta: dict[str, Any], title: str) -> float:
    """How much a thread is worth before any query: see the module docstring."""
    author = str(meta.get("author") or "").lower()
    if author.endswith("[bot]") or author in _BOTS:
        return 0.1
    labels = " ".join(meta.get("labels") or [])
    state, reason = meta.get("state"), meta.get("state_reason")
    if reason in ("not_planned", "duplicate") or _DROPPED_LABEL.search(labels):
        return 0.25
    if meta.get("is_pr") and state == "closed" and not meta.get("merged"):
        return 0.25
    signal = 0.6 if _BUG_LABEL.search(labels) or _BUG_TITLE.search(title) else 0.45
    if meta.get("closed_by") or meta.get("merged"):
        signal += 0.15
    if (meta.get("comments") or 0) >= 5:
        signal += 0.05
    return round(min(1.0, signal), 3)


def _comments(thread: dict[str, Any], clean: Any) -> list[tuple[str, str]]:
    """Every comment read, as ``(time, "author: text")``, oldest first: conversation
    comments, review summaries and inline review comments together."""
    out = []
    for comment in _nodes(thread.get("comments")):
        text = clean(comment.get("body"))
        if text:
            out.append(
                (str(comment.get("createdAt") or ""), f"{_login(comment.get('author'))}: {text}")
            )
    for review in _nodes(thread.get("reviews")):
        who = _login(review.get("author"))
        text = clean(review.get("body"))
        state = str(review.get("state") or "").lower().replace("_", " ")
        if text:
            out.append((str(review.get("submittedAt") or ""), f"{who} (review, {state}): {text}"))
        for inline in _nodes(review.get("comments")):
            text = clean(inline.get("body"))
            if text:
                where = inline.get("path") if isinstance(inline.get("path"), str) else "a file"
                out.append(
                    (
                        str(inline.get("createdAt") or ""),
                        f"{_login(inline.get('author'))} (on {where}): {text}",
                    )
                )
    out.sort(key=lambda pair: pair[0])
    return out


def _body(
    title: str,
    post: str,
    entries: list[tuple[str, str]],
    total: int,
    max_comments: int,
    max_chars: int,
) -> tuple[str, int]:
    """Title, first post, then as many of the newest comments as fit, and how many did;
    ``total`` is how many the thread has, read or not."""
    head, _ = cap(f"{title}\n\n{post or '(no description)'}", max(100, max_chars // 2))
    kept: list[str] = []
    room = max_chars - len(head)
    for _, text in reversed(entries[-max_comments:] if max_comments else []):
        if len(text) + 2 > room:
            break
        kept.append(text)
        room -= len(text) + 2
    left_out = total - len(kept)
    parts = [head]
    if left_out:
        parts.append(f"[{left_out} earlier comment(s) left out]")
    return "\n\n".join([*parts, *reversed(kept)]), len(kept)


def _closer(thread: dict[str, Any], is_pr: bool) -> tuple[str | None, int | None]:
    """The commit that closed the thread, as GitHub records it: a merged pull request's merge
    commit, or for an issue the commit or merged pull request its close event names."""
    if is_pr:
        return (_oid(thread.get("mergeCommit")) if thread.get("merged") else None), None
    for event in _nodes(thread.get("timelineItems")):
        closer = event.get("closer")
        if not isinstance(closer, dict):
            continue
        if closer.get("__typename") == "Commit":
            return _oid(closer), None
        if closer.get("__typename") == "PullRequest":
            number = closer.get("number")
            return _oid(closer.get("mergeCommit")), number if isinstance(number, int) else None
    return None, None


def _oid(value: Any) -> str | None:
    oid = value.get("oid") if isinstance(value, dict) else None
    return oid.lower() if isinstance(oid, str) and re.fullmatch(r"[0-9a-fA-F]{40}", oid) else None


def _nodes(connection: Any) -> list[dict[str, Any]]:
    nodes = connection.get("nodes") if isinstance(connection, dict) else None
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def _names(connection: Any) -> list[str]:
    return [n["name"] for n in _nodes(connection) if isinstance(n.get("name"), str)]


def _files(thread: dict[str, Any]) -> list[str]:
    return sorted(
        {n["path"] for n in _nodes(thread.get("files")) if isinstance(n.get("path"), str)}
    )


def _total(connection: Any) -> int:
    count = connection.get("totalCount") if isinstance(connection, dict) else None
    return count if isinstance(count, int) else 0


def _review_comments(thread: dict[str, Any]) -> int:
    return sum(len(_nodes(review.get("comments"))) for review in _nodes(thread.get("reviews")))


def _login(author: Any) -> str:
    """A deleted account comes back as null: GitHub shows it as ``ghost``."""
    login = author.get("login") if isinstance(author, dict) else None
    return login if isinstance(login, str) and login else "ghost"


def _epoch(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None
