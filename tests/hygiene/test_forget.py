"""forget: a dry run first; then the value's nodes, index entries and vectors go, hashes
stay, and no sync brings the value back, here or (after an import) in another clone."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.collectors.agent import AGENT_NOTES
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.collectors.shell.record import build_record
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine

from ..conftest import NEXUSMEM, Repo, run_cli
from ..crash import Memory
from ..crash_forget import copies, forget_kills, kill_times, plant, timing
from ..fake_ollama import FakeOllama
from ..test_vectors import with_ollama

SECRET = "orchid-falcon-77"  # a made-up password the redaction table does not know


def log_command(home: Path, cmd: str, cwd: Path) -> None:
    record = build_record(cmd, {"shell": "bash", "exit": "0", "cwd": str(cwd)}, home)
    assert record is not None
    hooklog.append(home, record)


def tell(home: Path, root: Path, n: int, cmd: str) -> None:
    """A recall note as the agent hook logs it: told before ``cmd``, in the repository at
    ``root``."""
    note = {
        "v": 1,
        "id": f"note-{n}",
        "ts": 1_760_000_000.0 + n,
        "agent": "claude",
        "session": "s1",
        "event": "PreToolUse",
        "kind": "recall",
        "root": os.path.realpath(root),
        "cmd_hash": f"{n:064x}",
        "cmd": cmd,
        "after": None,
        "text": f"`{cmd}` failed once, 2 days ago: exit 1",
        "redactions": 0,
    }
    hooklog.append(home, note, AGENT_NOTES)


def leaky(repo: Repo, home: Path) -> Repo:
    """A commit message, a file and a shell command that hold the secret."""
    repo.commit(
        # Not next to a secret word: a value in prose like "the password is X" is redacted.
        f"chore: staging login\n\nThe staging login is {SECRET} until Friday.",
        {"deploy/staging.txt": f"staging login: {SECRET}\n"},
    )
    log_command(home, f"echo {SECRET} > /tmp/staging-note", repo.path)
    return repo


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-C", str(repo))


def table(repo: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(repo / ".nexusmem" / "memory.db") as conn:
        return conn.execute(sql).fetchall()


def file_bytes(repo: Path) -> bytes:
    db = repo / ".nexusmem" / "memory.db"
    return b"".join(p.read_bytes() for p in (db, db.with_name("memory.db-wal")) if p.exists())


def synced(repo: Repo, home: Path) -> Path:
    leaky(repo, home)
    assert cli(repo.path, "init").returncode == 0
    assert cli(repo.path, "sync").returncode == 0
    return repo.path


def test_the_dry_run_counts_by_source_and_writes_nothing(repo: Repo, home: Path):
    path = synced(repo, home)
    db = path / ".nexusmem" / "memory.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    out = cli(path, "forget", SECRET)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "would forget 3 node(s): diff 1, git 1, shell:hook 1"
    assert "add --yes" in out.stdout
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert table(path, "select count(*) from deny_list") == [(0,)]


def test_forget_removes_the_nodes_and_keeps_only_hashes(repo: Repo, home: Path):
    path = synced(repo, home)
    out = cli(path, "forget", SECRET, "--yes", "--reason", "leaked in a commit")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("forgot 3 node(s): diff 1, git 1, shell:hook 1\n")
    assert SECRET not in cli(path, "query", "orchid falcon", "--json").stdout
    assert table(path, "select count(*) from nodes_fts where nodes_fts match 'orchid'") == [(0,)]
    assert table(path, "select operation, kind, source from tombstones order by source") == [
        ("forget", "file_diff", "diff"),
        ("forget", "git_commit", "git"),
        ("forget", "shell_command", "shell:hook"),
    ]
    ((operation, count, detail),) = table(path, "select operation, count, detail from audit")
    assert (operation, count) == ("forget", 3)
    assert json.loads(detail)["by_source"] == {"diff": 1, "git": 1, "shell:hook": 1}
    ((kind, value, length, reason),) = table(
        path, "select kind, value, length, reason from deny_list"
    )
    assert (kind, length, reason) == ("literal", len(SECRET), "leaked in a commit")
    assert value != SECRET
    # Nothing of the value is left anywhere in the file: not in a table, a free page or the
    # old FTS segments (the tokenizer stores "orchid" and "falcon" lowercased).
    stored = file_bytes(path).lower()
    assert b"orchid" not in stored and b"falcon" not in stored
    listed = cli(path, "forget", "--list")
    assert SECRET not in listed.stdout
    assert f"literal, {len(SECRET)} chars, case-sensitive, leaked in a commit" in listed.stdout


def test_forgetting_again_adds_no_second_entry(repo: Repo, home: Path):
    path = synced(repo, home)
    cli(path, "forget", SECRET, "--yes")
    again = cli(path, "forget", SECRET, "--yes")
    assert again.stdout.startswith("no node held it\ndeny list: already had it")
    assert table(path, "select count(*) from deny_list") == [(1,)]


def test_no_sync_brings_it_back(repo: Repo, home: Path):
    path = synced(repo, home)
    cli(path, "forget", SECRET, "--yes")
    # The hook log is append-only: the line is still there, and another one joins it.
    log_command(home, f"echo {SECRET} | pass insert staging", path)
    log_command(home, "make test", path)
    report = json.loads(cli(path, "sync", "--json").stdout)
    assert (report["denied"], report["shell"]) == (1, 1)
    rebuilt = cli(path, "sync", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "denied: 4 node(s) holding a forgotten value, not written" in rebuilt.stdout
    assert table(path, f"select count(*) from nodes where body like '%{SECRET}%'") == [(0,)]
    assert table(path, "select count(*) from nodes where title = 'make test'") == [(1,)]


@pytest.mark.parametrize(
    "how",
    [[SECRET], [SECRET.upper(), "--ignore-case"], [r"orchid-\w+-\d+", "--regex"]],
    ids=["literal", "ignore-case", "regex"],
)
def test_a_note_the_agents_were_told_goes_with_the_nodes_and_stays_gone(
    repo: Repo, home: Path, how: list[str]
):
    leaky(repo, home)
    tell(home, repo.path, 1, f"echo {SECRET} > /tmp/staging-note")
    tell(home, repo.path, 2, "make test")
    assert cli(repo.path, "init").returncode == 0
    assert cli(repo.path, "sync").returncode == 0
    path = repo.path
    notes = "select id from agent_notes order by id"
    assert table(path, notes) == [("note-1",), ("note-2",)]

    dry = cli(path, "forget", *how)
    assert dry.returncode == 0, dry.stderr
    counted = "3 node(s): diff 1, git 1, shell:hook 1 and 1 agent note(s)"
    assert dry.stdout.splitlines()[0] == f"would forget {counted}"
    assert table(path, notes) == [("note-1",), ("note-2",)]
    dry_json = json.loads(cli(path, "forget", *how, "--json").stdout)
    assert (dry_json["matched"], dry_json["agent_notes"]) == (3, 1)

    done = cli(path, "forget", *how, "--yes")
    assert done.stdout.startswith(f"forgot {counted}\n"), done.stderr
    assert table(path, notes) == [("note-2",)]
    ((detail,),) = table(path, "select detail from audit where operation = 'forget'")
    assert json.loads(detail)["agent_notes"] == 1
    # The notes log keeps the line and another joins it; a sync that reads the whole log
    # again (as after a rotation) brings neither back.
    tell(home, path, 3, f"deploy --password-file <(echo {SECRET})")
    table(path, "update cursors set value = '0:' where source = 'agent:notes'")
    assert cli(path, "sync").returncode == 0
    assert table(path, notes) == [("note-2",)]
    assert SECRET.encode() not in file_bytes(path).lower()  # a regex keeps only its pattern


def test_an_imported_deny_list_forgets_the_notes_too(repo: Repo, home: Path, tmp_path: Path):
    path = synced(repo, home)
    cli(path, "forget", SECRET, "--yes")
    exported = tmp_path / "deny.json"
    assert cli(path, "forget", "--export", str(exported)).returncode == 0
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(path), str(clone)], check=True)
    tell(home, clone, 1, f"echo {SECRET}")
    cli(clone, "init")
    cli(clone, "sync")
    assert table(clone, "select count(*) from agent_notes") == [(1,)]
    dry = cli(clone, "forget", "--import", str(exported))
    assert dry.stdout.splitlines()[1] == "would forget 2 node(s): diff 1, git 1 and 1 agent note(s)"
    done = cli(clone, "forget", "--import", str(exported), "--yes")
    assert done.stdout.splitlines()[1] == "forgot 2 node(s): diff 1, git 1 and 1 agent note(s)"
    assert table(clone, "select count(*) from agent_notes") == [(0,)]


def test_export_then_import_protects_a_second_clone(repo: Repo, home: Path, tmp_path: Path):
    path = synced(repo, home)
    cli(path, "forget", SECRET, "--yes")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(path), str(clone)], check=True)
    cli(clone, "init")
    cli(clone, "sync")
    assert SECRET in cli(clone, "query", "orchid falcon").stdout  # git history brought it back

    exported = tmp_path / "deny.json"
    out = cli(path, "forget", "--export", str(exported))
    assert out.returncode == 0 and "as sensitive as the values it protects" in out.stderr
    assert exported.stat().st_mode & 0o777 == 0o600
    assert SECRET not in exported.read_text()

    dry = cli(clone, "forget", "--import", str(exported))
    assert dry.stdout.splitlines()[:2] == [
        f"would import 1 entr(ies) in {exported}, 1 new here",
        "would forget 2 node(s): diff 1, git 1",
    ]
    assert table(clone, "select count(*) from deny_list") == [(0,)]
    done = cli(clone, "forget", "--import", str(exported), "--yes")
    assert done.stdout.splitlines()[1] == "forgot 2 node(s): diff 1, git 1"
    assert SECRET not in cli(clone, "query", "orchid falcon").stdout
    rebuilt = json.loads(cli(clone, "sync", "--rebuild", "--json").stdout)
    assert rebuilt["denied"] == 2
    assert SECRET not in cli(clone, "query", "orchid falcon").stdout
    again = cli(clone, "forget", "--import", str(exported), "--yes")
    assert "1 entr(ies) in" in again.stdout and "0 new here" in again.stdout


def test_a_regex_is_kept_as_given_with_a_warning(repo: Repo, home: Path):
    path = synced(repo, home)
    out = cli(path, "forget", r"orchid-\w+-\d+", "--regex", "--ignore-case", "--yes")
    assert out.returncode == 0
    assert out.stderr.startswith("warning: a regex is kept in the deny list as given")
    assert out.stdout.startswith("forgot 3 node(s)")
    assert r"regex /orchid-\w+-\d+/, 14 chars, ignore-case" in cli(path, "forget", "--list").stdout
    bad = cli(path, "forget", "(unclosed", "--regex")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1


def test_a_pattern_that_backtracks_neither_hangs_forget_nor_a_later_sync(
    repo: Repo, home: Path, monkeypatch: pytest.MonkeyPatch
):
    """(a|aa)+$ takes Python's re hours on a long run of a's followed by another letter."""

    from nexusmem_core.hygiene import deny

    path = synced(repo, home)
    slow = "(a|aa)+$"
    repo.commit("docs: padding", {"pad.txt": "a" * 60 + "b\n"})
    assert cli(path, "sync").returncode == 0
    assert table(path, "select count(*) from nodes where ref like '%:pad.txt'") == [(1,)]
    before = table(path, "select count(*) from nodes")
    out = cli(path, "forget", slow, "--regex", "--yes")  # run_cli gives up after two minutes
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert "backtracks" in out.stderr and "nothing was changed" in out.stderr
    assert table(path, "select count(*) from deny_list") == [(0,)]
    assert table(path, "select count(*) from nodes") == before
    # On the list all the same (put there by an older NexusMem): sync keeps the new node out,
    # says why, and ends.
    (pid,) = table(path, "select id from projects")[0]
    with sqlite3.connect(path / ".nexusmem" / "memory.db") as conn:
        conn.execute(
            "insert into deny_list (project_id, kind, value, created_at) values (?, 'regex', ?, 0)",
            (pid, slow),
        )
    repo.commit("docs: more padding", {"pad2.txt": "a" * 80 + "c\n"})
    out = cli(path, "sync")
    assert out.returncode == 0
    assert "of them only because a deny-list pattern ran past 0.2 s" in out.stdout
    assert table(path, "select count(*) from nodes where ref like '%:pad2.txt'") == [(0,)]
    filter_ = deny.DenyFilter([deny.DenyEntry("regex", slow, "", None, False, None)])
    assert not filter_.matches(["plain text"]) and filter_.timed_out == 0


def test_stdin_gives_the_value_out_of_argv_history_and_logs(repo: Repo, home: Path):
    path = synced(repo, home)
    debug = {"NEXUSMEM_LOG_LEVEL": "DEBUG"}
    dry = run_cli("forget", "--stdin", "-C", str(path), input=SECRET + "\n", env=debug)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("would forget 3 node(s)")
    done = run_cli("forget", "--stdin", "--yes", "-C", str(path), input=SECRET + "\r\n", env=debug)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("forgot 3 node(s)")
    assert SECRET not in dry.stdout + dry.stderr + done.stdout + done.stderr
    assert SECRET not in " ".join(done.args)
    assert cli(path, "query", "staging login").stdout.count(SECRET) == 0


def test_stdin_takes_one_bounded_value_and_never_repeats_it(repo: Repo, home: Path):
    path = synced(repo, home)
    before = table(path, "select count(*) from nodes")
    long = SECRET * 300  # 4,800 characters: past the bound
    over = run_cli("forget", "--stdin", "--yes", "-C", str(path), input=long + "\n")
    two = run_cli("forget", "--stdin", "--yes", "-C", str(path), input=f"{SECRET}\nsecond\n")
    both = run_cli("forget", SECRET, "--stdin", "-C", str(path), input=SECRET)
    for done, says in (
        (over, "error: forget --stdin: the value is longer than 4096 characters"),
        (two, "error: forget: a value is matched within one line"),
        (both, "error: forget: give the value on the command line or with --stdin, not both"),
    ):
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith(says) and done.stderr.count("\n") == 1
        assert SECRET not in done.stderr
    assert table(path, "select count(*) from nodes") == before


def test_without_a_value_or_a_terminal_it_says_to_pipe_it(repo: Repo, home: Path):
    path = synced(repo, home)
    done = run_cli("forget", "--yes", "-C", str(path), input=SECRET + "\n")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "error: forget: no VALUE and no terminal to ask on: pipe the value in with "
        "`nexusmem forget --stdin`\n"
    )
    assert table(path, "select count(*) from deny_list") == [(0,)]


def test_on_a_terminal_the_value_is_asked_for_without_echo(repo: Repo, home: Path):
    path = synced(repo, home)
    pid, terminal = pty.fork()
    if pid == 0:  # the child: nexusmem on a terminal of its own
        os.execv(NEXUSMEM, [NEXUSMEM, "forget", "-C", str(path)])
    seen = b""
    while b"not shown" not in seen:
        seen += os.read(terminal, 1024)
    os.write(terminal, SECRET.encode() + b"\n")
    with contextlib.suppress(OSError):  # EIO once the child has closed the terminal
        while chunk := os.read(terminal, 1024):
            seen += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert b"would forget 3 node(s)" in seen
    assert SECRET.encode() not in seen


CRASH = """
import os, sys
from pathlib import Path
import anyio
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.hygiene import forget, remove

real = remove.delete_nodes

async def dying(db, ids):
    await real(db, list(ids)[:1])  # one node really deleted inside the transaction
    os._exit(9)  # then the process dies, as a kill -9 would

remove.delete_nodes = dying

async def main():
    async with open_engine(Settings.from_env(), Path(sys.argv[1])) as engine:
        await forget.forget(engine, sys.argv[2], apply=True)

anyio.run(main)
"""


def test_a_crash_half_way_leaves_the_database_as_it_was(repo: Repo, home: Path):
    path = synced(repo, home)
    query = "select (select count(*) from nodes), (select count(*) from nodes_fts), " + ", ".join(
        f"(select count(*) from {t})" for t in ("deny_list", "tombstones", "audit", "node_files")
    )
    before = table(path, query)
    died = subprocess.run(
        [sys.executable, "-c", CRASH, str(path), SECRET], env=os.environ, capture_output=True
    )
    assert died.returncode == 9, died.stderr
    assert table(path, query) == before
    assert cli(path, "forget", SECRET).stdout.startswith("would forget 3 node(s)")


KILLED_BEFORE_COMPACTING = """
import os, sys
from pathlib import Path
import anyio
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.hygiene import forget, remove

async def dying(db, **options):
    os._exit(9)  # committed, and killed before the VACUUM, as a kill -9 would

remove.compact = dying

async def main():
    async with open_engine(Settings.from_env(), Path(sys.argv[1])) as engine:
        await forget.forget(engine, sys.argv[2], apply=True)

anyio.run(main)
"""


def test_a_forget_killed_before_compacting_is_finished_by_the_next_command(repo: Repo, home: Path):
    path = synced(repo, home)
    db = path / ".nexusmem" / "memory.db"
    died = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_COMPACTING, str(path), SECRET],
        env=os.environ,
        capture_output=True,
    )
    assert died.returncode == 9, died.stderr
    assert copies(db, SECRET)  # the text the killed forget left behind
    assert table(path, "select count(*) from deny_list") == [(1,)]

    out = cli(path, "status")
    assert out.returncode == 0, out.stderr
    (line,) = out.stderr.splitlines()
    assert "compaction_resumed" in line and "vacuumed=True" in line
    assert "wal_truncated=True" in line
    assert copies(db, SECRET) == 0
    again = cli(path, "status")
    assert again.returncode == 0 and again.stderr == ""


def test_a_forget_killed_anywhere_leaves_no_copy_once_memory_is_next_opened(
    repo: Repo, home: Path, tmp_path: Path
):
    memory = Memory(repo.path, home, tmp_path / "snapshots", in_process=True)
    plant(memory, SECRET)
    startup, total = timing(memory, SECRET)
    kills = kill_times(startup, total, 5, random.Random(5))
    # The delays come from one timed run; on a machine whose load changes, every kill can land
    # after the run ended. Then the same kills, earlier, until one lands mid-run.
    for _ in range(5):
        results = forget_kills(memory, SECRET, kills)
        if any(not it.finished for it in results):
            break
        kills = [delay / 2 for delay in kills]

    assert [(it.delay, it.problems) for it in results if it.problems] == []
    assert any(not it.finished for it in results)  # killed mid-run, not after it ended
    assert all(it.after_open == 0 for it in results if it.committed)
    assert all(it.after_rerun == 0 for it in results if not it.committed)


async def test_forget_deletes_the_vectors_too(settings: Settings, repo: Repo, home: Path):
    leaky(repo, home)
    with FakeOllama() as ollama:
        async with open_engine(with_ollama(settings, ollama), repo.path, create=True) as engine:
            await handlers.sync(engine)
            db = engine.db
            seqs = [
                s
                for (s,) in await db.fetchall(
                    "select seq from nodes where body like ?", (f"%{SECRET}%",)
                )
            ]
            assert len(seqs) == 3
            marks = ",".join("?" * len(seqs))
            count = f"select count(*) from {{}} where {{}} in ({marks})"
            assert await db.fetchone(count.format("embeddings", "seq"), seqs) == (3,)
            report = await handlers.forget(engine, SECRET, apply=True)
            assert report.removed == 3
            assert await db.fetchone(count.format("embeddings", "seq"), seqs) == (0,)
            assert await db.fetchone(count.format("nodes_vec", "rowid"), seqs) == (0,)
            response = await handlers.search(engine, "orchid falcon")
    assert response.vector == "used"
    assert all(SECRET not in r.summary for r in response.results)


@pytest.mark.parametrize(
    "change",
    [
        {"salt": "\ud800"},
        {"reason": "\ud800"},
        {"length": 1e20},
        {"length": True},
        {"length": 10**30},
    ],
)
def test_an_export_edited_by_hand_is_one_line_not_a_traceback(
    repo: Repo, home: Path, tmp_path: Path, change: dict
):
    path = synced(repo, home)
    cli(path, "forget", SECRET, "--yes")
    exported = tmp_path / "deny.json"
    cli(path, "forget", "--export", str(exported))
    data = json.loads(exported.read_text())
    entries = data["entries"] if isinstance(data, dict) else data
    entries[0].update(change)
    exported.write_text(json.dumps(data))
    out = cli(path, "forget", "--import", str(exported), "--yes")
    assert out.returncode == 1 and out.stderr.startswith("error: forget --import:")
    assert "Traceback" not in out.stderr


def test_a_value_in_a_doc_files_path_leaves_no_byte_behind(repo: Repo, home: Path):
    repo.commit("docs: notes", {"docs/MangoSecret55.md": "# Notes\n\nSome notes.\n"})
    path = synced(repo, home)
    out = cli(path, "forget", "MangoSecret55", "--yes")
    assert out.returncode == 0, out.stderr
    for name in ("memory.db", "memory.db-wal"):
        file = path / ".nexusmem" / name
        if file.exists():
            assert b"MangoSecret55" not in file.read_bytes(), name
    cli(path, "sync")
    assert "MangoSecret55" not in cli(path, "query", "notes").stdout
    cli(path, "sync", "--rebuild")
    for name in ("memory.db", "memory.db-wal"):
        file = path / ".nexusmem" / name
        if file.exists():
            assert b"MangoSecret55" not in file.read_bytes(), f"after sync: {name}"
