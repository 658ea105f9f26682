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
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..engine import Engine
from ..errors import NexusMemError, UsageError
from ..pool import EnginePool
from ..registry import load_registry
from .guard import RULES, Guard, Secret
from .templating import environment

__all__ = ["Project", "Viewer", "form", "opened", "redirect"]

STATIC = Path(__file__).parent / "static"
SLUG = 12
FORM_BYTES = 64 * 1024  # a review form is a few fields: anything larger is refused
PAGE = 50


@dataclass(frozen=True)
class Project:
    slug: str
    name: str
    root: str


class Viewer:
    """What every route shares: the settings, the open engines, the templates, the secret."""

    def __init__(self, settings: Any, root: Path, secret: Secret, pool: EnginePool) -> None:
        self.settings = settings
        self.root = root
        self.secret = secret
        self.pool = pool
        self.env = environment()
        self.first: Project | None = None

    async def start(self) -> None:
        """Open the launch project's memory now: a viewer of a repository NexusMem has not
        synced says so before it serves anything."""
        engine = await self.pool.get(self.root)
        self.first = _project(engine)

    def projects(self) -> list[Project]:
        """The launch project first, then the registry's others."""
        assert self.first is not None
        seen = {self.first.slug}
        rows = [self.first]
        for entry in load_registry(self.settings.home):
            slug = slug_of(entry.project_id)
            if slug not in seen:
                seen.add(slug)
                rows.append(Project(slug, entry.name, entry.root))
        return rows

    async def engine(self, slug: str) -> tuple[Engine, Project]:
        for project in self.projects():
            if project.slug == slug:
                return await self.pool.get(Path(project.root)), project
        raise HTTPException(404, f"no registered project {slug!r}: see /projects")

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        body = self.env.get_template(template).render(
            request=request,
            csrf=self.secret.csrf,
            projects=self.projects(),
            **context,
        )
        return HTMLResponse(body, status_code=status)


def slug_of(project_id: str) -> str:
    return hashlib.sha256(project_id.encode("utf-8", "surrogatepass")).hexdigest()[:SLUG]


def _project(engine: Engine) -> Project:
    return Project(slug_of(engine.project_id), engine.repo.name, str(engine.repo.root))


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
    from . import live, pages

    def bind(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                response: Response = await handler(viewer, request)
                return response
            except NexusMemError as err:
                return viewer.page(request, "error.html", status=400, message=str(err))
            except HTTPException as err:
                return viewer.page(
                    request, "error.html", status=err.status_code, message=err.detail
                )

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


async def form(request: Request) -> dict[str, str]:
    """A POST's fields, bounded: a form larger than ``FORM_BYTES`` is refused, not read."""
    length = request.headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > FORM_BYTES:
        raise HTTPException(413, f"a form is at most {FORM_BYTES} bytes, with its length given")
    data = await request.form(max_files=0, max_fields=20)
    return {k: v for k, v in data.items() if isinstance(v, str)}


def redirect(url: str) -> Response:
    if not url.startswith("/") or url.startswith("//"):
        raise UsageError("next: must be a path of this viewer")
    return RedirectResponse(url, status_code=303)
