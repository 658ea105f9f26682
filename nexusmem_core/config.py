"""Settings from the environment, and the per-repository ``config.json``.

``Settings`` is built once in each entry point and passed down. ``ProjectConfig`` is validated on
every read; a file that does not validate raises ``ConfigError`` naming the file and the field,
and is never rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError
from .paths import default_home

__all__ = [
    "DEFAULT_DOC_EXTENSIONS",
    "ProjectConfig",
    "Settings",
    "dump_config",
    "load_config",
]

DEFAULT_DOC_EXTENSIONS = [".md", ".markdown", ".rst"]


class Settings(BaseSettings):
    """Process-wide settings, read from ``NEXUSMEM_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="NEXUSMEM_", extra="ignore")

    home: Path = Field(default_factory=default_home)
    """User-scoped directory: the project registry and the shell hook's log."""
    vector: Literal["auto", "off"] = "auto"
    """``off`` never loads sqlite-vec; ``auto`` loads it when the SQLite build allows."""
    log_level: str = "WARNING"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class GitSource(_Section):
    enabled: bool = True


class DiffSource(_Section):
    enabled: bool = True
    max_commits: int = Field(default=200, ge=0, le=1_000_000)
    """Commits whose patches the first sync reads; later syncs read ``cursor..HEAD``."""
    skip_globs: list[str] = Field(default_factory=list)
    """Extra path globs to leave out, on top of lockfiles, vendored and build output."""


class DocsSource(_Section):
    enabled: bool = True
    extensions: list[str] = Field(default_factory=lambda: list(DEFAULT_DOC_EXTENSIONS))


class Sources(_Section):
    git: GitSource = GitSource()
    diff: DiffSource = DiffSource()
    docs: DocsSource = DocsSource()


class Limits(_Section):
    max_body_chars: int = Field(default=12_000, ge=200, le=1_000_000)


class Retrieval(_Section):
    budget: int = Field(default=2000, ge=50, le=200_000)
    sibling_cap: int = Field(default=2, ge=1, le=50)


class ProjectConfig(_Section):
    """The validated contents of ``.nexusmem/config.json``."""

    version: Literal[1] = 1
    sources: Sources = Sources()
    limits: Limits = Limits()
    retrieval: Retrieval = Retrieval()


def load_config(path: Path) -> ProjectConfig:
    """Read and validate ``path``; a missing file means the defaults."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ProjectConfig()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot be read ({err}); fix or delete the file") from err
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); "
            "fix the file or delete it to get the defaults"
        ) from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object; fix the file or delete it")
    try:
        return ProjectConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(
            f"{path}: field {field!r}: {first['msg']}; "
            "fix the file or delete it to get the defaults"
        ) from err


def dump_config(config: ProjectConfig) -> str:
    """The file text ``init`` writes: every default spelled out, camelCase keys."""
    return json.dumps(config.model_dump(by_alias=True), indent=2) + "\n"
