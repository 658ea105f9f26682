"""``nexusmem init``: it says what to run next, and in a home that has set up a repository before
it costs what a no-op sync costs (issue 51): neither the settings nor the config it writes are
validated again, so pydantic is never imported."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from nexusmem_core.config import default_config_text, load_config
from nexusmem_core.config import snapshot as snap
from nexusmem_core.engine import user_config

from .conftest import Repo, modules_imported_by, run_cli

NEXT = "next: nexusmem sync"
THEN = 'then: nexusmem query "why did we ..."'


def test_init_ends_by_naming_the_sync_then_a_query(repo: Repo):
    lines = run_cli("init", cwd=repo.path).stdout.splitlines()
    assert lines[-2].startswith(NEXT + "   (reads the history once")
    assert lines[-1] == THEN
    again = run_cli("init", cwd=repo.path).stdout.splitlines()
    assert again[0].startswith("already initialised") and again[-1] == THEN


def test_from_elsewhere_the_next_steps_carry_the_same_path(repo: Repo):
    done = run_cli("init", "-C", str(repo.path), cwd=repo.path.parent)
    lines = done.stdout.splitlines()
    assert lines[-2].startswith(f"{NEXT} -C {repo.path}   ")
    assert lines[-1] == f"{THEN} -C {repo.path}"


def test_init_in_a_used_home_never_imports_pydantic(
    repo: Repo, make_repo: Callable[[str], Repo], home: Path
):
    assert "pydantic" in modules_imported_by(repo.path, "init")  # a new home: validated once
    other = make_repo("other")
    other.commit("first", {"a.txt": "a\n"})
    assert "pydantic" not in modules_imported_by(other.path, "init")
    assert run_cli("sync", "-q", cwd=other.path).returncode == 0
    written = json.loads((other.path / ".nexusmem" / "config.json").read_text())
    assert written == json.loads((repo.path / ".nexusmem" / "config.json").read_text())


def test_the_home_keeps_a_config_by_its_text_for_any_repository(tmp_path: Path, home: Path):
    home.mkdir()
    first, second = tmp_path / "a" / "config.json", tmp_path / "b" / "config.json"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(json.dumps({"retrieval": {"budget": 900}}))
    assert load_config(first, user_config(home)).retrieval.budget == 900
    shared = home / snap.SHARED_SNAPSHOT
    entries = json.loads(shared.read_text())
    entries[0]["values"]["retrieval"]["budget"] = 777  # what a read gives shows where from
    shared.write_text(json.dumps(entries))
    assert load_config(second, user_config(home)).retrieval.budget == 777
    assert (second.parent / snap.CONFIG_SNAPSHOT).exists()  # and now kept beside it too
    second.write_text(json.dumps({"retrieval": {"budget": 901}}))
    assert load_config(second, user_config(home)).retrieval.budget == 901  # other text


def test_the_home_keeps_a_bounded_number_of_configs(tmp_path: Path, home: Path):
    home.mkdir()
    for budget in range(snap.SHARED_ENTRIES + 3):
        path = tmp_path / str(budget) / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"retrieval": {"budget": 500 + budget}}))
        load_config(path, user_config(home))
    entries = json.loads((home / snap.SHARED_SNAPSHOT).read_text())
    assert len(entries) == snap.SHARED_ENTRIES
    assert entries[0]["values"]["retrieval"]["budget"] == 500 + snap.SHARED_ENTRIES + 2


def test_a_long_config_is_kept_beside_itself_only(tmp_path: Path, home: Path):
    home.mkdir()
    path = tmp_path / "config.json"
    padding = " " * snap.SHARED_TEXT_MAX
    path.write_text(json.dumps({"retrieval": {"budget": 900}}) + padding)
    assert load_config(path, user_config(home)).retrieval.budget == 900
    assert (tmp_path / snap.CONFIG_SNAPSHOT).exists()
    assert not (home / snap.SHARED_SNAPSHOT).exists()


def test_the_text_init_writes_is_the_schemas_and_is_kept(home: Path):
    from nexusmem_core.config import ProjectConfig, dump_config

    home.mkdir()
    assert default_config_text(home) == dump_config(ProjectConfig())
    shared = home / snap.SHARED_SNAPSHOT
    entries = json.loads(shared.read_text())
    entries[0]["text"] = "{}\n"
    shared.write_text(json.dumps(entries))
    assert default_config_text(home) == "{}\n"  # read back, not made again
