"""Patch text: one commit's ``git log -p`` output cut into per-file patches and hunks.

Paths may be C-quoted by git (control characters, quotes, non-ASCII with ``core.quotepath``);
a patch may be binary, mode-only, or end anywhere (the record before it was cut short).
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.diffs import PatchCap, is_skipped_path, parse_patches
from nexusmem_core.collectors.git import MARK

from .bounds import Target, mutated, repeated, within

_FRAGMENTS = [
    "diff --git a/x b/x\n",
    'diff --git "a/\\303\\244" "b/\\303\\244"\n',
    "diff --git ",
    "--- a/x\n",
    "+++ b/x\n",
    "--- /dev/null\n",
    "+++ /dev/null\n",
    '--- "a/\\t\\"q\\""\n',
    '+++ "b/\\19"\n',
    '"\\',
    "\\",
    "@@ -1,2 +1,3 @@\n",
    "@@",
    "+added\n",
    "-removed\n",
    " context\n",
    "\\ No newline at end of file\n",
    "Binary files a/x and b/x differ\n",
    "GIT binary patch\n",
    "new file mode 100644\n",
    "old mode 100644\nnew mode 100755\n",
    "\n",
    "\x00",
]
patches = st.one_of(mutated(_FRAGMENTS), repeated(_FRAGMENTS, max_repeat=2000))


def check_patches(text: str) -> None:
    """Any text splits into patches with sane counts, or into none; never an exception."""
    with within():
        found = parse_patches("a" * 40, text)
    for patch in found:
        assert patch.added >= 0 and patch.deleted >= 0
        assert patch.status in ("A", "M", "D")
        assert patch.patch.startswith("@@")
        is_skipped_path(patch.path, ("*.gen",))


@settings(max_examples=120, deadline=None)
@given(patches)
@example('diff --git "a/\\19" "b/\\19"\n--- "a/\\19"\n+++ "b/\\19"\n@@ -1 +1 @@\n-a\n+b\n')
@example('diff --git a/x b/x\n+++ "b/\\1')
def test_any_patch_text_splits_or_is_passed_over(text: str) -> None:
    check_patches(text)


def _read_line_by_line(text: str) -> list[tuple[str, str, str, int, int]]:
    """The patches as a reading of every line finds them: the oracle parse_patches, which
    counts a patch's hunk lines without a step per line, must agree with."""
    found = []
    for block in re.split(r"^(?=diff --git )", text, flags=re.MULTILINE):
        if not block.startswith("diff --git "):
            continue
        lines = block.split("\n")
        old: str | None = None
        new: str | None = None
        binary = in_hunk = False
        added = deleted = 0
        for line in lines[1:]:
            if in_hunk:
                added += line.startswith("+")
                deleted += line.startswith("-")
            elif line.startswith("--- "):
                old = None if line.rstrip("\t") == "--- /dev/null" else line
            elif line.startswith("+++ "):
                new = None if line.rstrip("\t") == "+++ /dev/null" else line
            elif line.startswith(("Binary files ", "GIT binary patch")):
                binary = True
            elif line.startswith("@@"):
                in_hunk = True
        start = block.find("\n@@")
        body = block[start + 1 :].rstrip("\n") if start >= 0 else ""
        if binary or not body:
            continue
        status = "A" if old is None and new else "D" if new is None and old else "M"
        found.append((lines[0], status, body, added, deleted))
    return found


@settings(max_examples=200, deadline=None)
@given(patches)
@example("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n+++x\n---y\n\\ No newline\n")
@example("intro\ndiff --git a/x b/x\n@@\n+a\ndiff --git a/y b/y\nBinary files a/y and b/y differ\n")
@example("diff --git a/x b/x\nold mode 100644\nnew mode 100755\n")
def test_counting_hunk_lines_agrees_with_reading_each_line(text: str) -> None:
    """Hunk lines counted in place, not read one by one: the same patches, bodies and counts
    as reading every line, on any text (a "+++" or "---" inside a hunk is an added or a
    removed line; only a header's are paths)."""
    found = parse_patches("a" * 40, text)
    expected = _read_line_by_line(text)
    assert len(found) == len(expected)
    for patch, (_, status, body, added, deleted) in zip(found, expected, strict=True):
        assert (patch.status, patch.patch, patch.added, patch.deleted) == (
            status,
            body,
            added,
            deleted,
        )


_path = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\n"),
    min_size=1,
    max_size=12,
).filter(lambda p: p.strip() and not p.startswith(("/", '"')) and " b/" not in p)


def _quote(path: str) -> str:
    """A path as git writes it in a patch header: C-quoted when it holds a special byte."""
    raw = path.encode()
    if not any(b < 0x20 or b in b'"\\' or b >= 0x80 for b in raw):
        return path
    out = ""
    for b in raw:
        if b in b'"\\':
            out += "\\" + chr(b)
        elif b < 0x20 or b >= 0x80:
            out += f"\\{b:03o}"
        else:
            out += chr(b)
    return f'"{out}"'


@settings(max_examples=60, deadline=None)
@given(
    files=st.lists(
        st.tuples(_path, st.integers(0, 4), st.integers(0, 4)),
        max_size=4,
        unique_by=lambda f: f[0],
    )
)
def test_a_rendered_patch_parses_back(files: list[tuple[str, int, int]]) -> None:
    text = ""
    for path, added, deleted in files:
        old, new = _quote("a/" + path), _quote("b/" + path)
        hunk = "".join(["-old\n"] * deleted + ["+new\n"] * added) or " same\n"
        text += f"diff --git {old} {new}\nindex 1..2 100644\n--- {old}\n+++ {new}\n"
        text += f"@@ -1,{deleted} +1,{added} @@\n{hunk}"
    found = parse_patches("a" * 40, text)
    assert [(p.path, p.added, p.deleted, p.status) for p in found] == [
        (path, added, deleted, "M") for path, added, deleted in files
    ]


_HEADER = MARK.decode() + "a" * 40 + "\x00\x001\x00me\x00subject\n"
logs = st.one_of(
    mutated([_HEADER, MARK.decode(), "\x00", *_FRAGMENTS]),
    repeated([_HEADER, "diff --git a/x b/x\n@@\n+" + "y" * 300 + "\n"], max_repeat=400),
)


@settings(max_examples=150, deadline=None)
@given(logs, st.integers(1, 64))
@example(_HEADER + "x\x00\n" + "diff --git a/x b/x\n@@\n+" + "y" * 3000 + "\n", 7)
def test_cutting_a_log_is_the_same_in_any_chunks_and_never_longer(text: str, size: int) -> None:
    """PatchCap keeps the same bytes of a log however git's output is chunked, never more
    than it read, and within a file's cap (a body limit of 200 characters: 64.8 KB)."""
    data = text.encode("utf-8", "surrogatepass")
    with within():
        whole = b"".join(PatchCap(200).stream([data]))
        chunked = b"".join(
            PatchCap(200).stream(data[i : i + size] for i in range(0, len(data), size))
        )
    assert chunked == whole
    assert len(whole) <= len(data)


TARGETS = {"diff hunks": Target(patches, check_patches)}
