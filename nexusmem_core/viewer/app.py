"""The viewer's routes. Each page reads its arguments from the URL (so every page can be
bookmarked), calls core handlers, and renders one template; the only writes are the review
actions, each the core operation the CLI runs. No SQL here.

    /                              the launch project's timeline
    /p/<project>/timeline          commits, commands, agents' runs, docs, sessions; filters
    /p/<project>/live              server-sent events: the timeline's new rows (live.py)
    /p/<project>/search            search_memory, with why each result ranked where it did
    /p/<project>/node/<id>         one node in full, with its links and the review actions
    /p/<project>/review            stale candidates and "likely superseded" suggestions
    /p/<project>/forget            what forgetting a value deletes, then deleting it
    /p/<project>/agents            what the agents were told, and the next session's digest
    /p/<project>/status            counts over time, capture hooks, vectors, the database
    /projects                      the registry, and search across every project

``<project>`` is twelve hex digits of the hash of the project's id (an id may be a path): it
survives a rename of the folder and a change of the origin (the id is carried over).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import NexusMemError
from ..logging import get_logger
from ..pool import EnginePool
from . import live, pages
from .guard import RULES, Guard, Secret
from .state import Viewer

__all__ = ["opened"]

STATIC = Path(__file__).parent / "static"
log = get_logger("viewer")


@contextlib.asynccontextmanager
async def opened(
    settings: Any, root: Path, secret: Secret, rules: frozenset[str] = RULES
) -> AsyncIterator[tuple[Guard, Viewer]]:
    """The viewer's ASGI app behind its guard, with the launch project's memory open (a
    repository with no memory is refused here, before anything is served); every engine it
    opens is closed on leaving."""
    async with contextlib.AsyncExitStack() as stack:
        viewer = Viewer(settings, root, secret, EnginePool(settings, stack))
        await viewer.start()
        yield Guard(Starlette(routes=_routes(viewer)), secret, rules), viewer


def _routes(viewer: Viewer) -> list[Route | Mount]:
    def bind(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            response = await answer(request)
            # The page's time in the server (handlers and template), for the browser's
            # developer tools and bench/bench_viewer.py; a stream's is its set-up.
            took = (time.perf_counter() - started) * 1000
            response.headers["server-timing"] = f"app;dur={took:.1f}"
            return response

        async def answer(request: Request) -> Response:
            try:
                response: Response = await handler(viewer, request)
                return response
            except NexusMemError as err:
                return _error(request, 400, str(err))
            except HTTPException as err:
                return _error(request, err.status_code, err.detail)
            except Exception as err:  # a bug: logged (stderr), and one line on the page
                import traceback

                log.error("viewer_page_failed", path=request.url.path, trace=traceback.format_exc())
                return _error(
                    request, 500, f"the viewer failed ({type(err).__name__}): see its log"
                )

        def _error(request: Request, code: int, message: str) -> Response:
            return viewer.page(request, "error.html", code=code, message=message, project=None)

        return endpoint

    return [
        Route("/", bind(pages.home)),
        Route("/projects", bind(pages.projects)),
        Route("/p/{slug}/timeline", bind(pages.timeline)),
        Route("/p/{slug}/live", bind(live.stream)),
        Route("/p/{slug}/search", bind(pages.search)),
        Route("/p/{slug}/node/{node}", bind(pages.node)),
        Route("/p/{slug}/node/{node}/review", bind(pages.review_node), methods=["POST"]),
        Route("/p/{slug}/node/{node}/stale", bind(pages.mark_stale), methods=["POST"]),
        Route("/p/{slug}/node/{node}/dismiss", bind(pages.dismiss), methods=["POST"]),
        Route("/p/{slug}/review", bind(pages.review)),
        Route("/p/{slug}/forget", bind(pages.forget), methods=["GET", "POST"]),
        Route("/p/{slug}/agents", bind(pages.agents)),
        Route("/p/{slug}/status", bind(pages.status)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
