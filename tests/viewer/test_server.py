"""The viewer's listening sockets, as the event loop serves them."""

from __future__ import annotations

import asyncio
import socket

from nexusmem_core.viewer.server import bind


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
