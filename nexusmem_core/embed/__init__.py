"""Embedding models: a small protocol, and the Ollama implementation."""

from .protocol import Embedder, EmbedTimeoutError, EmbedUnavailableError

__all__ = ["EmbedTimeoutError", "EmbedUnavailableError", "Embedder"]
