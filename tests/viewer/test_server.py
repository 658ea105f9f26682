"""The viewer's listening sockets, as the event loop serves them."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import threading
import time

import httpx

from nexusmem_core.config import Settings
from nexusmem_core.viewer.server import bind

from ..conftest import NEXUSMEM, Repo, run_cli


async def test_connections_to_the_viewer_send_without_waiting_for_acks() -> None:
    # With Nagle on, a response written as headers then body waits for the client's delayed
    # ACK (40 ms on Linux): every page paid it, whatever its time in the server.
    accepted: asyncio.Queue[int] = asyncio.Queue()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served = writer.get_extra_info("socket")
        accepted.put_nowait(served.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()
        await writer.wait_closed()

    for sock in bind("127.0.0.1", 0):
        server = await asyncio.start_server(connected, sock=sock)
        async with server:
            host, port = sock.getsockname()[:2]
            _, writer = await asyncio.open_connection(host, port)
            assert await asyncio.wait_for(accepted.get(), 10) != 0
            writer.close()
            await writer.wait_closed()


def test_ctrl_c_stops_the_viewer_cleanly_with_a_page_streaming(
    settings: Settings, repo: Repo
) -> None:
    """`nexusmem ui` as a user runs it: the address on stdout, a timeline streaming live, then
    Ctrl-C: the viewer closes the stream, says it stopped, and exits 0 (not "interrupted")."""
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "-C", str(repo.path)).returncode == 0
    viewer = subprocess.Popen(
        [NEXUSMEM, "ui", "-C", str(repo.path), "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert viewer.stdout is not None
        url = viewer.stdout.readline().split(": ", 1)[1].strip()
        base = url.split("/?")[0]
        lines: list[str] = []
        with httpx.Client(base_url=base, timeout=20) as client:
            client.get(url)
            slug = client.get("/").headers["location"].split("/")[2]

            def read() -> None:
                with (
                    contextlib.suppress(httpx.HTTPError),
                    client.stream("GET", f"/p/{slug}/live") as stream,
                ):
                    lines.extend(stream.iter_lines())

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            for _ in range(400):  # the first event comes within a second; 20 s at most
                if any(line.startswith("event: pending") for line in lines):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the stream sent nothing")
            viewer.send_signal(signal.SIGINT)
            code = viewer.wait(timeout=20)
            reader.join(20)
        assert code == 0
        assert viewer.stderr is not None
        said = viewer.stderr.read()
        assert "NexusMem viewer stopped" in said and "error" not in said
    finally:
        if viewer.poll() is None:
            viewer.kill()
        viewer.communicate()  # and its pipes closed
