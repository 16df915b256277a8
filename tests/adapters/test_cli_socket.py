"""The CLI fast path (fastcli.py, adapters/cli_socket.py): a real `ragraf serve` or `ragraf watch`
subprocess answers real `ragraf` CLI subprocesses over its Unix socket, with exactly what the CLI
prints in process; without a live server the CLI answers itself."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import SAMPLE, init_git, run_cli, write

from ragraf.adapters.cli_socket import SERVED_CHANGE_FILES
from ragraf.fastcli import code_stamp, encode_request, socket_path

# The console entry point, which notes in MARK_FILE whether click was loaded: a read the server
# answered never loads it.
CLIENT = (
    "import atexit, os, sys\n"
    "atexit.register(lambda: open(os.environ['MARK_FILE'], 'w').write("
    "'in-process' if 'click' in sys.modules else 'server'))\n"
    "sys.argv[0] = 'ragraf'\n"
    "from ragraf.fastcli import main\n"
    "main()\n"
)

READS = [
    ("def", "TCPConnector"),
    ("def", "TCPConnector", "--json"),
    ("def", "TCPConnector.connect", "--body"),
    ("search", "retry backoff", "--mode", "lexical"),
    ("search", "retry backoff", "--mode", "lexical", "--json"),
    ("refs", "resolve_host"),
    ("refs", "resolve_host", "--json"),
    ("read", "src/app/retry.py:1-5"),
    ("read", "src/app/retry.py", "--json"),
    ("status",),
    ("status", "--json"),
    ("outline", "src/app/server.py"),
    ("def", "NoSuchName"),
    ("def", "NoSuchName", "--json"),
    ("read", "no/such/file.py"),
    ("read", "no/such/file.py", "--json"),
    ("def", "--no-such-option", "x", "--json"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, SAMPLE)
    init_git(root)
    out = run_cli("index", "-q", cwd=root)
    assert out.returncode == 0, out.stderr
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    sockets = tmp_path / "s"
    return {**os.environ, "RAGRAF_SOCKET_DIR": str(sockets), "MARK_FILE": str(tmp_path / "mark")}


def client(args: tuple[str, ...], cwd: Path, env: dict[str, str], **extra: str) -> tuple[str, str, int, str]:
    """(stdout, stderr, exit code, who answered) of one `ragraf ARGS` run."""
    mark = Path(env["MARK_FILE"])
    mark.unlink(missing_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, *args], cwd=cwd, env={**env, **extra}, capture_output=True, timeout=120
    )
    return out.stdout.decode(), out.stderr.decode(), out.returncode, mark.read_text()


def wait_for(predicate: object, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 60  # stops a hang only
    while not predicate():  # type: ignore[operator]
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        time.sleep(0.05)


def sock_of(root: Path, env: dict[str, str]) -> Path:
    return Path(socket_path(os.path.realpath(root), env))


def listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
        return True


@contextlib.contextmanager
def server(root: Path, env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """`ragraf ARGS --root ROOT` (serve: MCP on stdio, kept open) until its socket is there."""
    cmd = [sys.executable, "-m", "ragraf.cli", *args, "--root", str(root)]
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for(lambda: listening(sock_of(root, env)), "the CLI socket", proc)
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()  # MCP on stdio ends with its input
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_served_read_prints_exactly_what_the_cli_prints_in_process(repo: Path, env: dict[str, str]) -> None:
    with server(repo, env, "serve"):
        folder = sock_of(repo, env).parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE(sock_of(repo, env).lstat().st_mode) == 0o600
        for args in READS:
            *served, who = client(args, repo, env)
            *alone, who_alone = client(args, repo, env, RAGRAF_NO_SERVER="1")
            assert (who, who_alone) == ("server", "in-process"), args
            assert served == alone, args
        # An unknown name, a missing file and a bad option keep their exit codes through the server.
        assert client(("read", "no/such/file.py"), repo, env)[2] == 2
        assert client(("def", "--no-such-option", "x"), repo, env)[2] == 2
        # --root relative to the caller's folder, from a subfolder.
        sub = repo / "src"
        *served, who = client(("def", "resolve_host", "--root", ".."), sub, env)
        assert who == "server"
        assert served == list(
            client(("def", "resolve_host", "--root", ".."), sub, env, RAGRAF_NO_SERVER="1")[:3]
        )


def test_localize_of_a_report_file_and_of_stdin_is_served_as_in_process(
    repo: Path, env: dict[str, str]
) -> None:
    report = repo.parent / "issue.md"  # beside the repository: the caller's file, not the index's
    report.write_text("Retry backoff ignores the timeout\n\nresolve_host retries without a backoff.\n")
    with server(repo, env, "serve"):
        for args in (
            ("localize", "issue.md", "--root", "repo"),
            ("localize", "issue.md", "--root", "repo", "--json"),
        ):
            *served, who = client(args, repo.parent, env)
            *alone, who_alone = client(args, repo.parent, env, RAGRAF_NO_SERVER="1")
            assert (who, who_alone) == ("server", "in-process") and served[2] == 0, args
            assert served == alone, args
        missing = client(("localize", "no-such-issue.md", "--root", "repo"), repo.parent, env)
        assert missing[2:] == (2, "server") and "cannot read no-such-issue.md" in missing[1]
        # The report on stdin goes with the request; NUL and undecodable bytes too.
        for data in (report.read_bytes(), b"resolve_host\0 fails \xff\xfe on retry\n", b""):
            answers = []
            for extra in ({}, {"RAGRAF_NO_SERVER": "1"}):
                piped = subprocess.run(
                    [sys.executable, "-c", CLIENT, "localize", "-", "--json"],
                    cwd=repo, env={**env, **extra}, input=data, capture_output=True, timeout=120,
                )  # fmt: skip
                answers.append(
                    (piped.returncode, piped.stdout, piped.stderr, Path(env["MARK_FILE"]).read_text())
                )
            assert [a[3] for a in answers] == ["server", "in-process"], data
            assert answers[0][:3] == answers[1][:3], data
        assert json.loads(answers[0][1])["notes"]  # the empty report: a note, not results
        # A server that declines (another environment) leaves the report to this process, read once.
        declined = subprocess.run(
            [sys.executable, "-c", CLIENT, "localize", "-", "--json"],
            cwd=repo, env={**env, "RAGRAF_BUDGET_BYTES": "2048"}, input=report.read_bytes(),
            capture_output=True, timeout=120,
        )  # fmt: skip
        assert Path(env["MARK_FILE"]).read_text() == "in-process"
        assert declined.returncode == 0 and json.loads(declined.stdout)["results"]


def test_what_a_server_does_not_take_is_answered_in_process(repo: Path, env: dict[str, str]) -> None:
    with server(repo, env, "serve"):
        # Another root (a subfolder is its own root), a write, help, another environment.
        assert client(("status",), repo / "src", env)[3] == "in-process"
        assert client(("gc",), repo, env)[3] == "in-process"
        assert client(("def", "-h"), repo, env)[3] == "in-process"
        (repo / "queries.txt").write_text("retry backoff\n")  # a file relative to the caller
        assert client(("search", "--queries", "queries.txt"), repo, env)[2:] == (0, "in-process")
        other = client(("def", "TCPConnector"), repo, env, RAGRAF_BUDGET_BYTES="2048")
        assert other[2] == 0 and other[3] == "in-process"
        # A request for a root the socket does not serve is refused at the socket itself.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(str(sock_of(repo, env)))
            sock.sendall(
                encode_request(
                    ["ragraf", str(repo / "src"), "0", "0", "strict", "strict", code_stamp(), "1", "status"]
                )
            )
            assert sock.recv(2) == b"0\n"


def test_a_file_edited_after_the_server_started_is_seen_fresh(repo: Path, env: dict[str, str]) -> None:
    with server(repo, env, "serve"):
        assert "retry_with_backoff" in client(("def", "retry_with_backoff"), repo, env)[0]
        (repo / "src/app/retry.py").write_text("def backoff_forever(fn):\n    return fn()\n")
        out, _, code, who = client(("def", "backoff_forever"), repo, env)
        assert (code, who) == (0, "server")
        assert "src/app/retry.py:1" in out
        assert client(("def", "backoff_forever"), repo, env, RAGRAF_NO_SERVER="1")[:3] == (out, "", 0)
        gone, _, _, _ = client(("def", "retry_with_backoff", "--json"), repo, env)
        assert '"results": []' in gone


def test_a_stale_socket_is_removed_and_the_cli_still_answers(repo: Path, env: dict[str, str]) -> None:
    path = sock_of(repo, env)
    path.parent.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, then closed without unlinking: what a killed server leaves
    dead.close()
    out, err, code, who = client(("def", "TCPConnector"), repo, env)
    assert (code, who) == (0, "in-process"), err
    assert "src/app/server.py:4" in out
    assert not path.exists()
    # A server started over a stale socket takes its place.
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    with server(repo, env, "serve"):
        assert client(("def", "TCPConnector"), repo, env)[3] == "server"


def test_watch_listens_and_a_removed_index_home_closes_the_socket(repo: Path, env: dict[str, str]) -> None:
    with server(repo, env, "watch") as proc:
        *served, who = client(("status", "--json"), repo, env)
        assert who == "server"
        home = repo / ".git" / "ragraf"
        # The server may write a file there while it goes (a read's stamp): removed until it is gone.
        wait_for(lambda: shutil.rmtree(home, ignore_errors=True) or not home.exists(), "the home removed")
        wait_for(lambda: not sock_of(repo, env).exists(), "the socket closed", None)
        assert client(("def", "TCPConnector"), repo, env)[3] == "in-process"
        del proc, served


def test_a_socket_folder_others_can_enter_is_not_used(repo: Path, env: dict[str, str]) -> None:
    folder = Path(env["RAGRAF_SOCKET_DIR"])
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "serve", "--root", str(repo)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for(
            lambda: proc.stderr is not None and b"no CLI socket" in proc.stderr.read1(), "the warning", proc
        )
        assert not sock_of(repo, env).exists()
        assert client(("def", "TCPConnector"), repo, env)[3] == "in-process"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=30)


def test_a_small_change_is_indexed_by_the_server_and_a_large_one_in_process(
    repo: Path, env: dict[str, str]
) -> None:
    with server(repo, env, "serve"):
        out, err, code, who = client(("index", "--json"), repo, env)
        assert (code, who) == (0, "server"), err
        report = json.loads(out)
        assert report["new_revision"] is False and report["files"]["modified"] == 0
        (repo / "src/app/retry.py").write_text("def backoff_forever(fn):\n    return fn()\n")
        out, err, code, who = client(("index", "--json"), repo, env)
        assert (code, who) == (0, "server"), err
        assert json.loads(out)["files"]["modified"] == 1
        assert client(("def", "backoff_forever", "--json"), repo, env)[2:] == (0, "server")
        write(
            repo,
            {
                f"src/many/m{i}.py": f"def made_{i}():\n    return {i}\n"
                for i in range(SERVED_CHANGE_FILES + 1)
            },
        )
        out, err, code, who = client(("index", "--json"), repo, env)
        assert (code, who) == (0, "in-process"), err  # its progress and Ctrl-C are the caller's
        assert json.loads(out)["files"]["added"] == SERVED_CHANGE_FILES + 1
        assert client(("index", "--full", "-q"), repo, env)[2:] == (0, "in-process")
        assert client(("index", "src", "-q"), repo, env)[3] == "in-process"


@contextlib.contextmanager
def live_loop(repo: Path) -> Iterator[list[Any]]:
    """A live loop of repo in a thread of this process, caught up and quiet; the runs it reports."""
    import threading

    from ragraf import Index
    from ragraf.adapters.live_index import live_ops
    from ragraf.index.live import LiveLoop, quiet_hint

    runs: list[Any] = []
    idx = Index.open(repo)
    stop = threading.Event()
    loop = LiveLoop(idx.settings.root, idx.settings.home, live_ops(idx), runs.append, print, stop)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(runs) == 1 and quiet_hint(repo) is not None, "the loop caught up, quiet")
        yield runs
    finally:
        stop.set()
        thread.join(timeout=60)
        idx.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_served_index_after_a_quiet_live_loop_stats_only_what_the_kernel_named(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragraf import Index
    from ragraf.adapters import cli_socket
    from ragraf.freshness import snapshot
    from ragraf.index.live import quiet_hint

    full_passes: list[str] = []
    whole = snapshot.changes_since
    monkeypatch.setattr(snapshot, "changes_since", lambda *a: full_passes.append("x") or whole(*a))
    with live_loop(repo) as runs:
        (repo / "src/app/retry.py").write_text("def edited_while_watched():\n    return 1\n")
        wait_for(lambda: len(runs) == 2 and quiet_hint(repo) is not None, "the loop indexed the edit")
        passes = len(full_passes)
        assert cli_socket._small_change(repo)
        argv = ["index", "--json", "--root", str(repo)]
        with cli_socket._hinted(argv, repo), Index.open(repo) as served:
            report = served.index(lexical_only=True).to_dict()
        # At most the file the loop read within its racy window is read again; no whole-tree pass.
        assert report["files_read"] <= 1 and report["new_revision"] is False
        assert len(full_passes) == passes
    assert quiet_hint(repo) is None  # a stopped loop gives no hint


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_served_index_right_after_an_edit_waits_for_the_live_loop_not_a_whole_pass(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragraf import Index
    from ragraf.adapters import cli_socket
    from ragraf.freshness import snapshot
    from ragraf.index.live import quiet_hint

    with live_loop(repo) as runs:
        whole: list[str] = []
        for name in ("changes_since", "moved_files"):  # the index's and the guard's passes over every file
            fn = getattr(snapshot, name)
            monkeypatch.setattr(snapshot, name, lambda *a, _fn=fn, _n=name: whole.append(_n) or _fn(*a))
        (repo / "src/app/retry.py").write_text("def edited_just_now():\n    return 1\n")
        assert cli_socket._small_change(repo)  # at once, while the loop has the event to read
        assert len(runs) == 2  # it waited for the loop's run of the edit
        argv = ["index", "--json", "--root", str(repo)]
        with cli_socket._hinted(argv, repo), Index.open(repo) as served:
            report = served.index(lexical_only=True).to_dict()
            assert report["files_read"] <= 1 and whole == []
            hits = served.search("edited_just_now", mode="lexical").results
        assert hits and hits[0].path == "src/app/retry.py"
    assert quiet_hint(repo, wait_s=5.0) is None  # a stopped loop: no hint, and no wait


def server_pid(path: Path) -> int:
    """The pid of the process listening at a socket (SO_PEERCRED)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(path))
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[0]


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_read_without_a_server_starts_one_that_answers_the_next(repo: Path, env: dict[str, str]) -> None:
    env = {k: v for k, v in env.items() if k != "CI"} | {"RAGRAF_SERVER_IDLE_S": "600"}
    alone = client(("def", "TCPConnector"), repo, env, RAGRAF_NO_SERVER="1")
    out, err, code, who = client(("def", "TCPConnector"), repo, env)
    assert (out, err, code, who) == (*alone[:3], "in-process")
    path = sock_of(repo, env)
    wait_for(lambda: listening(path), "the background server's socket")
    pid = server_pid(path)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"--socket-only" in cmdline and os.fsencode(os.path.realpath(repo)) in cmdline
        assert b"--idle-exit" in cmdline and b"600" in cmdline
        assert os.getsid(pid) == pid  # a session of its own: no terminal, no caller's process group
        log = path.with_suffix(".log")  # its log, beside its socket
        wait_for(lambda: f"pid {pid} answers" in log.read_text(), "the server's first log line")
        assert client(("def", "TCPConnector"), repo, env) == (*alone[:3], "server")
        assert server_pid(path) == pid  # a read that found it started no other
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not running(pid), "the server to end")
    # Its socket is left behind, refusing: the next read answers itself and starts a new server.
    assert client(("def", "TCPConnector"), repo, env)[3] == "in-process"
    wait_for(lambda: listening(path), "the next background server")
    os.kill(server_pid(path), signal.SIGTERM)


def test_the_socket_only_server_exits_when_idle(repo: Path, env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "serve", "--socket-only", "--idle-exit", "1", "--root", str(repo)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.wait(timeout=120) == 0  # stops a hang only
    finally:
        proc.kill()
    assert proc.stderr is not None and b"closed: no request for 1 s" in proc.stderr.read()
    assert not sock_of(repo, env).exists()


def test_no_background_server_under_ci_with_server_idle_s_0_or_after_a_failed_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision after a command in process (cli.py): a recorder stands in for the spawn, so
    that a server not started is observed rather than waited for."""
    from click.testing import CliRunner

    from ragraf import cli, fastcli

    started: list[tuple[str, float]] = []
    monkeypatch.setattr(fastcli, "start_server", lambda root, idle: started.append((root, idle)))
    monkeypatch.delenv("CI", raising=False)

    def read(*args: str, **env: str) -> int:
        monkeypatch.setattr(fastcli, "no_server_for", os.path.realpath(repo))
        monkeypatch.setattr(cli, "_opened", None)
        return CliRunner().invoke(cli.main, [*args, "--root", str(repo)], env=env).exit_code

    assert read("def", "TCPConnector", RAGRAF_SERVER_IDLE_S="60") == 0
    assert started == [(os.path.realpath(repo), 60.0)]
    assert read("def", "TCPConnector", RAGRAF_SERVER_IDLE_S="0") == 0
    assert read("def", "TCPConnector", RAGRAF_SERVER_IDLE_S="60", CI="true") == 0
    assert read("read", "no/such/file.py", RAGRAF_SERVER_IDLE_S="60") == 2
    empty = repo.parent / "empty"
    empty.mkdir()
    monkeypatch.setattr(fastcli, "no_server_for", os.path.realpath(empty))
    assert CliRunner().invoke(cli.main, ["status", "--root", str(empty)]).exit_code != 0  # no index there
    assert started == [(os.path.realpath(repo), 60.0)]


def test_a_server_running_older_code_than_its_client_closes_and_the_client_answers(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A copy of ragraf's package serves and answers; once a module of it changes on disk (an upgrade,
    an edit), its client runs other code: the read is answered in process and the server closes."""
    import ragraf

    copy = tmp_path / "lib"
    shutil.copytree(
        Path(ragraf.__file__).parent, copy / "ragraf", ignore=shutil.ignore_patterns("__pycache__")
    )
    run = f"import sys; sys.path.insert(0, {str(copy)!r}); from ragraf.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", run, "serve", "--socket-only", "--root", str(repo)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    copied_client = CLIENT.replace(
        "from ragraf.fastcli", f"sys.path.insert(0, {str(copy)!r})\nfrom ragraf.fastcli"
    )
    try:
        wait_for(lambda: listening(sock_of(repo, env)), "the CLI socket", proc)

        def copied(*args: str) -> str:
            mark = Path(env["MARK_FILE"])
            out = subprocess.run(
                [sys.executable, "-P", "-c", copied_client, *args], cwd=repo, env=env, timeout=120
            )
            assert out.returncode == 0
            return mark.read_text()

        assert copied("def", "TCPConnector") == "server"
        module = copy / "ragraf" / "search" / "rank.py"
        now = time.time_ns()  # newer than every other module (a copy keeps their times)
        os.utime(module, ns=(now, now))
        assert copied("def", "TCPConnector") == "in-process"
        assert proc.wait(timeout=60) == 0  # its only socket closed: the server is done
        assert not sock_of(repo, env).exists()
    finally:
        proc.kill()
        proc.wait()


def test_socket_only_options_that_do_not_go_together_are_usage_errors(tmp_path: Path) -> None:
    for args, says in (
        (("--idle-exit", "5"), "--idle-exit goes with --socket-only"),
        (("--socket-only", "--http", "8000"), "--socket-only serves neither --http nor --live"),
        (("--socket-only", "--live"), "--socket-only serves neither --http nor --live"),
        (("--socket-only", "--idle-exit", "0"), "0.0 is not in the range x>0"),
    ):
        out = run_cli("serve", *args, "--root", str(tmp_path))
        assert out.returncode == 2 and says in out.stderr, (args, out.stderr)
