"""The CLI as a user types it: a separate process, results on stdout, one-line errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from .conftest import NEXUSMEM, Repo, run_cli


def test_init_creates_the_workspace_once(repo: Repo, home: Path):
    first = run_cli("init", "-C", str(repo.path))
    assert first.returncode == 0, first.stderr
    ws = repo.path / ".nexusmem"
    assert (ws / ".gitignore").read_text() == "*\n"
    assert json.loads((ws / "config.json").read_text())["retrieval"]["budget"] == 2000
    assert (ws / "memory.db").is_file()
    before = {p.name: p.stat().st_mtime_ns for p in ws.iterdir() if p.name != "memory.db"}
    second = run_cli("init", "-C", str(repo.path))
    assert second.returncode == 0 and "already initialised" in second.stdout
    assert {p.name: p.stat().st_mtime_ns for p in ws.iterdir() if p.name != "memory.db"} == before
    assert not repo.git("status", "--porcelain")  # the workspace ignores itself


def test_sync_then_query_answers_from_history(repo: Repo, home: Path):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    synced = run_cli("sync", "-C", str(repo.path))
    assert synced.returncode == 0, synced.stderr
    assert ": 4 commits, " in synced.stdout
    out = run_cli("query", "why was the retry budget raised", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Relevant history for: why was the retry budget raised"
    assert re.match(
        r"- 2026-01-03 [0-9a-f]{12} commit [0-9a-f]{7} \[observed\] \[backfilled\] fix: raise the "
        "retry budget",
        lines[2],
    ), lines[2]
    assert lines[3].startswith("  S3 timed out under load")


def test_query_json_has_the_documented_shape(repo: Repo, home: Path):
    run_cli("init", "-C", str(repo.path))
    run_cli("sync", "-C", str(repo.path))
    out = run_cli("query", "retry budget", "--json", "--budget", "400", "-C", str(repo.path))
    data = json.loads(out.stdout)
    assert set(data) >= {"query", "budget", "tokens_used", "matched", "results"}
    assert data["budget"] == 400 and 0 < data["tokens_used"] <= 400
    first = data["results"][0]
    assert set(first) >= {
        "id",
        "kind",
        "title",
        "ts",
        "provenance",
        "trust",
        "score",
        "signal",
        "tokens",
        "summary",
        "project",
        "ref",
    }
    refs = [(r["kind"], r["ref"]) for r in data["results"]]
    sha = repo.git("rev-parse", "HEAD~2").strip()  # the fix that raised the budget
    assert len(sha) == 40
    assert ("git_commit", sha) in refs
    # The commit stands for its file diffs: one result, its best hunk in the excerpt.
    assert not [ref for kind, ref in refs if kind == "file_diff" and ref.startswith(sha)]
    commit = next(r for r in data["results"] if r["ref"] == sha)
    assert "src/retry.py:" in commit["summary"] and "RETRY_BUDGET = 5" in commit["summary"]


def test_doc_refs_are_path_and_heading(repo: Repo, home: Path):
    run_cli("init", "-C", str(repo.path))
    run_cli("sync", "-C", str(repo.path))
    out = run_cli("query", "BM25 offline model", "--json", "-C", str(repo.path))
    refs = [r["ref"] for r in json.loads(out.stdout)["results"]]
    assert "docs/guide.rst#Why BM25 first" in refs


def test_status_and_share(repo: Repo, home: Path):
    run_cli("init", "-C", str(repo.path))
    run_cli("sync", "-C", str(repo.path))
    status = run_cli("status", "-C", str(repo.path))
    assert "13 node(s)  2026-01-02 .. 2026-01-05" in status.stdout
    assert "git_commit" in status.stdout and "vectors" in status.stdout
    share = run_cli("status", "--share", "-C", str(repo.path))
    assert share.returncode == 0
    assert "13 node(s)" in share.stdout
    assert str(repo.path) not in share.stdout and str(Path.home()) not in share.stdout


def test_not_a_git_repository_is_one_line(tmp_path: Path, home: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    out = run_cli("sync", "-C", str(plain))
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"error: {plain} is not inside a git repository: run NexusMem in a repository or "
        "pass -C <path>"
    )
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_git_missing_from_path_is_one_line(repo: Repo, home: Path, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    out = run_cli("sync", "-C", str(repo.path), env={"PATH": str(bin_dir)})
    assert out.returncode == 1
    assert (
        out.stderr.strip()
        == "error: git is not installed or not on PATH: install git and try again"
    )


def test_corrupt_config_fails_loudly_and_is_kept(repo: Repo, home: Path):
    run_cli("init", "-C", str(repo.path))
    config = repo.path / ".nexusmem" / "config.json"
    config.write_text('{"retrieval": {"budget": "lots"}}')
    out = run_cli("sync", "-C", str(repo.path))
    assert out.returncode == 1
    assert str(config) in out.stderr and "retrieval.budget" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    again = run_cli("init", "-C", str(repo.path))
    assert again.returncode == 1
    assert config.read_text() == '{"retrieval": {"budget": "lots"}}'


def test_config_that_is_not_json_names_the_position(repo: Repo, home: Path):
    run_cli("init", "-C", str(repo.path))
    (repo.path / ".nexusmem" / "config.json").write_text("{nope")
    out = run_cli("query", "x", "-C", str(repo.path))
    assert out.returncode == 1 and "not valid JSON (line 1, column 2" in out.stderr


def test_uninitialised_repository_says_what_to_do(repo: Repo, home: Path):
    out = run_cli("query", "anything", "-C", str(repo.path))
    assert out.returncode == 1
    assert "run `nexusmem init`" in out.stderr and "Traceback" not in out.stderr


def test_bad_budget_is_a_usage_error(repo: Repo, home: Path):
    run_cli("init", "-C", str(repo.path))
    out = run_cli("query", "x", "--budget", "3", "-C", str(repo.path))
    assert out.returncode == 1 and out.stderr.startswith("error: --budget")


def test_scan_previews_without_writing(repo: Repo, home: Path):
    out = run_cli("scan-git", "--json", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    by_title = {r["title"]: r["signal"] for r in rows}
    assert (
        by_title["fix: raise the retry budget after S3 upload timeouts"]
        > by_title["chore: bump version"]
    )
    docs = json.loads(run_cli("scan-docs", "--json", "-C", str(repo.path)).stdout)
    assert {r["ref"] for r in docs} >= {"README.md#Install", "docs/guide.rst#Why BM25 first"}
    diff = run_cli("scan-diff", "-C", str(repo.path))
    assert "src/retry.py @" in diff.stdout and "dry run" in diff.stderr
    assert not (repo.path / ".nexusmem").exists()


def test_projects_lists_and_prunes(make_repo, home: Path):
    a, b = make_repo("alpha"), make_repo("beta")
    a.commit("feat: alpha thing", {"a.txt": "a\n"})
    b.commit("feat: beta thing", {"b.txt": "b\n"})
    for r in (a, b):
        run_cli("init", "-C", str(r.path))
        run_cli("sync", "-C", str(r.path))
    listed = json.loads(run_cli("projects", "--json").stdout)["projects"]
    assert {p["name"] for p in listed} == {"alpha", "beta"}
    shutil.rmtree(b.path / ".nexusmem")
    text = run_cli("projects").stdout
    assert "database missing" in text
    pruned = json.loads(run_cli("projects", "--prune", "--json").stdout)
    assert pruned["pruned"] == [str(b.path.resolve())]
    assert [p["name"] for p in pruned["projects"]] == ["alpha"]


def test_query_all_projects_tags_and_skips(make_repo, home: Path):
    a, b = make_repo("uploader"), make_repo("web")
    a.commit("fix: raise the retry budget after upload timeouts", {"r.py": "R = 5\n"})
    b.commit("feat: retry the login request once", {"l.py": "x = 1\n"})
    for r in (a, b):
        run_cli("init", "-C", str(r.path))
        run_cli("sync", "-C", str(r.path))
    out = run_cli("query", "--all-projects", "retry")
    assert out.stdout.startswith("scope   2 project(s): uploader, web")
    assert "[observed] [backfilled] [uploader] fix: raise the retry budget" in out.stdout
    assert "[observed] [backfilled] [web] feat: retry the login request once" in out.stdout
    shutil.rmtree(b.path)
    out = run_cli("query", "--all-projects", "retry")
    assert out.returncode == 0
    assert "[uploader]" in out.stdout and "skipped: " in out.stdout


def test_the_registry_is_private(home: Path, repo: Repo):
    registry = home / "projects.json"
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600
    assert run_cli("sync", "--no-embed", "-C", str(repo.path)).returncode == 0
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600


def test_corrupt_registry_reads_as_empty_with_a_warning(home: Path, repo: Repo):
    home.mkdir(parents=True)
    (home / "projects.json").write_text("{broken")
    out = run_cli("projects")
    assert out.returncode == 0 and "no projects yet" in out.stdout
    assert "registry_unreadable" in out.stderr
    run_cli("init", "-C", str(repo.path))
    assert (home / "projects.json.corrupt").read_text() == "{broken"
    assert json.loads((home / "projects.json").read_text())["projects"][0]["name"] == "project"


def test_agent_install_project_keeps_its_file_out_of_git(repo: Repo):
    exclude = repo.path / ".git" / "info" / "exclude"
    exclude.write_text("*.log")  # the user's own line, without a final newline
    out = run_cli("agent", "install", "--agent", "claude", "--project", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert f"added /.claude/settings.local.json to {exclude}: git ignores it" in out.stdout
    assert (repo.path / ".claude" / "settings.local.json").is_file()
    assert repo.git("status", "--porcelain") == ""
    assert exclude.read_text() == "*.log\n/.claude/settings.local.json\n"
    again = run_cli("agent", "install", "--agent", "claude", "--project", "-C", str(repo.path))
    assert again.returncode == 0 and "added" not in again.stdout
    assert exclude.read_text().count("settings.local.json") == 1


def test_agent_install_project_leaves_an_ignore_that_is_already_there(repo: Repo):
    repo.commit("chore: ignore local settings", {".gitignore": ".claude/\n"})
    exclude = repo.path / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    out = run_cli(
        "agent", "install", "--agent", "claude", "--project", "--json", "-C", str(repo.path)
    )
    assert [r["git_excluded"] for r in json.loads(out.stdout)["agents"]] == [None]
    assert not exclude.exists() and repo.git("status", "--porcelain") == ""


def test_a_reader_that_leaves_early_is_not_an_error(repo: Repo) -> None:
    """`nexusmem scan-git | head -1`: the closed pipe ends the command quietly."""
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    process = subprocess.Popen(
        [NEXUSMEM, "scan-git", "-C", str(repo.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader is gone before the first line is written
    _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert process.returncode == 141


def test_a_long_query_is_echoed_within_the_budget(repo: Repo, home: Path):
    from nexusmem_core.retrieval.pack import estimate_tokens

    run_cli("init", "-C", str(repo.path))
    run_cli("sync", "--no-embed", "-C", str(repo.path))
    text = "why was the retry budget raised\n" * 3200  # 100 KB, pasted with its newlines
    out = run_cli("query", text, "--budget", "100", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Relevant history for: why was the retry budget raised why")
    assert out.stdout.splitlines()[0].endswith("...")
    assert estimate_tokens(out.stdout) <= 100
    data = json.loads(
        run_cli("query", text, "--json", "--budget", "100", "-C", str(repo.path)).stdout
    )
    assert data["query"].endswith("...") and len(data["query"]) < 400
    header = f"Relevant history for: {data['query']}\n\n"
    note = estimate_tokens(f"\nnote: {data['cut']}")  # the line saying how it was cut
    assert (
        data["tokens_used"]
        == sum(r["tokens"] for r in data["results"]) + estimate_tokens(header) + note
    )
    assert data["tokens_used"] <= 100 and data["results"]
    every = json.loads(run_cli("query", text, "--json", "--budget", "100", "--all-projects").stdout)
    assert every["query"] == data["query"] and every["tokens_used"] <= 100
    short = json.loads(run_cli("query", "retry  budget", "--json", "-C", str(repo.path)).stdout)
    assert short["query"] == "retry budget"


def test_a_scan_limit_below_one_is_a_usage_error(repo: Repo):
    for scan in ("scan-git", "scan-diff", "scan-docs", "scan-shell", "scan-conversation"):
        for limit in ("-1", "0"):
            out = run_cli(scan, "--limit", limit, "-C", str(repo.path))
            assert out.returncode == 1, (scan, limit, out.stdout)
            assert out.stderr.startswith(f"error: {scan} --limit: give a number"), out.stderr
            assert len(out.stderr.strip().splitlines()) == 1 and not out.stdout
    shown = json.loads(run_cli("scan-git", "--limit", "2", "--json", "-C", str(repo.path)).stdout)
    assert len(shown) == 2


def test_an_empty_repository_path_is_refused(repo: Repo):
    for args in (("status", "-C", ""), ("-C", "", "status"), ("init", "-C", "")):
        out = run_cli(*args, cwd=repo.path)
        assert out.returncode == 2, args
        assert out.stderr.startswith("error: -C: the path is empty"), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and not out.stdout
    assert not (repo.path / ".nexusmem").exists()


def test_the_repository_path_may_come_before_the_command(repo: Repo, tmp_path: Path):
    assert run_cli("-C", str(repo.path), "init").returncode == 0
    assert run_cli("-C", str(repo.path), "sync", "--no-embed", "-q").returncode == 0
    before = run_cli("-C", str(repo.path), "status", "--json", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout)["nodes"] == 13
    # As with git, a later relative -C is taken from the one before it.
    nested = run_cli("-C", str(repo.path.parent), "status", "-C", repo.path.name, "--json")
    assert json.loads(nested.stdout)["root"] == json.loads(before.stdout)["root"]


def test_scan_docs_dates_sections_as_sync_writes_them(repo: Repo):
    import sqlite3

    from nexusmem_core.retrieval.pack import format_date

    rows = json.loads(run_cli("scan-docs", "--json", "-C", str(repo.path)).stdout)
    shown = {r["ref"]: r["date"] for r in rows}
    assert shown["README.md#Install"] == "2026-01-02"  # the commit that last changed it
    run_cli("init", "-C", str(repo.path))
    run_cli("sync", "-q", "--no-embed", "-C", str(repo.path))
    with sqlite3.connect(repo.path / ".nexusmem" / "memory.db") as conn:
        stored = conn.execute("select ref, ts from nodes where kind = 'doc_section'").fetchall()
    conn.close()
    assert shown == {ref: format_date(ts) for ref, ts in stored}
