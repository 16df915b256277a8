"""Colour only for a person at a terminal: the real CLI under a pseudo-terminal (python's pty) gets
highlighted, line-numbered snippets; through a pipe, with NO_COLOR or --color never it gets no
escape code; FORCE_COLOR and --color always colour a pipe. And every command's --help has examples."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from support import SAMPLE, run_cli, write

from ragraf.cli import main

ESC = "\x1b["
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BASE_ENV = {"RAGRAF_EMBEDDER": "none", "TERM": "xterm-256color"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("colour") / "repo"
    write(root, SAMPLE)
    out = run_cli("index", "-q", cwd=root, env=BASE_ENV)
    assert out.returncode == 0, out.stderr
    return root


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    return {**env, **BASE_ENV, **extra}


def on_a_terminal(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The CLI with its stdout and stderr on a pseudo-terminal: (exit code, what the terminal showed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", *args],
        cwd=cwd,
        env=_clean_env(env or {}),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 120 s")
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower closed: the process is done
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def piped(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragraf.cli", *args],
        cwd=cwd,
        env=_clean_env(env or {}),
        capture_output=True,
        text=True,
        timeout=120,
    )


SEARCH = ("search", "retry backoff", "--mode", "lexical", "-k", "2")


def test_a_terminal_gets_highlighted_line_numbered_snippets(repo: Path) -> None:
    code, shown = on_a_terminal(*SEARCH, cwd=repo)
    assert code == 0, shown
    assert ESC in shown
    plain = ANSI.sub("", shown)
    assert re.search(r"^src/app/retry\.py:1-\d+", plain, re.M)
    assert re.search(r"^ 1 │ import time$", plain, re.M)  # the snippet's own line numbers
    assert re.search(r"^ 4 │ def retry_with_backoff", plain, re.M)
    assert "\x1b[1;4mretry" in shown  # the query's term marked
    assert "\x1b[34mdef\x1b[39" in shown  # a keyword in pygments' colour
    # The words are the ones a pipe gets: colour only adds escape codes (and the line numbers).
    words = piped(*SEARCH, cwd=repo).stdout
    assert [re.sub(r"^ *\d+ │ ?", "", line) for line in plain.splitlines()] == words.splitlines()


@pytest.mark.parametrize(
    ("args", "env"),
    [((), {"NO_COLOR": "1"}), (("--color", "never"), {}), (("--color", "never"), {"FORCE_COLOR": "1"})],
)
def test_no_color_or_color_never_keeps_a_terminal_plain(repo: Path, args: tuple[str, ...], env: dict) -> None:
    code, shown = on_a_terminal(*SEARCH, *args, cwd=repo, env=env)
    assert code == 0, shown
    assert ESC not in shown
    assert "def retry_with_backoff" in shown


def test_a_pipe_gets_no_escape_codes_unless_forced(repo: Path) -> None:
    for args in (SEARCH, ("read", "src/app/retry.py"), ("def", "TCPConnector", "--body"), ("status",)):
        out = piped(*args, cwd=repo)
        assert out.returncode == 0, out.stderr
        assert ESC not in out.stdout and ESC not in out.stderr, args
    missing = piped("read", "nope.py", cwd=repo)
    assert missing.returncode == 2 and ESC not in missing.stderr
    forced = piped(*SEARCH, cwd=repo, env={"FORCE_COLOR": "1"})
    always = piped(*SEARCH, "--color", "always", cwd=repo)
    assert ESC in forced.stdout and ESC in always.stdout
    assert ANSI.sub("", always.stdout).count("def retry_with_backoff") == 1


def test_read_and_errors_are_coloured_on_a_terminal(repo: Path) -> None:
    code, shown = on_a_terminal("read", "src/app/retry.py:4-5", cwd=repo)
    assert code == 0 and ESC in shown
    assert re.search(r"^4  def retry_with_backoff", ANSI.sub("", shown), re.M)
    code, shown = on_a_terminal("read", "nope.py", cwd=repo)
    assert code == 2
    assert "\x1b[31m" in shown and "nope.py" in ANSI.sub("", shown)


def _commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    ctx = click.Context(group)
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        out.append([*prefix, name])
        if isinstance(command, click.Group):
            out += _commands(command, [*prefix, name])
    return out


@pytest.mark.parametrize("command", _commands(main, []), ids=" ".join)
def test_every_commands_help_shows_examples(command: list[str]) -> None:
    out = CliRunner().invoke(main, [*command, "--help"])
    assert out.exit_code == 0, out.output
    examples = out.output.split("Example", 1)
    assert len(examples) == 2, out.output
    example_lines = [
        line.strip() for line in examples[1].split("Options:")[0].splitlines()[1:] if line.strip()
    ]
    assert example_lines and all(line.startswith(("ragraf ", "gh ", "git ")) for line in example_lines)
    assert any(" ".join(["ragraf", *command]) in line for line in example_lines) or command == []
