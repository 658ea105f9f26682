"""The import graph: file-to-file import edges for Python, JavaScript/TypeScript, Go, Rust and
Java (``graph.build_graph``), rebuilt on sync by ``step.sync_structure``.

The extractors are imported when a graph is built, not with the package: a sync whose listing
has not changed since the last one builds nothing, and should not pay for five lexers. A build
imports the extractors of the languages it meets, no others (``graph.extractor``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .sources import Listing, list_tree

if TYPE_CHECKING:
    from .graph import Edge, Graph, build_graph

__all__ = ["Edge", "Graph", "Listing", "build_graph", "list_tree"]


def __getattr__(name: str) -> Any:
    if name in {"Edge", "Graph", "build_graph"}:
        from . import graph

        return getattr(graph, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
