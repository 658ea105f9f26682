"""Embeddings from a local Ollama server (``ollama.AsyncClient``), with a timeout on every call.

The ollama client's default timeout is infinite, which would let a stuck server hang a sync or
a query for ever; every request here has one. ``ollama`` (and pydantic and httpx behind it)
costs ~340 ms to import, so it is imported only when a sync embeds; the one embedding a query
needs goes through the standard library instead (``light=True``).
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from .http import OllamaHTTPError, post_json
from .protocol import EmbedTimeoutError, EmbedUnavailableError

__all__ = ["DEFAULT_HOST", "DEFAULT_MODEL", "OllamaEmbedder"]

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_MODEL = "nomic-embed-text"


class OllamaEmbedder:
    """``embed`` batches texts through ``/api/embed``; the model's dimension is discovered."""

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        model: str = DEFAULT_MODEL,
        timeout: float = 30.0,
        batch: int = 32,
        light: bool = False,
    ) -> None:
        self.host, self.model, self.timeout, self.batch = host, model, timeout, batch
        self.light = light
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            import ollama

            self._client = ollama.AsyncClient(host=self.host, timeout=self.timeout)
        return self._client

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if self._client is None:
            await self._check_reachable()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            vectors += await self._embed_batch(texts[start : start + self.batch])
        return vectors

    async def check(self) -> None:
        """Raise EmbedUnavailableError now if nothing listens at the host."""
        await self._check_reachable()

    async def _check_reachable(self) -> None:
        """Fail fast, before importing the client, when nothing listens at the host.

        Without Ollama (a supported, common case) every sync and query would otherwise pay
        ~340 ms of imports to learn what a refused TCP connection says in a millisecond.
        """
        url = urlsplit(self.host if "://" in self.host else f"http://{self.host}")
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            stream = await anyio.connect_tcp(url.hostname or "127.0.0.1", port)
        except OSError as err:
            raise EmbedUnavailableError(self._unreachable()) from err
        await stream.aclose()

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        if self.light:
            return await anyio.to_thread.run_sync(self._embed_light, texts)
        return await self._embed_with_client(texts)

    def _embed_light(self, texts: list[str]) -> list[list[float]]:
        """One ``/api/embed`` request with the standard library, for the single embedding a
        query needs: the ollama client's import (~310 ms) would otherwise be most of a hybrid
        ``nexusmem query``. Same errors, same checks as the client path."""
        body = {"model": self.model, "input": texts}
        try:
            reply = post_json(self.host, "/api/embed", body, self.timeout)
        except OllamaHTTPError as err:
            if err.kind == "timeout":
                raise EmbedTimeoutError(
                    f"Ollama at {self.host} did not answer within {self.timeout:g}s"
                ) from err
            if err.status == 404:
                raise EmbedUnavailableError(self._not_pulled()) from err
            if err.kind == "status":
                raise EmbedUnavailableError(
                    f"Ollama at {self.host} refused to embed ({err.status})"
                ) from err
            if err.kind == "unreachable":
                raise EmbedUnavailableError(self._unreachable()) from err
            raise EmbedUnavailableError(
                f"Ollama at {self.host} sent a malformed reply: {err}"
            ) from err
        embeddings = reply.get("embeddings") if isinstance(reply, dict) else None
        return _checked(embeddings, len(texts), self.host)

    def _not_pulled(self) -> str:
        return (
            f"Ollama at {self.host} does not have the model {self.model!r}: run "
            f"`ollama pull {self.model}` or set NEXUSMEM_EMBED_MODEL"
        )

    def _unreachable(self) -> str:
        return (
            f"Ollama is not reachable at {self.host}: start it (`ollama serve`) or set OLLAMA_HOST"
        )

    async def _embed_with_client(self, texts: list[str]) -> list[list[float]]:
        import httpx
        import ollama

        try:
            response = await self._get_client().embed(model=self.model, input=texts)
        except ollama.ResponseError as err:
            if err.status_code == 404:
                raise EmbedUnavailableError(self._not_pulled()) from err
            raise EmbedUnavailableError(
                f"Ollama at {self.host} refused to embed ({err.status_code}: {err.error})"
            ) from err
        except httpx.TimeoutException as err:
            raise EmbedTimeoutError(
                f"Ollama at {self.host} did not answer within {self.timeout:g}s"
            ) from err
        except (httpx.HTTPError, ConnectionError, OSError) as err:
            raise EmbedUnavailableError(self._unreachable()) from err
        except Exception as err:  # a malformed reply surfaces as a validation error
            raise EmbedUnavailableError(
                f"Ollama at {self.host} sent a malformed reply: {err}"
            ) from err
        return _checked(getattr(response, "embeddings", None), len(texts), self.host)


def _checked(vectors: Any, count: int, host: str) -> list[list[float]]:
    """The reply's vectors, if they are ``count`` finite vectors of one dimension."""
    if not isinstance(vectors, list) or len(vectors) != count:
        raise EmbedUnavailableError(f"Ollama at {host} sent a malformed reply: wrong vector count")
    dims = {len(v) for v in vectors}
    ok = (
        len(dims) == 1
        and dims != {0}
        and all(isinstance(x, int | float) and math.isfinite(x) for v in vectors for x in v)
    )
    if not ok:
        raise EmbedUnavailableError(f"Ollama at {host} sent a malformed reply: bad vectors")
    return [[float(x) for x in v] for v in vectors]
