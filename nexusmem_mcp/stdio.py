"""Serve MCP over stdio so that every request is answered, even one the SDK cannot read.

The SDK's stdio transport validates each line with pydantic and, when that fails, puts the
exception on the read stream, where the dispatcher logs it at debug level and drops it: the
client waits for a reply that never comes. A string holding a lone surrogate escape
(``"\\ud800"``) is enough, since pydantic-core's JSON parser refuses one that Python's accepts
(docs/sdk-stdio-surrogate.md). This module sits between the transport and the server: such a
line is parsed again with the standard library, its lone surrogates become U+FFFD, and it goes
on to the server; a line that still cannot be read is answered with a JSON-RPC error.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from nexusmem_core.logging import get_logger

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream
    from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = ["serve_stdio"]

log = get_logger("mcp_stdio")

# After json.loads every surrogate left is a lone one: escaped pairs are joined on the way in.
_SURROGATE = re.compile("[\ud800-\udfff]")


async def serve_stdio(server: MCPServer[Any]) -> None:
    """What ``server.run_stdio_async()`` does, with the lines the SDK could not read repaired
    or answered (see the module's docstring)."""
    lowlevel = server._lowlevel_server  # the SDK has no public way to serve given streams
    async with stdio_server() as (read_stream, write_stream):
        send, repaired = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_repair, read_stream, send, write_stream)
            await lowlevel.run(repaired, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


async def _repair(
    read_stream: ReadStream[SessionMessage | Exception],
    send: MemoryObjectSendStream[SessionMessage | Exception],
    write_stream: WriteStream[SessionMessage],
) -> None:
    """Pass messages on; turn each line the SDK could not read into a message or an answer."""
    async with send:
        async for item in read_stream:
            message = _reread(item) if isinstance(item, Exception) else item
            if isinstance(message, JSONRPCError):
                await write_stream.send(SessionMessage(message))
            elif message is not None:
                try:
                    await send.send(message)
                except anyio.BrokenResourceError:  # the server stopped reading: it is closing
                    return


def _reread(exc: Exception) -> SessionMessage | JSONRPCError | None:
    """The message the SDK failed to read, repaired; else the error that answers it; None when
    there is nothing to answer (a malformed response to the server, or an unknown failure)."""
    failure = _failure(exc)
    if failure is None:
        log.warning("mcp_message_unreadable", error=type(exc).__name__)
        return None
    kind, sent = failure
    if kind == "json_invalid":
        try:
            sent = json.loads(sent)
        except (ValueError, RecursionError):
            log.warning("mcp_line_not_json")
            return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
        repaired = _without_lone_surrogates(sent)
        if repaired is not None:
            return repaired
    if not isinstance(sent, dict):
        log.warning("mcp_message_invalid", id=None)
        return _error(None, INVALID_REQUEST, _INVALID)
    if "method" not in sent and ("result" in sent or "error" in sent):
        log.warning("mcp_response_invalid", id=_request_id(sent))
        return None  # a response is never answered: its id names one of our own requests
    log.warning("mcp_message_invalid", id=_request_id(sent))
    return _error(_request_id(sent), INVALID_REQUEST, _INVALID)


def _without_lone_surrogates(sent: Any) -> SessionMessage | None:
    """``sent`` as a message once each lone surrogate is U+FFFD, or None if it is still not one."""
    try:
        text = _SURROGATE.sub("\ufffd", json.dumps(sent, ensure_ascii=False))
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except (ValueError, RecursionError):  # a ValidationError is a ValueError
        return None
    log.warning("mcp_lone_surrogates_replaced", id=getattr(message, "id", None))
    return SessionMessage(message)


_INVALID = "Invalid request: not a JSON-RPC 2.0 request or notification"


def _failure(exc: Exception) -> tuple[str, Any] | None:
    """What pydantic could not read, from its error: ``("json_invalid", line)`` when the line
    was not JSON to it, else the kind of error and the value it parsed; None if the error
    does not say.

    Each member of the message union that fails reports it: a missing top-level field (a
    request has no ``result``) carries the whole object, a wrong type of message the value.
    """
    if not isinstance(exc, ValidationError):
        return None
    for error in exc.errors():
        loc, kind = error["loc"], error["type"]
        if kind == "json_invalid" and isinstance(error["input"], str):
            return kind, error["input"]
        if len(loc) == 1 or (len(loc) == 2 and kind == "missing"):
            return kind, error["input"]
    return None


def _request_id(sent: dict[str, Any]) -> str | int | None:
    value = sent.get("id")
    valid = isinstance(value, str | int) and not isinstance(value, bool)
    return value if valid else None


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
