"""What a sync reads from a published repository (issue 47, attacks 2 and 6): committed
Markdown links that point out of the work tree, a binary file named ``.md``, a commit of more
files than a commit's diffs may hold, a Markdown file of more headings than a file's sections.
Each repository is built in a tmp dir, cloned, and synced and searched in the clone through
the CLI and the MCP server."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from mcp import Client

from nexusmem_core.collectors.diffs import MAX_DIFFS
from nexusmem_core.collectors.docs import MAX_SECTIONS
from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo, run_cli

# Words that exist only in the files the links point at.
ABSOLUTE, RELATIVE, CHAINED, THROUGH_DIR = "zorbulent", "quaffleweed", "snarkhollow", "gribnax"


def synced(clone: Path) -> dict:
    """``init`` and ``sync --json`` in ``clone``, as a user runs them; the sync's report."""
    assert run_cli("init", "-C", str(clone)).returncode == 0
    done = run_cli("sync", "--json", "--no-embed", "-C", str(clone))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def found(clone: Path, word: str) -> str:
    """What ``nexusmem query`` answers for ``word`` in ``clone``: results, or "" for none."""
    done = run_cli("query", word, "--json", "-C", str(clone))
    assert done.returncode == 0, done.stderr
    return json.dumps(json.loads(done.stdout)["results"])


async def searched(settings: Settings, clone: Path, word: str) -> str:
    """What an MCP client's ``search_memory`` answers for ``word`` in ``clone``."""
    async with Client(build_server(settings)) as client:
        result = await client.call_tool(
            "search_memory", {"query": word, "project_root": str(clone)}
        )
    assert not result.is_error, result.content
    return json.dumps(result.structured_content["results"])


def outside_files(tmp_path: Path) -> dict[str, Path]:
    """Files beside where the clone will be (never in any repository), each with its word."""
    outside = tmp_path / "outside"
    outside.mkdir()
    files = {}
    for name, word in zip("abc", (ABSOLUTE, RELATIVE, CHAINED), strict=True):
        files[word] = outside / f"{name}.md"  # the link's own text (its target) is committed
        files[word].write_text(f"# Private notes\n\nThe {word} passphrase is kept here.\n")
    return files


def publish_links(make_repo: Callable[[str], Repo], files: dict[str, Path]) -> Repo:
    """Doc links a stranger commits: absolute, ``../`` (relative to where a clone sits), a
    link to a link that leads out, one into ``.git``, and one to a doc of the repository."""
    source = make_repo("published")
    source.commit("docs: readme", {"README.md": "# Widget\n\nThe widget frobnicates.\n"})
    os.symlink(files[ABSOLUTE], source.path / "absolute.md")
    os.symlink(f"../outside/{files[RELATIVE].name}", source.path / "relative.md")
    os.symlink(files[CHAINED], source.path / "hop.txt")
    os.symlink("hop.txt", source.path / "chained.md")
    os.symlink(".git/config", source.path / "config.md")
    os.symlink("README.md", source.path / "same.md")
    source.commit("docs: more pages")
    return source


async def test_a_doc_linked_out_of_the_clone_is_never_read(
    make_repo, cloned, tmp_path: Path, settings: Settings
):
    clone = cloned(publish_links(make_repo, outside_files(tmp_path)))
    assert os.path.islink(clone / "absolute.md")  # git checked the links out as links
    report = synced(clone)
    for word in (ABSOLUTE, RELATIVE, CHAINED, "repositoryformatversion"):  # .git/config's
        assert word not in found(clone, word)
        assert word not in await searched(settings, clone, word)
    assert "frobnicates" in found(clone, "frobnicates")  # the repository's own docs stand
    # absolute, relative, chained and config: one line says why; same.md is read.
    assert report["docs_skipped"] == 4
    assert any("link leading out of the work tree" in note for note in report["notes"])


def test_a_doc_directory_turned_into_a_link_is_not_followed(make_repo, cloned, tmp_path: Path):
    source = make_repo("published")
    source.commit("docs: guide", {"docs/guide.md": "# Guide\n\nHow to frobnicate.\n"})
    clone = cloned(source)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "guide.md").write_text(f"# Elsewhere\n\nThe {THROUGH_DIR} key.\n")
    (clone / "docs" / "guide.md").unlink()
    (clone / "docs").rmdir()
    os.symlink(outside, clone / "docs")  # git still lists docs/guide.md
    report = synced(clone)
    assert THROUGH_DIR not in found(clone, THROUGH_DIR)
    assert report["docs_skipped"] == 1


async def test_a_binary_file_named_md_is_skipped_and_counted(make_repo, cloned, settings: Settings):
    source = make_repo("published")
    junk = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n# wombatine\n\n" + bytes(range(256)) * 40
    source.commit("docs: a picture", {"README.md": "# Widget\n\nFrobnicates.\n"})
    (source.path / "logo.md").write_bytes(junk)
    source.commit("docs: the logo")
    clone = cloned(source)
    report = synced(clone)
    assert "wombatine" not in found(clone, "wombatine")
    assert "wombatine" not in await searched(settings, clone, "wombatine")
    assert report["docs_skipped"] == 1
    assert any("1 binary" in note for note in report["notes"])


def test_a_commit_of_many_files_makes_at_most_the_cap_of_diffs(make_repo, cloned):
    source = make_repo("published")
    source.commit("feat: start", {"app.py": "print('hello')\n"})
    extra = 500
    files = {f"gen/mod{i:04d}.py": f"VALUE_{i} = {i}\n" for i in range(MAX_DIFFS + extra)}
    source.commit("chore: generate the modules", files)
    clone = cloned(source)
    report = synced(clone)
    assert report["diffs"] == 1 + MAX_DIFFS  # app.py's, and the cap's of the big commit
    assert report["diffs_left_out"] == extra
    with closing(sqlite3.connect(clone / ".nexusmem" / "memory.db")) as db:
        (count,) = db.execute("select count(*) from nodes where kind = 'file_diff'").fetchone()
        (listed,) = db.execute(
            "select json_extract(meta, '$.files_changed') from nodes where kind = 'git_commit' "
            "and title = 'chore: generate the modules'"
        ).fetchone()
    assert count == 1 + MAX_DIFFS
    assert listed == MAX_DIFFS + extra  # the commit node still says how many it touched


def test_a_markdown_file_of_many_headings_makes_at_most_the_cap_of_sections(make_repo, cloned):
    source = make_repo("published")
    extra = 500
    parts = "".join(f"## Heading {i}\n\nText of part {i}.\n\n" for i in range(MAX_SECTIONS + extra))
    text = "An introduction.\n\n" + parts  # a section of its own, under the file's name
    source.commit("docs: a long page", {"PAGE.md": text})
    clone = cloned(source)
    report = synced(clone)
    assert report["docs_sections"] == MAX_SECTIONS
    assert report["docs_cut"] == 1
    assert "Heading 3" in found(clone, "Heading 3")
