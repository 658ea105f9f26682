"""The schema of the settings from the environment and of the per-repository ``config.json``,
with pydantic-settings.

``Settings`` is the process's: the ``NEXUSMEM_*`` variables (and the few other tools' own
names NexusMem honours: ``OLLAMA_HOST``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``), built once in
each entry point and passed down. ``ProjectConfig`` is a repository's: its sources are the
values a caller passes and the repository's ``.nexusmem/config.json`` (``ConfigFile``), in
nested sections, camelCase on disk. Both are validated once; what does not validate raises
``ConfigError`` in one line that names the variable, or the file and the field (never
pydantic's own text, its URL or a traceback), and a file that does not validate is never
rewritten.

This module is the schema; commands get its values through :mod:`.snapshot`, which imports
it only when the environment or the file changed since they were last validated. Importing
pydantic-settings costs ~0.25 s of a CLI command's start-up on this machine. The shell recorder
and the agent hooks read the two or three environment values they need directly
(tests/collectors/*/test_hook*.py check that they import no pydantic).
"""

from __future__ import annotations

import difflib
import json
import re
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ..errors import ConfigError
from ..paths import default_home
from .defaults import DEFAULT_DOC_EXTENSIONS, REACH

__all__ = [
    "DEFAULT_DOC_EXTENSIONS",
    "ConfigFile",
    "ProjectConfig",
    "Settings",
    "dump_config",
    "load_config",
]

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _host(value: str | None) -> str | None:
    """Ollama's own spellings of OLLAMA_HOST: ``host:port``, ``:port``, or a URL."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if "://" in value:
        return value
    if value.startswith(":"):
        value = "127.0.0.1" + value
    return "http://" + value


class Settings(BaseSettings):
    """Process-wide settings, from the environment (``NEXUSMEM_`` prefix)."""

    model_config = SettingsConfigDict(
        env_prefix="NEXUSMEM_", env_ignore_empty=True, frozen=True, extra="ignore"
    )

    home: Path = Field(default_factory=default_home)
    """User-scoped directory: the project registry and the shell hook's log."""
    vector: Literal["auto", "off"] = "auto"
    """``off`` never loads sqlite-vec; ``auto`` loads it when the SQLite build allows."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING"
    ollama_host: str | None = Field(default=None, validation_alias="OLLAMA_HOST")
    """``OLLAMA_HOST``: overrides ``embed.host`` in config.json."""
    embed_model: str | None = None
    """``NEXUSMEM_EMBED_MODEL``: overrides ``embed.model`` in config.json."""
    claude_dir: Path = Field(
        default_factory=lambda: Path.home() / ".claude",
        validation_alias="CLAUDE_CONFIG_DIR",
    )
    """``CLAUDE_CONFIG_DIR``, as Claude Code reads it: its transcripts are under ``projects/``."""
    codex_dir: Path = Field(
        default_factory=lambda: Path.home() / ".codex",
        validation_alias="CODEX_HOME",
    )
    """``CODEX_HOME``, as Codex CLI reads it: its sessions are under ``sessions/``."""
    gemini_home: Path = Field(default_factory=Path.home, validation_alias="GEMINI_CLI_HOME")
    """``GEMINI_CLI_HOME``, as Gemini CLI reads it: its sessions are under ``.gemini/tmp/``."""
    data_home: Path = Field(
        default_factory=lambda: Path.home() / ".local" / "share",
        validation_alias="XDG_DATA_HOME",
    )
    """``XDG_DATA_HOME``, as opencode reads it: its sessions are in ``opencode/opencode.db``."""

    @field_validator("vector", mode="before")
    @classmethod
    def _vector(cls, value: Any) -> Any:
        return (value.strip().lower() or "auto") if isinstance(value, str) else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        return (value.strip().upper() or "WARNING") if isinstance(value, str) else value

    @field_validator("ollama_host", mode="before")
    @classmethod
    def _ollama(cls, value: Any) -> Any:
        return _host(value) if isinstance(value, str) or value is None else value

    @field_validator("embed_model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> Any:
        return value or None

    @field_validator("home", "claude_dir", "codex_dir", "gemini_home", "data_home", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """From ``environ`` (the process's environment by default); a bad value is one line
        naming its variable."""
        try:
            if environ is None:
                return cls()
            return _from_mapping(cls, environ)
        except ValidationError as err:
            raise ConfigError(_env_error(err)) from None


_ENV_NAMES = {
    "home": "NEXUSMEM_HOME",
    "vector": "NEXUSMEM_VECTOR",
    "log_level": "NEXUSMEM_LOG_LEVEL",
    "ollama_host": "OLLAMA_HOST",
    "embed_model": "NEXUSMEM_EMBED_MODEL",
    "claude_dir": "CLAUDE_CONFIG_DIR",
    "codex_dir": "CODEX_HOME",
    "gemini_home": "GEMINI_CLI_HOME",
    "data_home": "XDG_DATA_HOME",
}
_CHOICES = {"vector": "use 'auto' or 'off'", "log_level": f"use one of {', '.join(_LOG_LEVELS)}"}


_KEYS = {
    "ollama_host": "OLLAMA_HOST",
    "claude_dir": "CLAUDE_CONFIG_DIR",
    "codex_dir": "CODEX_HOME",
    "gemini_home": "GEMINI_CLI_HOME",
    "data_home": "XDG_DATA_HOME",
}


def _from_mapping(cls: type[Settings], environ: dict[str, str]) -> Settings:
    """Settings from a mapping read as the environment would be, and nothing else: the
    process's own environment must not leak in (tests and benchmarks pass their own)."""
    values = {
        _KEYS.get(name, name): environ[var] for name, var in _ENV_NAMES.items() if var in environ
    }
    user = Path(environ.get("HOME") or Path.home())
    defaults = (
        ("CLAUDE_CONFIG_DIR", ".claude"),
        ("CODEX_HOME", ".codex"),
        ("GEMINI_CLI_HOME", ""),
        ("XDG_DATA_HOME", ".local/share"),
    )
    for key, default in defaults:
        if not values.get(key):
            values[key] = str(user / default)
    if not values.get("home"):
        values.pop("home", None)
    return cls.model_validate(values)


def _env_error(err: ValidationError) -> str:
    first = err.errors()[0]
    key = str(first["loc"][0]) if first["loc"] else ""
    field = {alias: name for name, alias in _KEYS.items()}.get(key, key)
    variable = _ENV_NAMES.get(field, key)
    value = first.get("input")
    advice = _CHOICES.get(field, _plain(first))
    return f"{variable}={value!r}: {advice}"


# ----------------------------------------------------------------------------- config.json

_Text = Annotated[str, StringConstraints(pattern=r"\S")]
_Names = Annotated[tuple[str, ...], Field(strict=False)]


class _Section(BaseModel):
    """A config.json section: camelCase on disk (``maxBodyChars``, never ``max_body_chars``),
    snake_case in code, nothing unknown, no coercion (``"yes"`` is not true, ``"50"`` is not
    a number). Changed in code with ``model_copy(update=...)``."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        use_attribute_docstrings=True,
    )


class GitSource(_Section):
    enabled: bool = True
    prune_unreachable_days: Annotated[int, Field(ge=0, le=36_500)] = 14
    """A commit no ref reaches (after a rebase, an amend, a reset) leaves memory this many days
    after a sync first saw it unreachable; 0 keeps them until ``sync --prune-unreachable``."""


class DiffSource(_Section):
    enabled: bool = True
    max_commits: Annotated[int, Field(ge=0, le=1_000_000)] = 200
    """Commits whose patches the first sync reads; later syncs read ``cursor..HEAD``."""
    skip_globs: _Names = ()
    """Extra path globs to leave out, on top of lockfiles, vendored and build output."""


class DocsSource(_Section):
    enabled: bool = True
    extensions: _Names = DEFAULT_DOC_EXTENSIONS


class ShellSource(_Section):
    enabled: bool = True
    scrape: bool = True
    """Without a hook log, read the tail of the shell history files (no cwd, no exit code)."""
    scrape_tail_lines: Annotated[int, Field(ge=10, le=1_000_000)] = 300


class AgentSource(_Section):
    enabled: bool = True
    """Ingest the commands a coding agent ran (the Claude Code hooks' log)."""
    link_failures: bool = True
    """After agent commands are ingested, link failures to their fixes (as --link-failures)."""
    error_chars: Annotated[int, Field(ge=0, le=4000)] = 300
    """Characters of a failed command's message the hooks keep (redacted; its end, where it
    says why) and take its error signature from; 0 keeps none and makes no signature. Read by
    the hook from the user's own config.json or ``NEXUSMEM_AGENT_ERROR_CHARS`` (which wins),
    not a repository's: one log serves every repository."""


class ConversationSource(_Section):
    """Assistant transcripts (Claude Code, Codex CLI, Gemini CLI, opencode). Off by default: a
    transcript is the likeliest place for a pasted credential. ``sync --conversation`` turns it
    on for one run."""

    enabled: bool = False
    claude: bool = True
    codex: bool = True
    gemini: bool = True
    opencode: bool = True
    max_files: Annotated[int, Field(ge=1, le=1_000_000)] = 500
    """Transcript files read per sync, newest first; the rest wait for the next sync."""


class SessionSource(_Section):
    """One derived summary per settled session, from a local Ollama chat model (on
    ``embed.host``). Needs the conversation source's turns."""

    enabled: bool = False
    model: _Text = "qwen2.5:3b"
    settle_minutes: Annotated[int, Field(ge=0, le=100_000)] = 30
    """A session quiet this long is settled; a live one is not summarised on every sync."""
    max_sessions: Annotated[int, Field(ge=1, le=10_000)] = 10
    """Model calls per sync at most; the rest are queued for the next."""
    prompt_chars: Annotated[int, Field(ge=1_000, le=200_000)] = 12_000
    timeout_seconds: Annotated[int, Field(ge=1, le=3600)] = 120
    budget_seconds: Annotated[int, Field(ge=1, le=86_400)] = 300
    """Seconds one sync may spend asking the model; the sessions left are queued. An automatic
    sync holds ``sync.lock`` until it ends, so later commits wait for it."""


class GithubSource(_Section):
    """Issues and pull requests through the ``gh`` CLI. Off by default: it needs the network.
    ``sync --github`` turns it on for one run."""

    enabled: bool = False
    max_threads: Annotated[int, Field(ge=1, le=100_000)] = 100
    max_comments_per_thread: Annotated[int, Field(ge=0, le=10_000)] = 100
    timeout_seconds: Annotated[int, Field(ge=1, le=3600)] = 60


class StructureSource(_Section):
    """The file-to-file import graph (Python, JS/TS, Go, Rust, Java), rebuilt on sync when a
    file it reads changed (see collectors/structure/step.py; bench/bench_structure.py for the
    cost)."""

    enabled: bool = True


class Sources(_Section):
    git: GitSource = GitSource()
    diff: DiffSource = DiffSource()
    docs: DocsSource = DocsSource()
    shell: ShellSource = ShellSource()
    agent: AgentSource = AgentSource()
    conversation: ConversationSource = ConversationSource()
    session: SessionSource = SessionSource()
    github: GithubSource = GithubSource()
    structure: StructureSource = StructureSource()


class Limits(_Section):
    max_body_chars: Annotated[int, Field(ge=200, le=1_000_000)] = 12_000


class Retrieval(_Section):
    budget: Annotated[int, Field(ge=50, le=200_000)] = 2000
    sibling_cap: Annotated[int, Field(ge=1, le=50)] = 3
    """At most this many sections of one document in one answer (see retrieval/pack.py)."""
    fusion_k: Annotated[int, Field(ge=1, le=1000)] = 10
    """Reciprocal rank fusion's k for the BM25 and vector lists (see retrieval/fuse.py)."""
    import_expansion: bool = True
    """A query naming a file also weighs the history of the files it imports (see
    retrieval/imports.py for what it measured); needs ``sources.structure``."""


class Embed(_Section):
    enabled: bool = True
    host: _Text = "http://127.0.0.1:11434"
    model: _Text = "nomic-embed-text"
    batch: Annotated[int, Field(ge=1, le=1024)] = 32
    timeout_seconds: Annotated[int, Field(ge=1, le=600)] = 30
    """Per request during sync."""
    query_timeout_seconds: Annotated[int, Field(ge=1, le=120)] = 5
    """For the one embedding a query needs; past it the query answers with BM25."""


class Contradictions(_Section):
    """``stale --check-contradictions``: a local chat model (on ``embed.host``) judges whether
    the most similar newer node supersedes a stale candidate."""

    auto_check: bool = True
    """Judge a few new pairs during each sync, when the embedding model was reachable."""
    model: _Text = "qwen2.5:3b"
    sync_batch: Annotated[int, Field(ge=1, le=100)] = 3
    """New judgements per sync at most (cached pairs are free)."""
    timeout_seconds: Annotated[int, Field(ge=1, le=600)] = 20
    """Per judgement; past it the pass stops with one line."""


class ProjectConfig(BaseSettings):
    """A repository's settings: ``.nexusmem/config.json`` (camelCase keys on disk), in
    sections; a key not given keeps its default."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
    )

    version: Annotated[int, Field(ge=1, le=1)] = 1
    sources: Sources = Sources()
    limits: Limits = Limits()
    retrieval: Retrieval = Retrieval()
    embed: Embed = Embed()
    contradictions: Contradictions = Contradictions()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """What a caller passes, then the repository's config.json; not the environment
        (``Settings`` reads that)."""
        return init_settings, ConfigFile(settings_cls)


_reading: ContextVar[dict[str, Any] | None] = ContextVar("nexusmem_config_data", default=None)


class ConfigFile(PydanticBaseSettingsSource):
    """The source that reads ``config.json``: what it holds is given by ``load_config``."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # the whole file is read at once, in __call__

    def __call__(self) -> dict[str, Any]:
        return _reading.get() or {}


_FIX = "fix the file or delete it to get the defaults"


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot be read ({err}); fix or delete the file") from err
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); {_FIX}"
        ) from err
    except (ValueError, RecursionError) as err:  # a number of 4,300+ digits, or deep nesting
        raise ConfigError(
            f"{path}: not valid JSON (a number too long or nesting too deep); {_FIX}"
        ) from err


def _object(path: Path) -> dict[str, Any]:
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: field '(top level)': must be a JSON object; {_FIX}")
    return data


def _validated(path: Path, data: dict[str, Any]) -> ProjectConfig:
    token = _reading.set(data)
    try:
        return ProjectConfig()
    except ValidationError as err:
        raise ConfigError(f"{path}: {_field_error(err)}; {_FIX}") from None
    finally:
        _reading.reset(token)


def load_config(path: Path, user: Path | None = None) -> ProjectConfig:
    """Read and validate ``path``; a missing file means the defaults. With ``user`` (the
    user's own ``$NEXUSMEM_HOME/config.json``), that file gives the defaults ``path``
    overrides, and alone decides the settings of ``REACH``: ``path`` lies in a repository."""
    repo = _object(path)
    if user is None:
        return _validated(path, repo)
    mine = _object(user)
    _validated(user, mine)
    _validated(path, repo)  # each file's own errors name that file
    return _validated(path, _merge(mine, _without_reach(repo)))


def _without_reach(data: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    for keys in REACH:
        section = out
        for key in keys[:-1]:
            section = section.get(key) if isinstance(section, dict) else None
        if isinstance(section, dict):
            section.pop(keys[-1], None)
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _field_error(err: ValidationError) -> str:
    """pydantic's first error as our one line: the field as the file spells it, and what it
    must be."""
    first = err.errors()[0]
    loc = [str(part) for part in first["loc"] if not isinstance(part, int)]  # not list indexes
    where = ".".join(loc) or "(top level)"
    if first["type"] == "extra_forbidden":
        known = _known(loc[:-1])
        near = difflib.get_close_matches(to_camel(_snake(loc[-1])), known, n=1, cutoff=0.9)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"field {where!r}: is not a known setting{hint}"
    return f"field {where!r}: {_plain(first)}"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _walk(loc: list[str]) -> tuple[Any, Any]:
    """The section ``loc`` (camelCase keys) leads to, and the field it names last: None when
    a key is not a field."""
    model: Any = ProjectConfig
    field: Any = None
    for part in loc:
        field = next((f for n, f in model.model_fields.items() if to_camel(n) == part), None)
        if field is None:
            return model, None
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            model = field.annotation
    return model, field


def _known(loc: list[str]) -> list[str]:
    """The camelCase keys the section at ``loc`` takes."""
    return [to_camel(name) for name in _walk(loc)[0].model_fields]


def _plain(error: Any) -> str:
    """What a value must be, without pydantic's wording or URL."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    shown = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else "that"
    if kind.startswith("int") or kind == "float_type":
        return f"must be a whole number, not {shown}"
    if kind in ("greater_than_equal", "less_than_equal"):
        low, high = _bounds(error["loc"])
        return f"must be between {low} and {high}, not {shown}"
    if kind.startswith("bool"):
        return f"must be true or false, not {shown}"
    if kind.startswith(("tuple", "list")) or (
        kind.startswith("string") and len(error["loc"]) > 1 and isinstance(error["loc"][-1], int)
    ):
        return "must be a list of strings"
    if kind.startswith("string"):
        return f"must be a non-empty string, not {shown}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return "must be a JSON object"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}, not {shown}"
    return f"is not valid ({error.get('msg', kind)})"


def _bounds(loc: Any) -> tuple[Any, Any]:
    """The ``ge``/``le`` of the field at ``loc``."""
    _, field = _walk([str(part) for part in loc if not isinstance(part, int)])
    metadata = field.metadata if field is not None else []
    low = next((m.ge for m in metadata if hasattr(m, "ge")), "?")
    high = next((m.le for m in metadata if hasattr(m, "le")), "?")
    return low, high


def dump_config(config: ProjectConfig) -> str:
    """The file text ``init`` writes: every default spelled out, camelCase keys, except the
    settings a repository's file cannot carry (``REACH``)."""
    return (
        json.dumps(_without_reach(config.model_dump(mode="json", by_alias=True)), indent=2) + "\n"
    )
