"""What a new user meets in the first hour, typed as they would type it: the ways out that
errors name, help and version, the lines sync and status print (issue 51)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .conftest import Repo, run_cli


def test_a_damaged_database_is_rebuilt_by_doing_what_its_error_says(repo: Repo, home: Path):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    db = repo.path / ".nexusmem" / "memory.db"
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    db.write_bytes(b"not a database " * 1000)

    out = run_cli("status", "-C", str(repo.path))
    assert out.returncode == 1
    said = re.search(r"move the file aside and run `nexusmem (\w+)`", out.stderr)
    assert said, out.stderr
    db.rename(db.with_name("memory.db.damaged"))  # "move the file aside"
    again = run_cli(said.group(1), "-C", str(repo.path))  # "and run `nexusmem sync`"
    assert again.returncode == 0, again.stderr
    status = json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)
    assert status["nodes"] > 0


def test_hook_status_calls_a_current_hook_installed_under_another_home(tmp_path: Path):
    for shell in ("bash", "zsh", "fish"):
        user = {"HOME": str(tmp_path / shell), "XDG_CONFIG_HOME": str(tmp_path / shell / "cfg")}
        first = {**user, "NEXUSMEM_HOME": str(tmp_path / "first-home")}
        assert run_cli("hook", "install", "--shell", shell, env=first).returncode == 0
        later = {**user, "NEXUSMEM_HOME": str(tmp_path / "later-home")}
        out = run_cli("hook", "status", "--shell", shell, env=later)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"{shell}: installed ("), out.stdout
        assert f"it records into {tmp_path / 'first-home'}" in out.stderr
        assert run_cli("hook", "status", "--shell", shell, env=first).stderr == ""


def test_version_bare_command_and_a_subcommands_unknown_flag():
    from importlib.metadata import version

    out = run_cli("--version")
    assert out.returncode == 0 and out.stdout == f"nexusmem {version('nexusmem')}\n"
    bare = run_cli()
    assert bare.returncode == 0 and bare.stderr == "", bare.stderr
    assert bare.stdout.startswith("usage: nexusmem ") and "query" in bare.stdout
    unknown = run_cli("query", "--bogus", "retry")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("usage: nexusmem query "), unknown.stderr
    assert unknown.stderr.rstrip().endswith("error: unrecognized arguments: --bogus")


def test_each_result_names_its_node_and_commit_as_the_json_does(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    asked = ("query", "retry budget", "--no-vector", "-C", str(repo.path))
    text = run_cli(*asked).stdout
    results = json.loads(run_cli(*asked, "--json").stdout)["results"]
    headers = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(headers) == len(results) > 1
    for header, result in zip(headers, results, strict=True):
        named = f"- {result['date']} {result['id'][:12]} "
        if result["kind"] in ("git_commit", "file_diff"):
            named += f"commit {result['ref'][:7]} "
        assert header.startswith(named), (header, result)


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    """``nexusmem ARGS`` with its stdout on a pseudo-terminal, as a person sees it."""
    import os
    import pty
    import subprocess

    from .conftest import NEXUSMEM

    leader, follower = pty.openpty()
    with subprocess.Popen(
        [NEXUSMEM, *args], stdout=follower, stderr=subprocess.PIPE, env={**os.environ, **env}
    ) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def test_the_sync_line_says_what_changed_in_words_and_colours_only_a_terminal(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    first = run_cli("sync", "--no-embed", "-C", str(repo.path))
    assert first.returncode == 0, first.stderr
    line = first.stdout.splitlines()[0]
    assert re.fullmatch(
        r"synced project in \d+\.\d\ds \(the whole history read\): 4 commits, 5 file diffs, "
        r"\d+ doc sections written",
        line,
    ), line
    assert "(s)" not in first.stdout and "\x1b" not in first.stdout  # piped: no colour
    again = run_cli("sync", "--no-embed", "-C", str(repo.path)).stdout.splitlines()[0]
    assert re.fullmatch(r"synced project in \d+\.\d\ds: nothing new", again), again
    repo.commit("fix: one more", {"a.txt": "a\n"})
    shown = _on_a_terminal("sync", "--no-embed", "-C", str(repo.path), env={})
    assert "\x1b[32msynced\x1b[0m project in " in shown, repr(shown)
    assert "\x1b[1m1\x1b[0m commit, \x1b[1m1\x1b[0m file diff written" in shown, repr(shown)
    repo.commit("fix: and another", {"b.txt": "b\n"})
    plain = _on_a_terminal("sync", "--no-embed", "-C", str(repo.path), env={"NO_COLOR": "1"})
    assert "\x1b" not in plain and "1 commit, 1 file diff written" in plain, repr(plain)


def test_after_a_rebase_the_sync_line_says_old_commits_wait_to_be_pruned(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    repo.git("commit", "-q", "--amend", "-m", "docs: explain the architecture, reworded")
    out = run_cli("sync", "--no-embed", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert "rewritten: 1 commit a rewrite (a rebase) left behind still show" in out.stdout
    assert "`nexusmem sync --prune-unreachable --yes`" in out.stdout


def test_after_a_rebase_status_says_old_commits_wait_to_be_pruned_and_how(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    before = run_cli("status", "-C", str(repo.path)).stdout
    assert "rewritten" not in before
    repo.git("commit", "-q", "--amend", "-m", "docs: explain the architecture, reworded")
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    out = run_cli("status", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert (
        "\nrewritten  1 commit a rewrite (a rebase) left behind still show in answers beside "
        "their new copies: pruned 14 days after, or now with "
        "`nexusmem sync --prune-unreachable --yes`\n"
    ) in out.stdout, out.stdout
    status = json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)
    assert status["unreachable_waiting"] == 1 and status["prune_unreachable_days"] == 14
    assert run_cli("sync", "--prune-unreachable", "--yes", "-C", str(repo.path)).returncode == 0
    assert "rewritten" not in run_cli("status", "-C", str(repo.path)).stdout


def test_status_before_a_first_sync_says_never_and_not_that_head_moved(repo: Repo):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    out = run_cli("status", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert "last sync  never (run `nexusmem sync` to read the history)\n" in out.stdout
    assert "HEAD has moved" not in out.stdout
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    repo.commit("fix: after the sync", {"c.txt": "c\n"})
    moved = run_cli("status", "-C", str(repo.path)).stdout
    assert "(HEAD has moved: run `nexusmem sync`)" in moved


def test_status_speaks_of_a_model_that_did_not_answer_only_when_one_did_not():
    from nexusmem_core.models import Status
    from nexusmem_core.render import status_text

    def sessions(**states: int) -> str:
        s = Status("p", "p", "/p", "/p/db", 1, {}, 0, 0, "2026-01-01", "a", "a", "off", 9)
        s.sessions = states
        (line,) = [x for x in status_text(s).splitlines() if x.startswith("sessions")]
        return line

    assert sessions(done=3, queued=0, pending=0) == "sessions   3 summarised, 0 queued"
    assert sessions(done=3, queued=1, pending=2) == (
        "sessions   3 summarised, 1 queued, 2 pending (the chat model did not answer)"
    )


def test_a_limit_is_not_reported_as_the_total(repo: Repo):
    scan = run_cli("scan-git", "--limit", "2", "-C", str(repo.path))
    assert scan.returncode == 0, scan.stderr
    assert len(scan.stdout.splitlines()) == 2
    assert "the first 2 of the 4 nodes a sync would write (dry run" in scan.stderr, scan.stderr
    whole = run_cli("scan-git", "-C", str(repo.path)).stderr
    assert "4 nodes would be written (dry run: nothing was)" in whole
    docs = run_cli("scan-docs", "--json", "-C", str(repo.path)).stdout
    one = run_cli("scan-docs", "--limit", "1", "-C", str(repo.path)).stderr
    assert f"the first 1 of the {len(json.loads(docs))} nodes a sync would write" in one, one

    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    listed = run_cli("stale", "--min-age-days", "1", "--limit", "1", "-C", str(repo.path))
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 1  # of the fixture's doc sections, from January
    assert listed.stderr.startswith(
        "the oldest 1 of 4 non-observed nodes older than 1 days with nothing confirming them: "
        "--limit N shows N (nothing was changed)"
    ), listed.stderr
    every = run_cli("stale", "--min-age-days", "1", "-C", str(repo.path))
    assert len(every.stdout.splitlines()) == 4
    assert every.stderr.startswith("4 non-observed nodes older than 1 days"), every.stderr


def test_a_file_diff_is_named_by_its_commit_too():
    from nexusmem_core.models import SearchResult
    from nexusmem_core.render import handle

    sha = "0123456789abcdef0123456789abcdef01234567"
    refs = {"git_commit": sha, "file_diff": f"{sha}:src/app.py", "doc_section": "a.md#x"}
    shown = {
        kind: handle(
            SearchResult(
                id="f" * 64, kind=kind, title="t", ts=None, date="date unknown",
                provenance="observed", trust="candidate", score=1.0, signal=0.5, tokens=1,
                summary="", project="p", ref=refs[kind],
            )
        )
        for kind in refs
    }  # fmt: skip
    assert shown == {
        "git_commit": "ffffffffffff commit 0123456",
        "file_diff": "ffffffffffff commit 0123456",
        "doc_section": "ffffffffffff",
    }
