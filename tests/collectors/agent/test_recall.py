"""Memory reaches the agent at the moment of action: before a command that failed here before,
and right after one fails. Precision over recall: a note on an unrelated command is a bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...conftest import Repo, run_cli
from .hookrun import context, log_records, payload, run_hook


@pytest.fixture
def project(repo: Repo) -> Repo:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "-C", str(repo.path)).returncode == 0
    return repo


class Agent:
    """One Claude Code session driving the hook."""

    def __init__(self, repo: Repo, session: str) -> None:
        self.cwd, self.session, self.calls = repo.path, session, 0

    def _id(self) -> str:
        self.calls += 1
        return f"toolu_{self.session}_{self.calls}"

    def before(self, command: str) -> str | None:
        data = payload("pre_bash", self.cwd, command=command, session_id=self.session)
        return context(run_hook({**data, "tool_use_id": self._id()}))

    def ran(self, command: str) -> str | None:
        data = payload("post_bash_ok", self.cwd, command=command, session_id=self.session)
        return context(run_hook({**data, "tool_use_id": self._id()}))

    def failed(self, command: str, error: str = "Exit code 1\nboom") -> str | None:
        data = payload("failure_bash_exit", self.cwd, command=command, session_id=self.session)
        return context(run_hook({**data, "tool_use_id": self._id(), "error": error}))

    def edited(self, path: str) -> None:
        data = payload("post_edit", self.cwd, file_path=str(self.cwd / path))
        assert context(run_hook({**data, "session_id": self.session})) is None


def test_a_fix_is_named_before_the_command_runs_again_and_a_revert_is_reported(project: Repo):
    first = Agent(project, "s1")
    assert first.before("npm test") is None  # never seen: silence
    assert first.failed("npm test") is None  # the first failure has no history yet
    after_second = first.failed(f"cd {project.path} && npm test")
    assert after_second is not None and "`npm test` failed once" in after_second
    assert "No fix was ever recorded" in after_second
    first.edited("src/retry.py")
    assert first.ran("npm test") is None

    note = Agent(project, "s2").before("npm test; echo $?")
    assert note is not None
    assert "failed 2 times" in note and "exit 1" in note
    assert "Recorded fix: it passed at" in note and "after editing src/retry.py" in note
    assert "reverted" not in note

    Agent(project, "s3").ran("git checkout -- src/retry.py")
    note = Agent(project, "s4").before("npm test")
    assert (
        note is not None and "That fix was reverted since: `git checkout -- src/retry.py`" in note
    )


def test_the_same_note_comes_from_the_database_once_synced(project: Repo, home: Path):
    agent = Agent(project, "s1")
    agent.failed("make build")
    agent.edited("Makefile")
    agent.ran("make build")
    before = Agent(project, "s2").before("make build")
    assert run_cli("sync", "-q", "-C", str(project.path)).returncode == 0
    after = Agent(project, "s3").before("make build")
    assert before == after and after is not None and "after editing Makefile" in after


def test_a_fix_that_did_not_hold_is_told_as_such(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("pytest -x")
    agent.ran("pytest -x")
    agent.failed("pytest -x")
    note = Agent(project, "s2").before("pytest -x")
    assert note is not None and "failed again since" in note and "Recorded fix" not in note


def test_notes_are_rationed_per_command_and_per_session(project: Repo):
    history = Agent(project, "past")
    commands = [f"make target{i}" for i in range(7)]
    for command in commands:
        history.failed(command)
    agent = Agent(project, "now")
    notes = [agent.before(command) for command in commands]
    assert sum(note is not None for note in notes) == 5
    fresh = Agent(project, "fresh")
    assert fresh.before(commands[0]) is not None
    assert fresh.before(commands[0]) is None  # one note per command per session
    assert fresh.failed(commands[0]) is None  # ... also right after it fails again


UNRELATED = [
    "git status",
    "ls -la",
    "cat README.md",
    "npm test -- --watch",  # a different command from `npm test`
    "npm run test",
    "pytest -q tests/test_other.py",
    "cd src && npm test",  # another directory
    "python -m pytest",
    "make",
    "make build-docs",
    "cargo test",
    "go test ./...",
    "docker compose up -d",
    'curl -H "Authorization: Bearer abc123def456ghi789jkl012mno345pq" https://example.com',
    "git push origin main",
    "rg TODO",
    "echo npm test",
]


def test_unrelated_commands_never_get_a_note(project: Repo):
    history = Agent(project, "past")
    history.failed("npm test")
    history.failed(
        'curl -H "Authorization: Bearer zzz999yyy888xxx777www666vvv555uu" https://example.com'
    )
    history.failed("pytest -q tests/test_retry.py")
    for i, command in enumerate(UNRELATED):
        agent = Agent(project, f"fresh{i}")  # fresh sessions: rationing cannot hide a false note
        assert agent.before(command) is None, command


def test_session_start_gives_a_digest_of_recent_failures_resolved_first(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("make docs")
    agent.failed("npm test")
    agent.edited("src/retry.py")
    agent.ran("npm test")
    digest = context(run_hook(payload("session_start", project.path, session_id="s2")))
    assert digest is not None
    lines = digest.splitlines()
    assert "`npm test` failed 1x" in lines[1] and "fixed" in lines[1]
    assert "`make docs` failed 1x" in lines[2] and "no fix recorded" in lines[2]
    assert len(digest) <= 600  # about 150 tokens


def test_session_start_is_silent_without_failures(project: Repo):
    assert context(run_hook(payload("session_start", project.path))) is None


def test_session_start_syncs_in_the_background(project: Repo):
    import sqlite3
    import time

    Agent(project, "s1").failed("make docs")
    result = run_hook(payload("session_start", project.path, session_id="s2"))
    assert result.returncode == 0
    db = project.path / ".nexusmem" / "memory.db"
    deadline = time.monotonic() + 60
    found = 0
    while time.monotonic() < deadline and not found:
        with sqlite3.connect(db) as conn:
            (found,) = conn.execute(
                "select count(*) from nodes where source = 'agent:claude'"
            ).fetchone()
        time.sleep(0.1)  # polling a detached process: there is no event to wait on
    assert found == 1


def test_a_linked_worktree_shares_the_main_checkouts_memory(project: Repo, tmp_path: Path):
    worktree = tmp_path / "feature-wt"
    project.git("worktree", "add", "-q", str(worktree), "-b", "feature")
    agent = Agent(project, "s1")
    agent.cwd = worktree
    agent.failed("make build")
    agent.edited("src/retry.py")
    agent.ran("make build")
    note = Agent(project, "s2").before("make build")  # asked from the main checkout
    assert note is not None and "after editing src/retry.py" in note
    assert run_cli("sync", "-q", "-C", str(project.path)).returncode == 0
    again = Agent(project, "s3")
    again.cwd = worktree
    assert again.before("make build") == note


def test_an_echoed_status_is_the_commands_status_not_a_fix(project: Repo, home: Path):
    agent = Agent(project, "s1")
    agent.failed("npm test")
    cases = {"1\n": ("failed", 1), "exit=0\n": ("ok", 0), "": ("unknown", None)}
    for output in cases:
        data = payload("post_bash_ok", project.path, command="npm test; echo $?", session_id="s1")
        data["tool_response"]["stdout"] = "some output\n" + output
        run_hook({**data, "tool_use_id": f"echo-{len(output)}"})
    outcomes = [(r["outcome"], r["exit"]) for r in log_records(home)[1:]]
    assert outcomes == list(cases.values())
    note = Agent(project, "s2").before("npm test")
    assert note is not None and "failed 2 times" in note and "Recorded fix" in note


def test_the_same_command_in_another_directory_is_another_command(project: Repo):
    (project.path / "pkg" / "a").mkdir(parents=True)
    (project.path / "pkg" / "b").mkdir(parents=True)
    history = Agent(project, "s1")
    history.cwd = project.path / "pkg" / "a"
    history.failed("npm test")
    elsewhere = Agent(project, "s2")
    elsewhere.cwd = project.path / "pkg" / "b"
    assert elsewhere.before("npm test") is None
    assert Agent(project, "s3").before("npm test") is None  # the top is another place too
    same = Agent(project, "s4")
    same.cwd = project.path / "pkg" / "a"
    assert same.before("npm test") is not None


def test_a_symlinked_working_directory_is_the_same_place(project: Repo, tmp_path: Path):
    link = tmp_path / "link-to-project"
    link.symlink_to(project.path)
    through_link = Agent(project, "s1")
    through_link.cwd = link
    through_link.failed("make check")
    assert Agent(project, "s2").before("make check") is not None  # before any sync
    again = Agent(project, "s3")
    again.cwd = link
    assert again.before("make check") is not None


def test_a_search_that_finds_nothing_is_not_a_failure(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("grep -rn TODO src")
    agent.failed("git diff --quiet")
    agent.failed("cat app.log | grep -c ERROR")
    for command in ("grep -rn TODO src", "git diff --quiet", "cat app.log | grep -c ERROR"):
        assert Agent(project, f"fresh-{command}").before(command) is None, command
    agent.failed("grep -rn TODO src", error="Exit code 2\ngrep: src: No such file")
    assert Agent(project, "later").before("grep -rn TODO src") is not None  # 2 is an error


def test_a_failure_that_has_passed_many_times_since_is_history(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("git push")
    agent.ran("git push")
    agent.ran("git push")
    assert Agent(project, "s2").before("git push") is not None  # passed twice: still worth it
    agent.ran("git push")
    assert Agent(project, "s3").before("git push") is None  # three times: settled


def test_only_an_undo_of_the_fixed_files_counts_as_a_revert(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("make check")
    agent.edited("src/retry.py")
    agent.ran("make check")
    for command in (
        "git stash pop",
        "git restore --staged src/retry.py",
        "git checkout -- README.md",
        "git reset HEAD~1",
    ):
        agent.ran(command)
        note = Agent(project, f"after {command}").before("make check")
        assert note is not None and "reverted" not in note, command
    agent.ran("git reset --hard")
    note = Agent(project, "after reset").before("make check")
    assert note is not None and "reverted since: `git reset --hard`" in note


def test_a_fix_without_recorded_edits_is_never_reported_reverted(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("pytest -x")
    agent.ran("pytest -x")  # a flaky pass: nothing was edited
    agent.ran("git checkout -- src/retry.py")
    note = Agent(project, "s2").before("pytest -x")
    assert note is not None and "reverted" not in note


def test_a_denied_command_is_not_a_failure(project: Repo, home: Path):
    agent = Agent(project, "s1")
    agent.failed("rm -rf build", error="The user doesn't want to proceed with this tool use.")
    assert log_records(home)[0]["outcome"] == "denied"
    assert Agent(project, "s2").before("rm -rf build") is None


def test_an_older_database_still_gets_notes_from_the_unsynced_log(project: Repo):
    import sqlite3

    db = project.path / ".nexusmem" / "memory.db"
    with sqlite3.connect(db) as conn:  # what a NexusMem before schema 4 left behind
        conn.execute("drop table links")
        conn.execute("delete from schema_migrations where version = 4")
    Agent(project, "s1").failed("make docs")
    assert Agent(project, "s2").before("make docs") is not None


def test_a_torn_log_line_loses_only_itself(project: Repo, home: Path):
    Agent(project, "s1").failed("make docs")
    with (home / "agent-events.jsonl").open("ab") as log:
        log.write(b'{"v":1,"id":"torn","cmd":"ma')  # a writer killed mid-line
    Agent(project, "s1b").failed("make docs")
    assert len(log_records_lenient(home)) == 2
    note = Agent(project, "s2").before("make docs")
    assert note is not None and "failed 2 times" in note


def log_records_lenient(home: Path) -> list[dict]:
    import json

    out = []
    for line in (home / "agent-events.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


YAML_PYTEST = (
    "Exit code 2\n==== test session starts ====\ncollected 0 items / 1 error\n"
    "tests/test_a.py:1: in <module>\n    import yaml\n"
    "E   ModuleNotFoundError: No module named 'yaml'\n==== 1 error in 0.05s ===="
)
YAML_SCRIPT = (
    'Exit code 1\nTraceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
    "ModuleNotFoundError: No module named 'yaml'"
)
ASSERTION = "Exit code 1\nFAILED tests/test_a.py::test_load - AssertionError: assert 1 == 2"


def test_two_commands_that_die_on_one_error_share_what_fixed_it(project: Repo):
    agent = Agent(project, "s1")
    assert agent.failed("pytest tests/test_a.py", error=YAML_PYTEST) is None
    agent.ran("pip install pyyaml")
    agent.ran("pytest tests/test_a.py")
    note = Agent(project, "s2").failed("pytest -k foo", error=YAML_PYTEST)
    assert note is not None
    assert "this error happened here once before, with `pytest tests/test_a.py`" in note
    assert "What fixed it: it went away after `pip install pyyaml`" in note
    # Another program, the same error: the same answer, from the database once synced.
    assert run_cli("sync", "-q", "-C", str(project.path)).returncode == 0
    again = Agent(project, "s3").failed('python -c "import yaml"', error=YAML_SCRIPT)
    assert again is not None and "happened here 2 times before" in again
    assert "it went away after `pip install pyyaml`" in again


def test_before_a_command_its_error_names_the_install_that_fixed_it(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("pytest tests/test_a.py", error=YAML_PYTEST)
    agent.failed("pytest -k foo", error=YAML_PYTEST)
    agent.ran("pip install pyyaml")
    agent.ran("pytest -k foo")  # the other command shows the error gone
    note = Agent(project, "s2").before("pytest tests/test_a.py")
    assert note is not None and "`pytest tests/test_a.py` failed once" in note
    assert "No fix was ever recorded" in note  # the command itself never passed since ...
    assert "Its error also happened with `pytest -k foo`; it went away after " in note
    assert "`pip install pyyaml`" in note  # ... but its error went away


def test_the_same_command_with_another_error_gets_no_note(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("pytest tests/test_a.py", error=YAML_PYTEST)
    agent.ran("pip install pyyaml")
    agent.ran("pytest tests/test_a.py")
    assert Agent(project, "s2").failed("pytest tests/test_a.py", error=ASSERTION) is None


def test_errors_that_say_nothing_specific_never_meet(project: Repo):
    agent = Agent(project, "s1")
    for error in ("Exit code 1\nError", "Exit code 1\nError: exit code 1"):
        agent.failed("make build", error=error)
    agent.ran("make clean")
    agent.ran("make build")
    generic = ("Exit code 1\nError", "Exit code 2\nmake: *** [all] Error 2")
    for i, (command, error) in enumerate(zip(("make docs", "make lint"), generic, strict=True)):
        assert Agent(project, f"s{i}").failed(command, error=error) is None


def test_an_error_met_twice_in_one_session_and_never_fixed_gets_no_note(project: Repo):
    agent = Agent(project, "s1")
    agent.failed("pytest tests/test_a.py", error=YAML_PYTEST)
    assert agent.failed("pytest -k foo", error=YAML_PYTEST) is None  # the agent just saw it


def test_one_note_per_error_per_session(project: Repo):
    past = Agent(project, "s1")
    past.failed("pytest tests/test_a.py", error=YAML_PYTEST)
    past.ran("pip install pyyaml")
    past.ran("pytest tests/test_a.py")
    now = Agent(project, "s2")
    assert now.failed("pytest -k foo", error=YAML_PYTEST) is not None
    assert now.failed("pytest -k bar", error=YAML_PYTEST) is None  # said already


@pytest.mark.parametrize("how", ["variable", "config"])
def test_with_the_setting_off_no_error_text_is_kept(
    project: Repo, home: Path, how: str, monkeypatch: pytest.MonkeyPatch
):
    import json

    if how == "variable":
        monkeypatch.setenv("NEXUSMEM_AGENT_ERROR_CHARS", "0")
    else:
        (home / "config.json").write_text(json.dumps({"sources": {"agent": {"errorChars": 0}}}))
    Agent(project, "s1").failed("pytest tests/test_a.py", error=YAML_PYTEST)
    (record,) = log_records(home)
    assert (record["outcome"], record["error"], record["sig"]) == ("failed", None, None)
    assert "yaml" not in (home / "agent-events.jsonl").read_text()
    assert run_cli("sync", "-q", "-C", str(project.path)).returncode == 0  # the CLI takes it too


def test_a_reported_exit_code_keeps_stderr_as_the_error(project: Repo, home: Path):
    data = payload("post_bash_ok", project.path, command="pytest -k foo", session_id="s1")
    data["tool_response"] |= {"exit_code": 2, "stderr": YAML_PYTEST}
    run_hook(data)
    (record,) = log_records(home)
    assert (record["outcome"], record["exit"]) == ("failed", 2)
    assert "No module named 'yaml'" in record["error"] and record["sig"] is not None
