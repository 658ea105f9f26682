"""``nexusmem ui``: bind loopback, mint the launch's secret, serve until interrupted.

The viewer listens on 127.0.0.1, and on ::1 at the same port when the machine has IPv6; it
refuses any other address. Its URL carries the launch's token (``guard.py``): it is printed,
and opened in the browser unless ``--no-browser``.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import signal
import socket
import sys
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from ..errors import UsageError
from .app import opened
from .guard import RULES, Secret

__all__ = ["DEFAULT_PORT", "bind", "loopback", "serve"]

DEFAULT_PORT = 7377
TRIES = 20  # the default port taken: the next ones are tried, as Jupyter does


def loopback(host: str) -> str:
    """``host`` when it is a loopback address or ``localhost`` (as 127.0.0.1); else a
    UsageError: the viewer serves this machine alone."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise UsageError(
        f"{host!r} is not a loopback address: the viewer serves this machine only "
        "(127.0.0.1 or ::1)",
        argument="host",
    )


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # TCP named: asyncio turns Nagle off only on connections whose protocol says TCP, and an
    # accepted one takes the listener's; left at 0, each response's body waited 40 ms for
    # the browser's delayed ACK of its headers.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


def bind(host: str, port: int | None) -> list[socket.socket]:
    """Listening sockets: ``host`` at ``port`` (None: the default, or the next free one), and
    ::1 at the same port when ``host`` is 127.0.0.1 and the machine has IPv6."""
    ports = [port] if port is not None else list(range(DEFAULT_PORT, DEFAULT_PORT + TRIES))
    for each in ports:
        try:
            first = _listen(host, each)
        except OSError as err:
            if err.errno == errno.EADDRINUSE and port is None:
                continue
            message = f"cannot listen on {host}:{each}: {err.strerror}"
            raise UsageError(message, argument="port") from None
        sockets = [first]
        if host == "127.0.0.1" and socket.has_ipv6:
            # No IPv6 loopback here, or the port taken there: IPv4 serves alone.
            with contextlib.suppress(OSError):
                sockets.append(_listen("::1", first.getsockname()[1]))
        return sockets
    raise UsageError(
        f"ports {ports[0]}-{ports[-1]} are all taken: choose one with --port", argument="port"
    )


async def serve(
    settings: Any,
    root: Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    open_browser: bool = True,
    ready: Callable[[str], None] | None = None,
    rules: frozenset[str] = RULES,
    stop: anyio.Event | None = None,
) -> None:
    """Serve the viewer of the repository at ``root`` until interrupted (Ctrl-C) or ``stop``
    is set, then close every connection. ``ready`` is called with the URL (its token
    included) once the server answers."""
    started = time.perf_counter()
    sockets = bind(loopback(host), port)
    bound = sockets[0].getsockname()[1]
    secret = Secret.new(bound)
    try:
        async with opened(settings, root, secret, rules) as (app, _):
            await _run(app, sockets, secret, host, started, open_browser, ready, stop)
    finally:
        for sock in sockets:
            sock.close()


class _Server(uvicorn.Server):
    """uvicorn's server, for which Ctrl-C (or SIGTERM) is how it is meant to stop: it shuts
    down and returns, where uvicorn would raise the signal again once it has shut down (and
    ``nexusmem ui`` would end in "error: interrupted"). A second Ctrl-C forces the exit."""

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True


def _print_url(url: str) -> None:
    print(url, file=sys.stderr, flush=True)


async def _run(
    app: Any,
    sockets: list[socket.socket],
    secret: Secret,
    host: str,
    started: float,
    open_browser: bool,
    ready: Callable[[str], None] | None,
    stop: anyio.Event | None,
) -> None:
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = _Server(config)
    name = f"[{host}]" if ":" in host else host
    url = secret.url(name, "/")

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.01)
        took = time.perf_counter() - started
        print(f"NexusMem viewer ready in {took:.2f} s", file=sys.stderr, flush=True)
        (ready or _print_url)(url)
        if open_browser:
            await anyio.to_thread.run_sync(webbrowser.open, url)

    async def stopping(event: anyio.Event) -> None:
        await event.wait()
        server.should_exit = True  # uvicorn closes its connections and returns

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(announce)
        if stop is not None:
            tasks.start_soon(stopping, stop)
        await server.serve(sockets=sockets)
        tasks.cancel_scope.cancel()
