"""HTTP API: `POST /v1/<tool>` for every MCP tool, JSON envelopes, `/openapi.json`, `/healthz` (DESIGN §12).

Run it as `ragraf serve --http [HOST:]PORT` or `python -m ragraf.adapters.http_api --listen [HOST:]PORT`.
Loopback only unless RAGRAF_HTTP_TOKEN is set; with a token every /v1 route wants `Authorization: Bearer`.
Several --root: every route takes `repo` (a root's name or path; default the first).
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ragraf import __version__
from ragraf.adapters.tool_specs import ENVELOPE_SCHEMA, ERROR_ENVELOPE_SCHEMA, REPORT_SCHEMA, TOOL_LIST
from ragraf.adapters.tools import BadArgumentsError, ServedRoots, ToolOutcome, ToolRunner, failure
from ragraf.adapters.web_page import page_routes
from ragraf.errors import ConfigError, RagrafError

log = logging.getLogger("ragraf.http")

MAX_BODY_BYTES = 1024 * 1024
MIN_TOKEN_CHARS = 16
DEFAULT_PORT = 8765

# Error code → HTTP status; a code not listed here is a request ragraf declined: 400.
STATUS = {
    "bad_arguments": 400,
    "usage": 400,
    "outside_root": 400,
    "unknown_repo": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "index_missing": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "refused": 409,
    "drifted": 409,
    "too_large": 413,
    "unsupported_media_type": 415,
    "config": 500,
    "internal": 500,
    "not_implemented": 501,
    "locked": 503,
    "embedder": 503,
    "index_corrupt": 503,
    "store": 503,
}
HTTP_HINTS = {"index_missing": "or POST /v1/reindex to build it now", "locked": "retry in a few seconds"}


class _HttpError(RagrafError):
    def __init__(self, code: str, message: str, suggest: str = "") -> None:
        super().__init__(message, suggest)
        self.code = code


def status_for(outcome: ToolOutcome) -> int:
    """The HTTP status of a tool outcome."""
    if outcome.error_code is None:
        return 200
    return STATUS.get(outcome.error_code, 400)


def _json(payload: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> Response:
    try:
        body = json.dumps(payload, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError as exc:  # a NaN somewhere: still answer, as an internal error
        body = json.dumps(failure(payload.get("op", "http"), _HttpError("internal", str(exc))).payload)
        status = 500
    base = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
    return Response(body, status, {**base, **(headers or {})}, media_type="application/json")


def _error(
    op: str, code: str, message: str, suggest: str = "", headers: dict[str, str] | None = None
) -> Response:
    outcome = failure(op, _HttpError(code, message, suggest))
    return _json(outcome.payload, status_for(outcome), headers)


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1; anything else (0.0.0.0, a name, a LAN address) is not."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Guard:
    """The checks every /v1 request passes before its body is read: Host, Origin, bearer token."""

    def __init__(self, token: str | None, cors_origins: Sequence[str], check_host: bool) -> None:
        self.token = token.encode() if token else None
        self.cors_origins = set(cors_origins)
        self.check_host = check_host

    def refuse(self, request: Request, op: str) -> Response | None:
        if self.check_host and not is_loopback(_host_name(request.headers.get("host", ""))):
            # A loopback server answering a foreign Host name is a DNS-rebinding attempt.
            return _error(op, "forbidden", "this server answers loopback host names only", "use 127.0.0.1")
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.cors_origins:
            return _error(
                op,
                "forbidden",
                f"cross-origin request from {origin} refused (CORS is off)",
                "call the API from a program, or list the origin in RAGRAF_HTTP_CORS_ORIGINS",
            )
        if self.token is not None:
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token):
                return _error(
                    op,
                    "unauthorized",
                    "missing or wrong bearer token",
                    "send `Authorization: Bearer <RAGRAF_HTTP_TOKEN>`",
                    {"WWW-Authenticate": 'Bearer realm="ragraf"'},
                )
        return None


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is over `limit` bytes (checked as it streams in)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _tool_endpoint(
    name: str, runner: ServedRoots, guard: _Guard, max_body: int
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        refused = guard.refuse(request, name)
        if refused is not None:
            return refused
        body = await _read_body(request, max_body)
        if body is None:
            return _error(name, "too_large", f"request body over {max_body} bytes", "send smaller arguments")
        arguments: object = {}
        if body.strip():
            if not _is_json(request.headers.get("content-type", "")):
                return _error(
                    name,
                    "unsupported_media_type",
                    "the body must be JSON",
                    "send Content-Type: application/json",
                )
            try:
                arguments = json.loads(body)
            except (ValueError, RecursionError) as exc:
                return _bad_body(name, f"the body is not valid JSON: {exc}")
            if not isinstance(arguments, dict):
                return _bad_body(name, f"the body must be a JSON object, not {type(arguments).__name__}")
        outcome = await runner.call(name, arguments)
        headers = {"Retry-After": "5"} if outcome.error_code == "locked" else None
        return _json(outcome.payload, status_for(outcome), headers)

    return endpoint


def _bad_body(op: str, message: str) -> Response:
    outcome = failure(op, BadArgumentsError(message, 'send a JSON object, e.g. {"query": "..."}'))
    return _json(outcome.payload, 400)


def openapi_document(token_required: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route, built from the same tool table as the MCP server."""
    error = {
        "description": "Error envelope",
        "content": {"application/json": {"schema": _ref("ErrorEnvelope")}},
    }
    codes = {
        "400": "Bad arguments or a path outside the root",
        "401": "Missing or wrong bearer token",
        "403": "Cross-origin request or foreign Host name",
        "404": "No index yet for this root",
        "409": "Refused by the freshness policy",
        "413": "Request body too large",
        "415": "Body is not JSON",
        "500": "Unexpected server failure",
        "501": "Operation not available in this version",
        "503": "Index locked, corrupt, or the embedder is down",
    }
    paths: dict[str, Any] = {}
    for spec in TOOL_LIST:
        ok = _ref("Envelope") if spec.read_only else _ref("IndexReport")
        responses: dict[str, Any] = {
            "200": {"description": "OK", "content": {"application/json": {"schema": ok}}}
        }
        responses.update({code: {**error, "description": text} for code, text in codes.items()})
        operation = {
            "operationId": spec.name,
            "summary": spec.title,
            "description": spec.description,
            "requestBody": {
                "required": bool(spec.required),
                "content": {"application/json": {"schema": spec.input_schema}},
            },
            "responses": responses,
        }
        if token_required:
            operation["security"] = [{"bearerAuth": []}]
        paths[f"/v1/{spec.name}"] = {"post": operation}
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "Liveness",
            "responses": {
                "200": {
                    "description": "The server is up",
                    "content": {"application/json": {"schema": {"type": "object", "required": ["status"]}}},
                }
            },
        }
    }
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document",
            "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ragraf HTTP API",
            "version": __version__,
            "description": "The ragraf operations over HTTP: one POST route per MCP tool, same argument names, "
            "JSON envelopes (DESIGN §4). Errors are envelopes with state 'refused' and error {code, message, suggest}.",
        },
        "paths": paths,
        "components": {
            "schemas": {
                "Envelope": ENVELOPE_SCHEMA,
                "IndexReport": REPORT_SCHEMA,
                "ErrorEnvelope": ERROR_ENVELOPE_SCHEMA,
            },
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def create_app(
    root: Path | str | Sequence[Path | str],
    *,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    check_host: bool = True,
    max_body_bytes: int = MAX_BODY_BYTES,
    overrides: dict[str, Any] | None = None,
    readers: int = 4,
) -> Starlette:
    """The ASGI app for one root or several (`repo` picks; the web page answers about the first);
    `check_host` refuses non-loopback Host headers (for loopback binds)."""
    roots = [Path(root)] if isinstance(root, str | Path) else [Path(r) for r in root]
    runner = ServedRoots(
        roots or [Path(".")],
        lambda folder: ToolRunner(folder, overrides or {}, readers=readers, hints=HTTP_HINTS),
    )
    guard = _Guard(token, cors_origins, check_host)
    document = openapi_document(token_required=token is not None)

    async def healthz(request: Request) -> Response:
        return _json({"status": "ok", "version": __version__}, 200)

    async def openapi(request: Request) -> Response:
        return _json(document, 200)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "internal")
        message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed here"}
        suggest = "see /openapi.json; operations are POST /v1/<tool>"
        return _error("http", code, message.get(status, "unexpected server failure"), suggest)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        runner.warm()
        try:
            yield
        finally:
            runner.close()

    routes = [
        Route(f"/v1/{spec.name}", _tool_endpoint(spec.name, runner, guard, max_body_bytes), methods=["POST"])
        for spec in TOOL_LIST
    ]
    routes += [Route("/healthz", healthz, methods=["GET"]), Route("/openapi.json", openapi, methods=["GET"])]
    # The web page at / (web_page.py): the same runner, Host check and token as /v1.
    routes += page_routes(
        runner, token, lambda r: not check_host or is_loopback(_host_name(r.headers.get("host", "")))
    )
    middleware = []
    if cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type"],
            )
        )
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={404: http_error, 405: http_error, Exception: http_error},
        lifespan=lifespan,
    )


def parse_listen(value: str) -> tuple[str, int]:
    """'8765' → (127.0.0.1, 8765); 'HOST:PORT' and '[::1]:PORT' as written."""
    host, port = "127.0.0.1", value
    if value.startswith("["):
        host, _, port = value[1:].partition("]")
        port = port.removeprefix(":")
    elif ":" in value:
        host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise ConfigError(
            f"--http {value!r} is not [HOST:]PORT", suggest="e.g. --http 8765 or --http 127.0.0.1:8765"
        )
    return host, int(port)


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a (long enough) token."""
    if is_loopback(host):
        return
    if not token:
        raise ConfigError(
            f"refusing to listen on {host} without RAGRAF_HTTP_TOKEN: anyone who can reach it could read the code",
            suggest="set RAGRAF_HTTP_TOKEN to a long random secret "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))'), or listen on 127.0.0.1",
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"RAGRAF_HTTP_TOKEN is shorter than {MIN_TOKEN_CHARS} characters; too weak for {host}",
            suggest="use a long random secret (python -c 'import secrets; print(secrets.token_urlsafe(32))')",
        )


def serve_http(
    root: Path | str | Sequence[Path | str], listen: str, env: dict[str, str] | None = None
) -> None:
    """Serve the API until interrupted; refuses unsafe binds before opening the port."""
    import uvicorn

    from ragraf.adapters.http_deadline import deadline_protocol

    env = dict(os.environ) if env is None else env
    host, port = parse_listen(listen)
    token = env.get("RAGRAF_HTTP_TOKEN") or None
    check_bind(host, token)
    protocol = deadline_protocol(env)  # idle and trickling connections closed (slowloris)
    origins = [o.strip() for o in env.get("RAGRAF_HTTP_CORS_ORIGINS", "").split(",") if o.strip()]
    app = create_app(root, token=token, cors_origins=origins, check_host=is_loopback(host))
    shown = f"[{host}]" if ":" in host else host
    roots = [root] if isinstance(root, str | Path) else list(root) or ["."]
    print(
        f"ragraf {__version__}: HTTP API for {', '.join(str(Path(r).resolve()) for r in roots)} on http://{shown}:{port} "
        f"(token {'required' if token else 'not set'}; docs at /openapi.json)",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=5,
        http=protocol,
    )


def main(argv: list[str] | None = None) -> None:
    """`python -m ragraf.adapters.http_api --root PATH --listen [HOST:]PORT`."""
    parser = argparse.ArgumentParser(prog="ragraf-http", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        help="folder to answer about, repeatable (default: the current one)",
    )
    parser.add_argument("--listen", default=str(DEFAULT_PORT), help="[HOST:]PORT (default 127.0.0.1:8765)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="ragraf-http %(levelname)s %(message)s"
    )
    try:
        serve_http(args.root, args.listen)
    except RagrafError as exc:
        print(
            f"ragraf serve: {exc.message}" + (f"\n  → {exc.suggest}" if exc.suggest else ""), file=sys.stderr
        )
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
