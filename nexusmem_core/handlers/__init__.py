"""The use cases, by area. Both adapters (``cli.py`` and the MCP tools) call these and nothing
else; each is thin: it opens nothing itself and hands the work to the module that does it.

    projects.py   init, sync, precheck, the registry of projects
    search.py     search one project or all, recent nodes, one node
    status.py     what a memory holds, as a ``Status`` (its text: ``render.py``)
    hygiene.py    review, staleness, forget and the deny list, prune, scrub
    scan.py       dry runs of one source

Heavier modules (the collectors, the shell parsers and the redaction table) are imported by
the use cases that need them, so a query or a status does not pay for them at start-up.
"""

from __future__ import annotations

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
from .projects import ProjectsReport, init_project, list_projects, precheck, sync
from .scan import scan, scan_conversation, scan_github, scan_session, scan_structure
from .search import get_node, list_recent, search, search_all
from .status import status

__all__ = [
    "ProjectsReport",
    "check_contradictions",
    "deny_list",
    "dismiss_suggestion",
    "export_deny_list",
    "forget",
    "get_node",
    "import_deny_list",
    "init_project",
    "list_projects",
    "list_recent",
    "mark_stale",
    "open_suggestions",
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
    "sync",
]
