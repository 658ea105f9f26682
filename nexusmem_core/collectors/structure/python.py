"""Python: imports read with the standard ``ast`` module, resolved against the repository's roots.

An absolute import is looked up under each root in turn: the importing file's own directory when
it is not a package (a script, a test directory without ``__init__.py``: Python and pytest put
that directory on the path), the root of the project that holds the file, the repository's top,
``src/``, and every directory with a ``pyproject.toml``, ``setup.py`` or ``setup.cfg`` (and its
``src/``). The first root under which the module exists wins. A module named like the standard
library's is never looked up: ``import json`` is the standard library's even when a ``json.py``
sits at the top. ``from a import b`` points at ``a/b.py`` when ``b`` is a submodule, else at
``a``'s own file. Relative imports are resolved from the file's directory. A file that does not
parse (Python 2, a template) is passed over and counted.
"""

from __future__ import annotations

import ast
import posixpath
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from .sources import Source, Tree

__all__ = ["edges", "imports"]

_STDLIB = frozenset(sys.stdlib_module_names)
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


@dataclass(frozen=True)
class Import:
    level: int  # 0 absolute, 1 for ``from .``, 2 for ``from ..``
    module: str | None
    names: tuple[str, ...]  # empty for ``import a.b``


def imports(text: str) -> list[Import] | None:
    """Every import statement in the module, nested ones included; None if it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            found += [Import(0, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            found.append(Import(node.level, node.module, names))
    return found


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement, at any depth of blocks; expressions are never entered (walking them
    was two thirds of the cost of ``ast.walk``)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if isinstance(block, list):
                stack.extend(block)


class _Modules:
    """Which dotted names exist under a base directory."""

    def __init__(self, tree: Tree) -> None:
        self.files = {p for p in tree.paths if p.endswith(".py")}
        self.dirs = {posixpath.dirname(p) for p in self.files}
        self.dirs |= {d.rsplit("/", i)[0] for d in list(self.dirs) for i in range(d.count("/") + 1)}

    def module_file(self, base: str) -> str | None:
        """``base.py`` or ``base/__init__.py``: the file that runs on import."""
        for candidate in (f"{base}.py", posixpath.join(base, "__init__.py")):
            if candidate in self.files:
                return candidate
        return None

    def exists(self, base: str) -> bool:
        """A module file or a directory of Python files (a namespace package)."""
        return self.module_file(base) is not None or base in self.dirs


def _join(*parts: str) -> str:
    return posixpath.join(*[p for p in parts if p]) if any(parts) else ""


def _resolve_from(mods: _Modules, base: str, names: tuple[str, ...]) -> Iterator[str]:
    """``from <base> import names``: a submodule where one exists, else ``base``'s own file."""
    own = mods.module_file(base)
    for name in names or ("*",):
        sub = mods.module_file(_join(base, name)) if name != "*" else None
        if sub is not None:
            yield sub
        elif own is not None:
            yield own


def _roots(tree: Tree, mods: _Modules) -> list[str]:
    found = ["", "src"]
    for path in sorted(tree.paths):
        if posixpath.basename(path) in _PROJECT_FILES:
            project = posixpath.dirname(path)
            found += [project, _join(project, "src")]
    return list(dict.fromkeys(r for r in found if r == "" or r in mods.dirs))


def _roots_for(path: str, roots: list[str], mods: _Modules) -> list[str]:
    """The roots to try for ``path``: its own directory if a script's, then its projects'
    (deepest first), then the rest."""
    here = posixpath.dirname(path)
    script = [here] if posixpath.join(here, "__init__.py") not in mods.files else []
    mine = sorted((r for r in roots if r and path.startswith(r + "/")), key=len, reverse=True)
    return list(dict.fromkeys([*script, *mine, *roots]))


def _absolute(mods: _Modules, roots: list[str], imp: Import) -> list[str]:
    assert imp.module is not None
    if imp.module.split(".", 1)[0] in _STDLIB:
        return []
    parts = imp.module.split(".")
    for root in roots:
        base = _join(root, *parts)
        if imp.names:
            if mods.exists(base):
                return list(_resolve_from(mods, base, imp.names))
        elif (found := mods.module_file(base)) is not None:
            return [found]
    return []


def _relative(mods: _Modules, path: str, imp: Import) -> list[str]:
    package = posixpath.dirname(path)
    for _ in range(imp.level - 1):
        if not package:
            return []  # above the repository's top
        package = posixpath.dirname(package)
    base = _join(package, *(imp.module.split(".") if imp.module else []))
    return list(_resolve_from(mods, base, imp.names))


def edges(tree: Tree, sources: list[Source]) -> tuple[list[tuple[str, str]], int]:
    """(src, dst) pairs for the Python sources, and how many files did not parse."""
    mods = _Modules(tree)
    roots = _roots(tree, mods)
    out: list[tuple[str, str]] = []
    unparsed = 0
    for source in sources:
        if "import" not in source.text:
            continue
        found = imports(source.text)
        if found is None:
            unparsed += 1
            continue
        order = _roots_for(source.path, roots, mods)
        for imp in found:
            if imp.level:
                targets = _relative(mods, source.path, imp)
            elif imp.module:
                targets = _absolute(mods, order, imp)
            else:
                continue
            out += [(source.path, dst) for dst in targets if dst != source.path]
    return out, unparsed
