"""The file-to-file import graph: every language's extractor over the repository's sources.

Each language module reads its own files and resolves what they import to files of the
repository; an edge is only ever drawn to a file that exists (see ``sources.Tree``), so a name
that cannot be resolved with confidence is dropped rather than guessed.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import golang, java, javascript, python, rust
from .sources import Listing, Source, Tree, read_sources

__all__ = ["Edge", "Graph", "build_graph"]

Extractor = Callable[[Tree, list[Source]], tuple[list[tuple[str, str]], int]]
_EXTRACTORS: dict[str, Extractor] = {
    "python": python.edges,
    "javascript": javascript.edges,
    "typescript": javascript.edges,
    "go": golang.edges,
    "rust": rust.edges,
    "java": java.edges,
}


@dataclass(frozen=True, order=True)
class Edge:
    src: str
    dst: str
    lang: str  # the importing file's language


@dataclass
class Graph:
    edges: list[Edge]
    files: int  # source files read
    too_large: int  # source files over the size cap, not read
    unparsed: int  # source files that did not parse (Python only: the others are regex)
    by_lang: dict[str, int] = field(default_factory=dict)

    def to_dict(self, limit: int | None = None) -> dict[str, Any]:
        """The edges (the first ``limit`` of them) and the counts, for ``--json``."""
        shown = self.edges[:limit] if limit else self.edges
        return {
            "edges": [{"src": e.src, "dst": e.dst, "lang": e.lang} for e in shown],
            "edge_count": len(self.edges),
            "by_lang": self.by_lang,
            "files": self.files,
            "too_large": self.too_large,
            "unparsed": self.unparsed,
        }


def build_graph(listing: Listing) -> Graph:
    """Read the listed sources and resolve their imports. CPU-bound: callers off the event loop
    run it in a worker thread."""
    sources = read_sources(listing)
    by_lang: dict[str, list[Source]] = {}
    for source in sources:
        by_lang.setdefault(source.lang, []).append(source)
    edges: set[Edge] = set()
    unparsed = 0
    with warnings.catch_warnings():
        # ast.parse warns about invalid escapes in the code it reads: not ours to report.
        warnings.simplefilter("ignore")
        for lang, group in sorted(by_lang.items()):
            pairs, failed = _EXTRACTORS[lang](listing.tree, group)
            unparsed += failed
            edges |= {Edge(src, dst, lang) for src, dst in pairs}
    ordered = sorted(edges)
    counts = Counter(edge.lang for edge in ordered)
    return Graph(ordered, len(sources), listing.too_large, unparsed, dict(sorted(counts.items())))
