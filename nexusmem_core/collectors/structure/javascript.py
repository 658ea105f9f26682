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
from .sources import Tree

__all__ = ["extract", "resolve"]

# import/export ... from "x"; import "x"; import("x"); require("x"). The keyword leads, so the
# scan jumps between candidate words; that it is not a member (``obj.require``) is checked after.
_SPECIFIER = re.compile(rf"(from|import|require)\s*(\(\s*)?{STRING}(\s*[,)])?")
EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_COMPILED_FROM = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}


def extract(text: str) -> tuple[list[str], int]:
    """The constant module specifiers the file imports, in order of appearance (nothing here
    fails to parse)."""
    if not any(word in text for word in ("import", "require", "from")):
        return [], 0
    masked = mask(text, "js")
    code = masked.code
    found: list[str] = []
    for m in _SPECIFIER.finditer(code):
        before = code[m.start() - 1] if m.start() else " "
        if before.isalnum() or before in "_$.":
            continue
        if not _is_import(m.group(1), m.group(2) is not None, m.group(4)):
            continue
        if (value := masked.string(m.group(3))) and value.startswith("."):
            found.append(value)  # only relative ones can name a repository file
    return found, 0


def _is_import(keyword: str, call: bool, closer: str | None) -> bool:
    """``from "x"``, ``import "x"``, ``import("x")`` and ``require("x")``; not ``from("x")``
    or ``require("x" + y)``."""
    if keyword == "from":
        return not call
    if keyword == "import":
        return not call or closer is not None
    return call and closer is not None and closer.strip() == ")"


def _target(tree: Tree, src: str, spec: str) -> str | None:
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


def resolve(tree: Tree, files: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(src, dst) pairs for the JavaScript and TypeScript files' specifiers."""
    out = []
    for path, specs in files.items():
        for spec in specs:
            dst = _target(tree, path, spec)
            if dst is not None and dst != path:
                out.append((path, dst))
    return out
