"""A fake Ollama over real HTTP on 127.0.0.1: deterministic vectors, and every way to fail.

Vectors are bags of "concepts": words in one synonym group share a dimension, so "car" finds a
text about an "automobile" that BM25 cannot match; any other word hashes to a dimension.

``/api/chat`` answers as ``chat_mode`` says: yes, no, garbage, or slow (sleeps ``delay``); it
counts requests, so a test can prove a cached pair is never sent again. For session summaries:
a good summary, the titles a small model gets wrong (``SUMMARIES``), ``echo`` (a title, then
the prompt it was sent, as a model repeating what it read), and ``malformed`` (not JSON).
"""

from __future__ import annotations

import json
import math
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SYNONYMS = [
    {"car", "automobile", "vehicle"},
    {"crash", "segfault", "panic"},
    {"slow", "latency", "sluggish"},
]


def vector(text: str, dims: int) -> list[float]:
    out = [0.0] * dims
    for word in text.lower().replace("\n", " ").split():
        word = word.strip(".,:;!?()[]\"'")
        if not word:
            continue
        group = next((i for i, g in enumerate(SYNONYMS) if word in g), None)
        index = (
            group
            if group is not None
            else len(SYNONYMS) + zlib.crc32(word.encode()) % (dims - len(SYNONYMS))
        )
        out[index] += 1.0
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    return [x / norm for x in out]


_PARTS = (
    "Decisions: the retry budget goes to five, because three retries failed under load.\n"
    "Diagnoses: S3 timed out under load.\n"
    "Unfinished: the backoff is not tested yet."
)
SUMMARIES = {
    "summary": f"Raise the retry budget after S3 timeouts\n\n{_PARTS}",
    "preamble": f"Sure! Here is a summary of the session:\n\n{_PARTS}",
    "generic": f"Summary of the session\n\n{_PARTS}",
    "bullet": f"- Raised the retry budget to five\n{_PARTS}",
    "heading": f"## Retry budget\n\n{_PARTS}",
    "long": "We looked at " + "the retry loop and the S3 upload timeouts, " * 4 + f"\n{_PARTS}",
    "empty": "",
}


class FakeOllama:
    """``mode``: ok, slow, malformed, wrong_count; ``model`` and ``dims`` may change live.
    ``chat_mode``: yes, no, garbage, slow, echo, malformed or a key of ``SUMMARIES``, for
    ``chat_model``; ``chat_delay`` seconds pass before any chat reply (a slow model that
    answers)."""

    def __init__(self) -> None:
        self.mode, self.model, self.dims, self.delay = "ok", "fake-embed", 32, 3.0
        self.chat_delay = 0.0
        self.embedded_texts = 0
        self.chat_mode, self.chat_model = "yes", "fake-chat"
        self.chat_requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, status: int, body: Any) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path == "/api/chat":
                    return self._chat(body)
                if self.path != "/api/embed":
                    return self._send(404, {"error": "not found"})
                if body.get("model") != fake.model:
                    return self._send(
                        404,
                        {"error": f'model "{body.get("model")}" not found, try pulling it first'},
                    )
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if fake.mode == "slow":
                    time.sleep(fake.delay)
                if fake.mode == "malformed":
                    return self._send(200, b"{not json")
                vectors = [vector(t, fake.dims) for t in texts]
                if fake.mode == "wrong_count":
                    vectors = vectors[:-1] or [[]]
                fake.embedded_texts += len(texts)
                return self._send(200, {"model": fake.model, "embeddings": vectors})

            def _chat(self, body: dict[str, Any]) -> None:
                if body.get("model") != fake.chat_model:
                    return self._send(404, {"error": f'model "{body.get("model")}" not found'})
                fake.chat_requests.append(body)
                time.sleep(fake.chat_delay)  # a slow model that still answers
                if fake.chat_mode == "slow":
                    time.sleep(fake.delay)
                if fake.chat_mode == "malformed":
                    return self._send(200, b"{not json")
                answer = {"yes": "YES.", "no": "No", "garbage": "Well, it depends.", **SUMMARIES}
                content = answer.get(fake.chat_mode, "YES")
                if fake.chat_mode == "echo":
                    content = "Echoed session\n\n" + body["messages"][-1]["content"]
                message = {"role": "assistant", "content": content}
                return self._send(200, {"model": fake.chat_model, "message": message, "done": True})

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                return None  # a client that gave up on a slow reply: expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        # A short poll: shutdown() waits for it, at the end of every test that uses the fake.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeOllama:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
