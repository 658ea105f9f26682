"""Defaults that code outside the schema reads too, without importing it (and pydantic)."""

from __future__ import annotations

__all__ = ["DEFAULT_DOC_EXTENSIONS"]

DEFAULT_DOC_EXTENSIONS = (".md", ".markdown", ".rst")
