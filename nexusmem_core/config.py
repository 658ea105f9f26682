"""Settings from the environment, and the per-repository ``config.json``.

Both are plain dataclasses read with the standard library. pydantic-settings was the first
choice, but importing it costs ~200 ms here: two thirds of the 300 ms a whole ``nexusmem query``
may take, and hook commands must not import pydantic at all. One settings class that every path
can afford beats two.

``Settings`` is built once in each entry point and passed down. ``ProjectConfig`` is validated
on every read; a file that does not validate raises ``ConfigError`` naming the file and the
field, and is never rewritten.
"""

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .paths import default_home

__all__ = [
    "DEFAULT_DOC_EXTENSIONS",
    "ProjectConfig",
    "Settings",
    "dump_config",
    "load_config",
]

DEFAULT_DOC_EXTENSIONS = (".md", ".markdown", ".rst")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True)
class Settings:
    """Process-wide settings; ``from_env`` reads the ``NEXUSMEM_*`` variables."""

    home: Path = field(default_factory=default_home)
    """User-scoped directory: the project registry and the shell hook's log."""
    vector: str = "auto"
    """``off`` never loads sqlite-vec; ``auto`` loads it when the SQLite build allows."""
    log_level: str = "WARNING"
    ollama_host: str | None = None
    """``OLLAMA_HOST``: overrides ``embed.host`` in config.json."""
    embed_model: str | None = None
    """``NEXUSMEM_EMBED_MODEL``: overrides ``embed.model`` in config.json."""
    claude_dir: Path = field(default_factory=lambda: Path.home() / ".claude")
    """``CLAUDE_CONFIG_DIR``, as Claude Code reads it: its transcripts are under ``projects/``."""
    codex_dir: Path = field(default_factory=lambda: Path.home() / ".codex")
    """``CODEX_HOME``, as Codex CLI reads it: its sessions are under ``sessions/``."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "Settings":
        env = os.environ if environ is None else environ
        vector = env.get("NEXUSMEM_VECTOR", "auto").strip().lower() or "auto"
        if vector not in ("auto", "off"):
            raise ConfigError(f"NEXUSMEM_VECTOR={vector!r}: use 'auto' or 'off'")
        level = env.get("NEXUSMEM_LOG_LEVEL", "WARNING").strip().upper() or "WARNING"
        if level not in _LOG_LEVELS:
            raise ConfigError(f"NEXUSMEM_LOG_LEVEL={level!r}: use one of {', '.join(_LOG_LEVELS)}")
        home = env.get("NEXUSMEM_HOME")
        user = Path(env.get("HOME") or Path.home())
        claude, codex = env.get("CLAUDE_CONFIG_DIR"), env.get("CODEX_HOME")
        return cls(
            home=Path(home).expanduser() if home else default_home(),
            vector=vector,
            log_level=level,
            ollama_host=_host(env.get("OLLAMA_HOST")),
            embed_model=env.get("NEXUSMEM_EMBED_MODEL") or None,
            claude_dir=Path(claude).expanduser() if claude else user / ".claude",
            codex_dir=Path(codex).expanduser() if codex else user / ".codex",
        )


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


def _bounded(default: int, low: int, high: int) -> Any:
    return field(default=default, metadata={"min": low, "max": high})


@dataclass(frozen=True)
class GitSource:
    enabled: bool = True
    prune_unreachable_days: int = _bounded(14, 0, 36_500)
    """A commit no ref reaches (after a rebase, an amend, a reset) leaves memory this many days
    after a sync first saw it unreachable; 0 keeps them until ``sync --prune-unreachable``."""


@dataclass(frozen=True)
class DiffSource:
    enabled: bool = True
    max_commits: int = _bounded(200, 0, 1_000_000)
    """Commits whose patches the first sync reads; later syncs read ``cursor..HEAD``."""
    skip_globs: tuple[str, ...] = ()
    """Extra path globs to leave out, on top of lockfiles, vendored and build output."""


@dataclass(frozen=True)
class DocsSource:
    enabled: bool = True
    extensions: tuple[str, ...] = DEFAULT_DOC_EXTENSIONS


@dataclass(frozen=True)
class ShellSource:
    enabled: bool = True
    scrape: bool = True
    """Without a hook log, read the tail of the shell history files (no cwd, no exit code)."""
    scrape_tail_lines: int = _bounded(300, 10, 1_000_000)


@dataclass(frozen=True)
class AgentSource:
    enabled: bool = True
    """Ingest the commands a coding agent ran (the Claude Code hooks' log)."""
    link_failures: bool = True
    """After agent commands are ingested, link failures to their fixes (as --link-failures)."""


@dataclass(frozen=True)
class ConversationSource:
    """Assistant transcripts (Claude Code, Codex CLI). Off by default: a transcript is the
    likeliest place for a pasted credential. ``sync --conversation`` turns it on for one run."""

    enabled: bool = False
    claude: bool = True
    codex: bool = True
    max_files: int = _bounded(500, 1, 1_000_000)
    """Transcript files read per sync, newest first; the rest wait for the next sync."""


@dataclass(frozen=True)
class SessionSource:
    """One derived summary per settled session, from a local Ollama chat model (on
    ``embed.host``). Needs the conversation source's turns."""

    enabled: bool = False
    model: str = "qwen2.5:3b"
    settle_minutes: int = _bounded(30, 0, 100_000)
    """A session quiet this long is settled; a live one is not summarised on every sync."""
    max_sessions: int = _bounded(10, 1, 10_000)
    """Model calls per sync at most; the rest are queued for the next."""
    prompt_chars: int = _bounded(12_000, 1_000, 200_000)
    timeout_seconds: int = _bounded(120, 1, 3600)
    budget_seconds: int = _bounded(300, 1, 86_400)
    """Seconds one sync may spend asking the model; the sessions left are queued. An automatic
    sync holds ``sync.lock`` until it ends, so later commits wait for it."""


@dataclass(frozen=True)
class GithubSource:
    """Issues and pull requests through the ``gh`` CLI. Off by default: it needs the network.
    ``sync --github`` turns it on for one run."""

    enabled: bool = False
    max_threads: int = _bounded(100, 1, 100_000)
    max_comments_per_thread: int = _bounded(100, 0, 10_000)
    timeout_seconds: int = _bounded(60, 1, 3600)


@dataclass(frozen=True)
class StructureSource:
    """The file-to-file import graph (Python, JS/TS, Go, Rust, Java), rebuilt on sync when a
    file it reads changed (see collectors/structure/step.py; bench/bench_structure.py for the
    cost)."""

    enabled: bool = True


@dataclass(frozen=True)
class Sources:
    git: GitSource = GitSource()
    diff: DiffSource = DiffSource()
    docs: DocsSource = DocsSource()
    shell: ShellSource = ShellSource()
    agent: AgentSource = AgentSource()
    conversation: ConversationSource = ConversationSource()
    session: SessionSource = SessionSource()
    github: GithubSource = GithubSource()
    structure: StructureSource = StructureSource()


@dataclass(frozen=True)
class Limits:
    max_body_chars: int = _bounded(12_000, 200, 1_000_000)


@dataclass(frozen=True)
class Retrieval:
    budget: int = _bounded(2000, 50, 200_000)
    sibling_cap: int = _bounded(2, 1, 50)
    fusion_k: int = _bounded(5, 1, 1000)
    """Reciprocal rank fusion's k for the BM25 and vector lists (see retrieval/fuse.py)."""
    import_expansion: bool = True
    """A query naming a file also weighs the history of the files it imports (see
    retrieval/imports.py for what it measured); needs ``sources.structure``."""


@dataclass(frozen=True)
class Embed:
    enabled: bool = True
    host: str = "http://127.0.0.1:11434"
    model: str = "nomic-embed-text"
    batch: int = _bounded(32, 1, 1024)
    timeout_seconds: int = _bounded(30, 1, 600)
    """Per request during sync."""
    query_timeout_seconds: int = _bounded(5, 1, 120)
    """For the one embedding a query needs; past it the query answers with BM25."""


@dataclass(frozen=True)
class Contradictions:
    """``stale --check-contradictions``: a local chat model (on ``embed.host``) judges whether
    the most similar newer node supersedes a stale candidate."""

    auto_check: bool = True
    """Judge a few new pairs during each sync, when the embedding model was reachable."""
    model: str = "qwen2.5:3b"
    sync_batch: int = _bounded(3, 1, 100)
    """New judgements per sync at most (cached pairs are free)."""
    timeout_seconds: int = _bounded(20, 1, 600)
    """Per judgement; past it the pass stops with one line."""


@dataclass(frozen=True)
class ProjectConfig:
    """The validated contents of ``.nexusmem/config.json`` (camelCase keys on disk)."""

    version: int = _bounded(1, 1, 1)
    sources: Sources = Sources()
    limits: Limits = Limits()
    retrieval: Retrieval = Retrieval()
    embed: Embed = Embed()
    contradictions: Contradictions = Contradictions()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


class _Invalid(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"field {where!r}: {message}")


def _value(kind: Any, value: Any, where: str, meta: Any) -> Any:
    if is_dataclass(kind):
        return _build(kind, value, where)
    if kind is bool:
        if not isinstance(value, bool):
            raise _Invalid(where, f"must be true or false, not {json.dumps(value)}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(where, f"must be a whole number, not {json.dumps(value)}")
        low, high = meta.get("min"), meta.get("max")
        if low is not None and not low <= value <= high:
            raise _Invalid(where, f"must be between {low} and {high}, not {value}")
        return value
    if kind is str:
        if not isinstance(value, str) or not value.strip():
            raise _Invalid(where, f"must be a non-empty string, not {json.dumps(value)}")
        return value
    if kind == tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _Invalid(where, "must be a list of strings")
        return tuple(value)
    raise TypeError(kind)  # pragma: no cover - a field type this loader does not know


def _build(cls: Any, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise _Invalid(where or "(top level)", "must be a JSON object")
    known = {_camel(f.name): f for f in fields(cls)}
    for key in data:
        if key not in known:
            near = (
                f" (did you mean {_camel(_snake(key))!r}?)" if _camel(_snake(key)) in known else ""
            )
            raise _Invalid(f"{where}.{key}".lstrip("."), f"is not a known setting{near}")
    values = {
        f.name: _value(f.type, data[key], f"{where}.{key}".lstrip("."), f.metadata)
        for key, f in known.items()
        if key in data
    }
    return cls(**values)


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
    except (ValueError, RecursionError) as err:  # a number of 4,300+ digits, or deep nesting
        raise ConfigError(
            f"{path}: not valid JSON (a number too long or nesting too deep); "
            "fix the file or delete it to get the defaults"
        ) from err
    try:
        config: ProjectConfig = _build(ProjectConfig, data, "")
    except _Invalid as err:
        raise ConfigError(f"{path}: {err}; fix the file or delete it to get the defaults") from err
    return config


def _to_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return list(value)
    return value


def dump_config(config: ProjectConfig) -> str:
    """The file text ``init`` writes: every default spelled out, camelCase keys."""
    return json.dumps(_to_json(asdict(config)), indent=2) + "\n"
