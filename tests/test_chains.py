"""Failure -> fix chains: a failed command is linked to what resolved it, and a query that finds
the failure shows the fix right after it."""

from __future__ import annotations

import json
from pathlib import Path

from nexusmem_core.chains import link_failures
from nexusmem_core.collectors.agent.recall import AGENT_LOG
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.models import Node
from nexusmem_core.store.nodes import upsert_nodes

from .conftest import Repo, run_cli
from .test_shell_sync import log_command

T0 = 1_767_400_000.0
HOUR = 3600


def sync(repo: Repo, *flags: str) -> dict:
    if not (repo.path / ".nexusmem").exists():
        assert run_cli("init", "-C", str(repo.path)).returncode == 0
    result = run_cli("sync", "--json", "--no-embed", "-C", str(repo.path), *flags)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def query(repo: Repo, text: str, *flags: str) -> dict:
    result = run_cli("query", "--json", "-C", str(repo.path), text, *flags)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def titles(response: dict) -> list[tuple[str, str | None]]:
    return [(r["title"], r["link"]) for r in response["results"]]


def test_a_failure_is_linked_to_the_first_later_passing_run_and_shown_with_it(
    repo: Repo, home: Path
):
    log_command(home, "npm whoami", repo.path, 1, T0)
    log_command(home, "npm whoami", repo.path, 1, T0 + 60)
    log_command(home, "npm login", repo.path, 0, T0 + 120)
    log_command(home, "npm whoami", repo.path, 0, T0 + 180)
    log_command(home, "npm whoami", repo.path, 0, T0 + 240)
    report = sync(repo, "--link-failures")
    assert (report["failures_examined"], report["linked_retry"]) == (2, 2)
    assert sync(repo, "--link-failures")["linked_retry"] == 0  # idempotent

    found = titles(query(repo, "why did npm whoami fail"))
    failed = "you: npm whoami  (exit 1)"
    fix = ("you: npm whoami  (exit 0)", "retry")
    assert found[0] == (failed, None) and found[1] == fix
    text = run_cli("query", "-C", str(repo.path), "why did npm whoami fail").stdout
    assert "(exit 0)  -- linked as the fix (the same command passed)" in text

    status = json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)
    assert status["chains"] == {
        "failures": 2,
        "retry": 2,
        "discussion": 0,
        "unresolved": 0,
        "signature": 0,
        "trace": 0,
    }


def test_no_link_to_another_directory_a_later_day_or_an_earlier_pass(repo: Repo, home: Path):
    (repo.path / "web").mkdir()
    log_command(home, "make check", repo.path, 0, T0 - 60)  # before: not a fix
    log_command(home, "make check", repo.path, 2, T0)
    log_command(home, "make check", repo.path / "web", 0, T0 + 60)  # elsewhere
    log_command(home, "make check", repo.path, 0, T0 + 25 * HOUR)  # too late
    assert sync(repo, "--link-failures")["linked_retry"] == 0
    status = json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)
    assert status["chains"]["unresolved"] == 1


def test_commands_that_differ_only_in_a_secret_are_not_the_same_command(repo: Repo, home: Path):
    first = "curl -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1' https://x.test"
    second = "curl -H 'Authorization: Bearer bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2' https://x.test"
    log_command(home, first, repo.path, 22, T0)
    log_command(home, second, repo.path, 0, T0 + 60)
    assert sync(repo, "--link-failures")["linked_retry"] == 0


def test_an_agent_failure_takes_its_exit_code_from_the_shell_hook_or_stays_unknown(
    repo: Repo, home: Path
):
    log_command(home, "cargo build", repo.path, 101, T0)
    for ident, command in (("a1", "cargo build"), ("a2", "cargo test")):
        record = {
            "v": 1,
            "id": ident,
            "shell": "claude-code",
            "session": "s",
            "cwd": str(repo.path),
            "cmd": command,
            "cmd_hash": hooklog.command_hash(home, command),
            "outcome": "failed",
            "exit": None,
            "edited": [],
            "ts": T0 + 1,
        }
        hooklog.append(home, record, AGENT_LOG)
    assert sync(repo)["agent"] == 2
    found = {r["title"] for r in query(repo, "cargo")["results"]}
    assert "claude-code: cargo build  (exit 101)" in found
    assert "claude-code: cargo test  (exit unknown)" in found  # never an invented 1


async def test_a_discussion_that_names_every_significant_word_is_linked(
    settings: Settings, repo: Repo, home: Path
):
    log_command(home, "terraform plan -out deploy.plan", repo.path, 1, T0)
    sync(repo)

    def conversation(ref: str, text: str, ts: float) -> Node:
        source = "conversation:claude"
        return Node(
            pid, "conversation_turn", source, ref, text[:60], text, int(ts), 0.5, "recorded"
        )

    async with open_engine(settings, repo.path) as engine:
        pid = engine.project_id
        filler = [conversation(f"f{i}", f"terraform question {i}", T0 - 10) for i in range(9)]
        nodes = [
            *filler,
            # names terraform only: too common in this project's conversations to count
            conversation("vague", "terraform is slow today", T0 + 60),
            conversation("right", "The plan failed: deploy.plan needs -out before apply", T0 + 90),
            conversation("late", "terraform plan deploy.plan out", T0 + 30 * HOUR),
        ]
        async with engine.db.transaction():
            await upsert_nodes(engine.db, nodes)
            report = await link_failures(engine.db, pid)
            again = await link_failures(engine.db, pid)
        rows = await engine.db.fetchall("select dst, kind from links")
        (right,) = [n.id for n in nodes if n.ref == "right"]
    assert (report.discussion, again.discussion) == (1, 0)
    assert rows == [(right, "discussion")]


def test_all_projects_queries_follow_each_projects_own_chains(make_repo, home: Path):
    one, two = make_repo("one"), make_repo("two")
    for repo in (one, two):
        repo.commit("init", {"a.txt": "a"})
        log_command(home, "docker compose up", repo.path, 1, T0)
        log_command(home, "docker compose up", repo.path, 0, T0 + 30)
        sync(repo, "--link-failures")
    result = run_cli("query", "--json", "--all-projects", "docker compose up failed")
    found = json.loads(result.stdout)["results"]
    pairs = [(r["project"], r["link"]) for r in found]
    assert pairs[:4] in (
        [("one", None), ("one", "retry"), ("two", None), ("two", "retry")],
        [("two", None), ("two", "retry"), ("one", None), ("one", "retry")],
    )


def test_a_fix_that_arrives_in_a_later_sync_is_still_linked(repo: Repo, home: Path):
    log_command(home, "make lint", repo.path, 2, T0)
    log_command(home, "make docs", repo.path, 2, T0 - 3 * 24 * HOUR)
    first = sync(repo, "--link-failures")
    assert (first["failures_examined"], first["linked_retry"]) == (2, 0)
    assert sync(repo, "--link-failures")["failures_examined"] == 0  # nothing new: no work
    log_command(home, "make lint", repo.path, 0, T0 + 600)
    later = sync(repo, "--link-failures")
    # Only failures within a day before the new command are looked at again.
    assert (later["failures_examined"], later["linked_retry"]) == (1, 1)


def test_a_broken_agent_record_is_skipped_not_fatal(repo: Repo, home: Path):
    log = home / AGENT_LOG
    home.mkdir(parents=True, exist_ok=True)
    good = {"v": 1, "id": "ok1", "shell": "claude-code", "cwd": str(repo.path), "cmd": "make"}
    lines = [
        json.dumps({**good, "id": "nan", "ts": float("nan")}),  # Python's json writes NaN
        json.dumps({**good, "id": "huge", "ts": 1e300}),
        json.dumps({**good, "ts": T0, "exit": 0, "outcome": "ok"}),
    ]
    log.write_text("\n".join(lines) + "\n")
    report = sync(repo)
    assert (report["agent"], report["agent_skipped"]) == (1, 2)


async def test_a_command_named_only_by_everyday_words_is_not_bridged(
    settings: Settings, repo: Repo, home: Path
):
    log_command(home, "make", repo.path, 2, T0)
    sync(repo)
    async with open_engine(settings, repo.path) as engine:
        pid = engine.project_id
        text = "Let's make sure the release notes are right"
        source = "conversation:claude"
        chat = Node(
            pid,
            "conversation_turn",
            source,
            "c1",
            "release notes",
            text,
            int(T0 + 60),
            0.5,
            "recorded",
        )
        async with engine.db.transaction():
            await upsert_nodes(engine.db, [chat])
            report = await link_failures(engine.db, pid)
    assert report.discussion == 0


def test_a_fix_that_ranks_above_its_failure_moves_to_follow_it(repo: Repo, home: Path):
    command = "pytest tests/test_retry.py"
    base = {"v": 1, "shell": "claude-code", "session": "s", "cwd": str(repo.path), "cmd": command}
    base["cmd_hash"] = hooklog.command_hash(home, command)
    failure = {**base, "id": "f", "outcome": "failed", "exit": 1, "edited": [], "ts": T0}
    # The fix names the file the question asks about; the failure does not.
    fix = {**base, "id": "p", "outcome": "ok", "exit": 0, "edited": ["src/retry.py"], "ts": T0 + 60}
    for record in (failure, fix):
        hooklog.append(home, record, AGENT_LOG)
    sync(repo)
    found = [(r["ref"], r["link"]) for r in query(repo, "src/retry.py pytest")["results"]]
    refs = [ref for ref, _ in found]
    assert refs.index("f") + 1 == refs.index("p") and ("p", "retry") in found
    assert refs.count("p") == 1


YAML = (
    "Exit code 2\ntests/test_a.py:1: in <module>\n    import yaml\n"
    "E   ModuleNotFoundError: No module named 'yaml'\n==== 1 error in 0.05s ===="
)


def agent_run(
    home: Path, where: Path, ident: str, command: str, ts: float, error: str | None = None, **more
) -> None:
    """One command as the agent hook logs it: a failure keeps its error as the hook would."""
    from nexusmem_core.collectors.agent.signature import failure_fields

    kept, sig = failure_fields(error, str(where), str(home)) if error else (None, None)
    record = {
        "v": 1,
        "id": ident,
        "shell": "claude-code",
        "agent": "claude",
        "session": "s1",
        "cwd": str(where),
        "cmd": command,
        "cmd_hash": hooklog.command_hash(home, command),
        "outcome": "failed" if error else "ok",
        "exit": 2 if error else 0,
        "error": kept,
        "sig": sig,
        "edited": [],
        "ts": ts,
        **more,
    }
    hooklog.append(home, record, AGENT_LOG)


def links(repo: Repo) -> set[tuple[str, str, str]]:
    import sqlite3

    with sqlite3.connect(repo.path / ".nexusmem" / "memory.db") as db:
        rows = db.execute(
            "select s.ref, d.ref, l.kind from links l join nodes s on s.id = l.src "
            "join nodes d on d.id = l.dst where l.kind in ('signature', 'trace')"
        ).fetchall()
    return set(rows)


def test_a_failure_links_to_the_pass_after_which_its_error_was_gone(repo: Repo, home: Path):
    agent_run(home, repo.path, "f1", "pytest tests/test_a.py", T0, YAML)
    agent_run(home, repo.path, "f2", "pytest -k foo", T0 + 30, YAML)
    agent_run(home, repo.path, "i", "pip install pyyaml", T0 + 60)
    agent_run(home, repo.path, "p", "pytest -k foo", T0 + 90)
    # Another session, another directory: neither shows the error gone from this one.
    agent_run(home, repo.path, "x1", "pytest -x", T0, YAML, session="s2")
    agent_run(home, repo.path / "web", "x2", "pytest -x", T0 + 60, session="s2")
    report = sync(repo, "--link-failures")
    assert links(repo) == {("f1", "p", "signature"), ("f2", "p", "signature")}
    assert report["linked_signature"] == 2
    assert sync(repo, "--link-failures")["failures_examined"] == 0  # nothing new: no work
    status = json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)
    assert status["chains"]["signature"] == 2 and status["chains"]["unresolved"] == 1
    text = run_cli("status", "-C", str(repo.path)).stdout
    assert "2 by their error going away, 0 by a commit to a traced file, 1 with no fix" in text

    # Pasted as the agent saw it, the error line finds the three failures, and the pass
    # follows the first of the two it was linked from.
    found = titles(query(repo, "E   ModuleNotFoundError: No module named 'yaml'"))
    failed = {title.split(": ", 1)[1] for title, _ in found if title.endswith("(exit 2)")}
    assert {"pytest tests/test_a.py  (exit 2)", "pytest -k foo  (exit 2)"} <= failed
    assert "pytest -x  (exit 2)" in failed
    followed = [(found[i - 1][0], title, link) for i, (title, link) in enumerate(found) if link]
    assert followed[0][0].startswith(("claude-code: pytest -k foo", "claude-code: pytest tests"))
    assert followed[0][1:] in {
        ("claude-code: pytest -k foo  (exit 0)", "retry"),
        ("claude-code: pytest -k foo  (exit 0)", "signature"),
    }


def test_a_pass_of_another_command_that_failed_with_the_error_shows_it_gone(repo: Repo, home: Path):
    """`npm run build` and then `npx vite build` die on one error; after an install, `npm run
    build` passes: the error is gone for both, though `npx` never ran again."""
    vite = '[vite]: Rollup failed to resolve import "@acme/ui/Lightbox" from "src/Album.tsx".'
    agent_run(home, repo.path, "b1", "npm run build", T0, vite)
    agent_run(home, repo.path, "v1", "npx vite build --mode staging", T0 + 30, vite)
    agent_run(home, repo.path, "i", "npm install", T0 + 60)
    agent_run(home, repo.path, "b2", "npm run build", T0 + 90)
    sync(repo, "--link-failures")
    assert links(repo) == {("b1", "b2", "signature"), ("v1", "b2", "signature")}


def test_an_error_that_comes_back_was_not_fixed_by_the_pass_before(repo: Repo, home: Path):
    agent_run(home, repo.path, "f1", "pytest tests/test_a.py", T0, YAML)
    agent_run(home, repo.path, "p1", "pytest tests/test_b.py", T0 + 60)  # a pass, then ...
    agent_run(home, repo.path, "f2", "pytest tests/test_a.py", T0 + 120, YAML)  # ... back again
    agent_run(home, repo.path, "i", "pip install pyyaml", T0 + 180)
    agent_run(home, repo.path, "p2", "pytest tests/test_a.py", T0 + 240)
    sync(repo, "--link-failures")
    assert links(repo) == {("f1", "p2", "signature"), ("f2", "p2", "signature")}


def test_a_commit_touching_the_file_a_stack_trace_names_is_linked(repo: Repo, home: Path):
    trace = (
        'Exit code 1\nTraceback (most recent call last):\n  File "src/retry.py", line 3, in '
        "upload\n    budget = BUDGETS[region]\nKeyError: 'eu-west-3 upload budget'"
    )
    now = float(repo.clock + 3600)
    agent_run(home, repo.path, "f", "python -m app.upload", now, trace)
    agent_run(home, repo.path, "g", "python -m app.report", now, YAML)  # names no repo file
    repo.clock = int(now) + 600
    fix = repo.commit("Add the eu-west-3 budget", {"src/retry.py": "BUDGETS = {}\n"}, days=0)
    repo.commit("Unrelated", {"README.md": "# x\n"}, days=0)
    assert sync(repo, "--link-failures")["linked_trace"] == 1
    assert links(repo) == {("f", fix, "trace")}
    shown = run_cli("query", "-C", str(repo.path), "KeyError eu-west-3 upload budget").stdout
    assert "-- linked as the fix (a commit to a file its stack trace names)" in shown
    assert sync(repo, "--link-failures")["failures_examined"] == 0
