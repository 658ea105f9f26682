"""Per-file patches: one node per changed file of recent non-merge commits.

Binaries, lockfiles, vendored and build output are skipped so a dependency bump cannot bury the
corpus. Merge commits contribute none: their patch exists only in the combined format.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .git import LOG_FORMAT, Commit, log_records, parse_header

__all__ = [
    "FilePatch",
    "is_skipped_path",
    "parse_patches",
    "patch_args",
    "split_commit",
    "walk_patches",
]


SKIP_NAMES = {
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "Cargo.lock",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "Gemfile.lock",
    "composer.lock",
    "go.sum",
    "mix.lock",
    "pubspec.lock",
    "flake.lock",
    "packages.lock.json",
}
SKIP_DIRS = {
    "node_modules",
    "vendor",
    "third_party",
    "dist",
    "build",
    "out",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".next",
    ".nuxt",
    "coverage",
    "site-packages",
    ".tox",
}
SKIP_SUFFIXES = (".min.js", ".min.css", ".map", ".lock", ".pyc", ".snap")


@dataclass
class FilePatch:
    sha: str
    path: str
    status: str  # A, M, D
    patch: str
    added: int
    deleted: int


def is_skipped_path(path: str, extra_globs: Sequence[str] = ()) -> bool:
    """Lockfiles, vendored and build output, and the user's own ``skipGlobs``."""
    parts = path.split("/")
    name = parts[-1]
    if name in SKIP_NAMES or name.endswith(SKIP_SUFFIXES):
        return True
    if any(part in SKIP_DIRS for part in parts[:-1]):
        return True
    return any(fnmatch.fnmatch(path, glob) for glob in extra_globs)


_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"')
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    '"': '"',
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "r": "\r",
    "v": "\v",
}


def _unquote(text: str) -> str:
    """Undo git's C-style quoting of a path (used for control characters and quotes)."""
    match = _QUOTED.match(text)
    if not match:
        return text
    raw = match.group(1)
    out = bytearray()
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            octal = raw[i + 1 : i + 4]  # git writes a byte as exactly three octal digits
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "replace")


def _path_from(line: str, prefix: str) -> str | None:
    value = line[len(prefix) :].rstrip("\t")
    if value == "/dev/null":
        return None
    value = _unquote(value)
    return value[2:] if value[:2] in ("a/", "b/") else value


def _header_path(header: str) -> str:
    """``diff --git a/P b/P``: P is recoverable because both sides are the same path."""
    rest = header[len("diff --git ") :]
    if rest.startswith('"'):
        return _unquote(rest).removeprefix("a/")
    half = (len(rest) - 5) // 2
    return rest[2 : 2 + half]


def parse_patches(sha: str, text: str) -> list[FilePatch]:
    """Split one commit's ``git log -p`` text into per-file patches.

    Only a file's header (its lines before the first hunk) is read line by line. Its hunks
    are counted where they stand: past the first ``@@`` every line is a hunk's (context,
    ``+``, ``-``, ``\\`` or the next ``@@``), so the lines added are the newlines followed by a
    ``+``. A step of Python per line was half of reading a first sync's diffs (httpx: 18 ms,
    9 so)."""
    patches: list[FilePatch] = []
    # A file's patch starts at a line "diff --git ", which no hunk line can be (each starts
    # with one of " +-\\@"); the text before the first is what the commit's header left.
    for block in ("\n" + text).split("\ndiff --git ")[1:]:
        hunk_start = block.find("\n@@")
        header = block if hunk_start < 0 else block[:hunk_start]
        lines = header.split("\n")
        header_path = _header_path("diff --git " + lines[0])
        old = new = None
        binary = False
        for line in lines[1:]:
            if line.startswith("--- "):
                old = _path_from(line, "--- ")
            elif line.startswith("+++ "):
                new = _path_from(line, "+++ ")
            elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
                binary = True
        if binary or hunk_start < 0:
            continue  # a binary, or a mode-only change or an empty file: nothing to read
        hunks = block[hunk_start + 1 :]
        body = hunks.rstrip("\n")
        if not body:
            continue
        path = new or old or header_path
        status = "A" if old is None and new else "D" if new is None and old else "M"
        added, deleted = hunks.count("\n+"), hunks.count("\n-")
        patches.append(FilePatch(sha, path, status, body, added, deleted))
    return patches


def patch_args(rev_args: Sequence[str], paths: Sequence[str] = ()) -> list[str]:
    """The ``git log -p`` that :func:`walk_patches` reads, for a caller that starts it early."""
    return [
        "log",
        "-p",
        "--no-merges",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        "--format=" + LOG_FORMAT,
        *rev_args,
        "--",
        *paths,
    ]


async def walk_patches(
    root: Path,
    rev_args: list[str],
    paths: Sequence[str] = (),
    output: AsyncIterator[bytes] | None = None,
) -> AsyncIterator[tuple[Commit, list[FilePatch]]]:
    """Stream the non-merge commits selected by ``rev_args`` with their per-file patches; with
    ``paths``, only the commits that touch one of them, and only those files' patches. With
    ``output``, read that: the output of :func:`patch_args`'s git, started earlier."""
    async for record in log_records(root, patch_args(rev_args, paths), output):
        if (parsed := split_commit(record)) is not None:
            yield parsed


def split_commit(piece: bytes) -> tuple[Commit, list[FilePatch]] | None:
    parsed = parse_header(piece)
    if parsed is None:
        return None
    commit, rest = parsed
    return commit, parse_patches(commit.sha, rest.decode("utf-8", "replace"))
