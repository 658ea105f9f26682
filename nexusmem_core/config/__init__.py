"""Settings from the environment and the per-repository ``config.json``.

:mod:`.schema` is what they are (pydantic-settings models: fields, defaults, bounds, one-line
errors); :mod:`.snapshot` is how a command gets them: ``settings_from_env`` and ``load_config``
return the validated values, without importing pydantic when the inputs are the ones they were
last validated from. The schema's names (``Settings``, ``ProjectConfig``, the sections,
``dump_config``) are imported from here on first use, so that importing this package is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from .defaults import DEFAULT_DOC_EXTENSIONS
from .snapshot import Frozen, default_config_text, load_config, settings_from_env

__all__ = [
    "DEFAULT_DOC_EXTENSIONS",
    "ConfigFile",
    "Frozen",
    "ProjectConfig",
    "Settings",
    "default_config_text",
    "dump_config",
    "load_config",
    "settings_from_env",
]


def __getattr__(name: str) -> Any:
    """The schema's names, importing it (and pydantic) the first time one is asked for."""
    if name.startswith("__"):
        raise AttributeError(name)  # import machinery's probes (__path__ is set; others not)
    # Not ``from . import schema``: that asks this module for the attribute first, and so
    # would come back here before the submodule is loaded.
    schema = importlib.import_module(f"{__name__}.schema")
    if name == "schema":
        return schema
    try:
        return getattr(schema, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
