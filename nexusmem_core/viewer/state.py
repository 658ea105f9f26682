"""What every route of the viewer shares: the launch's state (settings, open engines,
templates, secret), the projects it serves, and reading a bounded form."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..engine import Engine
from ..errors import UsageError
from ..pool import EnginePool
from ..registry import load_registry
from .guard import Secret
from .templating import environment

__all__ = ["PAGE", "Project", "Viewer", "form", "local_path", "redirect", "slug_of"]

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

    @contextlib.asynccontextmanager
    async def lend(self, root: Path) -> AsyncIterator[Engine]:
        """An engine the viewer holds open, lent for a search across projects (opening each
        project's memory anew cost ~13 ms a project, two git processes of it)."""
        yield await self.pool.get(root)

    def page(self, request: Request, template: str, code: int = 200, **context: Any) -> Response:
        body = self.env.get_template(template).render(
            request=request,
            csrf=self.secret.csrf,
            projects=self.projects(),
            **context,
        )
        return HTMLResponse(body, status_code=code)


def slug_of(project_id: str) -> str:
    return hashlib.sha256(project_id.encode("utf-8", "surrogatepass")).hexdigest()[:SLUG]


def _project(engine: Engine) -> Project:
    return Project(slug_of(engine.project_id), engine.repo.name, str(engine.repo.root))


async def form(request: Request) -> dict[str, str]:
    """A POST's fields, bounded: a form larger than ``FORM_BYTES`` is refused, not read."""
    length = request.headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > FORM_BYTES:
        raise HTTPException(413, f"a form is at most {FORM_BYTES} bytes, with its length given")
    data = await request.form(max_files=0, max_fields=20)
    return {k: v for k, v in data.items() if isinstance(v, str)}


def redirect(url: str) -> Response:
    """A 303 to ``url``, a path of this viewer (``local_path``)."""
    return RedirectResponse(local_path(url), status_code=303)


def local_path(url: str) -> str:
    """``url`` when it is a path of this viewer, else a UsageError: a browser reads ``//host``
    and ``/\\host`` as another site, and a control character may end the header early.
    Checked before a review action acts, so a refused one changes nothing."""
    if (
        not url.startswith("/")
        or url[1:2] in ("/", "\\")
        or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url)
    ):
        raise UsageError("must be a path of this viewer", argument="next")
    return url
