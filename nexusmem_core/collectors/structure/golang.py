"""Go: import paths matched to the module paths of the repository's ``go.mod`` files.

Go imports a package, which is a directory, not a file. The edge goes to each non-test ``.go``
file of that directory: those are what the import compiles in, and a change to any of them can
break the importer. ``_test.go`` files are left out (an importer never sees them), and so are
directories under ``testdata/``, which the go tool ignores. A path no module of the repository
claims (the standard library, a dependency) gives no edge; with several modules (a workspace),
the longest module path that prefixes the import wins.
"""

from __future__ import annotations

import posixpath
import re

from .lexer import STRING, mask
from .sources import Tree

__all__ = ["extract", "module_path", "resolve"]

_BLOCK = re.compile(r"\bimport\s*\(([^)]*)\)")
_SINGLE = re.compile(rf"\bimport\s+(?:[\w.]+\s+)?{STRING}")
_IN_BLOCK = re.compile(STRING)
_MODULE = re.compile(r'^\s*module\s+"?([^\s"]+)"?', re.MULTILINE)
# A file's imports come before its first declaration (the language requires it): the rest of
# the file (most of it, and most of its strings) is not masked.
_DECLARATION = re.compile(r"^(?:func|type|var|const)\b", re.MULTILINE)


def extract(text: str) -> tuple[list[str], int]:
    """The import paths of one Go file (nothing here fails to parse)."""
    if "import" not in text:
        return [], 0
    masked = mask(text, "go", stop=_DECLARATION)
    found: list[tuple[int, str | None]] = []
    for block in _BLOCK.finditer(masked.code):
        found += [
            (block.start() + m.start(), masked.string(m.group(1)))
            for m in _IN_BLOCK.finditer(block.group(1))
        ]
    found += [(m.start(), masked.string(m.group(1))) for m in _SINGLE.finditer(masked.code)]
    return [path for _, path in sorted(found) if path], 0


def module_path(go_mod: str) -> str | None:
    """The ``module`` directive of a go.mod file."""
    code = mask(go_mod, "go").code
    m = _MODULE.search(code)
    return m.group(1) if m else None


def _modules(tree: Tree) -> list[tuple[str, str]]:
    """(module path, its directory), longest module path first."""
    found = []
    for path in tree.paths:
        if posixpath.basename(path) != "go.mod" or (text := tree.read(path)) is None:
            continue
        if (module := module_path(text)) is not None:
            found.append((module, posixpath.dirname(path)))
    return sorted(found, key=lambda pair: len(pair[0]), reverse=True)


def _package_files(tree: Tree, directory: str) -> list[str]:
    if "testdata" in directory.split("/"):
        return []
    return [p for p in tree.files_in(directory) if p.endswith(".go") and not p.endswith("_test.go")]


def resolve(tree: Tree, files: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(src, dst) pairs for the Go files' import paths."""
    modules = _modules(tree)
    packages: dict[str, list[str]] = {}
    out = []
    for source, paths in files.items() if modules else ():
        for path in dict.fromkeys(paths):
            for module, directory in modules:
                if path == module or path.startswith(module + "/"):
                    package = posixpath.join(directory, path[len(module) + 1 :])
                    package = posixpath.normpath(package) if package else ""
                    package = "" if package == "." else package
                    if package not in packages:
                        packages[package] = _package_files(tree, package)
                    found = packages[package]
                    out += [(source, dst) for dst in found if dst != source]
                    break
    return out
