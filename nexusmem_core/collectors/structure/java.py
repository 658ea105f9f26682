"""Java: ``import a.b.C;`` to ``a/b/C.java`` under a source root of the repository.

Source roots are read off the files themselves: a file declaring ``package a.b;`` in
``src/main/java/a/b/`` makes ``src/main/java`` a root (Maven, Gradle, multi-module builds and
plain layouts alike). A nested class (``import a.b.C.Inner``) and a static import
(``import static a.b.C.member``) point at ``C.java``. A class found under several roots points
at the one beside the importer, or nowhere if that does not decide. Wildcard imports
(``import a.b.*``) are left out: they name a package, not the classes the file uses.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from .lexer import mask
from .sources import Tree

__all__ = ["extract", "resolve"]

_NAME = r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*"
# The package statement comes first (comments are masked, annotations may precede it), so it
# is matched at the start only; an import at the start of its own line. Led by `^\s*` in
# MULTILINE mode, each was tried from every line start across every blank line after it:
# 20,000 empty lines took 38 s.
_PACKAGE = re.compile(rf"\s*(?:@[\w.]+(?:\([^)]*\))?\s*)*package\s+({_NAME})\s*;")
_IMPORT = re.compile(rf"^[ \t]*import\s+(static\s+)?({_NAME})(\s*\.\s*\*)?\s*;", re.MULTILINE)


def extract(text: str) -> tuple[list[Any], int]:
    """``[package, [class name parts, ...]]``: the file's package and the classes its
    single-type and static imports name (nothing here fails to parse)."""
    code = mask(text, "java").code
    package = _PACKAGE.match(code)
    found = []
    for m in _IMPORT.finditer(code):
        static, wildcard = bool(m.group(1)), bool(m.group(3))
        parts = re.sub(r"\s+", "", m.group(2)).split(".")
        if wildcard and not static:
            continue
        if static and not wildcard:
            parts = parts[:-1]  # the member
        found.append(parts)
    return [re.sub(r"\s+", "", package.group(1)) if package else None, found], 0


def _root(path: str, package: str | None) -> str | None:
    """The source root ``path`` sits in, if its directory spells its package."""
    directory = posixpath.dirname(path)
    if not package:
        return None
    tail = package.replace(".", "/")
    if directory == tail:
        return ""
    return directory[: -len(tail) - 1] if directory.endswith("/" + tail) else None


def _find(tree: Tree, roots: set[str], parts: list[str], own: str | None) -> str | None:
    # Longest first: a.b.C.Inner may be a/b/C/Inner.java, else the outer class a/b/C.java.
    for size in range(len(parts), 1, -1):
        rel = "/".join(parts[:size]) + ".java"
        hits = [posixpath.join(r, rel) for r in roots if posixpath.join(r, rel) in tree.paths]
        if len(hits) == 1:
            return hits[0]
        if hits:
            mine = [h for h in hits if own is not None and h == posixpath.join(own, rel)]
            return mine[0] if mine else None
        if not parts[size - 1][:1].isupper():
            return None  # a package segment: no outer class to fall back to
    return None


def resolve(tree: Tree, files: dict[str, list[Any]]) -> list[tuple[str, str]]:
    """(src, dst) pairs for the Java files' imports."""
    own = {path: _root(path, package) for path, (package, _) in files.items()}
    roots = {root for root in own.values() if root is not None}
    out = []
    for path, (_, imports) in files.items():
        for parts in imports:
            dst = _find(tree, roots, parts, own[path])
            if dst is not None and dst != path:
                out.append((path, dst))
    return out
