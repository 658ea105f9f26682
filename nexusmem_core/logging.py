"""Structured logs on stderr, configured once by each entry point.

stdout belongs to the MCP protocol and to command results, so nothing here ever writes to it.
structlog is imported on the first event, not at start-up: most CLI runs log nothing, and the
import costs ~40 ms that a hook or a query should not pay.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["configure_logging", "get_logger"]

_state: dict[str, Any] = {"level": logging.WARNING, "configured": False}


def configure_logging(level: str = "WARNING") -> None:
    """Send structlog events (snake_case names, key-value fields) to stderr at ``level``."""
    numeric = logging.getLevelName(level.upper())
    _state["level"] = numeric if isinstance(numeric, int) else logging.WARNING
    _state["configured"] = False


def _structlog() -> Any:
    import structlog

    if not _state["configured"]:
        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.dev.ConsoleRenderer(colors=False),
            ],
            wrapper_class=structlog.make_filtering_bound_logger(_state["level"]),
            logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
            cache_logger_on_first_use=False,
        )
        _state["configured"] = True
    return structlog


class _Logger:
    """A structlog logger bound to a component, created when it first has something to say."""

    def __init__(self, component: str) -> None:
        self.component = component

    def _emit(self, method: str, event: str, **fields: Any) -> None:
        logger = _structlog().get_logger().bind(component=self.component)
        getattr(logger, method)(event, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        if _state["level"] <= logging.DEBUG:
            self._emit("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        if _state["level"] <= logging.INFO:
            self._emit("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", event, **fields)


def get_logger(component: str) -> _Logger:
    """A logger for ``component``; nothing is imported until it logs."""
    return _Logger(component)
