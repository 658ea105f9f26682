"""Which files of the repository a conversation names, so a question about a file finds the
turns that discussed it (``node_files``) as it finds the commits that changed it.

A word counts when it looks like a path (``src/retry.py``, ``README.md``, an absolute path
inside the repository, with a ``:42`` or ``::test_name`` after it) and a file of that name
exists in the work tree now. Each distinct word is looked up once per sync: one ``stat``.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator

__all__ = ["RepoPaths"]

# A path has a separator followed by a name character. Finding those first and widening each to
# its word costs a tenth of matching a path pattern at every position of a long reply.
_SEPARATOR = re.compile(r"[./](?=[\w@+-])")
_WORD = re.compile(r"[\w@+.~/-]+")
SCANNED = 100_000  # characters of an exchange searched for paths: a pasted log ends the useful part
MAX_FILES = 20  # per exchange


def _words(text: str) -> Iterator[str]:
    """The path-like words of ``text``: runs of name characters holding a ``/`` or ``.``."""
    end = 0
    for hit in _SEPARATOR.finditer(text):
        if hit.start() < end:
            continue  # inside the word found last
        start = hit.start()
        while start and (text[start - 1].isalnum() or text[start - 1] in "_@+.~/-"):
            start -= 1
        found = _WORD.match(text, start)
        if found is None:  # not reached: the separator itself is a name character
            continue
        end = found.end()
        word = found.group(0).rstrip(".")
        if "/" in word or "." in word[1:]:
            yield word


class RepoPaths:
    """Resolves the path-like words of a text against the repository's work trees."""

    def __init__(self, root: str, roots: list[str]) -> None:
        self.root = root  # where files are checked: the main work tree
        # Longest first, so a worktree nested in the main one is matched before it.
        self.roots = sorted({root, *roots}, key=len, reverse=True)
        self._known: dict[tuple[str, str], str | None] = {}
        self._cwds: dict[str, str | None] = {}

    def named(self, text: str, cwd: str | None) -> list[str]:
        """Repository-relative paths of existing files that ``text`` names, in order of first
        mention; a relative word is tried from the repository's top and from ``cwd``."""
        here = self._where(cwd) if cwd else None
        found: list[str] = []
        for word in _words(text[:SCANNED]):
            path = self._lookup(word, here or "")
            if path and path not in found:
                found.append(path)
                if len(found) >= MAX_FILES:
                    break
        return found

    def _where(self, cwd: str) -> str | None:
        """``cwd`` relative to the repository's top, when it is a directory inside it."""
        if cwd not in self._cwds:
            self._cwds[cwd] = self._relative(os.path.realpath(cwd))
        return self._cwds[cwd]

    def _lookup(self, word: str, here: str) -> str | None:
        key = (word, here)
        if key not in self._known:
            self._known[key] = self._resolve(word, here)
        return self._known[key]

    def _resolve(self, word: str, here: str) -> str | None:
        if word.startswith("/"):
            relative = self._relative(word)
            return relative if relative and self._exists(relative) else None
        for base in ("", here) if here else ("",):
            path = posixpath.normpath(posixpath.join(base, word))
            if not path.startswith("../") and path not in ("..", ".") and self._exists(path):
                return path
        return None

    def _relative(self, path: str) -> str | None:
        for root in self.roots:
            if path.startswith(root.rstrip("/") + "/"):
                return path[len(root.rstrip("/")) + 1 :]
        return None

    def _exists(self, relative: str) -> bool:
        return os.path.isfile(os.path.join(self.root, relative))
