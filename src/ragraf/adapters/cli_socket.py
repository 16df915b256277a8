"""The server side of the CLI fast path (fastcli.py): a running `ragraf serve` or `ragraf watch`
listens on one Unix socket per root it serves and answers a CLI read by running the same click
command in this process, its stdout and stderr captured for that thread only, and sending back the
bytes and the exit code. The process's long-lived guard watches the tree (freshness/watch.py), so
the answer is verified as in process without the stat pass, and without start-up.

One request at a time (a client that waits longer falls back to answering itself); only this
user (SO_PEERCRED), in a 0700 folder, socket 0600; a request for another root, another environment
(RAGRAF_*, colour variables: fastcli.answering_env) or a command that is not a read is not taken.
A root or index home removed under the server closes its socket; the socket of a server that died
is removed by the next client that finds it refusing.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import selectors
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ragraf.fastcli import (
    MAGIC,
    READS,
    answering_env,
    code_stamp,
    private_dir,
    requested_root,
    socket_dir,
    socket_path,
)

log = logging.getLogger(__name__)

SERVED_CHANGE_FILES = 50  # an `index` with this many changed files or fewer runs in the server
LIVE_WAIT_S = 2.0  # how long a served `index` waits for a busy live loop of its root to go quiet
CHECK_S = 1.0  # how often the listener looks for a removed root or index home
_READ_TIMEOUT_S = 5.0  # a client that connects and sends nothing


class _Captured(io.TextIOWrapper):
    """A client's stdout or stderr: UTF-8 into bytes, a terminal when the client's is one."""

    def __init__(self, errors: str, tty: bool) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def value(self) -> bytes:
        self.flush()
        return self.buffer.getvalue()  # type: ignore[attr-defined]


class _ThreadStream:
    """sys.stdout or sys.stderr: the captured stream of the thread answering a client, else the
    process's own (the MCP protocol, the watch lines, the logs keep theirs)."""

    def __init__(self, real: Any, local: threading.local, name: str) -> None:
        self._real, self._local, self._name = real, local, name

    def _target(self) -> Any:
        return getattr(self._local, self._name, None) or self._real

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._target(), attr)

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()


_local = threading.local()
_install_lock = threading.Lock()


def _install_streams() -> None:
    with _install_lock:
        if not isinstance(sys.stdout, _ThreadStream):
            sys.stdout = _ThreadStream(sys.stdout, _local, "stdout")  # type: ignore[assignment]
        if not isinstance(sys.stderr, _ThreadStream):
            sys.stderr = _ThreadStream(sys.stderr, _local, "stderr")  # type: ignore[assignment]


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_command(argv: list[str], cwd: str, prog: str, stdin: bytes | None = None) -> int:
    """argv as the `ragraf` CLI runs it in cwd (this thread's sys.stdout/sys.stderr are the client's,
    `stdin` the bytes of the client's stdin for a command that reads it)."""
    import click

    from ragraf.cli import main

    args = list(argv)
    given = False
    for i in range(1, args.index("--") if "--" in args else len(args)):
        if args[i] == "--root" and i + 1 < len(args):  # a relative root is the client's folder's
            args[i + 1] = os.path.join(cwd, args[i + 1])
            given = True
        elif args[i].startswith("--root="):
            args[i] = "--root=" + os.path.join(cwd, args[i][len("--root=") :])
            given = True
    default_map = None if given else {argv[0]: {"root": cwd}}
    try:
        try:
            with main.make_context(prog, args, default_map=default_map) as ctx:
                ctx.meta["ragraf.argv"] = list(argv)  # as typed: the next-page hint repeats it
                ctx.meta["ragraf.cwd"] = cwd  # a file argument (localize's report) is the client's
                ctx.meta["ragraf.stdin"] = stdin  # and so is `-`
                main.invoke(ctx)
        except (EOFError, KeyboardInterrupt):
            click.echo(file=sys.stderr)
            raise click.Abort() from None
        except click.ClickException as exc:
            exc.show()
            return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted!", file=sys.stderr)
        return 1
    except SystemExit as exc:
        return _exit_code(exc.code)
    return 0


def parse_request(data: bytes) -> dict[str, Any] | None:
    """(prog, cwd, ttys, error handlers, the client's code stamp, argv, env) of a request body, or
    None when malformed."""
    fields = data.decode("utf-8", "surrogateescape").split("\0")
    try:
        prog, cwd, out_tty, err_tty, out_errors, err_errors, code, count = fields[:8]
        n = int(count)
    except ValueError:
        return None
    argv, pairs = fields[8 : 8 + n], fields[8 + n :]
    if len(argv) != n:
        return None
    env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    return {
        "prog": prog, "cwd": cwd, "tty": (out_tty == "1", err_tty == "1"),
        "errors": (out_errors, err_errors), "code": code, "argv": argv, "env": env,
    }  # fmt: skip


class _Root:
    """One served root's socket, and what removing it looks like."""

    def __init__(self, root: Path, path: str, sock: socket.socket, home: Path | None) -> None:
        self.root, self.path, self.sock, self.home = root, path, sock, home
        self.ino = os.stat(path).st_ino

    def gone(self) -> str | None:
        if not self.root.is_dir():
            return f"{self.root} was removed"
        if self.home is not None and not self.home.exists():
            return f"its index home {self.home} was removed"
        return None

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.ino:  # still ours, not a newer server's
                os.unlink(self.path)


def _bind(path: str) -> socket.socket | None:
    """A listening socket at path; None when a live server already answers there."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
        return None  # another server of this root: it answers
    except (FileNotFoundError, ConnectionRefusedError):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # stale
    except OSError:
        return None
    finally:
        probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(16)
    except OSError:
        sock.close()
        raise
    return sock


def _home_of(root: Path) -> Path | None:
    """The root's index home when it exists now (its removal later stops the socket)."""
    try:
        from ragraf.config import load_settings

        home = load_settings(root).home
    except Exception:  # a config error is the command's to report, not the listener's
        return None
    return home if home.exists() else None


class CliListener:
    """The sockets of the served roots and the thread that answers them; with idle_exit_s, the
    thread ends (closing them) after that long without a request."""

    def __init__(self, roots: list[Path], idle_exit_s: float | None = None) -> None:
        self.roots: dict[str, _Root] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.answered = 0
        self.code = code_stamp()  # the code this process runs
        self.code_on_disk = self.code  # looked at again when a client runs other code
        self.idle_exit_s = idle_exit_s
        self._last = time.monotonic()
        folder = socket_dir(os.environ)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError as exc:
            log.warning("no CLI socket: cannot create %s: %s", folder, exc.strerror)
            return
        if not private_dir(folder):
            log.warning("no CLI socket: %s is not this user's alone (mode 0700)", folder)
            return
        for root in roots:
            real = os.path.realpath(root)
            path = socket_path(real, os.environ)
            try:
                sock = _bind(path)
            except OSError as exc:
                log.warning("no CLI socket for %s: %s", real, exc.strerror)
                continue
            if sock is not None:
                self.roots[real] = _Root(Path(real), path, sock, _home_of(Path(real)))

    def start(self) -> CliListener:
        if self.roots:
            _install_streams()
            self._thread = threading.Thread(target=self._serve, name="ragraf-cli-socket", daemon=True)
            self._thread.start()
        return self

    def wait(self) -> None:
        """Until the listener ends: idle too long, every root removed, or stop()."""
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for entry in list(self.roots.values()):
            entry.close()
        self.roots.clear()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            for entry in self.roots.values():
                sel.register(entry.sock, selectors.EVENT_READ, entry)
            while not self._stop.is_set() and self.roots:
                for key, _ in sel.select(timeout=CHECK_S):
                    with contextlib.suppress(OSError):
                        conn, _addr = key.data.sock.accept()
                        with conn:
                            self._answer(conn, key.data)
                idle = self.idle_exit_s is not None and time.monotonic() - self._last > self.idle_exit_s
                for real, entry in list(self.roots.items()):
                    why = f"no request for {self.idle_exit_s:g} s" if idle else entry.gone()
                    if why is None and self.code != self.code_on_disk:
                        why = "ragraf was upgraded or edited since this server started"
                    if why is not None:
                        log.warning("CLI socket of %s closed: %s", real, why)
                        sel.unregister(entry.sock)
                        entry.close()
                        del self.roots[real]

    def _answer(self, conn: socket.socket, entry: _Root) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            return  # only the user who runs the server
        conn.settimeout(_READ_TIMEOUT_S)
        request = _read_request(conn)
        self._last = time.monotonic()
        if request is not None and request["code"] != self.code:
            self.code_on_disk = code_stamp()  # the client's is newer: closed at the end of this turn
        if request is None or not self._takes(request, entry):
            conn.sendall(b"0\n")
            return
        conn.sendall(b"1\n")
        conn.settimeout(None)
        out = _Captured(request["errors"][0], request["tty"][0])
        err = _Captured(request["errors"][1], request["tty"][1])
        _local.stdout, _local.stderr = out, err
        try:
            with _hinted(request["argv"], entry.root):
                code = run_command(request["argv"], request["cwd"], request["prog"], request["stdin"])
        except Exception:  # the server must outlive any bug below it; the client then answers itself
            log.exception("CLI request %s failed", request["argv"][:1])
            return
        finally:
            _local.stdout = _local.stderr = None
        self.answered += 1
        stdout, stderr = out.value(), err.value()
        conn.sendall(b"%d %d %d\n" % (code, len(stdout), len(stderr)) + stdout + stderr)

    def _takes(self, request: dict[str, Any], entry: _Root) -> bool:
        argv, cwd = request["argv"], request["cwd"]
        root = requested_root(argv)
        if root is None or argv[0] not in (*READS, "index") or not os.path.isabs(cwd):
            return False
        if request["code"] != self.code:
            return False
        if os.path.realpath(os.path.join(cwd, root)) != str(entry.root):
            return False
        if request["env"] != answering_env(os.environ, any(request["tty"])):
            return False
        return argv[0] != "index" or _small_change(entry.root)


def _hinted(argv: list[str], root: Path) -> contextlib.AbstractContextManager[None]:
    """An `index` run with what this process's live loop of the root saw since its last run, when
    it is quiet: the run stats only that, not the whole tree (index/live.py's quiet_hint)."""
    from ragraf.index.live import quiet_hint

    hint = quiet_hint(root, wait_s=LIVE_WAIT_S) if argv[0] == "index" else None
    if hint is None:
        return contextlib.nullcontext()
    from ragraf.index.indexer import named_changes

    return named_changes(hint)


def _small_change(root: Path) -> bool:
    """At most SERVED_CHANGE_FILES changed on disk since the current revision: the server's warm
    run of `ragraf index` takes a fraction of the client's start-up. A larger run is the
    client's, with its progress and its Ctrl-C. A quiet live loop of the root in this process
    says so from what the kernel named since its last run (an `index` right after an edit waits
    for the loop to index it: the guard's pass instead stats the whole tree, 0.45 CPU-s at 100,000
    files); else this process's guard (watched)."""
    from ragraf.index.live import quiet_hint

    hint = quiet_hint(root, wait_s=LIVE_WAIT_S)
    if hint is not None:
        return len(hint.paths) + hint.read_last <= SERVED_CHANGE_FILES
    from ragraf.api import Index

    try:
        with Index.open(root, lazy_refresh_max_files=0) as idx:  # says what drifted, indexes nothing
            env = idx.status(reindex_on_drift="warn")
    except Exception:  # no index yet, a config error: the command's own run says so
        return False
    drift = env.results[0].get("drift", {}) if env.results and isinstance(env.results[0], dict) else None
    if env.state not in ("fresh", "drifted") or not isinstance(drift, dict):
        return False
    return sum(len(paths) for paths in drift.values()) <= SERVED_CHANGE_FILES


def _read_request(conn: socket.socket) -> dict[str, Any] | None:
    buf = b""
    while b"\n" not in buf[len(MAGIC) :] and len(buf) < 64:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        buf += chunk
    if not buf.startswith(MAGIC):
        return None
    length_line, _, body = buf[len(MAGIC) :].partition(b"\n")
    try:
        length, stdin_length = (int(n) for n in length_line.split())
    except ValueError:
        return None
    while len(body) < length + max(stdin_length, 0):
        chunk = conn.recv(1 << 20)
        if not chunk:
            return None
        body += chunk
    request = parse_request(body[:length])
    if request is not None:
        request["stdin"] = body[length : length + stdin_length] if stdin_length >= 0 else None
    return request


def listen(roots: list[Path] | tuple[Path, ...], idle_exit_s: float | None = None) -> CliListener:
    """Start answering CLI reads for these roots (each a socket); stop() at exit. Never fails the server."""
    try:
        return CliListener(list(roots), idle_exit_s).start()
    except Exception:
        log.exception("no CLI socket")
        return CliListener([])
