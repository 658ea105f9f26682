"""The context every tool reads its engines from (the pool itself: ``nexusmem_core.pool``).

Apart from server.py, so the tools can name the context's type without importing the server
that registers them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nexusmem_core.pool import EnginePool

from .notify import LogLevels
from .roots import ClientRoots

if TYPE_CHECKING:
    from nexusmem_core.config import Settings

__all__ = ["AppContext", "EnginePool"]


@dataclass
class AppContext:
    settings: Settings
    pool: EnginePool
    roots: ClientRoots = field(default_factory=ClientRoots)
    log_levels: LogLevels = field(default_factory=LogLevels)
