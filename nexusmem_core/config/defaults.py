"""Defaults that code outside the schema reads too, without importing it (and pydantic)."""

from __future__ import annotations

__all__ = ["DEFAULT_DOC_EXTENSIONS", "REACH"]

DEFAULT_DOC_EXTENSIONS = (".md", ".markdown", ".rst")

# The settings that send data off the machine or read the user's other sources: where stored
# text goes to be embedded or summarised, and the opt-in sources. A repository's config.json is
# in a folder a clone could have shipped, so these are read only from the user's own config
# (``$NEXUSMEM_HOME/config.json``) and the environment; each with its default, camelCase keys.
REACH = {
    ("embed", "host"): "http://127.0.0.1:11434",
    ("sources", "conversation", "enabled"): False,
    ("sources", "session", "enabled"): False,
    ("sources", "github", "enabled"): False,
}
