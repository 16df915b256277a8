"""MCP configuration for coding agents: the snippet each one reads, and a safe merge into its file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragraf.errors import ConfigError

AGENTS = ("claude", "codex", "opencode", "cursor", "vscode", "gemini", "windsurf", "zed", "generic")

AGENT_GUIDE = """\
## Code knowledge: ragraf

This repository is indexed by ragraf (MCP server `ragraf`). Prefer its tools to grep and
directory listings for questions about the code; every answer cites `path:line` and the index
revision it comes from.

- `localize` — the first step of a task: paste the issue or task text (traceback and all) and get
  the files most likely to change, each with its evidence.
- `search` — "where is X implemented / handled?" in words or identifiers: ranked snippets.
- `find_symbol` — where a known name (class, function, method) is defined.
- `find_references` — who uses a name; `calls: true` for the callers only. Check before changing it.
- `outline` — the definitions in one file with line ranges, before reading it.
- `read` — the live file (a line range): always current. Use it for any result marked STALE.
- `status` / `drift` — which revision answers and what changed on disk since it.
- `reindex` — after substantial edits, or when no index exists yet; `revisions` + `changes` show
  what changed in the code's knowledge between two revisions.
"""


@dataclass(frozen=True)
class AgentConfig:
    """The configuration for one agent: where it lives, the snippet, and the guide's file."""

    agent: str
    path: Path | None  # None: nothing to write (generic)
    scope: str  # "project" | "user" | "none"
    snippet: str
    guide_file: str


def server_command() -> list[str]:
    """The command that starts this ragraf, absolute so an agent's PATH does not matter."""
    beside = Path(sys.executable).parent / "ragraf"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("ragraf")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "ragraf.cli"]


def _server_entry(root: Path, portable: bool, root_arg: str | None = None) -> tuple[str, list[str]]:
    """(command, args): portable is `ragraf` from PATH with the root the client gives it (its working
    folder, or `root_arg` such as `${workspaceFolder}` for a client that expands one), so a
    committed file holds nothing of this machine; otherwise this ragraf's absolute path and root."""
    if portable:
        return "ragraf", ["serve", *(["--root", root_arg] if root_arg else [])]
    command, *prefix = server_command()
    return command, [*prefix, "serve", "--root", str(root)]


def codex_config_path() -> Path:
    """~/.codex/config.toml, or $CODEX_HOME/config.toml."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


def windsurf_config_path() -> Path:
    """Windsurf reads MCP servers from one user-wide file only."""
    return Path.home() / ".codeium" / "windsurf" / "mcp_config.json"


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def codex_block(name: str, command: str, args: list[str]) -> str:
    """The [mcp_servers.NAME] table for Codex."""
    rendered_args = ", ".join(_toml_string(a) for a in args)
    return f"[mcp_servers.{_toml_key(name)}]\ncommand = {_toml_string(command)}\nargs = [{rendered_args}]\n"


def _toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_string(name)


# Each agent's documented file, the key holding its servers, and how it is scoped:
# claude .mcp.json mcpServers (Claude Code starts project servers in the project folder);
# cursor .cursor/mcp.json mcpServers and vscode .vscode/mcp.json servers (both expand
# ${workspaceFolder}); gemini .gemini/settings.json mcpServers; zed .zed/settings.json
# context_servers; opencode opencode.json(c) mcp, a local command list; codex .codex/config.toml
# (trusted projects) or ~/.codex/config.toml; windsurf ~/.codeium/windsurf/mcp_config.json only.
_JSON_AGENTS = {
    "claude": (".mcp.json", "mcpServers", None, "CLAUDE.md"),
    "cursor": (".cursor/mcp.json", "mcpServers", "${workspaceFolder}", "AGENTS.md"),
    "vscode": (".vscode/mcp.json", "servers", "${workspaceFolder}", "AGENTS.md"),
    "gemini": (".gemini/settings.json", "mcpServers", None, "GEMINI.md"),
    "zed": (".zed/settings.json", "context_servers", None, "AGENTS.md"),
    "opencode": ("opencode.json", "mcp", None, "AGENTS.md"),
}


def _json_entry(agent: str, command: str, args: list[str]) -> dict[str, Any]:
    if agent in ("claude", "vscode"):
        return {
            "type": "stdio",
            "command": command,
            "args": args,
            **({"env": {}} if agent == "claude" else {}),
        }
    if agent == "opencode":
        return {"type": "local", "command": [command, *args], "enabled": True}
    if agent == "zed":
        return {"command": command, "args": args, "env": {}}
    return {"command": command, "args": args}


def opencode_path(root: Path) -> Path:
    """opencode.jsonc when the project has one (opencode reads either), else opencode.json."""
    jsonc = root / "opencode.jsonc"
    return jsonc if jsonc.exists() and not (root / "opencode.json").exists() else root / "opencode.json"


def agent_config(
    agent: str, root: Path, name: str = "ragraf", absolute: bool = False, scope: str = "project"
) -> AgentConfig:
    """The snippet for `agent`: for a project file the portable command (`ragraf serve`, the root
    from the client), for a user-wide file (windsurf, codex --scope user) or with `absolute` this
    ragraf's absolute path and `--root`."""
    root = Path(root).expanduser().resolve()
    if agent in _JSON_AGENTS:
        rel, key, root_arg, guide = _JSON_AGENTS[agent]
        command, args = _server_entry(root, not absolute, root_arg)
        doc: dict[str, Any] = {key: {name: _json_entry(agent, command, args)}}
        if agent == "opencode":
            doc = {"$schema": "https://opencode.ai/config.json", **doc}
        path = opencode_path(root) if agent == "opencode" else root / rel
        return AgentConfig(agent, path, "project", _json(doc), guide)
    if agent == "windsurf":
        command, args = _server_entry(root, False)
        doc = {"mcpServers": {name: {"command": command, "args": args}}}
        return AgentConfig(agent, windsurf_config_path(), "user", _json(doc), "AGENTS.md")
    if agent == "codex":
        user = scope == "user"
        command, args = _server_entry(root, not (absolute or user))
        path = codex_config_path() if user else root / ".codex" / "config.toml"
        return AgentConfig(
            agent, path, "user" if user else "project", codex_block(name, command, args), "AGENTS.md"
        )
    if agent == "generic":
        command, args = _server_entry(root, not absolute)
        line = shlex.join([command, *args])
        snippet = f"{line}\n\n{_json({'command': command, 'args': args, 'transport': 'stdio'})}"
        return AgentConfig(agent, None, "none", snippet, "AGENTS.md")
    raise ConfigError(f"unknown agent {agent!r}", suggest="use one of: " + ", ".join(AGENTS))


def claude_add_line(name: str, config: AgentConfig) -> str:
    """The `claude mcp add` command that registers the same server from the terminal."""
    entry = json.loads(config.snippet)["mcpServers"][name]
    return shlex.join(
        ["claude", "mcp", "add", "--scope", "project", name, "--", entry["command"], *entry["args"]]
    )


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_config(
    agent: str, root: Path, name: str = "ragraf", absolute: bool = False, scope: str = "project"
) -> tuple[Path, str]:
    """Merge the server into the agent's file, keeping every other server; (path, what was done)."""
    config = agent_config(agent, root, name, absolute, scope)
    if config.path is None:
        raise ConfigError(
            "the generic snippet has no file to write",
            suggest="paste the command into your agent's configuration",
        )
    if agent == "codex":
        return config.path, _merge_toml(config.path, name, config.snippet)
    fresh = json.loads(config.snippet)
    key = next(k for k in fresh if k != "$schema")
    return config.path, _merge_json(config.path, key, name, fresh[key][name], fresh)


_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.S)


def loads_jsonc(text: str) -> Any:
    """JSON with comments and trailing commas (JSONC, as opencode.jsonc and Zed's settings are)."""
    return json.loads(_JSONC_TOKEN.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))


def _merge_json(path: Path, key: str, name: str, entry: dict[str, Any], fresh: dict[str, Any]) -> str:
    if not path.exists():
        _atomic_write(path, _json(fresh))
        return f"created with server {name!r}"
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text)
        commented = False
    except ValueError:
        try:
            data = loads_jsonc(text)
            commented = any(m.group(0).startswith("/") for m in _JSONC_TOKEN.finditer(text))
        except ValueError as exc:
            raise ConfigError(
                f"{path} is neither JSON nor JSON with comments ({exc}); not touching it",
                suggest="fix it, or add the snippet by hand",
            ) from None
    if not isinstance(data, dict) or not isinstance(data.get(key, {}), dict):
        raise ConfigError(f"{path}: {key!r} is not a JSON object; not touching it", suggest="fix it by hand")
    servers = data.setdefault(key, {})
    if servers.get(name) == entry:
        return f"already has server {name!r}; unchanged"
    if commented:  # rewriting would drop the comments: the file is the user's
        raise ConfigError(
            f"{path} has comments, which an automatic merge would drop; not touching it",
            suggest=f'add this under "{key}" by hand: "{name}": {json.dumps(entry)}',
        )
    verb = "updated" if name in servers else "added"
    others = len([k for k in servers if k != name])
    servers[name] = entry
    _atomic_write(path, _json(data))
    return f"{verb} server {name!r}; kept {others} other server(s)"


_TABLE = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


def _merge_toml(path: Path, name: str, block: str) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); not touching it", suggest="fix it first"
        ) from None
    servers = data.get("mcp_servers", {})
    others = len([k for k in servers if k != name]) if isinstance(servers, dict) else 0
    if servers.get(name) == tomllib.loads(block)["mcp_servers"][name]:
        return f"already has [mcp_servers.{name}]; unchanged"
    if name not in servers:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        _atomic_write(path, text + sep + block)
        return f"added [mcp_servers.{name}]; kept {others} other server(s)"
    # Replace our own table (and its sub-tables) in place; every other line stays as it was.
    lines = text.splitlines(keepends=True)
    ours = {f"mcp_servers.{name}", f'mcp_servers."{name}"'}
    out: list[str] = []
    inside = found = False
    for line in lines:
        m = _TABLE.match(line)
        if m:
            header = m.group(1).strip()
            inside = header in ours or any(header.startswith(o + ".") for o in ours)
            if inside and not found:
                out.append(block + "\n")
                found = True
        if not inside:
            out.append(line)
    if not found:
        raise ConfigError(
            f"{path} defines mcp_servers.{name} inline; not touching it",
            suggest="replace it by hand with the snippet",
        )
    _atomic_write(path, "".join(out).rstrip("\n") + "\n")
    return f"updated [mcp_servers.{name}]; kept {others} other server(s)"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
