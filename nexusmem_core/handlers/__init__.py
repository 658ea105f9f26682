"""The use cases, by area. Both adapters (``cli.py`` and the MCP tools) call these and nothing
else; each is thin: it opens nothing itself and hands the work to the module that does it.

    projects.py   init, sync, precheck, the registry of projects
    search.py     search one project or all (and why each result ranked), recent nodes, one node
    status.py     what a memory holds, as a ``Status`` (its text: ``render.py``)
    feed.py       the timeline: what happened, newest first, by keyset pages, and what no
                  sync has read yet
    node.py       one node with everything linked to it (the viewer's node page)
    overview.py   counts by month, and which capture hooks are installed and last recorded
    agents.py     the notes and digests the agents were told, and the next digest
    hygiene.py    review, staleness, forget and the deny list, prune, scrub
    scan.py       dry runs of one source

``handlers.sync`` loads only ``projects.py`` and what it imports: each name is looked up in its
area's module on first use (PEP 562), so a sync with nothing new does not pay for the search
and rendering modules, nor a query for the writers. Heavier modules still (the collectors, the
shell parsers and the redaction table) are imported by the use cases that need them.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agents import next_digest, told
    from .feed import pending, timeline
    from .hygiene import (
        check_contradictions,
        deny_list,
        dismiss_suggestion,
        export_deny_list,
        forget,
        import_deny_list,
        mark_stale,
        open_suggestions,
        prune_source,
        prune_unreachable,
        review,
        scrub_secrets,
        stale,
    )
    from .node import node_detail
    from .overview import capture, history, storage
    from .projects import ProjectsReport, init_project, list_projects, precheck, sync
    from .scan import scan, scan_conversation, scan_github, scan_session, scan_structure
    from .search import explain, get_node, list_recent, search, search_all
    from .status import status

_AREAS = {
    "agents": ("next_digest", "told"),
    "hygiene": (
        "check_contradictions",
        "deny_list",
        "dismiss_suggestion",
        "export_deny_list",
        "forget",
        "import_deny_list",
        "mark_stale",
        "open_suggestions",
        "prune_source",
        "prune_unreachable",
        "review",
        "scrub_secrets",
        "stale",
    ),
    "node": ("node_detail",),
    "overview": ("capture", "history", "storage"),
    "projects": ("ProjectsReport", "init_project", "list_projects", "precheck", "sync"),
    "scan": ("scan", "scan_conversation", "scan_github", "scan_session", "scan_structure"),
    "search": ("explain", "get_node", "list_recent", "search", "search_all"),
    "status": ("status",),
    "feed": ("pending", "timeline"),
}
_AREA_OF = {name: area for area, names in _AREAS.items() for name in names}

__all__ = [
    "ProjectsReport",
    "capture",
    "check_contradictions",
    "deny_list",
    "dismiss_suggestion",
    "explain",
    "export_deny_list",
    "forget",
    "get_node",
    "history",
    "import_deny_list",
    "init_project",
    "list_projects",
    "list_recent",
    "mark_stale",
    "next_digest",
    "node_detail",
    "open_suggestions",
    "pending",
    "precheck",
    "prune_source",
    "prune_unreachable",
    "review",
    "scan",
    "scan_conversation",
    "scan_github",
    "scan_session",
    "scan_structure",
    "scrub_secrets",
    "search",
    "search_all",
    "stale",
    "status",
    "storage",
    "sync",
    "timeline",
    "told",
]


def __getattr__(name: str) -> Any:
    area = _AREA_OF.get(name)
    if area is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(f".{area}", __name__)
    # Every name of the area at once, so the next lookups are ordinary ones. All of them: an
    # import of ``.search`` binds the package's ``search`` to that module, and it would stand
    # in for the function ``search`` once ``get_node`` (from the same module) came first.
    for each in _AREAS[area]:
        globals()[each] = getattr(module, each)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_AREA_OF))


class _Package(ModuleType):
    """This package, whose use cases keep their names: importing a submodule binds it on its
    package (``import nexusmem_core.handlers.search`` sets ``handlers.search``), and a module
    named as one of its functions (``search``, ``status``) would then stand in for the function
    in every later ``handlers.search(...)``. The module stays in ``sys.modules``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and name in _AREA_OF:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
