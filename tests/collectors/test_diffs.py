"""Per-file patches read from ``git log -p`` as it streams: cut by ``PatchCap`` before they are
split into commits, so a huge file or commit is never held whole."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import anyio

from nexusmem_core import ingest
from nexusmem_core.collectors import diffs
from nexusmem_core.collectors.diffs import MAX_DIFFS, PatchCap, patch_args
from nexusmem_core.collectors.git import MARK
from nexusmem_core.config import ProjectConfig

from ..conftest import Repo
from ..growth import costs

LIMIT = ProjectConfig().limits.max_body_chars


def log_p(repo: Repo) -> bytes:
    """The ``git log -p`` a sync reads, as git prints it."""
    return repo.git("-c", "core.quotepath=off", *patch_args(["HEAD"])).encode()


def cut(data: bytes, cap: PatchCap, size: int) -> bytes:
    """``data`` through ``cap`` in chunks of ``size`` bytes."""
    return b"".join(cap.stream(data[i : i + size] for i in range(0, len(data), size)))


def diffs_of(repo: Repo) -> list:
    async def run() -> list:
        config = ProjectConfig()
        return [n async for n in ingest.diff_nodes("p", repo.path, ["HEAD"], config)]

    return anyio.run(run)


def test_a_log_under_the_caps_passes_whole_however_it_is_chunked(make_repo):
    repo = make_repo("r")
    repo.commit("feat: a\n\ndiff --git a/node_modules/x b/y\nin a message", {"a.py": "A = 1\n"})
    repo.commit(f"fix: b {MARK.decode()} c", {"b.py": "B = 2\n", "a.py": "A = 3\n"})
    repo.commit("chore: vendored", {"node_modules/x.js": "x\n", "c.py": "C = 1\n"})
    data = log_p(repo)
    whole = cut(data, PatchCap(LIMIT), len(data))
    # All of it but the skipped path's patch, which is dropped, uncounted.
    vendored = (
        rb"\ndiff --git a/node_modules/x\.js.*?(?=\ndiff --git |" + re.escape(MARK) + rb"|\Z)"
    )
    assert whole == re.sub(vendored, b"", data, flags=re.S) != data
    for size in (1, 2, 7, 13, 64, 4096):
        cap = PatchCap(LIMIT)
        assert cut(data, cap, size) == whole, size
        assert cap.left_out == 0
    # The message's "diff --git" line is its text: the commit keeps its message and diffs.
    assert b"in a message" in whole and b"diff --git a/node_modules/x b/y" in whole


def test_a_huge_file_is_cut_as_it_is_read(make_repo):
    repo = make_repo("r")
    repo.commit("feat: data", {"data.txt": "".join(f"row {i} value\n" for i in range(400_000))})
    (node,) = diffs_of(repo)
    assert len(node.body) <= LIMIT + len("\n[truncated]")
    assert node.meta["truncated"] is True
    assert node.body.startswith("@@ -0,0 +1,400000 @@\n+row 0 value\n")


def peak(repo: Repo) -> int:
    """The peak of Python's allocations while a sync's diffs of ``repo`` are made."""
    tracemalloc.start()
    try:
        diffs_of(repo)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def big_file_repo(make_repo: Callable[[str], Repo], name: str, megabytes: int) -> Repo:
    repo = make_repo(name)
    repo.commit("feat: start", {"a.py": "A = 1\n"})
    line = "abcdefghij" * 9 + "klmnopqrs\n"  # 100 bytes
    repo.commit("feat: data", {"data.txt": line * (megabytes * 10_000)})
    repo.commit("fix: a", {"a.py": "A = 2\n"})
    return repo


def test_memory_does_not_grow_with_the_size_of_a_file(make_repo):
    small = peak(big_file_repo(make_repo, "small", 8))
    large = peak(big_file_repo(make_repo, "large", 32))
    # Held whole, the 32 MB file's patch took four times the 8 MB one's (and several copies
    # of it: decoded, split, sliced); cut as it streams, the peak is what the caps hold.
    assert large < small * 1.5, (small, large)
    assert large < 8 << 20


def test_a_commit_past_its_bytes_leaves_its_later_files_out(make_repo, monkeypatch):
    repo = make_repo("r")
    files = {f"f{i:02d}.txt": f"{i}\n" * 20_000 for i in range(10)}  # ~60 KB of patch each
    repo.commit("feat: many", files)
    monkeypatch.setattr(diffs, "MAX_COMMIT_BYTES", 200_000)
    cap = PatchCap(LIMIT)
    kept = cut(log_p(repo), cap, 65536)
    assert 0 < kept.count(b"\ndiff --git ") < 10
    assert cap.left_out == 10 - kept.count(b"\ndiff --git ")
    assert len(kept) < 200_000 + cap.file_bytes + 4096


def test_a_commit_past_the_count_cap_makes_the_first_files_diffs(make_repo):
    repo = make_repo("r")
    repo.commit("feat: many", {f"m/{i:04d}.py": f"V = {i}\n" for i in range(MAX_DIFFS + 7)})
    nodes = diffs_of(repo)
    assert len(nodes) == MAX_DIFFS
    assert {n.meta["path"] for n in nodes} == {f"m/{i:04d}.py" for i in range(MAX_DIFFS)}


def test_cutting_takes_time_linear_in_the_files_of_a_chunk():
    """One chunk holding many files' patches: each separator is found once (searching again
    for the next MARK at every file was quadratic)."""

    def cut(data: bytes) -> None:
        cap = PatchCap(LIMIT)
        cap.feed(data)
        cap.feed(b"", final=True)

    block = b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    header = MARK + b"a" * 40 + b"\x00\x001\x00me\x00subject\x00\n"
    small, large = costs(
        cut, header + b"\n".join([block] * 5_000), header + b"\n".join([block] * 20_000), limit=8
    )
    assert large < small * 8, (small, large)  # 4x the files: 4x the time, not 16x


def test_patch_files_under_a_symlink_are_the_links_text(make_repo, tmp_path: Path):
    """A committed link's diff is its target's path, as git stores it; never the target."""
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2 is the password\n")
    repo = make_repo("r")
    (repo.path / "link.md").symlink_to(secret)
    repo.commit("docs: link")
    (node,) = diffs_of(repo)
    assert str(secret) in node.body and "hunter2" not in node.body
