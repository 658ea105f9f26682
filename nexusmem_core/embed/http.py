"""One JSON POST to Ollama with the standard library and a timeout, for the paths that must
not pay the ollama client's import (a query's one embedding, the contradiction judge)."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

__all__ = ["OllamaHTTPError", "post_json"]


class OllamaHTTPError(Exception):
    """What went wrong, as the callers tell it: ``status`` (an HTTP error code), ``timeout``,
    ``unreachable`` or ``malformed``."""

    def __init__(self, kind: str, status: int | None = None, detail: str = "") -> None:
        super().__init__(detail or kind)
        self.kind, self.status = kind, status


def post_json(host: str, path: str, body: dict[str, Any], timeout: float) -> Any:
    """POST ``body`` to ``host`` + ``path``; the decoded JSON reply, or OllamaHTTPError."""
    import urllib.error  # ~35 ms with http.client and email: only a call that posts pays it
    import urllib.request

    url = urlsplit(host if "://" in host else f"http://{host}")
    request = urllib.request.Request(
        f"{url.scheme}://{url.netloc}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        err.close()  # it holds the response, and with it the socket
        raise OllamaHTTPError("status", err.code) from err
    except TimeoutError as err:
        raise OllamaHTTPError("timeout") from err
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError | socket.timeout):
            raise OllamaHTTPError("timeout") from err
        raise OllamaHTTPError("unreachable") from err
    except (ValueError, OSError) as err:
        raise OllamaHTTPError("malformed", detail=str(err)) from err
