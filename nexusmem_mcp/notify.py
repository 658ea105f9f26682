"""What the server tells a client while it works: progress and warnings, as MCP notifications.

A ``sync_project`` whose request carries a ``progressToken`` gets ``notifications/progress``
as the core's sync reports its stages (commits walked, diffs, docs, ... then embedding). The
core calls its progress callback synchronously, between writes; here each call is queued and
sent by a task beside the sync, so the sync never waits on the client. A full queue drops a
step: the next one carries the running count anyway.

Warnings (Ollama gone, a source skipped, a sync's notes) go out as ``notifications/message``
at level ``warning``. The SDK deprecates logging from the 2026-07-28 protocol on (SEP-2577),
and there it sends a message only to a request that opted in with the ``_meta`` log level;
on the versions before, the client's ``logging/setLevel`` decides, per connection (``LogLevels``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, get_args
from weakref import WeakKeyDictionary

import anyio
from mcp.server.mcpserver import Context
from mcp.server.session import ServerSession
from mcp_types import EmptyResult, LoggingLevel, SetLevelRequestParams

from .roots import connection_of

if TYPE_CHECKING:
    from nexusmem_core.models import SyncReport
    from nexusmem_core.sync import Progress

__all__ = ["LogLevels", "sync_progress", "sync_warnings", "warn"]

LOGGER = "nexusmem"
_LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)  # least severe first
_QUEUED = 16  # progress steps waiting to be sent; past it a step is dropped


class LogLevels:
    """The level each connected client asked for with ``logging/setLevel`` (until it asks,
    every level is sent). Connections are held weakly, as ``roots.ClientRoots`` holds them."""

    def __init__(self) -> None:
        self._set: WeakKeyDictionary[Any, LoggingLevel] = WeakKeyDictionary()

    async def set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        """The ``logging/setLevel`` handler."""
        self._set[connection_of(ctx.session)] = params.level
        return EmptyResult()

    def allows(self, session: Any, level: LoggingLevel) -> bool:
        wanted = self._set.get(connection_of(session), _LEVELS[0])
        return _LEVELS.index(level) >= _LEVELS.index(wanted)


async def warn(ctx: Context, levels: LogLevels, text: str) -> None:
    """``text`` to the client as a warning, if it wants warnings (see the module's docstring)."""
    if levels.allows(ctx.session, "warning"):
        await _send_log(
            ctx.session, "warning", text, logger=LOGGER, related_request_id=ctx.request_id
        )


# The SDK's own sender, without the deprecation warning its wrapper raises on every call: the
# protocol versions before 2026-07-28 have logging, and the sender itself keeps to the rules
# of the later ones. A warnings filter would not do: it is the process's, not this task's.
_send_log = inspect.unwrap(ServerSession.send_log_message)


def sync_warnings(report: SyncReport) -> list[str]:
    """What in a sync's report is worth a warning: the lines the CLI writes to stderr."""
    said = [
        f"{name}: {note}"
        for name, note in [
            ("vectors", report.vectors),
            ("contradictions", report.contradictions),
            ("session summaries", report.session_note),
        ]
        if note.startswith("skipped")
    ]
    if report.github_note not in ("off", "ok"):
        said.append(f"github: {report.github_note}")
    return said + [f"note: {note}" for note in report.notes]


@asynccontextmanager
async def sync_progress(ctx: Context) -> AsyncIterator[Progress]:
    """A progress callback for the core's sync that reports to the client, while the block
    runs (nothing is sent when the request carries no ``progressToken``).

    MCP wants the progress value to grow with each notification; the core counts each stage
    from zero, so the value sent is the sum of every stage's latest count, and the message
    names the stage: ``commits: 1,200``."""
    send, receive = anyio.create_memory_object_stream[tuple[float, str]](_QUEUED)
    counts: dict[str, int] = {}

    def progress(stage: str, count: int) -> None:
        counts[stage] = count
        with suppress(anyio.WouldBlock):  # dropped: the next step carries the count on
            send.send_nowait((float(sum(counts.values())), f"{stage}: {count:,}"))

    async def report() -> None:
        sent = -math.inf
        async with receive:
            async for value, message in receive:
                if value > sent:  # a stage that reports the same count again adds nothing
                    sent = value
                    await ctx.report_progress(value, message=message)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(report)
            with send:
                yield progress
    except BaseExceptionGroup as group:  # the sync's own error, as the tool would raise it
        if len(group.exceptions) == 1:
            raise group.exceptions[0]  # noqa: B904  (its own cause is kept; the group is noise)
        raise
