"""The HTTP API over a real index, served by a real uvicorn in a subprocess on a loopback port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers import SERVER_ENV, HttpServer, free_port

from ragraf import Index
from ragraf.adapters.http_api import check_bind, is_loopback, parse_listen
from ragraf.adapters.tools import TOOLS, available
from ragraf.errors import ConfigError
from ragraf.index.lock import WriterLock

GOOD_BODIES = {
    "search": {"query": "TCPConnector", "top_k": 2},
    "find_symbol": {"name": "retry_with_backoff"},
    "find_references": {"name": "resolve_host"},
    "outline": {"path": "src/app/server.py"},
    "read": {"path": "src/app/server.py", "start_line": 1, "end_line": 4},
    "status": {},
    "drift": {},
    "changes": {"from_rev": "rev-0001", "to_rev": "rev-0001"},
    "reindex": {"full": False},
    "revisions": {},
}

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.mark.parametrize("tool", list(GOOD_BODIES))
def test_every_route_answers_with_the_envelope(http_server: HttpServer, tool: str) -> None:
    if not available(tool):
        pytest.xfail("operation not yet in the API")
    status, env = http_server.post(tool, GOOD_BODIES[tool])
    assert status == 200, env
    assert env["index_rev"] == "rev-0001"
    if TOOLS[tool].read_only:
        assert env["state"] == "fresh"
        assert "error" not in env
    else:
        assert env["op"] == "index"


def test_search_returns_results_with_path_and_lines(http_server: HttpServer) -> None:
    status, env = http_server.post("search", {"query": "retry with exponential backoff", "top_k": 1})
    assert status == 200
    assert [(r["path"], r["start_line"]) for r in env["results"]] == [("src/app/retry.py", 1)]


def test_a_pasted_bug_report_is_a_query(http_server: HttpServer) -> None:
    report = (
        "Bug: retries never stop when the server answers 503.\n"
        + "Traceback (most recent call last):\n"
        + '  File "src/app/retry.py", line 2, in retry_with_backoff\n    time.sleep(delay)\n' * 40
        + "RuntimeError: gave up after 5 attempts\n" * 20
    )
    assert len(report) > 4000
    status, env = http_server.post("search", {"query": report, "top_k": 1})
    assert status == 200 and env["results"][0]["path"] == "src/app/retry.py"


def test_tools_without_arguments_accept_an_empty_body(http_server: HttpServer) -> None:
    status, _, raw = http_server.request("POST", "/v1/status")
    assert status == 200
    assert json.loads(raw)["op"] == "status"


def test_healthz_and_the_openapi_document_describe_every_route(http_server: HttpServer) -> None:
    status, _, raw = http_server.request("GET", "/healthz")
    assert status == 200 and json.loads(raw)["status"] == "ok"
    status, headers, raw = http_server.request("GET", "/openapi.json")
    assert status == 200 and headers["content-type"].startswith("application/json")
    doc = json.loads(raw)
    assert doc["openapi"].startswith("3.")
    for name, spec in TOOLS.items():
        op = doc["paths"][f"/v1/{name}"]["post"]
        assert op["requestBody"]["content"]["application/json"]["schema"] == spec.input_schema
        assert {"200", "400", "404", "409", "413", "503"} <= set(op["responses"])
    assert {"/healthz", "/openapi.json"} <= set(doc["paths"])


@pytest.mark.parametrize(
    ("body", "mentioned"),
    [
        ({"query": "x", "top_k": 1001}, "top_k"),
        ({"query": 3}, "query"),
        ({}, "query"),
        ({"query": "x", "extra": 1}, "extra"),
        ([1, 2], "object"),
        ({"query": "x" * 100_001}, "100001 characters, more than the 100000 allowed"),
    ],
)
def test_bad_arguments_are_400_with_the_error_envelope(
    http_server: HttpServer, body: object, mentioned: str
) -> None:
    status, env = http_server.post("search", body)
    assert status == 400
    assert env["state"] == "refused" and env["op"] == "search"
    assert env["error"]["code"] == "bad_arguments"
    assert mentioned in env["error"]["message"]
    assert env["error"]["suggest"]


def test_invalid_json_and_wrong_content_type_are_refused(http_server: HttpServer) -> None:
    status, _, raw = http_server.request(
        "POST", "/v1/search", "{not json", {"Content-Type": "application/json"}
    )
    assert status == 400 and json.loads(raw)["error"]["code"] == "bad_arguments"
    status, _, raw = http_server.request(
        "POST", "/v1/search", '{"query": "x"}', {"Content-Type": "text/plain"}
    )
    assert status == 415 and json.loads(raw)["error"]["code"] == "unsupported_media_type"


def test_unknown_routes_and_methods_answer_with_json_errors(http_server: HttpServer) -> None:
    status, _, raw = http_server.request("POST", "/v1/nope", "{}", {"Content-Type": "application/json"})
    assert status == 404 and json.loads(raw)["error"]["code"] == "not_found"
    status, _, raw = http_server.request("GET", "/v1/search")
    assert status == 405 and json.loads(raw)["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    "path",
    [
        "../../etc/passwd",
        "src/../../../etc/passwd",
        "/etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "%2e%2e/%2e%2e/etc/passwd",
        "..\\..\\etc\\passwd",
        "src/app/server.py\x00.txt",
        "outside/passwd",
        "etc_link",
        "~/.ssh/id_rsa",
    ],
)
def test_read_refuses_every_way_out_of_the_root(
    http_server: HttpServer, indexed_module: Path, path: str
) -> None:
    outside = indexed_module.parent / "secret"
    outside.mkdir(exist_ok=True)
    (outside / "passwd").write_text("root:x:0:0:secret\n")
    for name, target in (("outside", outside), ("etc_link", outside / "passwd")):
        if not (indexed_module / name).is_symlink():
            (indexed_module / name).symlink_to(target)
    status, env = http_server.post("read", {"path": path})
    assert status in (400, 404), env
    assert env["state"] == "refused"
    assert "root:x" not in json.dumps(env)


def test_read_refuses_a_json_escaped_traversal(http_server: HttpServer) -> None:
    body = '{"path": "\\u002e\\u002e/\\u002e\\u002e/etc/passwd"}'
    status, _, raw = http_server.request("POST", "/v1/read", body, {"Content-Type": "application/json"})
    assert status == 400
    assert json.loads(raw)["error"]["code"] == "outside_root"


def test_read_refuses_a_traversal_in_the_url(http_server: HttpServer) -> None:
    status, _, raw = http_server.request("POST", "/v1/read/..%2F..%2Fetc%2Fpasswd", "{}", {})
    assert status == 404
    assert b"root:" not in raw


def test_an_oversized_body_is_413(http_server: HttpServer) -> None:
    big = json.dumps({"query": "x" * (1024 * 1024 + 10)})
    status, _, raw = http_server.request("POST", "/v1/search", big, {"Content-Type": "application/json"})
    assert status == 413
    assert json.loads(raw)["error"]["code"] == "too_large"


def test_an_oversized_chunked_body_is_413(http_server: HttpServer) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", http_server.port, timeout=60)
    chunks = (b"x" * 65536 for _ in range(20))  # 1.25 MiB, no Content-Length
    conn.request(
        "POST", "/v1/search", body=chunks, headers={"Content-Type": "application/json"}, encode_chunked=True
    )
    resp = conn.getresponse()
    assert resp.status == 413
    conn.close()


def test_cross_origin_requests_and_foreign_host_names_are_refused(http_server: HttpServer) -> None:
    headers = {"Content-Type": "application/json", "Origin": "https://evil.example"}
    status, _, raw = http_server.request("POST", "/v1/status", "{}", headers)
    assert status == 403 and b"CORS is off" in raw
    headers = {"Content-Type": "application/json", "Host": "evil.example:80"}
    status, _, raw = http_server.request("POST", "/v1/status", "{}", headers)
    assert status == 403 and json.loads(raw)["error"]["code"] == "forbidden"


def test_a_token_makes_every_v1_route_require_the_bearer(indexed: Path, http_factory) -> None:  # type: ignore[no-untyped-def]
    server = http_factory(indexed, {"RAGRAF_HTTP_TOKEN": TOKEN})
    status, env = server.post("status", {})
    assert status == 401 and env["error"]["code"] == "unauthorized"
    status, env = server.post("status", {}, {"Authorization": "Bearer wrong-token-wrong-token-wrong"})
    assert status == 401
    status, env = server.post("status", {}, {"Authorization": f"Basic {TOKEN}"})
    assert status == 401
    status, env = server.post("status", {}, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and env["op"] == "status"
    assert server.request("GET", "/healthz")[0] == 200  # liveness needs no token
    doc = json.loads(server.request("GET", "/openapi.json")[2])
    assert doc["paths"]["/v1/search"]["post"]["security"] == [{"bearerAuth": []}]


def test_a_missing_index_is_404_and_reindex_builds_it(tmp_path: Path, http_factory) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "a.py").write_text("def parse_config(text):\n    return text\n")
    server = http_factory(root)
    status, env = server.post("search", {"query": "parse_config"})
    assert status == 404
    assert env["error"]["code"] == "index_missing"
    assert "ragraf index" in env["error"]["suggest"] and "/v1/reindex" in env["error"]["suggest"]
    status, report = server.post("reindex", {})
    assert status == 200 and report["index_rev"] == "rev-0001"
    status, env = server.post("search", {"query": "parse_config"})
    assert status == 200 and env["results"][0]["path"] == "a.py"


def test_a_held_lock_is_503_with_retry_after(indexed: Path, http_factory) -> None:  # type: ignore[no-untyped-def]
    server = http_factory(indexed)
    with WriterLock(Index.open(indexed, embedder="none").settings.home, wait=False):
        status, headers, raw = server.request(
            "POST", "/v1/reindex", "{}", {"Content-Type": "application/json"}
        )
        assert status == 503
        assert headers["retry-after"] == "5"
        assert json.loads(raw)["error"]["code"] == "locked"
        assert server.post("status", {})[0] == 200


@pytest.mark.parametrize("listen", ["0.0.0.0:{port}", "[::]:{port}", "example.org:{port}"])
def test_the_server_refuses_a_non_loopback_bind_without_a_token(indexed: Path, listen: str) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAGRAF_HTTP_TOKEN"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragraf.adapters.http_api",
            "--root",
            str(indexed),
            "--listen",
            listen.format(port=port),
        ],
        capture_output=True,
        text=True,
        env={**env, **SERVER_ENV},
        timeout=60,
    )
    assert proc.returncode != 0
    assert "RAGRAF_HTTP_TOKEN" in proc.stderr
    assert "refusing to listen" in proc.stderr


def test_a_short_token_is_refused_for_a_non_loopback_bind() -> None:
    with pytest.raises(ConfigError, match="shorter than"):
        check_bind("0.0.0.0", "short")
    check_bind("0.0.0.0", TOKEN)  # long enough: allowed
    check_bind("127.0.0.1", None)  # loopback needs none


def test_listen_addresses_and_loopback_detection() -> None:
    assert parse_listen("8765") == ("127.0.0.1", 8765)
    assert parse_listen("localhost:9000") == ("localhost", 9000)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    assert parse_listen("0.0.0.0:80") == ("0.0.0.0", 80)
    for bad in ("", "host:", "host:99999", "abc", ":80"):
        with pytest.raises(ConfigError):
            parse_listen(bad)
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "localhost", "::1", "[::1]"))
    assert not any(
        is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.2", "example.org", "localhost.evil.com")
    )
