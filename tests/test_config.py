"""config.json and the environment: validated, with errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusmem_core.config import ProjectConfig, Settings, dump_config, load_config
from nexusmem_core.errors import ConfigError

from .conftest import Repo, run_cli


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_defaults_round_trip(tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text(dump_config(ProjectConfig()))
    assert load_config(path) == ProjectConfig()
    assert json.loads(path.read_text())["sources"]["diff"]["maxCommits"] == 200


def test_partial_files_keep_the_other_defaults(tmp_path: Path):
    config = load_config(write(tmp_path, {"sources": {"diff": {"maxCommits": 50}}}))
    assert config.sources.diff.max_commits == 50
    assert config.sources.docs.extensions == (".md", ".markdown", ".rst")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"retrieval": {"budget": "lots"}}, "'retrieval.budget': must be a whole number"),
        ({"retrieval": {"budget": 10}}, "'retrieval.budget': must be between 50 and 200000"),
        ({"sources": {"git": {"enabled": "yes"}}}, "'sources.git.enabled': must be true or false"),
        ({"sources": {"docs": {"extensions": ".md"}}}, "'sources.docs.extensions': must be a list"),
        ({"limits": {"max_body_chars": 500}}, "did you mean 'maxBodyChars'"),
        ({"sourcez": {}}, "'sourcez': is not a known setting"),
        ({"version": 2}, "'version': must be between 1 and 1"),
        ([1, 2], "'(top level)': must be a JSON object"),
        ({"sources": {"docs": {"extensions": [1]}}}, "'sources.docs.extensions': must be a list"),
        ({"sources": {"git": []}}, "'sources.git': must be a JSON object"),
        ({"embed": {"host": " "}}, "'embed.host': must be a non-empty string"),
        ({"retrieval": {"budget": 4000.5}}, "'retrieval.budget': must be a whole number"),
        ({"retrieval": {"budget": True}}, "'retrieval.budget': must be a whole number"),
    ],
)
def test_invalid_values_name_the_file_and_field(tmp_path: Path, data: object, message: str):
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value) and "pydantic" not in str(err.value)  # our one line
    assert json.loads(path.read_text()) == data  # never rewritten


def test_missing_file_means_defaults(tmp_path: Path):
    assert load_config(tmp_path / "absent.json") == ProjectConfig()


def test_settings_from_the_environment(tmp_path: Path):
    settings = Settings.from_env({"NEXUSMEM_HOME": str(tmp_path), "NEXUSMEM_VECTOR": "OFF"})
    assert settings.home == tmp_path and settings.vector == "off"
    with pytest.raises(ConfigError, match="NEXUSMEM_VECTOR"):
        Settings.from_env({"NEXUSMEM_VECTOR": "maybe"})


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("127.0.0.1:11500", "http://127.0.0.1:11500"),
        (":11500", "http://127.0.0.1:11500"),
        ("https://gpu.local:443", "https://gpu.local:443"),
        ("", None),
    ],
)
def test_ollama_host_takes_ollamas_own_spellings(value: str, url: str | None):
    assert Settings.from_env({"OLLAMA_HOST": value}).ollama_host == url
    assert Settings.from_env({"NEXUSMEM_EMBED_MODEL": "all-minilm"}).embed_model == "all-minilm"


def test_the_docs_show_config_json_as_init_writes_it() -> None:
    """The documented copy of the defaults drifts silently when a setting is added."""
    import re

    page = (Path(__file__).parents[1] / "docs" / "configuration.md").read_text(encoding="utf-8")
    block = re.search(r"`config.json` as `init` writes it:\n\n```json\n(.*?)```", page, re.S)
    assert block, "docs/configuration.md lost its config.json block"
    assert json.loads(block.group(1)) == json.loads(dump_config(ProjectConfig()))


def test_settings_are_read_from_the_process_environment(monkeypatch: pytest.MonkeyPatch):
    """pydantic-settings reads the NEXUSMEM_ prefix, and the other tools' own names."""
    monkeypatch.setenv("NEXUSMEM_VECTOR", " Off ")
    monkeypatch.setenv("NEXUSMEM_EMBED_MODEL", "all-minilm")
    monkeypatch.setenv("OLLAMA_HOST", ":11500")
    monkeypatch.setenv("CODEX_HOME", "/srv/codex")
    monkeypatch.setenv("NEXUSMEM_HOME", "")  # empty means the default
    settings = Settings.from_env()
    assert (settings.vector, settings.embed_model) == ("off", "all-minilm")
    assert settings.ollama_host == "http://127.0.0.1:11500"
    assert settings.codex_dir == Path("/srv/codex") and settings.home.name == ".nexusmem"


def test_a_bad_environment_value_is_one_line_naming_the_variable(repo: Repo, home: Path):
    out = run_cli("status", "-C", str(repo.path), env={"NEXUSMEM_LOG_LEVEL": "loud"})
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "error: NEXUSMEM_LOG_LEVEL='LOUD': use one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
    ]
