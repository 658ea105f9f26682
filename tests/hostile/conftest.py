"""Hostile repositories: built in a tmp dir the way a stranger would publish them, then cloned
the way a user gets them, so every command and the MCP server run in the clone."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ..conftest import Repo


def clone(source: Repo, dest: Path) -> Path:
    """``git clone`` of ``source`` at ``dest``, as a user would get it."""
    subprocess.run(
        ["git", "clone", "-q", str(source.path), str(dest)], check=True, capture_output=True
    )
    return dest


@pytest.fixture
def cloned(tmp_path: Path) -> Callable[[Repo], Path]:
    """Clone a published repository into ``tmp_path/clone``."""

    def make(source: Repo, name: str = "clone") -> Path:
        return clone(source, tmp_path / name)

    return make
