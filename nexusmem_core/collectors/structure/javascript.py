"""JavaScript and TypeScript: ``import``/``export ... from``, side-effect imports, ``require()``
and ``import()`` with a constant specifier, read from masked code (see ``lexer.py``).

Only relative specifiers (``./x``, ``../x``) are resolved, as Node and bundlers do: the file
itself, then with each source extension, then ``x/index.*``; a ``.js`` specifier also finds the
``.ts`` file TypeScript compiles to it. Bare specifiers (``react``, ``@scope/pkg``) name packages
and are left alone, as are aliases from a bundler or ``tsconfig.json`` ``paths``: a missed edge
is better than a guessed one.
"""

from __future__ import annotations

import posixpath
import re

from .lexer import STRING, mask
from .sources import Source, Tree

__all__ = ["edges", "specifiers"]

_NOT_MEMBER = r"(?<![.\w$])"
_PATTERNS = (
    re.compile(rf"{_NOT_MEMBER}from\s*{STRING}"),  # import/export ... from "x"
    re.compile(rf"{_NOT_MEMBER}import\s*{STRING}"),  # import "x"
    re.compile(rf"{_NOT_MEMBER}import\s*\(\s*{STRING}\s*[,)]"),  # import("x"), import("x", {...})
    re.compile(rf"{_NOT_MEMBER}require\s*\(\s*{STRING}\s*\)"),  # require("x")
)
EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_COMPILED_FROM = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}


def specifiers(text: str) -> list[str]:
    """The constant module specifiers the file imports, in order of appearance."""
    if not any(word in text for word in ("import", "require", "from")):
        return []
    masked = mask(text, "js")
    found: list[tuple[int, str]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(masked.code):
            value = masked.string(m.group(1))
            if value:
                found.append((m.start(), value))
    return [value for _, value in sorted(found)]


def resolve(tree: Tree, src: str, spec: str) -> str | None:
    """The repository file a relative specifier names, or None."""
    spec = spec.split("?", 1)[0].split("#", 1)[0]
    if not (spec in (".", "..") or spec.startswith(("./", "../"))):
        return None
    target = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
    if target == ".." or target.startswith("../"):
        return None  # outside the repository
    if target == ".":  # the top directory: only its index file
        return next((c for c in ("index" + e for e in EXTENSIONS) if c in tree.paths), None)
    stem, ext = posixpath.splitext(target)
    candidates = [target]
    candidates += [stem + compiled for compiled in _COMPILED_FROM.get(ext, ())]
    candidates += [target + e for e in EXTENSIONS]
    candidates += [f"{target}/index{e}" for e in EXTENSIONS]
    return next((c for c in candidates if c in tree.paths), None)


def edges(tree: Tree, sources: list[Source]) -> tuple[list[tuple[str, str]], int]:
    """(src, dst) pairs for the JavaScript and TypeScript sources; nothing fails to parse."""
    out = []
    for source in sources:
        for spec in specifiers(source.text):
            dst = resolve(tree, source.path, spec)
            if dst is not None and dst != source.path:
                out.append((source.path, dst))
    return out, 0
