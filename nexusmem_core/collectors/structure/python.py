"""Python: import statements parsed with the standard ``ast`` module, resolved against the
repository's roots.

Each statement is parsed alone. ``import`` and ``from`` can only start a statement (at the
start of a line, after ``;``, or after the ``:`` of a one-line compound statement), so the
words are found first, the lexer then says which of them sit in a comment or a string (a
docstring that shows an import is not one), and ``ast`` parses the logical line of each of the
others. Parsing whole modules gave the same imports over the 2,467 files (34 MB) of this
project's site-packages but took 29.6 s against 2.6 s (bench/bench_structure.py), and a module
with a syntax error elsewhere still gives its imports. A statement that does not parse (Python 2,
a template) is passed over and counted.

An absolute import is looked up under each root in turn: the importing file's own directory
when it is not a package (a script, a test directory without ``__init__.py``: Python and pytest
put that directory on the path), the roots of the projects that hold the file, the repository's
top, ``src/``, and every directory with a ``pyproject.toml``, ``setup.py`` or ``setup.cfg``
(and its ``src/``). The first root under which the module exists wins. A module named like the
standard library's is never looked up: ``import json`` is the standard library's even when a
``json.py`` sits at the top. ``from a import b`` points at ``a/b.py`` when ``b`` is a submodule,
else at ``a``'s own file. Relative imports are resolved from the file's directory.
"""

from __future__ import annotations

import ast
import bisect
import keyword
import posixpath
import re
import sys
from collections.abc import Iterator
from typing import Any

from .lexer import skipped_spans
from .sources import Tree

__all__ = ["extract", "resolve"]

_STDLIB = frozenset(sys.stdlib_module_names)
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
_MODULE_TAIL = re.compile(r"[\w. \t]*")  # matched on a reversed head: a module path, blanks
# How far into its line an ``import`` may stand: none is written further in, and looking back
# further for each of a long line's ``import`` words took time with the square of its length.
_FAR = 256
_BREAKS = re.compile(r"#[^\n]*|\\\n|[()\[\]{}\n;]")
# The statements nearly every import is written as (``import a.b as c, d``, ``from ..a import
# (b, c)``, blanks and a comment after) are read by a pattern, not by ``ast``: a parse each
# was a third of the extraction (werkzeug: 13.5 ms, not 17.6). Their names are ASCII and none
# is a keyword, so ast would give them as written; anything else (a continuation, a comment
# inside the brackets, a name ast would refuse) is left to ast.
_NAME = r"[A-Za-z_][A-Za-z0-9_]*+"
_DOTTED = rf"{_NAME}(?:\.{_NAME})*+"
_AS = rf"(?:[ \t]++as[ \t]++{_NAME})?"
_BLANK = r"[ \t\r\n]*+"  # in brackets
_END = r"[ \t]*+(?:#[^\r\n\x00]*+)?\r?"  # a comment; the \r of a \r\n
_PLAIN_IMPORT = re.compile(
    rf"import[ \t]++({_DOTTED}{_AS}(?:[ \t]*+,[ \t]*+{_DOTTED}{_AS})*+){_END}"
)
_PLAIN_FROM = re.compile(
    rf"from[ \t]++(\.*+)({_DOTTED})?[ \t]++import[ \t]++"
    rf"(\*|{_NAME}{_AS}(?:[ \t]*+,[ \t]*+{_NAME}{_AS})*+"
    rf"|\({_BLANK}{_NAME}{_AS}(?:{_BLANK},{_BLANK}{_NAME}{_AS})*+{_BLANK},?{_BLANK}\)){_END}"
)
_KEYWORDS = frozenset(keyword.kwlist)

Item = list[Any]  # [level, module or None, [names]]: 0 absolute; names empty for ``import a``


def extract(text: str) -> tuple[list[Item], int]:
    """Every import of the module, nested ones included, and how many statements that start
    like one did not parse."""
    found_starts = (_statement_start(text, at) for at in _keyword_positions(text))
    starts = sorted({start for start in found_starts if start is not None})
    if not starts:
        return [], 0
    spans = skipped_spans(text, "python", starts[-1])
    span_starts = [start for start, _ in spans]
    starts = [start for start in starts if not _inside(spans, span_starts, start)]
    if not starts:
        return [], 0
    found: list[Item] = []
    failed = 0
    # A statement ends before the next one starts: read to the end instead, every statement of
    # a file of unclosed brackets was the rest of the file (quadratic in its length).
    for start, limit in zip(starts, [*starts[1:], len(text)], strict=True):
        statement = _logical_line(text, start, limit)
        if (items := _plain(statement)) is not None:
            found += items
            continue
        try:
            node = ast.parse(statement).body[0]
        except (SyntaxError, ValueError, RecursionError, IndexError):
            failed += 1
            continue
        if isinstance(node, ast.Import):
            found += [[0, alias.name, []] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append([node.level, node.module, [a.name for a in node.names]])
    return found, failed


def _plain(statement: str) -> list[Item] | None:
    """The items of an import statement the patterns read, as ast would give them; None for
    any other statement."""
    if (m := _PLAIN_IMPORT.fullmatch(statement)) is not None:
        level, module, names = 0, None, m.group(1)
    elif (m := _PLAIN_FROM.fullmatch(statement)) is not None:
        level, module, names = len(m.group(1)), m.group(2), m.group(3).strip("()")
    else:
        return None
    # Each alias as [name] or [name, "as", asname] ([] after a comma that ends the brackets).
    aliases = [words for words in (alias.split() for alias in names.split(",")) if words]
    named = [module or "", *(alias[0] for alias in aliases), *(alias[-1] for alias in aliases)]
    if not _KEYWORDS.isdisjoint(".".join(named).split(".")):
        return None  # `import if` does not parse
    if m.re is _PLAIN_IMPORT:
        return [[0, alias[0], []] for alias in aliases]
    return [[level, module, [alias[0] for alias in aliases]]]


def _inside(spans: list[tuple[int, int]], span_starts: list[int], at: int) -> bool:
    """Whether ``at`` falls in a comment or a string."""
    i = bisect.bisect_right(span_starts, at) - 1
    return i >= 0 and spans[i][0] <= at < spans[i][1]


def _keyword_positions(text: str) -> Iterator[int]:
    """Where the word ``import`` stands alone. ``str.find`` and a look at the neighbours:
    a regular expression with a look-behind scanned every position and was half the cost."""
    at = text.find("import")
    while at >= 0:
        end = at + len("import")
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_"):
            yield at
        at = text.find("import", end)


def _statement_start(text: str, at: int) -> int | None:
    """Where the statement holding the ``import`` at ``at`` starts, if that is an import
    statement (``import x``, ``from x import y``); None for anything else."""
    newline = text.rfind("\n", max(0, at - _FAR), at)
    if newline < 0 and at > _FAR:
        return None  # further into its line than any import is written
    line_start = newline + 1
    head = text[line_start:at]
    if not head.strip() or head.rstrip()[-1] in ";:":
        start = at
    elif (before := _from_clause(head)) is not None and (
        not head[:before].strip() or head[:before].rstrip()[-1] in ";:"
    ):
        start = line_start + before
    else:
        return None
    if text[max(0, line_start - 2) : line_start] == "\\\n":
        return None  # the line continues the one before: no statement starts here
    return start


def _from_clause(head: str) -> int | None:
    """Where ``from <module>`` starts when ``head`` ends with it (the first such ``from``), else
    None. Found by a scan back over the module path's characters, then a search forward: a
    pattern tried from every position of a long head was quadratic in it."""
    tail = _MODULE_TAIL.match(head[::-1])
    k = len(head) - (tail.end() if tail else 0)
    at = head.find("from", k)
    while at >= 0:
        if head[at + 4 : at + 5] in (" ", "\t") and (at == k or head[at - 1] in " \t"):
            return at
        at = head.find("from", at + 1)
    return None


def _logical_line(text: str, start: int, limit: int) -> str:
    """The statement starting at ``start``: up to a newline outside brackets, or a ``;``, and
    never past ``limit``."""
    depth = 0
    for m in _BREAKS.finditer(text, start, limit):
        mark = m.group()
        if mark in "([{":
            depth += 1
        elif mark in ")]}":
            depth -= 1
        elif mark in ("\n", ";") and depth <= 0:
            return text[start : m.start()]
    return text[start:limit]


class _Modules:
    """Which dotted names exist under a base directory."""

    def __init__(self, tree: Tree) -> None:
        self.files = {p for p in tree.paths if p.endswith(".py")}
        self.dirs = {posixpath.dirname(p) for p in self.files}
        self.dirs |= {d.rsplit("/", i)[0] for d in list(self.dirs) for i in range(d.count("/") + 1)}

    def module_file(self, base: str) -> str | None:
        """``base.py`` or ``base/__init__.py``: the file that runs on import."""
        for candidate in (f"{base}.py", f"{base}/__init__.py" if base else "__init__.py"):
            if candidate in self.files:
                return candidate
        return None

    def exists(self, base: str) -> bool:
        """A module file or a directory of Python files (a namespace package)."""
        return self.module_file(base) is not None or base in self.dirs


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _resolve_from(mods: _Modules, base: str, names: list[str]) -> Iterator[str]:
    """``from <base> import names``: a submodule where one exists, else ``base``'s own file."""
    own = mods.module_file(base)
    for name in names or ["*"]:
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


def _roots_for(here: str, roots: list[str], mods: _Modules) -> list[str]:
    """The roots to try for a file in directory ``here``: that directory if a script's, then
    its projects' (deepest first), then the rest."""
    script = [here] if _join(here, "__init__.py") not in mods.files else []
    mine = sorted((r for r in roots if r and f"{here}/".startswith(r + "/")), key=len)
    return list(dict.fromkeys([*script, *reversed(mine), *roots]))


def _absolute(mods: _Modules, roots: list[str], module: str, names: list[str]) -> list[str]:
    if module.split(".", 1)[0] in _STDLIB:
        return []
    parts = module.split(".")
    for root in roots:
        base = _join(root, *parts)
        if names:
            if mods.exists(base):
                return list(_resolve_from(mods, base, names))
        elif (found := mods.module_file(base)) is not None:
            return [found]
    return []


def _relative(
    mods: _Modules, path: str, level: int, module: str | None, names: list[str]
) -> list[str]:
    package = posixpath.dirname(path)
    for _ in range(level - 1):
        if not package:
            return []  # above the repository's top
        package = posixpath.dirname(package)
    base = _join(package, *(module.split(".") if module else []))
    return list(_resolve_from(mods, base, names))


def resolve(tree: Tree, files: dict[str, list[Item]]) -> list[tuple[str, str]]:
    """(src, dst) pairs for the Python files' extracted imports."""
    mods = _Modules(tree)
    roots = _roots(tree, mods)
    out: list[tuple[str, str]] = []
    orders: dict[str, list[str]] = {}  # by directory: its files share their roots
    for path, items in files.items():
        here = posixpath.dirname(path)
        if (order := orders.get(here)) is None:
            order = orders[here] = _roots_for(here, roots, mods)
        for level, module, names in items:
            if level:
                targets = _relative(mods, path, level, module, names)
            elif module:
                targets = _absolute(mods, order, module, names)
            else:
                continue
            out += [(path, dst) for dst in targets if dst != path]
    return out
