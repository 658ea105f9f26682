"""A secret in a name: a file called after a token, and an old memory that stored one.

Names reach disk in more places than bodies do: a node's ref, title, group and paths, its meta,
the node_files index and the sync's bookkeeping tables. Each is searched byte for byte.
"""

from __future__ import annotations

import json
import sqlite3

from nexusmem_core import redact as table
from nexusmem_core.hygiene.scrub import TABLE_CURSOR

from ..conftest import Repo, run_cli

TOKEN = "ghp_" + "N0tAR3alT0k3nBut1tH4sTh3Sh4pe0fOne12"


def stored_bytes(repo: Repo) -> bytes:
    folder = repo.path / ".nexusmem"
    return b"".join(
        path.read_bytes()
        for path in (folder / "memory.db", folder / "memory.db-wal", folder / "memory.db-shm")
        if path.exists()
    )


def named_after_the_token(repo: Repo) -> None:
    repo.commit(
        "docs: add the deploy notes",
        {f"notes/{TOKEN}.md": "# Deploy\n\nRun the deploy script.\n", f"{TOKEN}.txt": "x\n"},
    )
    repo.commit("fix: deploy retries on 502", {f"{TOKEN}.txt": "y\n"})


def test_a_file_named_after_a_token_leaves_no_copy_in_the_database(repo: Repo):
    named_after_the_token(repo)
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    done = run_cli("sync", "-C", str(repo.path))
    assert done.returncode == 0, done.stderr
    assert TOKEN.encode() not in stored_bytes(repo)
    assert TOKEN[:16].encode() not in stored_bytes(repo)
    found = run_cli("query", "-C", str(repo.path), "--json", "deploy notes retries")
    assert found.returncode == 0, found.stderr
    assert TOKEN not in found.stdout and "[REDACTED]" in found.stdout
    results = json.loads(found.stdout)["results"]
    assert results, "the redacted nodes are still found"


def test_scrub_secrets_redacts_refs_and_paths_an_old_version_stored(
    repo: Repo, monkeypatch, settings
):
    """An old version stored names as they were; scrub-secrets leaves no copy of them."""
    import anyio

    from nexusmem_core import handlers
    from nexusmem_core.engine import open_engine
    from nexusmem_core.store import rows as store_rows

    named_after_the_token(repo)

    async def old_sync() -> None:
        with monkeypatch.context() as patch:
            patch.setattr(store_rows, "redact_lines", lambda values: values)
            patch.setattr("nexusmem_core.sync.redact", lambda text: text)
            async with open_engine(settings, repo.path, create=True) as engine:
                await handlers.sync(engine, embed=False)

    anyio.run(old_sync)
    assert TOKEN.encode() in stored_bytes(repo)  # what the old version left

    dry = run_cli("scrub-secrets", "-C", str(repo.path))
    assert dry.returncode == 0, dry.stderr
    assert "would change" in dry.stdout and TOKEN not in dry.stdout
    done = run_cli("scrub-secrets", "-C", str(repo.path), "--yes")
    assert done.returncode == 0, done.stderr
    assert TOKEN.encode() not in stored_bytes(repo)
    assert TOKEN[:16].encode() not in stored_bytes(repo)
    again = run_cli("scrub-secrets", "-C", str(repo.path), "--json")
    assert json.loads(again.stdout)["found"] == 0
    # Search still finds them by what they say.
    found = run_cli("query", "-C", str(repo.path), "--json", "deploy retries")
    assert json.loads(found.stdout)["results"]


def test_the_first_sync_after_the_table_changed_says_so_once(repo: Repo):
    repo.commit("ci: deploy", {"deploy.sh": "echo deploy\n"})
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    first = run_cli("sync", "-C", str(repo.path))
    assert first.returncode == 0 and "redaction table" not in first.stdout + first.stderr
    db = repo.path / ".nexusmem" / "memory.db"

    # A memory written by an older table: a commit it let through, and another version mark.
    with sqlite3.connect(db) as conn:
        conn.execute(
            "update nodes set body = body || ' key AKIAQ3EGRT7XMPLE2KDI' where kind = 'git_commit'"
        )
        (changed,) = conn.execute("select count(*) from nodes where kind = 'git_commit'").fetchone()
        conn.execute("update cursors set value = 'older' where source = ?", (TABLE_CURSOR,))
    conn.close()
    repo.commit("fix: deploy retries", {"deploy.sh": "echo deploy --retry\n"})
    second = run_cli("sync", "-C", str(repo.path))
    assert second.returncode == 0, second.stderr
    out = second.stdout + second.stderr
    lines = [line for line in out.splitlines() if "redaction table changed" in line]
    assert (
        len(lines) == 1
        and f"{changed} stored nodes" in lines[0]
        and "scrub-secrets --yes" in lines[0]
    )
    assert "AKIA" not in out
    third = run_cli("sync", "-C", str(repo.path))
    assert "redaction table" not in third.stdout + third.stderr
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute(
            "select value from cursors where source = ?", (TABLE_CURSOR,)
        ).fetchone()
    conn.close()
    assert version == table.TABLE_VERSION
