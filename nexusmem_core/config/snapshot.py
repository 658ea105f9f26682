"""Validated once, read back cheaply: the settings and a repository's config without pydantic.

Importing pydantic-settings takes ~0.25 s, more than the rest of a no-op ``nexusmem sync`` or
a ``nexusmem query`` together, and both validate the same environment and the same
``config.json`` every time. So :mod:`.schema` validates them once and the values it produced
are kept beside their inputs (``settings.checked.json`` in the home, ``config.checked.json``
next to the repository's config). A later command whose inputs are the same (the variables
the schema reads, the file's text, the sizes and mtimes of the schema's files) reads the
values back from that JSON as a :class:`Frozen` view and never imports pydantic. Any other
input, or a snapshot that cannot be read, goes through the schema again: its errors are the
schema's, and a value that does not validate is never written down.

A config's values depend on the two files' texts alone, never on which repository holds them,
so the home keeps the last few validated pairs too (``configs.checked.json``): a repository
``init`` has just made, whose file is the one every ``init`` writes, is read from there. The
text ``init`` writes is kept there as well, so ``init`` in a used home never imports pydantic.

The snapshot is a cache, never a source: deleting it costs one validation.
Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..private import PRIVATE_FILE
from .defaults import REACH

if TYPE_CHECKING:
    from .schema import ProjectConfig, Settings

__all__ = [
    "Frozen",
    "default_config_text",
    "load_config",
    "peek_config",
    "settings_from_env",
    "shipped_reach",
]

FORMAT = 1
SETTINGS_SNAPSHOT = "settings.checked.json"
CONFIG_SNAPSHOT = "config.checked.json"
SHARED_SNAPSHOT = "configs.checked.json"  # in the home: values by texts, for any repository
SHARED_ENTRIES = 8  # the pairs of texts the home keeps, the newest first
SHARED_TEXT_MAX = 16_384  # a longer config is kept beside itself only, never in the home
# What the values are computed by: the schema, its defaults (config/defaults.py) and the home
# it defaults to (paths.py). An upgrade that changes any of them invalidates every snapshot.
_SCHEMA = tuple(
    Path(__file__).parent / name for name in ("schema.py", "defaults.py", "../paths.py")
)
# Besides NEXUSMEM_*: the other tools' names the schema honours, and what the home defaults on.
_OTHERS = frozenset(
    {"ollama_host", "claude_config_dir", "codex_home", "gemini_cli_home", "xdg_data_home"}
)
_HOMES = ("HOME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH")


class Frozen:
    """A validated model's values, read-only: attributes, nested sections, ``model_copy`` and
    ``model_dump`` as the pydantic model has them, equal to it when the values are."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{name}: settings are frozen; use model_copy(update=...)")

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Frozen:
        unknown = set(update or ()) - set(self._values)
        if unknown:
            raise AttributeError(f"no such setting: {', '.join(sorted(unknown))}")
        return Frozen({**self._values, **(update or {})})

    def model_dump(self) -> dict[str, Any]:
        return {
            name: value.model_dump() if isinstance(value, Frozen) else value
            for name, value in self._values.items()
        }

    def __eq__(self, other: object) -> bool:
        dump = getattr(other, "model_dump", None)
        return callable(dump) and self.model_dump() == dump()

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        return f"Frozen({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """``Settings.from_env(environ)``, from its snapshot when the variables it reads are the
    ones it was validated with. The snapshot lives in the home those variables name."""
    env = os.environ if environ is None else environ
    inputs = {
        "mapping": environ is not None,  # a mapping is read case-sensitively, os.environ not
        "variables": sorted(
            (name, value)
            for name, value in env.items()
            if name.lower().startswith("nexusmem_") or name.lower() in _OTHERS or name in _HOMES
        ),
        # The defaults (~/.nexusmem, ~/.claude) follow the process's home whatever was passed.
        "home": os.path.expanduser("~"),
    }
    home = env.get("NEXUSMEM_HOME") or os.path.join(os.path.expanduser("~"), ".nexusmem")

    def validate() -> Any:
        from .schema import Settings

        return Settings.from_env(None if environ is None else dict(environ))

    return _checked(Path(os.path.expanduser(home)) / SETTINGS_SNAPSHOT, inputs, validate)


def load_config(path: Path, user: Path | None = None) -> ProjectConfig:
    """``schema.load_config(path, user)``, from its snapshot when the files hold the text they
    were validated from (a missing file means the defaults, and is an input like any other).
    The text itself is the key, not the file's times: two writes within one clock tick differ.
    """

    def validate() -> Any:
        from .schema import load_config

        return load_config(path, user)

    try:
        texts = _config_texts(path, user)
    except (OSError, UnicodeDecodeError):
        return validate()  # unreadable: the schema says so, in its words
    shared = None if user is None else user.with_name(SHARED_SNAPSHOT)
    return _checked(path.with_name(CONFIG_SNAPSHOT), texts, validate, shared)


def default_config_text(home: Path) -> str:
    """The ``config.json`` text ``init`` writes (``schema.dump_config`` of the defaults), kept
    in ``home``'s shared snapshot for as long as the schema is the same."""
    shared = home / SHARED_SNAPSHOT
    key = _key("the config init writes")
    entries = _entries(shared)
    for entry in entries:
        if entry.get("key") == key and isinstance(entry.get("text"), str):
            return entry["text"]  # type: ignore[no-any-return]
    from .schema import ProjectConfig, dump_config

    text = dump_config(ProjectConfig())
    if key[1] is not None:
        _share(shared, entries, {"key": key, "text": text})
    return text


def peek_config(path: Path, user: Path | None = None) -> ProjectConfig | None:
    """The values :func:`load_config` gives for ``path`` and ``user`` when its snapshot holds
    them; None otherwise. Never validates nor writes: for a guess (walker.py) that may be wrong.
    """
    try:
        texts = _config_texts(path, user)
    except (OSError, UnicodeDecodeError):
        return None
    kept = _kept(path.with_name(CONFIG_SNAPSHOT), _key(texts))
    return None if kept is _NONE else kept  # type: ignore[no-any-return]


def shipped_reach(path: Path) -> list[str]:
    """The settings of ``defaults.REACH`` that the repository's config file at ``path`` sets
    to other than their defaults: ignored there, and worth one line saying so."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return []  # missing or broken: load_config says so
    found = []
    for keys, default in REACH.items():
        value: Any = data
        for key in keys:
            value = value.get(key, default) if isinstance(value, dict) else default
        if value != default:
            found.append(".".join(keys))
    return found


def _config_texts(path: Path, user: Path | None) -> Any:
    """What a config's snapshot is keyed by: the file's text, and the user's file's with it.
    None stands for a missing file. Raises OSError or UnicodeDecodeError for one that cannot
    be read."""
    text = _config_text(path)
    return text if user is None else [text, _config_text(user)]


def _config_text(path: Path) -> str | None:
    """A config file's text; None when there is no file (the defaults). Raises OSError or
    UnicodeDecodeError for one that cannot be read."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None


def _checked(
    snapshot: Path, inputs: Any, validate: Callable[[], Any], shared: Path | None = None
) -> Any:
    """The values ``validate`` gives for ``inputs``: from ``snapshot`` if it holds them, else
    from the ``shared`` one (then copied to ``snapshot``), else validated now; written down
    where the folder exists and can be written."""
    key = _key(inputs)
    if (kept := _kept(snapshot, key)) is not _NONE:
        return kept
    entries = _entries(shared) if shared is not None else []
    found = next((e["values"] for e in entries if e.get("key") == key and "values" in e), _NONE)
    values = _freeze(validate().model_dump()) if found is _NONE else found
    if key[1] is not None:
        _write(snapshot, {"key": key, "values": values})
        if shared is not None and found is _NONE and len(json.dumps(inputs)) <= SHARED_TEXT_MAX:
            _share(shared, entries, {"key": key, "values": values})
    return _thaw(values)


def _entries(shared: Path) -> list[dict[str, Any]]:
    """The home's shared snapshot's entries, newest first; none if it is missing or damaged."""
    try:
        kept = json.loads(shared.read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(kept, list):
        return []
    return [entry for entry in kept if isinstance(entry, dict)]


def _share(shared: Path, entries: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Put ``entry`` first in the home's shared snapshot, which keeps ``SHARED_ENTRIES``."""
    rest = [e for e in entries if e.get("key") != entry["key"]]
    _write(shared, [entry, *rest][:SHARED_ENTRIES])


_NONE = object()  # what _kept gives for a snapshot that keeps no values for the key


def _key(inputs: Any) -> Any:
    """What a snapshot of values computed from ``inputs`` is kept under, as JSON gives it
    back: the format, the schema's stamp and the inputs."""
    return json.loads(json.dumps([FORMAT, _schema_stamp(), inputs]))


def _kept(snapshot: Path, key: Any) -> Any:
    """The values ``snapshot`` keeps for ``key``; ``_NONE`` when there is no snapshot, a
    damaged one, or one of other inputs."""
    try:
        kept = json.loads(snapshot.read_bytes())
        if kept["key"] == key:
            return _thaw(kept["values"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return _NONE


def _schema_stamp() -> list[int] | None:
    """Which schema validated a snapshot: a changed default or field invalidates it."""
    stamp = []
    for source in _SCHEMA:
        try:
            st = os.stat(source)
        except OSError:
            return None  # no file to stamp (a zip import): validate every time
        stamp += [st.st_size, st.st_mtime_ns]
    return stamp


def _freeze(value: Any) -> Any:
    """A model dump as JSON: sections stay objects, paths are tagged, tuples become lists."""
    if isinstance(value, dict):
        return {name: _freeze(item) for name, item in value.items()}
    if isinstance(value, Path):
        return {"$path": str(value)}
    if isinstance(value, (list, tuple)):
        return [_freeze(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a setting of type {type(value).__name__} has no snapshot form")


def _thaw(value: Any) -> Any:
    if isinstance(value, dict):
        if value.keys() == {"$path"}:
            return Path(value["$path"])
        return Frozen({name: _thaw(item) for name, item in value.items()})
    if isinstance(value, list):
        return tuple(_thaw(item) for item in value)
    return value


def _write(snapshot: Path, document: Any) -> None:
    """Replace ``snapshot`` whole (0600, like everything NexusMem keeps): a reader sees the
    old file or the new one. Best effort: a folder that is missing or read-only keeps none."""
    temporary = snapshot.with_name(f".{snapshot.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out)
        os.replace(temporary, snapshot)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
