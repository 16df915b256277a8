"""The serve, watch, mcp and mcp-config commands of `ragraf`; `register(main)` attaches them."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ragraf.adapters.agent_setup import AGENT_GUIDE, AGENTS, agent_config, claude_add_line, write_config
from ragraf.errors import RagrafError

_ROOT = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Folder to answer about.",
)
_ROOTS = click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to answer about; repeat it to serve several (each tool then takes repo=NAME). "
    "Default: the MCP client's roots when it offers them, else the current directory.",
)
_LOG_LEVEL = click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
    help="Log level on stderr.",
)

_WHERE = {
    "claude": "Claude Code: {path} (project scope; commit it)",
    "cursor": "Cursor: {path} (project; Cursor expands ${{workspaceFolder}})",
    "vscode": "VS Code (Copilot agent mode): {path} (workspace; VS Code expands ${{workspaceFolder}})",
    "gemini": 'Gemini CLI: {path} (project settings, "mcpServers")',
    "zed": 'Zed: {path} (project settings, "context_servers")',
    "opencode": 'opencode: {path} at the project root, "mcp" section',
    "codex": "Codex: {path}",
    "windsurf": "Windsurf: {path} — your user configuration, shared by every project (Windsurf has no project file)",
    "generic": "Any MCP client: start this command in the repository, speak MCP over its stdin/stdout",
}


def _run(op: str, fn: Callable[[], Any], on_error: Callable[[RagrafError], None] | None = None) -> Any:
    """Run fn; a RagrafError becomes its message and suggestion on stderr, and its exit code."""
    try:
        return fn()
    except RagrafError as exc:
        if on_error is not None:
            on_error(exc)
        click.echo(f"ragraf {op}: {exc.message}" + (f"\n  → {exc.suggest}" if exc.suggest else ""), err=True)
        sys.exit(exc.exit_code)


@click.command("serve")
@_ROOTS
@click.option(
    "--http",
    "listen",
    metavar="[HOST:]PORT",
    default=None,
    help="Serve the HTTP API instead of MCP (127.0.0.1 unless HOST; other hosts need RAGRAF_HTTP_TOKEN).",
)
@click.option(
    "--live",
    is_flag=True,
    help="Keep the index live beside the server, as `ragraf watch` does (each --root, else this folder).",
)
@click.option(
    "--socket-only",
    is_flag=True,
    help="Answer only the `ragraf` CLI's reads of these roots over their Unix socket (no MCP, no HTTP); "
    "the CLI starts one itself after a read that found none (server_idle_s).",
)
@click.option(
    "--idle-exit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="With --socket-only: exit after this long without a request (default: never).",
)
@_LOG_LEVEL
def serve_cmd(
    roots: tuple[Path, ...],
    listen: str | None,
    live: bool,
    socket_only: bool,
    idle_exit: float | None,
    log_level: str,
) -> None:
    """Serve the operations to agents: MCP on stdio, or with --http an HTTP API.

    \b
    Examples:
      ragraf serve                              # MCP on stdio for this folder
      ragraf serve --root ../api --root ../web  # two repositories; tools take repo=api|web
      ragraf serve --http 8765                  # HTTP API and web page on 127.0.0.1:8765
      ragraf serve --live                       # and index every change within about a second
      ragraf serve --socket-only --idle-exit 900  # only answer `ragraf def …` here, 15 minutes
    """
    if socket_only:
        if listen is not None or live:
            raise click.UsageError("--socket-only serves neither --http nor --live")
        _serve_socket_only(roots or (Path("."),), idle_exit, log_level)
        return
    if idle_exit is not None:
        raise click.UsageError("--idle-exit goes with --socket-only")
    stop_live = None
    if live:
        from ragraf.adapters.live_index import start_live

        stop_live = _run("serve", lambda: start_live(roots or (Path("."),)))
    from ragraf.adapters.cli_socket import listen as listen_cli

    cli_socket = listen_cli(roots or (Path("."),))  # `ragraf def …` in these roots answered here
    try:
        if listen is None:
            from ragraf.adapters.mcp_server import run

            _run("serve", lambda: run(roots, log_level))
            return
        from ragraf.adapters.http_api import serve_http

        _run("serve", lambda: serve_http(roots, listen))
    finally:
        cli_socket.stop()
        if stop_live is not None:
            stop_live()


def _serve_socket_only(roots: tuple[Path, ...], idle_exit: float | None, log_level: str) -> None:
    """The CLI's background server: the roots' sockets until idle (or a root removed); nothing when
    another server of these roots answers already. Each root's index is read twice first, so the
    first read it answers finds the modules loaded and the kernel's watch armed."""
    import logging

    from ragraf.adapters.cli_socket import listen as listen_cli

    logging.basicConfig(
        stream=sys.stderr,
        level=log_level.upper(),
        format="%(asctime)s ragraf-server %(levelname)s: %(message)s",
    )
    cli_socket = listen_cli(roots, idle_exit_s=idle_exit)
    if not cli_socket.roots:
        logging.info("another server answers these roots: nothing to do")
        return
    logging.info(
        "pid %d answers the CLI's reads of %s%s", os.getpid(), ", ".join(cli_socket.roots),
        f" until {idle_exit:g} s pass without one" if idle_exit else "",
    )  # fmt: skip
    os.chdir("/")  # the roots are real paths now; hold no folder of the caller's
    try:
        from ragraf.api import Index

        for root in cli_socket.roots:
            try:
                with Index.open(Path(root)) as idx:
                    idx.status()
                    idx.status()  # the second look arms the kernel's watch (freshness/watch.py)
            except RagrafError:  # no index here (yet): the reads say so themselves
                pass
        cli_socket.wait()
    finally:
        cli_socket.stop()


@click.command("watch")
@_ROOT
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per run instead of a line.")
def watch_cmd(root: Path, as_json: bool) -> None:
    """Keep the index live in the foreground: each change on disk indexed within about a second.

    A line per run: what started it, how soon after the change it committed, what it indexed.
    Bursts (a checkout, a save through a temp file) are gathered into one run; a manual `ragraf
    index` is waited for. Linux: inotify on every folder; elsewhere, with RAGRAF_WATCH=0 or out of
    inotify watches, a stat pass every second. Ctrl-C exits 130, SIGTERM 0.

    \b
    Examples:
      ragraf watch                  # a line per run in this folder
      ragraf watch --json | jq .    # one JSON object per run (trigger, lag_s, files, index_rev)
    """
    from ragraf.adapters.live_index import watch

    def fail(exc: RagrafError) -> None:
        if as_json:
            from ragraf.api import error_envelope

            click.echo(json.dumps(error_envelope("watch", exc).to_dict(), ensure_ascii=False))

    from ragraf.adapters.cli_socket import listen as listen_cli

    cli_socket = listen_cli((root,))  # `ragraf def …` in this root answered here
    try:
        code = _run("watch", lambda: watch(root, as_json), fail)
    finally:
        cli_socket.stop()
    sys.exit(code)


@click.command("mcp")
@_ROOTS
@_LOG_LEVEL
def mcp_cmd(roots: tuple[Path, ...], log_level: str) -> None:
    """Serve MCP on stdio (same as `ragraf serve`).

    \b
    Example:
      ragraf mcp --root ~/src/api --root ~/src/web
    """
    from ragraf.adapters.mcp_server import run

    _run("mcp", lambda: run(roots, log_level))


@click.command("mcp-config")
@click.option("--agent", type=click.Choice(AGENTS), required=True, help="The agent to configure.")
@click.option("--write", is_flag=True, help="Merge into the agent's configuration file (other servers kept).")
@click.option("--name", default="ragraf", show_default=True, help="The server's name in the configuration.")
@click.option(
    "--scope",
    type=click.Choice(["project", "user"]),
    default="project",
    show_default=True,
    help="codex: the project's .codex/config.toml, or your user-wide ~/.codex/config.toml.",
)
@click.option(
    "--absolute",
    is_flag=True,
    help="This ragraf's absolute path and --root instead of `ragraf serve` from PATH (not for committed files).",
)
@_ROOT
@click.option("--json", "as_json", is_flag=True, help="Print {agent, file, snippet, guide, written} as JSON.")
def mcp_config_cmd(
    agent: str, write: bool, name: str, scope: str, absolute: bool, root: Path, as_json: bool
) -> None:
    """Print (or --write) the MCP configuration for an agent, and when to use which tool.

    \b
    Examples:
      ragraf mcp-config --agent claude --write     # .mcp.json, portable: commit it
      ragraf mcp-config --agent vscode --write     # .vscode/mcp.json
      ragraf mcp-config --agent codex --scope user --name ragraf-myrepo --write
    """
    config = _run("mcp-config", lambda: agent_config(agent, root, name, absolute, scope))
    written = None
    if write:
        path, what = _run("mcp-config", lambda: write_config(agent, root, name, absolute, scope))
        written = f"{path}: {what}"
    if as_json:
        data = {
            "agent": agent,
            "file": str(config.path) if config.path else None,
            "scope": config.scope,
            "snippet": config.snippet,
            "guide_file": config.guide_file,
            "guide": AGENT_GUIDE,
            "written": written,
            **({"command_line": claude_add_line(name, config)} if agent == "claude" else {}),
        }
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    if written:
        where = " (your user-wide configuration)" if config.scope == "user" else ""
        click.echo(f"wrote {written}{where}")
    else:
        click.echo(f"# {_WHERE[agent].format(path=config.path)}")
        if config.path is not None:
            click.echo(f"# `ragraf mcp-config --agent {agent} --write` merges it into {config.path}")
        click.echo(config.snippet)
    if agent == "claude":
        click.echo(f"# or from the terminal:\n{claude_add_line(name, config)}\n")
    if config.scope == "user":
        click.echo(
            f"# user-wide: give each repository its own --name (e.g. ragraf-{Path(root).resolve().name})\n"
        )
    click.echo(f"# Add to {config.guide_file} so the agent knows when to use which tool:\n")
    click.echo(AGENT_GUIDE)


def register(main: click.Group) -> None:
    """Attach serve, watch, mcp and mcp-config to the `ragraf` group."""
    for command in (serve_cmd, watch_cmd, mcp_cmd, mcp_config_cmd):
        main.add_command(command)
