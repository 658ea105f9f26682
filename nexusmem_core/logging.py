"""Structured logs on stderr, configured once by each entry point.

stdout belongs to the MCP protocol and to command results, so nothing here ever writes to it.
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging", "get_logger"]


def configure_logging(level: str = "WARNING") -> None:
    """Send structlog events (snake_case names, key-value fields) to stderr at ``level``."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.WARNING
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    """A logger bound to ``component=name``."""
    return structlog.get_logger().bind(component=name)  # type: ignore[no-any-return]
