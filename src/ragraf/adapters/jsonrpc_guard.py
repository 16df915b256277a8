"""The JSON-RPC checks in front of the MCP SDK's stdio reader: every line the SDK would drop without
an answer (the client then waits forever) is answered here with a JSON-RPC 2.0 error instead.

A line passes on to the SDK only when it is a message the SDK reads; otherwise the reply follows
the 2.0 spec: -32700 for no JSON, -32600 for no valid request object (a batch, an object or float
as id, "jsonrpc" other than "2.0", params neither object nor array, nesting past MAX_DEPTH), -32602
for params the method cannot take (an array; text with a lone surrogate). The reply carries the
request's id when it has one that can be sent back, else null. A valid notification gets nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from ragraf.corpus.extract import is_utf8

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectSendStream

# Deeper than any MCP message nests; past it a line is refused before a parser recurses into it.
MAX_DEPTH = 64
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|[^"\[\]{}]+', re.DOTALL)
_TOP_ID = re.compile(r'"id"\s*:\s*(-?\d+(?![.\deE])|"(?:[^"\\]|\\.)*")')


def _too_deep(line: str) -> tuple[bool, object]:
    """Whether the line nests past MAX_DEPTH, and the top-level id read without parsing it."""
    depth = deepest = 0
    top: list[str] = []
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
            if depth == 2:
                top.append("[]")  # a nested value, which no id is
        elif token in ("]", "}"):
            depth -= 1
        elif depth == 1:
            top.append(token)
    if deepest <= MAX_DEPTH:
        return False, None
    found = _TOP_ID.search("".join(top))
    if found is None:
        return True, None
    try:
        return True, json.loads(found.group(1))
    except ValueError:
        return True, None


def _answerable(request_id: object) -> object:
    """The id as the reply may carry it: an int or a string that is valid UTF-8, else null."""
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id if is_utf8(str(request_id)) else None


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": _answerable(request_id), "error": {"code": code, "message": message}}


def _has_lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return not is_utf8(value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def check_line(line: str, sdk_reads: Callable[[str], bool]) -> dict[str, Any] | None:
    """The JSON-RPC error reply for a line the SDK would not answer, or None to pass it on (a line
    `sdk_reads`, or a notification, which gets no reply even when malformed past its method)."""
    if not line.strip():
        return None  # a blank line between messages is no request
    brackets = line.count("[") + line.count("{")
    if brackets > MAX_DEPTH:
        deep, request_id = _too_deep(line)
        if deep:
            return _error(
                request_id, INVALID_REQUEST, f"invalid request: nested deeper than {MAX_DEPTH} levels"
            )
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "parse error: the line is not JSON")
    if isinstance(message, list):
        return _error(
            None, INVALID_REQUEST, "invalid request: batches are not supported; send one object a line"
        )
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "invalid request: a JSON-RPC message is an object")
    request_id = message.get("id")
    if "id" in message and (isinstance(request_id, bool) or not isinstance(request_id, int | str | None)):
        return _error(None, INVALID_REQUEST, "invalid request: id must be a string or an integer")
    if message.get("jsonrpc") != "2.0":
        return _error(request_id, INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return _error(request_id, INVALID_REQUEST, "invalid request: method must be a string")
    params = message.get("params")
    if "params" in message and not isinstance(params, dict | list | None):
        return _error(request_id, INVALID_REQUEST, "invalid request: params must be an object")
    if sdk_reads(line):
        return None
    if "id" not in message and isinstance(method, str):
        return None  # a notification is never answered (the SDK drops it)
    if _has_lone_surrogate(message):
        return _error(
            request_id,
            INVALID_PARAMS,
            "invalid params: a string is not valid Unicode (a lone surrogate); send UTF-8 text",
        )
    if isinstance(params, list):
        return _error(request_id, INVALID_PARAMS, "invalid params: params must be an object, not an array")
    if method is None and request_id is None:
        return _error(None, INVALID_REQUEST, "invalid request: neither a request nor a response")
    return _error(request_id, INVALID_REQUEST, "invalid request: not a JSON-RPC request this server reads")


def claim_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """stdin's descriptor for the protocol alone: fd 0 reads the null device meanwhile, so no tool
    or child process eats a message; the callable puts it back."""
    private = os.dup(0)  # not inherited by child processes
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def restore() -> None:
        os.dup2(private, 0)

    return os.fdopen(private, "rb", closefd=False), restore


class _Unowned(io.TextIOWrapper):
    """A text layer that never closes the descriptor under it (a reader thread may still hold it)."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


class CheckedLines:
    """The lines of stdin for the SDK's reader, less those answered here: `replies` gets each
    error reply as a dict, in the order the lines came."""

    def __init__(self, raw: BinaryIO, replies: MemoryObjectSendStream[dict[str, Any]]) -> None:
        import anyio
        import mcp_types as types

        self._lines = anyio.wrap_file(_Unowned(raw, encoding="utf-8", errors="replace"))
        self._replies = replies
        adapter = types.jsonrpc_message_adapter

        def sdk_reads(line: str) -> bool:
            try:
                adapter.validate_json(line, by_name=False)
            except Exception:  # noqa: BLE001 - whatever the SDK refuses, it drops unanswered
                return False
            return True

        self._sdk_reads = sdk_reads

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._replies:  # closed at the end of stdin: the task writing replies ends too
            async for line in self._lines:
                try:
                    reply = check_line(line, self._sdk_reads)
                except Exception:  # noqa: BLE001 - a check that fails lets the SDK have the line
                    reply = None
                if reply is None:
                    yield line
                else:
                    await self._replies.send(reply)

    async def aclose(self) -> None:
        await self._lines.aclose()
