"""A scriptable stand-in for Ollama and OpenAI-compatible servers on 127.0.0.1, for the embed tests."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from ragraf.embed.ollama import OllamaEmbedder
from ragraf.embed.openai_compat import OpenAIEmbedder
from ragraf.embed.remote import RemoteEmbedder

DIM = 8


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic, text-dependent vector (not normalized, as real servers may send)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return (np.random.default_rng(seed).standard_normal(dim) * 3).tolist()


@dataclass
class Reply:
    """One scripted answer: a status and body, or a hang, or a reset connection."""

    status: int = 200
    body: Any = None  # dict/list: JSON; str/bytes: sent as is; None: a valid embeddings answer
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0  # seconds to sleep before answering
    reset: bool = False  # close the socket with RST instead of answering


@dataclass
class Request:
    """What the server received."""

    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Answers POSTs from a script (one Reply per request, in order), then with valid embeddings."""

    def __init__(self, shape: str, dim: int = DIM) -> None:
        self.shape = shape
        self.dim = dim
        self.script: list[Reply | Callable[[Request], Reply]] = []
        self.rule: Callable[[Request], Reply | None] | None = None
        self.requests: list[Request] = []
        self.pull_lines: list[dict[str, Any]] = [{"status": "pulling manifest"}, {"status": "success"}]
        self.tags: list[str] = ["nomic-embed-text:latest"]
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def answer(self, texts: list[str]) -> dict[str, Any]:
        """A valid answer in this server's shape for texts."""
        vectors = [fake_vector(t, self.dim) for t in texts]
        tokens = sum(len(t.split()) for t in texts)
        if self.shape == "ollama":
            return {"model": "m", "embeddings": vectors, "prompt_eval_count": tokens}
        return {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
            "model": "m",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _reply_for(self, request: Request) -> Reply:
        if self.script:
            step = self.script.pop(0)
            return step(request) if callable(step) else step
        if self.rule is not None:
            reply = self.rule(request)
            if reply is not None:
                return reply
        return Reply()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                body = json.dumps({"models": [{"name": n} for n in server.tags]}).encode()
                self._send(200, body, {"Content-Type": "application/json"})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
                server.requests.append(request)
                if self.path == "/api/pull":
                    lines = "".join(json.dumps(line) + "\n" for line in server.pull_lines).encode()
                    self._send(200, lines, {"Content-Type": "application/x-ndjson"})
                    return
                reply = server._reply_for(request)
                if reply.hang:
                    time.sleep(reply.hang)
                if reply.reset:
                    # SO_LINGER 0 makes close() send RST: the client sees a connection reset.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                body = reply.body
                if body is None:
                    body = server.answer(request.body["input"])
                if isinstance(body, dict | list):
                    data = json.dumps(body).encode()  # json.dumps writes NaN as NaN, like a broken server
                else:
                    data = body.encode() if isinstance(body, str) else body
                # The client may have given up already (the timeout tests).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply.status, data, {"Content-Type": "application/json", **reply.headers})

        return Handler

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


def make_remote(fake: FakeServer, sleeps: list[float], **kwargs: Any) -> RemoteEmbedder:
    """An embedder of the fake's shape with a short timeout and a recording sleep."""
    kwargs.setdefault("timeout_s", 0.5)
    if fake.shape == "ollama":
        return OllamaEmbedder(kwargs.pop("model", "all-minilm"), fake.url, sleep=sleeps.append, **kwargs)
    return OpenAIEmbedder(
        kwargs.pop("model", "text-embedding-3-small"),
        fake.url + "/v1",
        api_key="sk-test",
        sleep=sleeps.append,
        **kwargs,
    )
