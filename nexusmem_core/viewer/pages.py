"""The pages: each reads its arguments from the URL, calls core handlers, renders one template.
A POST is a review action; it answers with a redirect to the page that shows its effect.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .. import handlers
from ..collectors.agent import AGENTS
from ..errors import UsageError
from ..handlers.feed import TIMELINE_KINDS
from ..retrieval.authored import AUTHORS
from .state import PAGE, Viewer, form, local_path, redirect

__all__ = [
    "agents",
    "dismiss",
    "forget",
    "home",
    "mark_stale",
    "node",
    "projects",
    "review",
    "review_node",
    "search",
    "status",
    "timeline",
]

TRUST_ACTIONS = {"verify": "verified", "reject": "rejected", "clear": "candidate"}
MAX_QUESTION = 2_000  # characters of a question typed in the search box


def plain(value: Any) -> Any:
    """A handler's result as dicts and lists, for a template."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return value


def _arg(request: Request, name: str, bound: int = 500) -> str | None:
    value = request.query_params.get(name, "").strip()
    if len(value) > bound:
        raise UsageError(f"at most {bound} characters", argument=name)
    return value or None


async def home(viewer: Viewer, request: Request) -> Response:
    assert viewer.first is not None
    return redirect(f"/p/{viewer.first.slug}/timeline")


async def timeline(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    kinds = [k for k in request.query_params.getlist("kind") if k][: len(TIMELINE_KINDS)]
    filters: dict[str, Any] = {
        "kind": kinds,
        "author": _arg(request, "author"),
        "outcome": _arg(request, "outcome"),
        "path": _arg(request, "path"),
        "since": _arg(request, "since"),
        "until": _arg(request, "until"),
    }
    page = await handlers.timeline(
        engine,
        kinds=kinds or None,
        author=filters["author"],
        outcome=filters["outcome"],
        path=filters["path"],
        since=filters["since"],
        until=filters["until"],
        before=_arg(request, "before"),
        limit=PAGE,
    )
    shown = plain(page)
    first = _arg(request, "before") is None
    return viewer.page(
        request,
        "timeline.html",
        project=project,
        page=shown,
        pending=[i for i in shown["items"] if i.get("pending")] if first else [],
        synced=[i for i in shown["items"] if not i.get("pending")],
        filters=filters,
        kinds=TIMELINE_KINDS,
        authors=AUTHORS,
        first_page=first,
    )


async def search(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    question = _arg(request, "q", MAX_QUESTION)
    budget = _arg(request, "budget")
    author = _arg(request, "author")
    vector = request.query_params.get("vector", "on") != "off"
    explained = None
    if question:
        if budget is not None and not budget.isdigit():
            raise UsageError("a number of tokens", argument="budget")
        explained = plain(
            await handlers.explain(
                engine,
                question,
                budget=int(budget) if budget else None,
                vector=vector,
                author=author,
            )
        )
    return viewer.page(
        request,
        "search.html",
        project=project,
        question=question or "",
        budget=budget or "",
        author=author or "",
        vector=vector,
        authors=AUTHORS,
        explained=explained,
    )


async def node(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    detail = await handlers.node_detail(engine, request.path_params["node"])
    if detail is None:
        raise HTTPException(404, f"no node {request.path_params['node']!r} in {project.name}")
    newer_q = _arg(request, "newer", MAX_QUESTION)
    newer = None
    if newer_q:
        found = await handlers.search(engine, newer_q, budget=2000, vector=False)
        newer = [r for r in plain(found)["results"] if r["id"] != detail["id"]]
    return viewer.page(
        request, "node.html", project=project, node=plain(detail), newer_q=newer_q, newer=newer
    )


async def review_node(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    fields = await form(request)
    trust = TRUST_ACTIONS.get(fields.get("action", ""))
    if trust is None:
        raise UsageError(f"one of {', '.join(TRUST_ACTIONS)}", argument="action")
    target = local_path(fields["next"]) if fields.get("next") else None
    note = (fields.get("note") or "").strip()[:500] or None
    result = await handlers.review(engine, request.path_params["node"], trust, note)
    return redirect(target or f"/p/{project.slug}/node/{result.id}")


async def mark_stale(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    fields = await form(request)
    newer = fields.get("newer", "").strip()
    if not newer:
        raise UsageError("pick the node that replaces this one", argument="newer")
    target = local_path(fields["next"]) if fields.get("next") else None
    result = await handlers.mark_stale(engine, request.path_params["node"], newer)
    return redirect(target or f"/p/{project.slug}/node/{result.old_id}")


async def dismiss(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    fields = await form(request)
    target = local_path(fields.get("next") or f"/p/{project.slug}/review")
    await handlers.dismiss_suggestion(engine, request.path_params["node"])
    return redirect(target)


async def review(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    days = _arg(request, "days") or "45"
    if not days.isdigit() or not 0 <= int(days) <= 36_500:
        raise UsageError("a number of days, 0 to 36500", argument="days")
    report = await handlers.stale(engine, min_age_days=int(days), limit=100)
    open_ = await handlers.open_suggestions(engine, limit=100)
    return viewer.page(
        request,
        "review.html",
        project=project,
        days=int(days),
        report=plain(report),
        suggestions=plain(open_)["suggestions"],
    )


async def forget(viewer: Viewer, request: Request) -> Response:
    """A value to forget is posted, never put in an address (it may be the secret that got
    in): posted alone, the page shows what would be deleted; with ``confirm``, it is."""
    engine, project = await viewer.engine(request.path_params["slug"])
    value, regex, report = "", False, None
    if request.method == "POST":
        fields = await form(request)
        value, regex = fields.get("value", ""), fields.get("regex") == "on"
        if not value.strip():
            raise UsageError("give the value to forget", argument="value")
        if len(value) > 1_000:
            raise UsageError("at most 1000 characters", argument="value")
        apply = fields.get("confirm") == "yes"
        reason = "forgotten in the viewer" if apply else None
        report = plain(
            await handlers.forget(engine, value, regex=regex, reason=reason, apply=apply)
        )
    return viewer.page(
        request, "forget.html", project=project, value=value, regex=regex, report=report
    )


async def agents(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    agent = _arg(request, "agent")
    before = _arg(request, "before")
    try:
        moment = float(before) if before else None
    except ValueError:
        raise UsageError("a time from the page's own link", argument="before") from None
    told = await handlers.told(engine, limit=PAGE, before=moment, agent=agent)
    digest = await handlers.next_digest(engine)
    return viewer.page(
        request,
        "agents.html",
        project=project,
        told=[plain(t) for t in told],
        digest=digest,
        agent=agent or "",
        agents=AGENTS,
        page=PAGE,
    )


async def status(viewer: Viewer, request: Request) -> Response:
    engine, project = await viewer.engine(request.path_params["slug"])
    state = await handlers.status(engine)
    history = await handlers.history(engine)
    capture = await handlers.capture(engine.settings, engine.repo.root)
    from .chart import bars

    return viewer.page(
        request,
        "status.html",
        project=project,
        status=plain(state),
        storage=handlers.storage(engine),
        chart=bars(plain(history)),
        capture=plain(capture),
    )


async def projects(viewer: Viewer, request: Request) -> Response:
    report = await handlers.list_projects(viewer.settings)
    question = _arg(request, "q", MAX_QUESTION)
    found = None
    if question:
        found = plain(
            await handlers.search_all(viewer.settings, question, budget=4000, opener=viewer.lend)
        )
    return viewer.page(
        request,
        "projects.html",
        project=None,
        registry=plain(report),
        question=question or "",
        found=found,
    )
