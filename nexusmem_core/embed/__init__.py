"""Embedding models: a small protocol, and the Ollama implementation."""

from .protocol import Embedder, EmbedUnavailableError

__all__ = ["EmbedUnavailableError", "Embedder"]
