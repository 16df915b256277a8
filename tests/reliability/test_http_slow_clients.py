"""serve --http closes connections that do not send a whole request in time (an idle socket, one
byte at a time, a keep-alive connection whose next request trickles), and serves others meanwhile."""

from __future__ import annotations

import select
import socket
import threading
import time
from pathlib import Path

from servers import build_index, free_port, running_http, start_http

HANG_STOP_S = 120  # only stops a hang: the assertions count bytes and replies, never seconds
ENV = {"RAGRAF_HTTP_READ_TIMEOUT_S": "1"}
# A request head that takes 250 s to send at a byte every 0.05 s: it must be cut long before.
HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 5000 + b"\r\n\r\n"


def _closed_by_server(sock: socket.socket) -> bool:
    """The server closed its end (recv gives EOF or a reset); waits up to the hang stop."""
    sock.settimeout(HANG_STOP_S)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _trickle(sock: socket.socket, data: bytes, sent: list[int]) -> None:
    """Send `data` a byte every 0.05 s until the server closes the connection; counts what went."""
    for byte in data:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable and _closed_by_server(sock):
            return
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return
        sent[0] += 1
        time.sleep(0.05)


def _read_response(sock: socket.socket) -> bytes:
    sock.settimeout(HANG_STOP_S)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(
            line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head


def test_idle_and_trickling_connections_are_closed_while_others_are_served(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    build_index(root)
    with running_http(root, ENV) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
        slow = socket.create_connection(("127.0.0.1", server.port))
        kept = socket.create_connection(("127.0.0.1", server.port))
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _read_response(kept).startswith(b"HTTP/1.1 200")  # then its next request trickles
        counts = {name: [0] for name in ("slow", "kept")}
        threads = [
            threading.Thread(target=_trickle, args=(sock, HEAD, counts[name]))
            for name, sock in (("slow", slow), ("kept", kept))
        ]
        for t in threads:
            t.start()
        served = [server.request("GET", "/healthz")[0] for _ in range(5)]
        searched = server.post("search", {"query": "TCPConnector"})[0]
        assert served == [200] * 5 and searched == 200
        assert all(_closed_by_server(sock) for sock in idle)
        for t in threads:
            t.join(timeout=HANG_STOP_S)
            assert not t.is_alive()
        assert 0 < counts["slow"][0] < len(HEAD) and 0 < counts["kept"][0] < len(HEAD), counts
        assert server.request("GET", "/healthz")[0] == 200  # the server is none the worse
        for sock in [*idle, slow, kept]:
            sock.close()


def test_a_nonsense_read_timeout_is_refused_naming_the_setting(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    build_index(root)
    proc = start_http(root, f"127.0.0.1:{free_port()}", {"RAGRAF_HTTP_READ_TIMEOUT_S": "nan"})
    _, err = proc.communicate(timeout=HANG_STOP_S)
    assert proc.returncode != 0 and "Traceback" not in err
    assert "RAGRAF_HTTP_READ_TIMEOUT_S='nan'" in err and "between 0 and 3600" in err
