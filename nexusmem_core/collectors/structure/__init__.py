"""The import graph: file-to-file import edges for Python, JavaScript/TypeScript, Go, Rust and
Java (``graph.build_graph``), rebuilt on sync by ``step.sync_structure``."""

from .graph import Edge, Graph, build_graph
from .sources import Listing, list_tree

__all__ = ["Edge", "Graph", "Listing", "build_graph", "list_tree"]
