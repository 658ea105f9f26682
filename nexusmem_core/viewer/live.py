"""New timeline rows while the page is open: server-sent events.

Once a second the stream asks the timeline handler for what is newer than the newest row the
page shows, and for the commands a shell or agent hook recorded that no sync has read yet
(``pending``). New rows go out as one ``rows`` event (their HTML, rendered and escaped here as
the page's own rows are); the pending block is sent again whole, as a ``pending`` event, only
when it changed. ``static/live.js`` puts them in place. The stream ends when the page goes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from .. import handlers
from .pages import plain
from .state import PAGE, Viewer

__all__ = ["POLL_SECONDS", "stream"]

POLL_SECONDS = 1.0
PING_SECONDS = 15


async def stream(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    params = request.query_params
    filters: dict[str, Any] = {
        "kinds": [k for k in params.getlist("kind") if k] or None,
        "author": params.get("author") or None,
        "outcome": params.get("outcome") or None,
        "path": params.get("path") or None,
        "since": params.get("since") or None,
        "until": params.get("until") or None,
    }
    after = params.get("after") or None
    await handlers.timeline(engine, after=after, limit=1, **filters)  # a bad filter: 400 now
    rows: Any = viewer.env.get_template("_rows.html").module

    async def events() -> AsyncIterator[dict[str, str]]:
        cursor, shown = after, None
        while True:
            page = plain(await handlers.timeline(engine, after=cursor, limit=PAGE, **filters))
            synced = [i for i in page["items"] if not i.get("pending")]
            pending = [i for i in page["items"] if i.get("pending")]
            if synced:
                cursor = page["newest"] or cursor
                yield {"event": "rows", "data": str(rows.rows(synced, project))}
            block = str(rows.rows(pending, project))
            if block != shown:
                shown = block
                yield {"event": "pending", "data": block}
            await anyio.sleep(POLL_SECONDS)

    return EventSourceResponse(events(), ping=PING_SECONDS)
