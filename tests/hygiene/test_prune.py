"""sync --prune-source: a dry run first; then one source's nodes go, audited, its cursor is
reset, and the output says how to keep it from coming back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..conftest import Repo, run_cli
from .test_forget import log_command, table


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-C", str(repo))


def synced(repo: Repo, home: Path) -> Path:
    log_command(home, "make test", repo.path)
    log_command(home, "git push --force", repo.path)
    cli(repo.path, "init")
    assert cli(repo.path, "sync").returncode == 0
    return repo.path


def counts(path: Path) -> dict[str, int]:
    return dict(table(path, "select source, count(*) from nodes group by source"))


def test_the_dry_run_says_what_would_go_and_removes_nothing(repo: Repo, home: Path):
    path = synced(repo, home)
    before = counts(path)
    out = cli(path, "sync", "--prune-source", "shell:hook")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "would remove 2 node(s) from shell:hook (shell_command 2)",
        "a later sync reads shell:hook again while it is enabled: set sources.shell.enabled "
        "to false in .nexusmem/config.json; `nexusmem hook remove` stops the recording",
        "dry run: nothing was changed; add --yes to remove them",
    ]
    assert counts(path) == before
    assert table(path, "select count(*) from audit") == [(0,)]


def test_yes_removes_the_source_resets_its_cursor_and_audits(repo: Repo, home: Path):
    path = synced(repo, home)
    before = counts(path)
    assert table(path, "select count(*) from cursors where source = 'shell:hook'") == [(1,)]
    out = cli(path, "sync", "--prune-source", "shell:hook", "--yes", "--json")
    report = json.loads(out.stdout)
    assert (report["removed"], report["reset"]) == (2, ["the shell:hook cursor"])
    after = counts(path)
    assert "shell:hook" not in after
    assert after == {k: v for k, v in before.items() if k != "shell:hook"}
    assert table(path, "select count(*) from cursors where source = 'shell:hook'") == [(0,)]
    assert table(path, "select count(*), min(operation) from tombstones") == [(2, "prune-source")]
    ((operation, count, detail),) = table(path, "select operation, count, detail from audit")
    assert (operation, count, json.loads(detail)["source"]) == ("prune-source", 2, "shell:hook")
    # Still enabled, it comes back whole; turned off as the output says, it stays out.
    cli(path, "sync")
    assert counts(path) == before
    config = path / ".nexusmem" / "config.json"
    settings = json.loads(config.read_text())
    settings["sources"]["shell"]["enabled"] = False
    config.write_text(json.dumps(settings))
    cli(path, "sync", "--prune-source", "shell:hook", "--yes")
    cli(path, "sync")
    assert counts(path) == after


def test_a_pruned_source_that_stays_enabled_is_read_again(repo: Repo, home: Path):
    path = synced(repo, home)
    cli(path, "sync", "--prune-source", "docs", "--yes")
    assert "docs" not in counts(path)
    # The record of parsed doc files went too, so the next sync parses them again.
    cli(path, "sync")
    assert counts(path)["docs"] == 4


def test_an_unknown_source_is_one_line_naming_those_present(repo: Repo, home: Path):
    path = synced(repo, home)
    out = cli(path, "sync", "--prune-source", "bash")
    assert out.returncode == 1
    assert out.stderr == (
        "error: sync --prune-source: no source 'bash'; sources here: diff, docs, git, shell:hook\n"
    )
