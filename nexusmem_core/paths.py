"""Where NexusMem keeps things on disk. Standard library only: hooks import this."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "CONFIG_FILE",
    "DB_FILE",
    "WORKSPACE_DIR",
    "default_home",
    "workspace_dir",
]

WORKSPACE_DIR = ".nexusmem"
CONFIG_FILE = "config.json"
DB_FILE = "memory.db"


def default_home() -> Path:
    """The user-scoped directory: ``$NEXUSMEM_HOME``, else ``~/.nexusmem``."""
    env = os.environ.get("NEXUSMEM_HOME")
    return Path(env).expanduser() if env else Path.home() / ".nexusmem"


def workspace_dir(repo_root: Path) -> Path:
    """The per-repository workspace, ``<repo>/.nexusmem``."""
    return repo_root / WORKSPACE_DIR
