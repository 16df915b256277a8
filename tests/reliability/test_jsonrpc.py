"""JSON-RPC fuzzing of the MCP stdio server from the 2.0 spec's error cases: every request with an id
is answered (an error under its id, or null when the id itself is what is wrong), a notification
never is, the server keeps serving and exits when stdin closes (issue 27)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers import SERVER_ENV, build_index

LONG = os.environ.get("RAGRAF_RELIABILITY_LONG") == "1"
HANG_S = 60  # only stops a hang: every reply is awaited by count, never by speed

INIT = {
    "jsonrpc": "2.0", "id": "init", "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}},
}  # fmt: skip
DEEP = 5000
# (line, the id its reply carries, the error code it must have; None: any reply under that id)
CASES: list[tuple[str, object, int | None]] = [
    ('{"jsonrpc": "2.0", "method": "foobar", "id": "1"}', "1", -32601),
    ('{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]', None, -32700),
    ('{"jsonrpc": "2.0", "method": 1, "params": "bar"}', None, -32600),
    ("[]", None, -32600),
    ("[1]", None, -32600),
    ("[1,2,3]", None, -32600),
    ('[{"jsonrpc": "2.0", "method": "ping", "id": 9}]', None, -32600),
    ('{"jsonrpc": "2.0", "id": 10, "method": "ping", "params": "str"}', 10, -32600),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600),
    ('{"jsonrpc": "1.0", "id": 11, "method": "ping"}', 11, -32600),
    ('{"id": 12, "method": "ping"}', 12, -32600),
    ('{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": [1, 2]}', 13, -32602),
    ('{"jsonrpc": "2.0", "id": 14, "method": 7}', 14, -32600),
    ('{"jsonrpc": "2.0", "id": 15}', 15, -32600),
    ("{}", None, -32600),
    ('"just a string"', None, -32600),
    ("42", None, -32600),
    ("null", None, -32600),
    ("this is not json", None, -32700),
    ('{"jsonrpc": "2.0", "id": 16, "method": "ping", "params": ' + "[" * DEEP + "]" * DEEP + "}", 16, -32600),
    ('{"jsonrpc": "2.0", "id": 17, "method": "ping", "params": ' + '{"a":' * DEEP + "1" + "}" * DEEP + "}", 17, -32600),
    ("[" * DEEP + "]" * DEEP, None, -32600),
    ('{"jsonrpc": "2.0", "id": 18, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "\\ud83d"}}}', 18, -32602),
    ('{"jsonrpc": "2.0", "id": 19, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}', 19, None),
    ('{"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"arguments": {}}}', 20, None),
    ('{"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": "search", "arguments": "x"}}', 21, None),
    ('{"jsonrpc": "2.0", "id": 22, "method": "tools/list", "params": {"cursor": 5}}', 22, None),
    ('{"jsonrpc": "2.0", "id": "x\\u00e9\\u4e2d", "method": "ping"}', "x\u00e9\u4e2d", None),
    ('{"jsonrpc": "2.0", "id": 23, "method": "ping", "params": {"_meta": {"progressToken": [1]}}}', 23, None),
    ('{"jsonrpc": "2.0", "id": 24, "method": "ping"}   ', 24, None),
    ('{"jsonrpc": "2.0", "id": 25, "method": "resources/list"}', 25, None),
    ('{"jsonrpc": "2.0", "id": 26, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "' + "x" * 200_000 + '"}}}', 26, None),
]  # fmt: skip
NOTIFICATIONS = [
    '{"jsonrpc": "2.0", "method": "notifications/whatever"}',
    '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nope"}}',
]


class RawServer:
    """`python -m ragraf.adapters.mcp_server` spoken to line by line; replies collected by id."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragraf.adapters.mcp_server", "--root", str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **SERVER_ENV}, bufsize=0,
        )  # fmt: skip
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.sent_at: dict[str, float] = {}
        self.latency_s: list[float] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(json.loads(line))  # every stdout line must be JSON-RPC

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")

    def collect(
        self, ids: list[object], nulls: int
    ) -> tuple[dict[object, dict[str, Any]], list[dict[str, Any]]]:
        """Wait for a reply to each id and `nulls` replies with a null id (or a hang's end)."""
        by_id: dict[object, dict[str, Any]] = {}
        null_replies: list[dict[str, Any]] = []
        deadline = time.monotonic() + HANG_S
        want = {json.dumps(i) for i in ids}
        while (
            want - {json.dumps(k) for k in by_id} or len(null_replies) < nulls
        ) and time.monotonic() < deadline:
            try:
                reply = self.replies.get(timeout=1)
            except queue.Empty:
                continue
            if reply.get("id") is None and "method" not in reply:
                null_replies.append(reply)
            elif "id" in reply:
                by_id[reply["id"]] = reply
        return by_id, null_replies

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=HANG_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    root = build_index(tmp_path_factory.mktemp("jsonrpc") / "repo")
    raw = RawServer(root)
    raw.send(json.dumps(INIT))
    raw.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    by_id, _ = raw.collect(["init"], 0)
    assert "init" in by_id, "the server did not answer initialize"
    yield raw
    assert raw.close() == 0, "the server did not exit cleanly when stdin closed"


def test_every_spec_error_case_with_an_id_is_answered_with_the_right_code(server: RawServer) -> None:
    for line in NOTIFICATIONS:
        server.send(line)
    for line, _id, _code in CASES:
        server.send(line)
    ids = [i for _line, i, _code in CASES if i is not None]
    nulls = [code for _line, i, code in CASES if i is None]
    server.send('{"jsonrpc": "2.0", "id": "after", "method": "ping"}')  # still serving
    by_id, null_replies = server.collect([*ids, "after"], len(nulls))
    missing = [i for i in [*ids, "after"] if i not in by_id]
    assert missing == [], f"unanswered requests: {missing}"
    for _line, i, code in CASES:
        if i is not None and code is not None:
            assert by_id[i].get("error", {}).get("code") == code, (i, by_id[i])
    assert sorted(r["error"]["code"] for r in null_replies) == sorted(nulls)
    assert "result" in by_id["after"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
METHODS = (
    st.sampled_from(["ping", "tools/call", "tools/list", "initialize", "nope", "", "notifications/x"])
    | JSON_VALUES
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0]) | JSON_VALUES,
        "method": METHODS,
        "params": JSON_VALUES,
    },
)


@settings(max_examples=600 if LONG else 60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(fields=st.lists(FIELDS, min_size=1, max_size=8))
def test_random_requests_with_an_integer_id_are_always_answered_under_it(
    server: RawServer, fields: list[dict[str, Any]]
) -> None:
    base = 1_000_000  # above every id the other test uses
    ids = []
    for offset, message in enumerate(fields):
        request_id = base + next(_COUNTER) * 10 + offset
        server.send(json.dumps({**message, "id": request_id}))
        ids.append(request_id)
    by_id, _ = server.collect(ids, 0)
    missing = [i for i in ids if i not in by_id]
    assert missing == [], f"unanswered: {[fields[ids.index(i)] for i in missing]}"
    for i in ids:
        assert ("result" in by_id[i]) != ("error" in by_id[i])


def _counter() -> Iterator[int]:
    n = 0
    while True:
        n += 1
        yield n


_COUNTER = _counter()
