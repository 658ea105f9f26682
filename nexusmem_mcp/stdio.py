"""Serve MCP over stdio so that every request is answered, even one the SDK cannot read.

The SDK's stdio transport validates each line with pydantic and, when that fails, puts the
exception on the read stream, where the dispatcher logs it at debug level and drops it: the
client waits for a reply that never comes. A string holding a lone surrogate escape
(``"\\ud800"``) is enough, since pydantic-core's JSON parser refuses one that Python's accepts
(docs/sdk-stdio-surrogate.md). This module sits between the transport and the server: such a
line is parsed again with the standard library, its lone surrogates become U+FFFD, and it goes
on to the server; a line that still cannot be read is answered with a JSON-RPC error.

A request whose id is neither a string nor an integer (``10.5``, ``{}``, ``null``, ``true``)
is read by the SDK as a notification, its id dropped, and never answered. MCP forbids such ids;
JSON-RPC answers them with -32600 (Invalid Request) and a null id. So the lines are checked
before the SDK reads them: this module reads stdin itself and hands the SDK the lines it may
have, answering the others on stdout.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager
from io import TextIOWrapper
from typing import TYPE_CHECKING, Any, BinaryIO, cast

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
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = ["serve_stdio"]

log = get_logger("mcp_stdio")

# After json.loads every surrogate left is a lone one: escaped pairs are joined on the way in.
_SURROGATE = re.compile("[\ud800-\udfff]")


async def serve_stdio(server: MCPServer[Any]) -> None:
    """What ``server.run_stdio_async()`` does, with the lines the SDK could not read repaired
    or answered, and those with an id it would drop answered (see the module's docstring)."""
    lowlevel = server._lowlevel_server  # the SDK has no public way to serve given streams
    odd, odd_answers = anyio.create_memory_object_stream[JSONRPCError](0)
    with _stdin_claimed() as wire:
        lines = anyio.wrap_file(TextIOWrapper(wire, encoding="utf-8", errors="replace"))
        stdin = cast("anyio.AsyncFile[str]", _checked(lines, odd))
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            send, repaired = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_repair, read_stream, send, write_stream)
                tg.start_soon(_answer, odd_answers, write_stream)
                await lowlevel.run(repaired, write_stream, lowlevel.create_initialization_options())
                tg.cancel_scope.cancel()


@contextmanager
def _stdin_claimed() -> Iterator[BinaryIO]:
    """The client's stdin on a descriptor of our own, and fd 0 on the null device meanwhile,
    as the SDK's transport keeps it when it reads stdin itself: a child process that reads
    its stdin gets EOF, never the protocol's bytes."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        # closefd=False: a worker thread may still be blocked reading it when serving ends.
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


# A top-level "id" whose value does not start as a string or an integer does: only a line
# this finds (or one with a \u escape, which could spell "id") is parsed here.
_ODD_ID = re.compile(r'"id"\s*:\s*(?:[^-0-9"\s]|-[^0-9]|-?[0-9]+[.eE])')


async def _checked(
    lines: AsyncIterable[str], odd: MemoryObjectSendStream[JSONRPCError]
) -> AsyncIterator[str]:
    """The lines the SDK may read; a request with an id it would drop is answered instead."""
    async with odd:
        async for line in lines:
            if (_ODD_ID.search(line) or "\\u" in line) and _odd_id(line):
                log.warning("mcp_request_id_invalid")
                await odd.send(_error(None, INVALID_REQUEST, _ODD))
            else:
                yield line


def _odd_id(line: str) -> bool:
    """Whether ``line`` is a request (it has a method) whose id is no string or integer."""
    try:
        sent = json.loads(line)
    except (ValueError, RecursionError):
        return False  # the SDK's reading of it is answered by _repair
    if not isinstance(sent, dict) or "method" not in sent or "id" not in sent:
        return False
    value = sent["id"]
    return not isinstance(value, str | int) or isinstance(value, bool)


async def _answer(
    answers: MemoryObjectReceiveStream[JSONRPCError], write_stream: WriteStream[SessionMessage]
) -> None:
    async with answers:
        async for answer in answers:
            await write_stream.send(SessionMessage(answer))


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
_ODD = "Invalid request: a request's id must be a string or an integer"


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
