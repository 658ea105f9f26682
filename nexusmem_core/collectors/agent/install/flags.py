"""The settings that switch an agent's hooks on or off as a whole, read and (with the user's yes)
set.

Codex CLI: hooks are on by default since Codex 0.124; before that they ran only with
``[features] codex_hooks = true`` in ``~/.codex/config.toml`` (``$CODEX_HOME``). Today's key is
``hooks``, and ``codex_hooks`` is kept as its alias, so ``codex_hooks = true`` works on every
version. Either key set to false turns hooks off. The TOML is edited by lines, the least change
that does it: one ``false`` becomes ``true``, or one line goes under ``[features]``, or a
``[features]`` table is added at the end; everything else is kept byte for byte, and the result
is parsed again and must differ from the original only in that key, else nothing is written.

Gemini CLI: ``hooksConfig.enabled`` in its settings.json, true unless set to false.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....errors import ConfigError, FileAccessError
from ....files import read_text
from .common import UNTOUCHED, load_json, write_json, write_text

__all__ = ["Flag", "codex_flag", "gemini_flag", "set_codex_flag", "set_gemini_flag"]

CODEX_KEYS = ("hooks", "codex_hooks")
CODEX_DEFAULT_ON = (0, 124, 0)  # the first Codex whose hooks need no flag


@dataclass
class Flag:
    name: str  # the setting, as the user would write it
    path: str  # the file that holds it
    state: str  # on, off, default (not set), unreadable
    needed: bool  # hooks will not run unless it is set
    detail: str = ""  # why, in a few words


# ------------------------------------------------------------------------------- Codex


def codex_version() -> tuple[int, ...] | None:
    """The version of the ``codex`` on PATH, or None when there is none or it will not say."""
    exe = shutil.which("codex")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", out.stdout)
    return tuple(int(n) for n in found.groups()) if found else None


def _features(path: Path) -> tuple[dict[str, Any], str | None]:
    """The ``[features]`` table and the file's text (None when there is no file)."""
    text = read_text(path)
    if text is None:
        return {}, None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML ({err}); {UNTOUCHED}") from err
    features = data.get("features", {})
    if not isinstance(features, dict):
        raise ConfigError(f'{path}: "features" is not a table; {UNTOUCHED}')
    return features, text


def codex_flag(path: Path, version: tuple[int, ...] | None = None) -> Flag:
    """Whether Codex will run hooks, from its config.toml and (when unset) its version."""
    name = "[features] codex_hooks = true"
    try:
        features, _ = _features(path)
    except (ConfigError, FileAccessError) as err:
        return Flag(name, str(path), "unreadable", False, str(err))
    values = [features[k] for k in CODEX_KEYS if k in features]
    if False in values:
        # Named as set_codex_flag will write it: the keys that are false, each made true.
        off = [k for k in CODEX_KEYS if features.get(k) is False]
        name = "[features] " + " and ".join(f"{k} = true" for k in off)
        return Flag(name, str(path), "off", True, f"`{off[0]} = false` turns Codex's hooks off")
    if True in values:
        return Flag(name, str(path), "on", False)
    if version is not None and version < CODEX_DEFAULT_ON:
        shown = ".".join(map(str, version))
        return Flag(name, str(path), "default", True, f"Codex {shown} runs hooks only with it")
    return Flag(name, str(path), "default", False, "on by default since Codex 0.124")


def set_codex_flag(path: Path) -> None:
    """Turn Codex's hooks on in ``path`` with the least edit that does it (see the module)."""
    features, text = _features(path)
    old = tomllib.loads(text) if text else {}
    keys = [k for k in CODEX_KEYS if features.get(k) is False] or ["codex_hooks"]
    new_text = _edited(text or "", keys)
    try:
        new = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        new = None
    wanted = {**old, "features": {**features, **dict.fromkeys(keys, True)}}
    if new != wanted:  # a dotted or inline ``features`` the line edit cannot reach
        raise ConfigError(
            f"{path}: could not set {keys[0]} = true without rewriting other lines; "
            f"add it under [features] yourself ({UNTOUCHED})"
        )
    write_text(path, new_text)


_HEADER = re.compile(r"^\s*\[\s*features\s*\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")


def _edited(text: str, keys: list[str]) -> str:
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        gap = "" if not text else "\n" if text.endswith("\n") else "\n\n"
        return f"{text}{gap}[features]\n{keys[0]} = true\n"
    end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
    changed = False
    for i in range(start + 1, end):
        for key in keys:
            flipped = re.sub(rf"^(\s*{key}\s*=\s*)false\b", r"\1true", lines[i])
            changed |= flipped != lines[i]
            lines[i] = flipped
    if not changed:
        newline = "" if lines[start].endswith("\n") else "\n"
        lines.insert(start + 1, f"{newline}{keys[0]} = true\n")
    return "".join(lines)


# ------------------------------------------------------------------------------ Gemini


def gemini_flag(path: Path) -> Flag:
    """Whether Gemini CLI's ``hooksConfig.enabled`` in ``path`` leaves its hooks on."""
    name = '"hooksConfig": {"enabled": true}'
    try:
        data = load_json(path) or {}
    except (ConfigError, FileAccessError) as err:
        return Flag(name, str(path), "unreadable", False, str(err))
    config = data.get("hooksConfig")
    enabled = config.get("enabled") if isinstance(config, dict) else None
    if enabled is False:
        return Flag(name, str(path), "off", True, "hooksConfig.enabled is false")
    if enabled is True:
        return Flag(name, str(path), "on", False)
    return Flag(name, str(path), "default", False, "on by default")


def set_gemini_flag(path: Path) -> None:
    """Set ``hooksConfig.enabled`` to true in ``path``, keeping everything else."""
    data = load_json(path) or {}
    config = data.get("hooksConfig", {})
    if not isinstance(config, dict):
        raise ConfigError(f'{path}: "hooksConfig" is not an object; {UNTOUCHED}')
    data["hooksConfig"] = {**config, "enabled": True}
    write_json(path, data)
