"""A real Chromium for the viewer's end-to-end tests: the system's own (``apt-get install
chromium``), driven by Playwright from PyPI through ``executable_path``; Playwright's own
browser download is never needed. Without one, the tests skip with one line saying how to get
it (``.ci/run`` installs it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

__all__ = ["HOW", "chromium", "launched", "needs_browser"]

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
HOW = (
    "no Chromium for the viewer's browser tests: `apt-get install chromium` (Debian, Ubuntu) or "
    "set NEXUSMEM_CHROMIUM to a Chrome or Chromium binary"
)


def chromium() -> str | None:
    given = os.environ.get("NEXUSMEM_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _playwright() -> bool:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return False
    return True


needs_browser = pytest.mark.skipif(
    chromium() is None or not _playwright(),
    reason=HOW if chromium() is None else "playwright is missing: pip install -e '.[dev]'",
)


@asynccontextmanager
async def launched(*args: str) -> AsyncIterator[Any]:
    """A headless Chromium, closed on leaving."""
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", *args]
        )
        try:
            yield browser
        finally:
            await browser.close()
