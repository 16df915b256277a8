"""MCP over stdio: one tool per operation, answering with the envelope and its text (DESIGN §12).

Run it as `ragraf serve [--root PATH ...]` or `python -m ragraf.adapters.mcp_server --root PATH`.
Several --root: every tool takes `repo`. No --root: the client's roots (MCP roots/list) when it
offers them, else the working folder. stdout carries the protocol only; logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragraf import __version__
from ragraf.adapters.agent_setup import AGENT_GUIDE
from ragraf.adapters.tools import TOOL_LIST, CallbackProgress, ServedRoots, ToolRunner, ToolSpec
from ragraf.corpus.extract import is_utf8

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext

# The SDK is imported inside the functions below: its ~0.7 s import then overlaps with opening the
# index on the reader thread, which shortens start-to-first-answer.

log = logging.getLogger("ragraf.mcp")

# What an agent reading an error should try next, beyond the operation's own suggestion.
MCP_HINTS = {"locked": "retry in a few seconds"}  # index_missing already says: call `reindex`


def _tool(spec: ToolSpec) -> types.Tool:
    import mcp_types as types

    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


def build_server(runner: ServedRoots) -> Server[Any]:
    """The low-level MCP server: tools/list from the tool table, tools/call through the runner."""
    import mcp_types as types
    from mcp.server import Server

    tools = [_tool(spec) for spec in TOOL_LIST]
    asking_roots = asyncio.Lock()  # the calls that arrive while the client's roots are asked wait for them

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if runner.from_client:
            async with asking_roots:
                if runner.from_client:
                    await _client_roots(ctx, runner)
        progress = _progress(ctx) if params.name == "reindex" else None
        outcome = await runner.call(params.name, params.arguments, progress)
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.text)],
            structured_content=outcome.payload,
            is_error=outcome.failed,
        )

    return Server(
        "ragraf",
        version=__version__,
        title="ragraf code index",
        instructions=AGENT_GUIDE,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _client_roots(ctx: ServerRequestContext[Any], runner: ServedRoots) -> None:
    """Serve the client's roots (file:// folders from roots/list), asked once, before the first call;
    a client without the capability, or with no folder roots, keeps the working folder."""
    import warnings
    from urllib.parse import unquote, urlparse

    import mcp_types as types

    runner.from_client = False
    if not ctx.session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
        return
    if not ctx.session.can_send_request:  # protocol 2026-07-28 (no back-channel; roots deprecated there)
        log.info("the client's roots cannot be asked on this protocol; serving %s", runner.root)
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated from protocol 2026-07-28; still served
            listed = await ctx.session.list_roots()
    except Exception as exc:  # a client that says it has roots but cannot list them
        log.warning("roots/list failed (%s); serving %s", exc, runner.root)
        return
    folders = []
    for root in listed.roots:
        url = urlparse(str(root.uri))
        path = Path(unquote(url.path))
        if url.scheme == "file" and path.is_dir():
            folders.append(path)
    if folders:
        log.info("serving the client's roots: %s", ", ".join(map(str, folders)))
        runner.replace(folders)


def _progress(ctx: ServerRequestContext[Any]) -> CallbackProgress:
    """Progress notifications for this request, sent from the indexing thread onto the event loop."""
    loop = asyncio.get_running_loop()

    def emit(done: float, total: float | None, message: str) -> None:
        future = asyncio.run_coroutine_threadsafe(ctx.session.report_progress(done, total, message), loop)
        future.add_done_callback(_log_failure)

    return CallbackProgress(emit)


def _log_failure(future: Any) -> None:
    with contextlib.suppress(Exception):
        if future.exception() is not None:
            log.debug("progress notification failed: %s", future.exception())


async def serve_stdio(runner: ServedRoots) -> None:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    import math

    import anyio
    import mcp_types as types
    from mcp.server.stdio import stdio_server

    from ragraf.adapters.jsonrpc_guard import CheckedLines, claim_stdin

    server = build_server(runner)
    log.info("ragraf %s: MCP on stdio for %s", __version__, runner.described())
    raw, restore_stdin = claim_stdin()
    send_reply, replies = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    try:
        await _serve_checked(server, CheckedLines(raw, send_reply), replies, stdio_server, types)
    finally:
        restore_stdin()


async def _serve_checked(server: Any, lines: Any, replies: Any, stdio_server: Any, types: Any) -> None:
    """The SDK's stdio loop over the checked lines, with the checks' replies written beside it."""
    import anyio
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        forward, messages = create_context_streams[SessionMessage | Exception](0)

        async def answer_unreadable() -> None:
            # The SDK drops a line it cannot read, and the client waits for its answer forever.
            async with forward:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await forward.send(item)
                        continue
                    try:
                        reply = unreadable_reply(item)
                        if reply is not None:
                            await write_stream.send(SessionMessage(reply))
                    except Exception:  # an answer to garbage must never end the server
                        log.exception("could not answer an unreadable request")

        async def answer_refused() -> None:
            async with replies:
                async for reply in replies:
                    await write_stream.send(SessionMessage(types.JSONRPCError.model_validate(reply)))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer_unreadable)
            tasks.start_soon(answer_refused)
            await server.run(messages, write_stream, server.create_initialization_options())


def unreadable_reply(error: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error for a line the SDK could not read: a request whose text holds a lone
    surrogate (a string cut inside an emoji) gets invalid params under its own id; a line that is
    no JSON a parse error; a batch or another shape invalid request. A notification gets nothing,
    as JSON-RPC wants."""
    import mcp_types as types

    def reply(request_id: object, code: int, message: str) -> types.JSONRPCError:
        if (
            not isinstance(request_id, int | str)
            or isinstance(request_id, bool)
            or not is_utf8(str(request_id))
        ):
            request_id = None  # an id that cannot be sent back (a lone surrogate in it) is answered as null
        return types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )

    errors = getattr(error, "errors", None)
    first = errors()[0] if callable(errors) and errors() else {}
    raw = first.get("input")
    unparsed = first.get("type") == "json_invalid" and isinstance(raw, str | bytes)
    if unparsed:  # the SDK could not parse the line; Python's json may
        try:
            raw = json.loads(raw)
        except ValueError:
            return reply(None, -32700, "parse error: the line is not JSON")
    if isinstance(raw, list):
        return reply(None, -32600, "invalid request: batches are not supported")
    if not unparsed or not isinstance(raw, dict) or "method" not in raw or "id" not in raw:
        return None  # a notification, or a shape whose id cannot be trusted
    return reply(
        raw["id"], -32602, "invalid params: a string is not valid Unicode (a lone surrogate); send UTF-8 text"
    )


def run(
    root: Path | str | list[Path | str] | tuple[Path | str, ...] = (),
    log_level: str = "WARNING",
    overrides: dict[str, Any] | None = None,
) -> None:
    """Blocking entry point: logging on stderr, open the indexes in the background, then serve.
    `root`: one folder or several; none means the working folder, or the client's roots."""
    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="ragraf-mcp %(levelname)s %(name)s: %(message)s"
    )
    roots = [Path(root)] if isinstance(root, str | Path) else [Path(r) for r in root]

    def make(folder: Path) -> ToolRunner:
        return ToolRunner(folder, overrides or {}, readers=1, hints=MCP_HINTS, in_tool_words=True)

    runner = ServedRoots(roots or [Path(".")], make, from_client=not roots)
    runner.warm()
    import anyio

    try:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(serve_stdio, runner)
    finally:
        runner.close()


def main(argv: list[str] | None = None) -> None:
    """`python -m ragraf.adapters.mcp_server --root PATH`."""
    parser = argparse.ArgumentParser(prog="ragraf-mcp", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        help="folder to answer about, repeatable (default: the client's roots, else the current directory)",
    )
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    args = parser.parse_args(argv)
    run(args.root, args.log_level)


if __name__ == "__main__":
    main()
