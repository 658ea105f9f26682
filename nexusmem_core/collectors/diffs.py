"""Per-file patches: one node per changed file of recent non-merge commits.

Binaries, lockfiles, vendored and build output are skipped so a dependency bump cannot bury the
corpus. Merge commits contribute none: their patch exists only in the combined format.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .git import LOG_FORMAT, MARK, SHA, Commit, git_stream, log_records, parse_header

__all__ = [
    "MAX_COMMIT_BYTES",
    "MAX_DIFFS",
    "FilePatch",
    "PatchCap",
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


# Diff nodes one commit makes, at most: a vendoring or generated commit can touch 100k files,
# and past a few hundred its files say no more about the change than its commit node does.
MAX_DIFFS = 500
# Bytes of one commit's patches read, at most (a file begun before it is read to its own cap):
# the files past it are left out, counted. 500 typical patches are well under it.
MAX_COMMIT_BYTES = 16 << 20
# A file's patch is cut at 4 bytes a character of the configured body limit, and this margin,
# so that redaction sees whole every secret that begins in the text a node can keep.
_MARGIN = 64 << 10
_FILE = b"\ndiff --git "
_HOLD = max(len(_FILE), len(MARK)) - 1  # a chunk's last bytes may begin a separator
_LINE = 8 << 10  # a file's header line longer than this is not waited for whole
_SHA_BYTES = 65  # a sha-256 id and its NUL: enough to tell whether a record starts
_HEADER_NULS = LOG_FORMAT.count("%x00")


class PatchCap:
    """Cuts ``git log -p`` output as it streams in, before it is split into commits, so a
    huge file or commit is never held whole: a file's patch to its first
    ``4 * max_chars + 64 KiB`` bytes, a commit to :data:`MAX_DIFFS` files and about
    :data:`MAX_COMMIT_BYTES`; the files past a commit's caps are dropped and counted in
    ``left_out``. The paths a diff skips (``skip``, as :func:`is_skipped_path`) are dropped
    here too, uncounted, so a vendored tree does not use a commit's room. It holds only the
    few bytes at a chunk's end that may begin a separator; each byte is searched once."""

    def __init__(self, max_chars: int, skip: Sequence[str] = ()) -> None:
        self.file_bytes = 4 * max_chars + _MARGIN
        self.skip = skip
        self.left_out = 0
        self.room = MAX_COMMIT_BYTES  # bytes the piece being read may still keep
        self.commit = MAX_COMMIT_BYTES  # bytes the commit being read may still keep
        self.files = 0  # files of the commit being read kept so far
        # NULs of the commit's header passed: its patches begin after the fifth (LOG_FORMAT),
        # and a "diff --git" line before it is its message's text.
        self.nuls = _HEADER_NULS
        self.rest = b""  # undecided: the start of a separator, perhaps

    def stream(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """``chunks`` cut."""
        for chunk in chunks:
            if kept := self.feed(chunk):
                yield kept
        if kept := self.feed(b"", final=True):
            yield kept

    async def astream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """:meth:`stream` of an async stream."""
        async for chunk in chunks:
            if kept := self.feed(chunk):
                yield kept
        if kept := self.feed(b"", final=True):
            yield kept

    def feed(self, chunk: bytes, final: bool = False) -> bytes:
        """What to keep of ``chunk`` (and of the bytes held from the one before)."""
        data = self.rest + chunk if self.rest else chunk
        out = bytearray()
        pos, file_at, mark_at = 0, data.find(_FILE), data.find(MARK)
        while True:
            # The next of each separator is searched for again only once it is passed.
            if 0 <= file_at < pos:
                file_at = data.find(_FILE, pos)
            if 0 <= mark_at < pos:
                mark_at = data.find(MARK, pos)
            at = min(file_at, mark_at) if file_at >= 0 and mark_at >= 0 else max(file_at, mark_at)
            if at < 0:
                end = len(data) if final else max(pos, len(data) - _HOLD)
                self._keep(out, data, pos, end)
                if self.nuls < _HEADER_NULS:
                    self.nuls += data.count(b"\0", pos, end)
                self.rest = data[end:]
                return bytes(out)
            self._keep(out, data, pos, at)
            if self.nuls < _HEADER_NULS:
                self.nuls += data.count(b"\0", pos, at)
            if at == mark_at:
                head = at + len(MARK)
                if not final and len(data) - head < _SHA_BYTES:
                    self.rest = data[at:]
                    return bytes(out)
                if SHA.match(data[head : head + _SHA_BYTES]):
                    self.room = self.commit = MAX_COMMIT_BYTES
                    self.files = self.nuls = 0
                    out += MARK
                else:  # a MARK inside a commit message: text
                    self._keep(out, data, at, head)
                pos = head
                continue
            if self.nuls < _HEADER_NULS:  # in the commit's message: text
                self._keep(out, data, at, at + len(_FILE))
                pos = at + len(_FILE)
                continue
            line_end = data.find(b"\n", at + 1, at + _LINE)
            if line_end < 0 and not final and len(data) - at < _LINE:
                self.rest = data[at:]  # the file's path is read whole before it is judged
                return bytes(out)
            pos = at + len(_FILE)
            self._begin(out, data[pos : line_end if line_end >= 0 else pos + _LINE])

    def _begin(self, out: bytearray, line: bytes) -> None:
        """A file's patch begins (``line``: its header's ``a/P b/P``): kept, or dropped."""
        path = _header_path("diff --git " + line.decode("utf-8", "replace"))
        if is_skipped_path(path, self.skip):
            self.room = 0
        elif self.files >= MAX_DIFFS or self.commit <= 0:
            self.room = 0
            self.left_out += 1
        else:
            self.files += 1
            self.room = self.file_bytes
            out += _FILE

    def _keep(self, out: bytearray, data: bytes, start: int, end: int) -> None:
        size = min(end - start, self.room)
        if size > 0:
            out += data[start : start + size]
            self.room -= size
            self.commit -= size


def patch_args(rev_args: Sequence[str], paths: Sequence[str] = ()) -> list[str]:
    """The ``git log -p`` that :func:`walk_patches` reads, for a caller that starts it early."""
    return [
        "log",
        "-p",
        "--no-merges",
        "--no-renames",
        "--no-color",
        # A repository's .gitattributes may name any diff driver; a driver's command (a
        # textconv, an external diff) would then run on a stranger's file. The patch as git
        # holds it is what is stored.
        "--no-ext-diff",
        "--no-textconv",
        "--format=" + LOG_FORMAT,
        *rev_args,
        "--",
        *paths,
    ]


async def walk_patches(
    root: Path,
    rev_args: list[str],
    cap: PatchCap,
    paths: Sequence[str] = (),
    output: AsyncIterator[bytes] | None = None,
) -> AsyncIterator[tuple[Commit, list[FilePatch]]]:
    """Stream the non-merge commits selected by ``rev_args`` with their per-file patches, cut
    by ``cap`` as git prints them; with ``paths``, only the commits that touch one of them,
    and only those files' patches. With ``output``, read that: the output of
    :func:`patch_args`'s git, started earlier."""
    args = patch_args(rev_args, paths)
    cut = cap.astream(output if output is not None else git_stream(root, *args))
    async for record in log_records(root, args, cut):
        if (parsed := split_commit(record)) is not None:
            yield parsed


def split_commit(piece: bytes) -> tuple[Commit, list[FilePatch]] | None:
    parsed = parse_header(piece)
    if parsed is None:
        return None
    commit, rest = parsed
    return commit, parse_patches(commit.sha, rest.decode("utf-8", "replace"))
