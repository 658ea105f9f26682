"""What the engine needs from an embedding model, and the one way it may fail."""

from __future__ import annotations

from typing import Protocol

__all__ = ["EmbedTimeoutError", "EmbedUnavailableError", "Embedder"]


class EmbedUnavailableError(Exception):
    """The model cannot embed right now. ``str(err)`` says why and how to fix it, in one line.

    Never fatal: sync and query go on with BM25 alone.
    """


class EmbedTimeoutError(EmbedUnavailableError):
    """The model did not answer in time: a smaller batch may still get through."""


class Embedder(Protocol):
    """A text embedding model."""

    model: str

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, all of the model's dimension; raises EmbedUnavailableError."""
        ...

    async def check(self) -> None:
        """Raise EmbedUnavailableError at once if the model is plainly not there."""
        ...
