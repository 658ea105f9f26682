"""The validated settings and config kept beside their inputs: read back without pydantic while
the inputs are the same, validated again the moment one of them changes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from nexusmem_core.config import Frozen, ProjectConfig, load_config, schema, settings_from_env
from nexusmem_core.config import snapshot as snap
from nexusmem_core.errors import ConfigError

from .conftest import Repo, modules_imported_by, run_cli


def _config(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def _tamper(snapshot: Path, edit: dict[str, object]) -> None:
    """Change the values a snapshot holds, leaving its key: what a read returns then shows
    whether the snapshot was used."""
    kept = json.loads(snapshot.read_text())
    kept["values"]["retrieval"].update(edit)
    snapshot.write_text(json.dumps(kept))


def test_a_second_read_comes_from_the_snapshot(tmp_path: Path):
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    first = load_config(path)
    kept = tmp_path / snap.CONFIG_SNAPSHOT
    assert first.retrieval.budget == 900 and kept.exists()
    _tamper(kept, {"budget": 777})
    assert load_config(path).retrieval.budget == 777  # read back, not validated again


def test_an_edited_config_is_validated_again(tmp_path: Path):
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    load_config(path)
    _tamper(tmp_path / snap.CONFIG_SNAPSHOT, {"budget": 777})
    path.write_text(json.dumps({"retrieval": {"budget": 901}}))  # same size, same second
    assert load_config(path).retrieval.budget == 901


def test_a_peek_reads_the_snapshot_and_never_validates_nor_writes(tmp_path: Path):
    """What the walk's early child reads to guess its job: the snapshot's values while they
    are the file's, else nothing (never a validation, which imports pydantic)."""
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    kept = tmp_path / snap.CONFIG_SNAPSHOT
    assert snap.peek_config(path) is None and not kept.exists()  # never validated yet
    load_config(path)
    _tamper(kept, {"budget": 777})
    peeked = snap.peek_config(path)
    assert peeked is not None and peeked.retrieval.budget == 777  # the snapshot's, read back
    path.write_text(json.dumps({"retrieval": {"budget": 901}}))
    before = kept.read_bytes()
    assert snap.peek_config(path) is None and kept.read_bytes() == before  # stale: nothing
    kept.write_bytes(b"{not json")
    assert snap.peek_config(path) is None


def test_a_new_schema_invalidates_every_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    load_config(path)
    _tamper(tmp_path / snap.CONFIG_SNAPSHOT, {"budget": 777})
    monkeypatch.setattr(snap, "_schema_stamp", lambda: [1, 2])  # an upgrade's schema.py
    assert load_config(path).retrieval.budget == 900


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"key": 1}', b"[]", b"\xff\xfe"])
def test_a_damaged_snapshot_is_validated_again_and_replaced(tmp_path: Path, damage: bytes):
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    load_config(path)
    kept = tmp_path / snap.CONFIG_SNAPSHOT
    kept.write_bytes(damage)
    assert load_config(path).retrieval.budget == 900
    assert json.loads(kept.read_text())["values"]["retrieval"]["budget"] == 900


def test_an_invalid_config_is_never_snapshotted_nor_rewritten(tmp_path: Path):
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    load_config(path)
    kept = tmp_path / snap.CONFIG_SNAPSHOT
    before = kept.read_bytes()
    path.write_text('{"retrieval": {"budget": "lots"}}')
    for _ in range(2):  # the good snapshot does not mask the bad file, read after read
        with pytest.raises(ConfigError, match=r"'retrieval\.budget': must be a whole number"):
            load_config(path)
    assert path.read_text() == '{"retrieval": {"budget": "lots"}}'
    assert kept.read_bytes() == before


def test_a_missing_config_is_the_defaults_and_is_kept_as_such(tmp_path: Path):
    path = tmp_path / "config.json"
    assert load_config(path) == ProjectConfig()
    assert not path.exists() and (tmp_path / snap.CONFIG_SNAPSHOT).exists()
    path.write_text('{"retrieval": {"budget": 300}}')  # then one appears
    assert load_config(path).retrieval.budget == 300


def test_the_snapshot_holds_what_the_schema_made(tmp_path: Path):
    data = {
        "sources": {"diff": {"skipGlobs": ["*.lock"]}, "docs": {"extensions": [".md", ".txt"]}},
        "embed": {"host": "localhost:11434"},
    }
    path = _config(tmp_path, data)
    validated = schema.load_config(path)
    assert load_config(path) == validated  # the first read validates
    assert load_config(path) == validated  # the second reads the snapshot
    again = load_config(path)
    assert again.sources.docs.extensions == (".md", ".txt")  # tuples, as the schema has them
    assert again.sources.diff.skip_globs == validated.sources.diff.skip_globs
    assert again.model_dump() == validated.model_dump()


def test_the_snapshot_is_private(tmp_path: Path):
    load_config(_config(tmp_path, {}))
    mode = stat.S_IMODE(os.stat(tmp_path / snap.CONFIG_SNAPSHOT).st_mode)
    assert mode == 0o600


def test_a_folder_that_cannot_be_written_still_reads_its_config(tmp_path: Path):
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    path = _config(tmp_path, {"retrieval": {"budget": 900}})
    tmp_path.chmod(0o500)
    try:
        assert load_config(path).retrieval.budget == 900
        assert not (tmp_path / snap.CONFIG_SNAPSHOT).exists()
    finally:
        tmp_path.chmod(0o700)


def test_settings_follow_the_environment(home: Path, monkeypatch: pytest.MonkeyPatch):
    settings_from_env()
    kept = home / snap.SETTINGS_SNAPSHOT
    assert not home.exists()  # a home that is not there yet is not made for a snapshot
    home.mkdir()
    assert settings_from_env() == schema.Settings.from_env()
    assert kept.exists()
    assert settings_from_env().home == home
    monkeypatch.setenv("NEXUSMEM_LOG_LEVEL", "debug")
    assert settings_from_env().log_level == "DEBUG"
    monkeypatch.setenv("OLLAMA_HOST", ":11500")
    assert settings_from_env().ollama_host == "http://127.0.0.1:11500"
    monkeypatch.delenv("NEXUSMEM_LOG_LEVEL")
    assert settings_from_env().log_level == "WARNING"


def test_a_bad_variable_is_one_line_every_time(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NEXUSMEM_VECTOR", "sometimes")
    for _ in range(2):
        with pytest.raises(ConfigError, match="NEXUSMEM_VECTOR"):
            settings_from_env()


def test_a_mapping_is_its_own_input(home: Path, tmp_path: Path):
    other = tmp_path / "other-home"
    mapped = settings_from_env({"NEXUSMEM_HOME": str(other)})
    assert mapped.home == other
    assert settings_from_env().home == home  # the process's own environment is not that one


def test_frozen_reads_like_the_model():
    config = load_config(Path("/nonexistent/config.json"))  # the defaults, via the snapshot path
    view = snap._thaw(snap._freeze(ProjectConfig().model_dump()))
    assert isinstance(view, Frozen) and view == ProjectConfig() == config
    with pytest.raises(AttributeError, match="frozen"):
        view.retrieval = None
    changed = view.model_copy(update={"version": 1, "limits": view.limits})
    assert changed == view and hash(changed) == hash(view)
    budget = view.retrieval.model_copy(update={"budget": 100})
    assert budget.budget == 100 and view.retrieval.budget == 2000
    assert budget != view.retrieval
    with pytest.raises(AttributeError, match="no such setting: budgett"):
        view.retrieval.model_copy(update={"budgett": 1})
    with pytest.raises(AttributeError):
        _ = view.no_such_section


def test_a_command_whose_inputs_are_unchanged_does_not_import_pydantic(repo: Repo, home: Path):
    """The point of the snapshot, seen from the outside: the first command validates (and pays
    for pydantic), the next ones do not."""
    assert run_cli("init", cwd=repo.path).returncode == 0

    def imports(*args: str) -> set[str]:
        return modules_imported_by(repo.path, *args)

    (repo.path / ".nexusmem" / snap.CONFIG_SNAPSHOT).unlink(missing_ok=True)
    (home / snap.SHARED_SNAPSHOT).unlink(missing_ok=True)  # the home's copy would vouch too
    assert "pydantic" in imports("sync")  # no config snapshot yet: validated
    assert "pydantic" not in imports("sync")
    assert "pydantic" not in imports("query", "retry budget")
    config = repo.path / ".nexusmem" / "config.json"
    config.write_text(config.read_text().replace('"budget": 2000', '"budget": 1500'))
    assert "pydantic" in imports("query", "retry budget")  # edited: validated again
    assert "pydantic" not in imports("query", "retry budget")
