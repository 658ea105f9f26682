"""A caching stand-in in front of an Ollama-compatible embedding server, for the evaluation.

    python bench/eval/real/embed_cache.py --upstream http://127.0.0.1:11434 --port 11435 &
    OLLAMA_HOST=127.0.0.1:11435 .venv/bin/python bench/eval/real/run.py --mode both

Embedding the six corpora through the all-minilm shim takes tens of minutes, and a change to
ingest code rebuilds the cached memories: without this, every such change would embed the same
commit messages again. Each (model, text) is embedded once and kept in
``bench/out/real/embed-cache.sqlite``; ``/api/embed`` answers from it and sends the texts it
has not seen upstream in one request. Every other path is passed through. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CACHE = Path(__file__).resolve().parents[3] / "bench" / "out" / "real" / "embed-cache.sqlite"


class Cache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("create table if not exists v (key text primary key, vector text)")
        self.lock = threading.Lock()

    @staticmethod
    def key(model: str, text: str) -> str:
        return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()

    def get(self, keys: list[str]) -> dict[str, list[float]]:
        with self.lock:
            found = {}
            for k in keys:
                row = self.db.execute("select vector from v where key = ?", (k,)).fetchone()
                if row:
                    found[k] = json.loads(row[0])
            return found

    def put(self, pairs: dict[str, list[float]]) -> None:
        with self.lock:
            self.db.executemany(
                "insert or replace into v values (?, ?)",
                [(k, json.dumps(v)) for k, v in pairs.items()],
            )
            self.db.commit()


def serve(upstream: str, port: int, cache: Cache) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: object) -> None:
            pass

        def _relay(self, method: str, body: bytes | None = None) -> None:
            request = urllib.request.Request(upstream + self.path, data=body, method=method)
            request.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(request, timeout=600) as reply:
                    status, data = reply.status, reply.read()
            except urllib.error.HTTPError as err:
                status, data = err.code, err.read()
            self._send(status, data)

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._relay("GET")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/api/embed":
                self._relay("POST", body)
                return
            ask = json.loads(body)
            texts = [ask["input"]] if isinstance(ask["input"], str) else list(ask["input"])
            keys = [Cache.key(ask["model"], t) for t in texts]
            have = cache.get(keys)
            missing = [i for i, k in enumerate(keys) if k not in have]
            if missing:
                upstream_ask = {**ask, "input": [texts[i] for i in missing]}
                request = urllib.request.Request(
                    upstream + "/api/embed", data=json.dumps(upstream_ask).encode(), method="POST"
                )
                request.add_header("Content-Type", "application/json")
                try:
                    with urllib.request.urlopen(request, timeout=600) as reply:
                        vectors = json.loads(reply.read())["embeddings"]
                except urllib.error.HTTPError as err:
                    self._send(err.code, err.read())
                    return
                fresh = {keys[i]: v for i, v in zip(missing, vectors, strict=True)}
                cache.put(fresh)
                have.update(fresh)
            reply_body = {"model": ask["model"], "embeddings": [have[k] for k in keys]}
            self._send(200, json.dumps(reply_body).encode())

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", default="http://127.0.0.1:11434")
    parser.add_argument("--port", type=int, default=11435)
    args = parser.parse_args()
    serve(args.upstream.rstrip("/"), args.port, Cache(CACHE))


if __name__ == "__main__":
    main()
