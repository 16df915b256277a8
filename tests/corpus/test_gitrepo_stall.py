"""Git commands run as long as they make progress and are stopped only when they stall."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ragraf.corpus.gitcmd import run_watched
from ragraf.corpus.gitrepo import GitError, resolve_base

# The stall limit the tests inject; each fake child works for several times as long.
STALL_S = "0.6"


def fake_git(tmp_path: Path, body: str) -> dict[str, str]:
    """An environment whose `git` on PATH is a Python script running body."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(f"#!{sys.executable}\nimport sys, time, os\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "RAGRAF_GIT_STALL_S": STALL_S}


# Each writes a byte then sleeps: no CPU, but output keeps coming, for ~8 stall limits.
TRICKLE = "for _ in range(24):\n    sys.stdout.write('x'); sys.stdout.flush(); time.sleep(0.2)\nprint('done')"
# Silent but busy: CPU time is progress, for ~4 stall limits.
BUSY = "t = time.monotonic()\nwhile time.monotonic() - t < 2.5:\n    pass\nprint('done')"
# Silent and idle: blocked as on a FIFO. The hang stop in the test is far past the stall limit.
STALLED = "time.sleep(60)"


@pytest.mark.parametrize("body", [TRICKLE, BUSY], ids=["output", "cpu"])
def test_a_git_that_keeps_making_progress_runs_past_many_stall_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str
) -> None:
    for key, value in fake_git(tmp_path, body).items():
        monkeypatch.setenv(key, value)
    out = run_watched(["git", "status"], tmp_path)
    assert out.returncode == 0 and out.stdout.endswith(b"done\n")


def test_a_git_that_stalls_is_stopped_and_the_error_says_why_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in fake_git(tmp_path, STALLED).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(GitError) as caught:
        resolve_base(tmp_path)
    assert "made no progress" in caught.value.message and "0.6 s" in caught.value.message
    assert "RAGRAF_GIT_STALL_S" in caught.value.suggest


def test_a_stalled_git_is_killed_not_left_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    env = {
        **os.environ,
        **fake_git(tmp_path, f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n{STALLED}"),
    }
    with pytest.raises(subprocess.TimeoutExpired):
        run_watched(["git"], tmp_path, env=env, stall_s=0.6)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_large_output_is_read_whole(tmp_path: Path) -> None:
    out = run_watched(
        [sys.executable, "-c", "import sys; sys.stdout.write('y' * 3_000_000); sys.stderr.write('e')"],
        tmp_path,
    )
    assert out.stdout == b"y" * 3_000_000 and out.stderr == b"e"


def test_input_is_written_to_a_child_that_reads_it_slowly(tmp_path: Path) -> None:
    data = b"".join(b"path/%d\0" % i for i in range(200_000))  # more than a pipe holds
    slow = "import sys, time\nn = 0\nwhile chunk := sys.stdin.buffer.read(65536):\n    n += len(chunk)\n    time.sleep(0.01)\nprint(n)"
    out = run_watched([sys.executable, "-c", slow], tmp_path, input=data, stall_s=5)
    assert out.returncode == 0 and int(out.stdout) == len(data)
