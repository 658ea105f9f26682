"""The files the import graph is built from: what git lists, as the working tree has it.

Tracked files plus untracked ones git does not ignore (an agent's new module counts before it is
added), minus tracked files deleted from the working tree. Vendored and build output, lockfiles
and the user's ``skipGlobs`` are left out exactly as the diff source leaves them out, and so is
any file over ``MAX_BYTES``: a generated bundle says nothing about how the code is organised.
"""

from __future__ import annotations

import hashlib
import posixpath
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..diffs import is_skipped_path
from ..git import git
from ..worktree import WorkTree

__all__ = ["LANGUAGES", "MAX_BYTES", "Listing", "Tree", "language_of", "list_tree"]

MAX_BYTES = 512 * 1024

# Extension -> the language an edge from such a file is recorded under.
LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
# Files whose content changes how imports resolve (module paths, crate and package roots).
MANIFESTS = ("go.mod", "Cargo.toml", "pyproject.toml", "setup.py", "setup.cfg")


def language_of(path: str) -> str | None:
    name = path.rpartition("/")[2]
    return LANGUAGES.get(name[name.rfind(".") :]) if "." in name[1:] else None


@dataclass
class Tree:
    """Every listed file present in the working tree (sources or not): an edge may only point
    at one of these."""

    root: Path
    paths: frozenset[str]
    _dirs: dict[str, list[str]] | None = field(default=None, repr=False)
    _files: WorkTree | None = field(default=None, repr=False)

    def files_in(self, directory: str) -> list[str]:
        """The files directly in ``directory`` ("" for the top), sorted."""
        if self._dirs is None:
            self._dirs = {}
            for path in sorted(self.paths):
                self._dirs.setdefault(posixpath.dirname(path), []).append(path)
        return self._dirs.get(directory, [])

    def read(self, path: str) -> str | None:
        """A file's text, its first ``MAX_BYTES``; None when it cannot be read or leads out
        of the work tree (collectors/worktree.py)."""
        if self._files is None:
            self._files = WorkTree(self.root)
        read = self._files.read(path, MAX_BYTES)
        return None if isinstance(read, str) else read[0].decode("utf-8", "replace")


@dataclass
class Listing:
    """What a build reads, and a digest that changes whenever its result could."""

    tree: Tree
    candidates: dict[str, tuple[int, int]]  # source files within the size cap: (size, mtime_ns)
    too_large: int
    digest: str
    started_ns: int  # when the listing began: a file changed since may change again unseen


async def list_tree(root: Path, skip_globs: tuple[str, ...] = ()) -> Listing:
    """List the repository's files and stat the sources; read no content yet."""
    started = time.time_ns()
    # One run, each path tagged: "H " tracked, "? " untracked, "R " tracked but deleted from
    # the work tree (listed as tracked too), "S " skip-worktree, "M " unmerged.
    listed = await git(
        root, "ls-files", "-z", "-t", "--cached", "--others", "--deleted", "--exclude-standard"
    )
    entries = [entry for entry in listed.split("\x00") if len(entry) > 2]
    gone = {entry[2:] for entry in entries if entry[0] == "R"}
    paths = sorted(
        {
            p
            for p in (entry[2:] for entry in entries)
            if p not in gone and not is_skipped_path(p, skip_globs)
        }
    )
    h = hashlib.sha256("\x00".join(paths).encode("utf-8", "surrogateescape"))
    candidates: dict[str, tuple[int, int]] = {}
    too_large = 0
    files = WorkTree(root)
    for path in paths:
        lang = language_of(path)
        if lang is None and path.rpartition("/")[2] not in MANIFESTS:
            continue
        # A link out of the work tree, a FIFO or a device is no source: never read.
        if (st := files.stat(path)) is None:
            continue
        h.update(f"\x00{path}\x00{st.st_size}\x00{st.st_mtime_ns}".encode("utf-8", "replace"))
        if lang is None:
            continue
        if st.st_size > MAX_BYTES:
            too_large += 1
        else:
            candidates[path] = (st.st_size, st.st_mtime_ns)
    tree = Tree(root, frozenset(paths), _files=files)
    return Listing(tree, candidates, too_large, h.hexdigest(), started)
