"""The Jinja2 environment: autoescaped always, strict about missing names, and with the few
filters the pages share. Stored text is a stranger's: it is escaped by the environment, and
its control characters (a terminal's colour codes, a carriage return that would hide a line)
are shown as visible marks, never passed to the page.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined

__all__ = ["environment"]

TEMPLATES = Path(__file__).parent / "templates"
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(value: Any) -> str:
    """Text with its control characters (and bidirectional overrides) shown as marks."""
    text = "" if value is None else str(value)
    return _CONTROLS.sub(lambda m: "␛" if m.group() == "\x1b" else "�", text)


def when(ts: float | None) -> str:
    if ts is None:
        return "date unknown"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def short(node_id: str | None) -> str:
    return (node_id or "")[:10]


def query(params: dict[str, Any], **changes: Any) -> str:
    """``params`` with ``changes``, as a query string (empty values left out)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "", False)}, doseq=True)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(visible=visible, when=when, short=short)
    env.globals.update(query=query)
    return env
