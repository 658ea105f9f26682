"""Patch text: one commit's ``git log -p`` output cut into per-file patches and hunks.

Paths may be C-quoted by git (control characters, quotes, non-ASCII with ``core.quotepath``);
a patch may be binary, mode-only, or end anywhere (the record before it was cut short).
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.diffs import is_skipped_path, parse_patches

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


TARGETS = {"diff hunks": Target(patches, check_patches)}
