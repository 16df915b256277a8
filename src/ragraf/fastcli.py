"""The `ragraf` console entry point: a read handed to a running `ragraf serve` or `ragraf watch`
of the same root over a Unix socket, which runs the same command and sends back exactly what it
printed and its exit code; anything else, no server, a stale socket, a busy server or
RAGRAF_NO_SERVER=1 runs the CLI in this process (cli.py), silently.

Standard library only, and the cheapest of it (`_socket` rather than `socket`, which loads enum; no
json, which loads re; no hashlib, which loads OpenSSL), so a forwarded read costs the interpreter and
this file. The server side: adapters/cli_socket.py. Figures and decisions: docs/speed.md.

Where the socket is: RAGRAF_SOCKET_DIR, else $XDG_RUNTIME_DIR/ragraf, else /tmp/ragraf-<uid>; a
folder of this user's with mode 0700, one socket per root named from the root's real path. The
root is what the command itself would answer about: --root (or the current folder), made real.

A read that found no server answers itself, then (cli.py) starts one in the background for the
next reads, `ragraf serve --socket-only`, which exits after `server_idle_s` without a request.
"""

from __future__ import annotations

import os
import sys
import zlib

# The commands a server may answer: reads that write no file and print no help (`localize FILE`
# reads the report, the server resolving it from the caller's folder; `localize -` sends stdin).
READS = frozenset(
    {"def", "refs", "search", "outline", "read", "status", "callers", "callees", "graph", "impact",
     "map", "related", "drift", "revisions", "changes", "localize"}
)  # fmt: skip
_NOT_FORWARDED = {  # options that read a file or stdin relative to the caller, or write one
    "search": ("--queries",),
    "impact": ("--diff",),
    "changes": ("-o", "--output"),
}
_HELP = ("-h", "--help")
# `index` too, when it is the plain incremental run (the server takes it only when its watch saw a
# few files change at most, so a run with real work to do shows its progress here and Ctrl-C stops it).
_INDEX_FLAGS = frozenset({"-q", "--quiet", "--json", "--no-wait", "--lexical-only"})
_CLIENT_ONLY = ("RAGRAF_NO_SERVER", "RAGRAF_SOCKET_DIR")
_ANSWERING_ENV = ("OPENAI_API_KEY", "XDG_CACHE_HOME", "HOME", "NO_COLOR", "FORCE_COLOR")
ACK_TIMEOUT_S = 2.0  # a server busy with another command longer than this: answer here instead
MAGIC = b"ragraf-cli 3\n"
# The real root of a read this process found no server for (no socket, or a dead server's): the CLI
# may start one once it has answered (cli.py).
no_server_for: str | None = None


def socket_dir(env: dict[str, str] | os._Environ[str]) -> str:
    if env.get("RAGRAF_SOCKET_DIR"):
        return env["RAGRAF_SOCKET_DIR"]
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return os.path.join(runtime, "ragraf")
    return f"/tmp/ragraf-{os.getuid()}"


def socket_path(root: str, env: dict[str, str] | os._Environ[str]) -> str:
    """The socket of a root (its real path): two checksums of it; the server checks the root."""
    raw = os.fsencode(root)
    return os.path.join(socket_dir(env), f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}.sock")


def private_dir(path: str) -> bool:
    """The folder is this user's and nobody else may enter it."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and not st.st_mode & 0o077


def requested_root(argv: list[str]) -> str | None:
    """The --root a read names ('.' when none), or None when argv is not a read a server answers."""
    if not argv or (argv[0] not in READS and argv[0] != "index"):
        return None
    refused = _NOT_FORWARDED.get(argv[0], ())
    root, i = ".", 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        if arg in _HELP or arg in refused or arg.split("=", 1)[0] in refused:
            return None
        if arg == "--root":
            if i + 1 == len(argv):
                return None
            root = argv[i + 1]
            i += 1
        elif arg.startswith("--root="):
            root = arg[len("--root=") :]
        elif argv[0] == "index" and arg not in _INDEX_FLAGS:
            if arg != "--color" and not arg.startswith("--color="):
                return None  # a PATH, --full, --dry-run: in process
            i += arg == "--color"
        i += 1
    return root


def answering_env(env: dict[str, str] | os._Environ[str], tty: bool) -> dict[str, str]:
    """The environment that can change a command's answer or how it is printed; TERM only matters
    on a terminal. A server answers only a client whose subset equals its own."""
    names = [k for k in env if (k.startswith(("RAGRAF_", "PG")) and k not in _CLIENT_ONLY)]
    names += [k for k in _ANSWERING_ENV if k in env]
    if tty and "TERM" in env:
        names.append("TERM")
    return {k: env[k] for k in names}


def code_stamp() -> str:
    """When ragraf's own modules last changed (the newest mtime among them): a server started before
    an upgrade or an edit of ragraf runs other code than its client, so it must not answer it."""
    newest, folders = 0, [os.path.dirname(os.path.abspath(__file__))]
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                if entry.name.endswith(".py"):
                    try:  # noqa: SIM105 - contextlib would load more than this whole path
                        newest = max(newest, entry.stat(follow_symlinks=False).st_mtime_ns)
                    except OSError:
                        pass
                elif entry.name not in ("__pycache__", "data") and entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return str(newest)


def _utf8(stream: object) -> bool:
    return str(getattr(stream, "encoding", "")).lower().replace("-", "") == "utf8"


def encode_request(fields: list[str], stdin: bytes | None = None) -> bytes:
    """The request: its fields, then the bytes of the client's stdin when the command reads it."""
    body = b"\0".join(f.encode("utf-8", "surrogateescape") for f in fields)
    return MAGIC + b"%d %d\n" % (len(body), -1 if stdin is None else len(stdin)) + body + (stdin or b"")


def reads_stdin(argv: list[str]) -> bool:
    """`localize -`: the report on stdin."""
    return argv[0] == "localize" and "-" in argv[1 : argv.index("--") if "--" in argv else len(argv)]


def _request(argv: list[str], cwd: str, stdin: bytes | None) -> bytes:
    out_tty, err_tty = sys.stdout.isatty(), sys.stderr.isatty()
    env = answering_env(os.environ, out_tty or err_tty)
    fields = [
        os.path.basename(sys.argv[0]) or "ragraf",
        cwd,
        "1" if out_tty else "0",
        "1" if err_tty else "0",
    ]
    fields += [
        sys.stdout.errors or "strict",
        sys.stderr.errors or "strict",
        code_stamp(),
        str(len(argv)),
        *argv,
    ]
    fields += [f"{k}={v}" for k, v in env.items()]
    return encode_request(fields, stdin)


def _recv_line(sock: object, buf: bytearray) -> bytes | None:
    while b"\n" not in buf:
        chunk = sock.recv(65536)  # type: ignore[attr-defined]
        if not chunk:
            return None
        buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line


def forward(argv: list[str]) -> int | None:
    """The exit code of argv answered by this root's server (its output written), or None to run here."""
    if os.environ.get("RAGRAF_NO_SERVER", "") not in ("", "0") or not (
        _utf8(sys.stdout) and _utf8(sys.stderr)
    ):
        return None
    root = requested_root(argv)
    if root is None:
        return None
    global no_server_for
    try:
        # Read before connecting: a report typed on a terminal keeps no server waiting.
        stdin = _read_stdin() if reads_stdin(argv) else None
        cwd = os.getcwd()
        real = os.path.realpath(os.path.join(cwd, root))
        path = socket_path(real, os.environ)
        if not private_dir(os.path.dirname(path)):
            if not os.path.lexists(os.path.dirname(path)):  # no server has run yet: the first one makes it
                no_server_for = real
            return None
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except (OSError, ImportError, AttributeError):
        return None
    try:
        sock.settimeout(ACK_TIMEOUT_S)
        try:
            sock.connect(path)
        except FileNotFoundError:
            no_server_for = real
            return None
        except ConnectionRefusedError:  # the server died: its socket is stale
            try:  # noqa: SIM105 - contextlib would load more than this whole path
                os.unlink(path)
            except OSError:
                pass
            no_server_for = real
            return None
        sock.sendall(_request(argv, cwd, stdin))
        buf = bytearray()
        if _recv_line(sock, buf) != b"1":  # not taken: another root, another environment, busy
            return None
        sock.settimeout(None)
        header = _recv_line(sock, buf)
        if header is None:
            return None
        code, out_len, err_len = (int(x) for x in header.split())
        while len(buf) < out_len + err_len:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return None  # the server went away mid-answer: nothing was printed yet
            buf += chunk
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    _write(sys.stdout, bytes(buf[:out_len]))
    _write(sys.stderr, bytes(buf[out_len : out_len + err_len]))
    return code


def _read_stdin() -> bytes:
    """All of stdin, which this process reads again when the server does not take the command."""
    import io

    if sys.stdin is None:
        raise OSError("no stdin")  # the command's own run says so
    data = sys.stdin.buffer.read()
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=sys.stdin.encoding, errors=sys.stdin.errors)
    return data


def start_server(root: str, idle_s: float) -> None:
    """Start `ragraf serve --socket-only` for root in the background: its own session, stdin and
    stdout on /dev/null (a caller reading this process's output to its end is not held open), its
    log beside its socket (<socket>.log), exiting after idle_s seconds without a request. Nothing
    when this system cannot spawn it."""
    # This process's ragraf (the folder it was imported from), whatever the caller's folder holds.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = f"import sys; sys.path.insert(0, {package_parent!r}); from ragraf.cli import main; main()"
    argv = [sys.executable, "-P", "-c", run, "serve", "--socket-only", "--idle-exit", f"{idle_s:g}"]
    argv += ["--root", root, "--log-level", "info"]
    log = socket_path(root, os.environ)[: -len(".sock")] + ".log"
    try:
        os.makedirs(os.path.dirname(log), mode=0o700, exist_ok=True)
        if not private_dir(os.path.dirname(log)):
            return
        files = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1)]
        files.append((os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=files, setsid=True)
    except (AttributeError, NotImplementedError, OSError):  # no posix_spawn (Windows), no resources
        pass


def _write(stream: object, data: bytes) -> None:
    if data:
        try:
            stream.buffer.write(data)  # type: ignore[attr-defined]
            stream.flush()  # type: ignore[attr-defined]
        except BrokenPipeError:  # `ragraf def X | head`: what the reader took is enough
            pass


def main() -> None:
    try:
        code = forward(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")
        sys.exit(1)
    if code is not None:
        sys.exit(code)
    from ragraf.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
