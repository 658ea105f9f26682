"""The file-to-file import graph: each language's extractor over the repository's sources.

Building is two passes. Extraction reads one file and says what it imports, in terms of that
language (module names, specifiers, import paths): the costly part, and a pure function of the
file's text, so its result is kept per file (``cache``) and a file whose size and mtime have not
changed is not read again. Resolution then maps those names to files of the repository, which
depends on every file (a new module can change where ``from a import b`` points), so it always
runs over all of them; it is cheap. An edge is only ever drawn to a file that exists (see
``sources.Tree``): a name that cannot be resolved with confidence is dropped, not guessed.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .sources import Listing, language_of

__all__ = ["Cache", "Edge", "Graph", "build_graph"]

# Language -> the module of its extractor: ``extract(text) -> (data, failed)`` and
# ``resolve(tree, {path: data})``. Each is imported when a file of its language is first met:
# their patterns are compiled at import, and a repository is mostly written in one or two of
# them (the Rust and Java ones alone cost 10 ms, a small first sync's start-up).
_EXTRACTORS = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "javascript",
    "go": "golang",
    "rust": "rust",
    "java": "java",
}
_loaded: dict[str, ModuleType] = {}  # language -> its extractor's module, once imported
SETTLE_NS = 2_000_000_000  # a file changed this close to the listing is not cached
Cache = dict[str, list[Any]]  # path -> [size, mtime_ns, data, failed]


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    lang: str  # the importing file's language


@dataclass
class Graph:
    edges: list[Edge]
    files: int  # source files extracted
    too_large: int  # source files over the size cap, not read
    unparsed: int  # source files holding an import statement that does not parse (Python)
    read: int = 0  # source files actually read (the others came from the cache)
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


def build_graph(listing: Listing, cache: Cache | None = None) -> tuple[Graph, Cache]:
    """The graph of the listed sources, and the extraction cache to keep for the next build.
    CPU-bound: callers on an event loop run it in a worker thread."""
    cache = cache or {}
    kept: Cache = {}
    extracted: dict[ModuleType, dict[str, Any]] = {}
    unparsed = read = 0
    with warnings.catch_warnings():
        # ast.parse warns about invalid escapes in the code it reads: not ours to report.
        warnings.simplefilter("ignore")
        for path, (size, mtime) in listing.candidates.items():
            module = extractor(language_of(path) or "")
            entry = cache.get(path)
            if entry is None or entry[:2] != [size, mtime]:
                text = _read(listing, path)
                if text is None:
                    continue
                data, failed = module.extract(text)
                entry, read = [size, mtime, data, failed], read + 1
            if mtime < listing.started_ns - SETTLE_NS:
                kept[path] = entry
            extracted.setdefault(module, {})[path] = entry[2]
            unparsed += bool(entry[3])
    pairs = {
        pair for module, files in extracted.items() for pair in module.resolve(listing.tree, files)
    }
    langs = {path: language_of(path) or "" for path in listing.candidates}
    edges = [Edge(src, dst, langs[src]) for src, dst in sorted(pairs)]  # tuples sort in C
    counts = Counter(edge.lang for edge in edges)
    graph = Graph(
        edges,
        files=sum(len(files) for files in extracted.values()),
        too_large=listing.too_large,
        unparsed=unparsed,
        read=read,
        by_lang=dict(sorted(counts.items())),
    )
    return graph, kept


def extractor(language: str) -> ModuleType:
    """The extractor module of ``language`` (a key of :data:`_EXTRACTORS`), imported now if
    it was not yet."""
    module = _loaded.get(language)
    if module is None:  # once per language: an import call is ~1 us, and this is per file
        # The import statement's own machinery (importlib.import_module bypasses it, and with
        # it what `python -X importtime` reports: tests/test_startup.py reads that).
        name = f"{__package__}.{_EXTRACTORS[language]}"
        module = _loaded[language] = __import__(name, fromlist=["extract"])
    return module


def _read(listing: Listing, path: str) -> str | None:
    return listing.tree.read(path)  # None: gone since it was listed
