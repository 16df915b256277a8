"""`ragraf mcp-config`: the snippet each agent reads, and a --write that never clobbers other servers."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from servers import SERVER_ENV

from ragraf.adapters.agent_setup import AGENT_GUIDE
from ragraf.adapters.commands import register


def _cli() -> click.Group:
    @click.group()
    def main() -> None:
        """A stand-in for the `ragraf` group."""

    register(main)
    return main


def mcp_config(*args: str) -> Result:
    return CliRunner().invoke(_cli(), ["mcp-config", *args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def _serve_args(args: list[str], root: Path) -> None:
    assert args[-3:] == ["serve", "--root", str(root.resolve())]


def _portable(command: str, args: list[str], root: Path) -> None:
    """`ragraf serve` from PATH, nothing of this machine in it."""
    assert command == "ragraf" and args[0] == "serve"
    assert str(root.resolve()) not in json.dumps(args) and "/" not in command


def test_claude_snippet_is_an_mcp_json_with_the_serve_command_and_the_guide(sample: Path) -> None:
    out = mcp_config("--agent", "claude", "--root", str(sample))
    assert out.exit_code == 0
    start = out.stdout.index("{")
    snippet, _ = json.JSONDecoder().raw_decode(out.stdout[start:])
    entry = snippet["mcpServers"]["ragraf"]
    assert entry["type"] == "stdio"
    _portable(entry["command"], entry["args"], sample)
    assert "claude mcp add --scope project ragraf -- ragraf serve" in out.stdout
    assert ".mcp.json" in out.stdout and "CLAUDE.md" in out.stdout
    assert "find_references" in out.stdout and "`read`" in out.stdout
    assert not (sample / ".mcp.json").exists()  # printing writes nothing


def test_write_merges_into_mcp_json_keeping_other_servers(sample: Path) -> None:
    other = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}, "note": "keep me"}
    (sample / ".mcp.json").write_text(json.dumps(other))
    out = mcp_config("--agent", "claude", "--root", str(sample), "--write")
    assert out.exit_code == 0, out.output
    assert "added server 'ragraf'; kept 1 other server(s)" in out.stdout
    data = json.loads((sample / ".mcp.json").read_text())
    assert data["note"] == "keep me"
    assert data["mcpServers"]["github"] == other["mcpServers"]["github"]
    _portable("ragraf", data["mcpServers"]["ragraf"]["args"], sample)
    again = mcp_config("--agent", "claude", "--root", str(sample), "--write")
    assert "unchanged" in again.stdout


def test_write_refuses_to_touch_a_file_that_is_not_plain_json(sample: Path) -> None:
    text = '{\n  // a comment\n  "mcp": {}\n}\n'
    (sample / "opencode.json").write_text(text)
    out = CliRunner().invoke(_cli(), ["mcp-config", "--agent", "opencode", "--root", str(sample), "--write"])
    assert out.exit_code == 1
    assert "has comments" in out.stderr and '"ragraf": {"type": "local"' in out.stderr
    assert (sample / "opencode.json").read_text() == text


def test_opencode_and_cursor_get_their_own_shapes(sample: Path) -> None:
    assert mcp_config("--agent", "opencode", "--root", str(sample), "--write").exit_code == 0
    entry = json.loads((sample / "opencode.json").read_text())["mcp"]["ragraf"]
    assert entry["type"] == "local" and entry["enabled"] is True
    assert entry["command"] == ["ragraf", "serve"]
    assert mcp_config("--agent", "cursor", "--root", str(sample), "--write").exit_code == 0
    entry = json.loads((sample / ".cursor" / "mcp.json").read_text())["mcpServers"]["ragraf"]
    assert entry == {"command": "ragraf", "args": ["serve", "--root", "${workspaceFolder}"]}


def test_codex_writes_only_with_write_into_the_users_config_and_keeps_the_rest(
    sample: Path, home: Path
) -> None:
    printed = mcp_config("--agent", "codex", "--scope", "user", "--root", str(sample))
    assert "[mcp_servers.ragraf]" in printed.stdout
    assert str(home / ".codex" / "config.toml") in printed.stdout
    assert not (home / ".codex").exists()

    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    out = mcp_config("--agent", "codex", "--scope", "user", "--root", str(sample), "--write")
    assert out.exit_code == 0, out.output
    assert str(config) in out.stdout and "user-wide" in out.stdout
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o4"
    assert data["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    _serve_args(data["mcp_servers"]["ragraf"]["args"], sample)

    elsewhere = sample.parent / "other-repo"
    elsewhere.mkdir()
    updated = mcp_config("--agent", "codex", "--scope", "user", "--root", str(elsewhere), "--write")
    assert "updated [mcp_servers.ragraf]" in updated.stdout
    data = tomllib.loads(config.read_text())
    _serve_args(data["mcp_servers"]["ragraf"]["args"], elsewhere)
    assert data["mcp_servers"]["docs"] == {"command": "docs-mcp"} and data["model"] == "o4"
    assert config.read_text().count("[mcp_servers.ragraf]") == 1


def test_generic_prints_the_command_line_and_has_nothing_to_write(sample: Path) -> None:
    out = mcp_config("--agent", "generic", "--root", str(sample))
    assert out.exit_code == 0 and out.stdout.startswith("# Any MCP client")
    assert "\nragraf serve\n" in out.stdout
    absolute = mcp_config("--agent", "generic", "--absolute", "--root", str(sample))
    assert f"serve --root {sample.resolve()}" in absolute.stdout
    refused = CliRunner().invoke(
        _cli(), ["mcp-config", "--agent", "generic", "--root", str(sample), "--write"]
    )
    assert refused.exit_code == 1 and "no file to write" in refused.stderr


def test_json_output_carries_snippet_and_guide(sample: Path) -> None:
    out = mcp_config("--agent", "cursor", "--root", str(sample), "--json")
    data = json.loads(out.stdout)
    assert data["file"] == str(sample.resolve() / ".cursor" / "mcp.json")
    assert data["guide"] == AGENT_GUIDE and data["written"] is None


@pytest.mark.anyio
async def test_the_configured_command_starts_a_working_mcp_server(indexed: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    out = mcp_config("--agent", "generic", "--absolute", "--root", str(indexed), "--json")
    entry = json.loads(json.loads(out.stdout)["snippet"].split("\n\n", 1)[1])
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**os.environ, **SERVER_ENV}
    )
    async with Client(params, read_timeout_seconds=60) as client:
        result = await client.call_tool("search", {"query": "TCPConnector"})
    assert result.is_error is False
    assert result.structured_content["results"]


# Each agent's documented file and shape (checked against its documentation): the file, the key
# holding the servers, and the entry the portable form writes there.
AGENT_FILES = {
    "claude": (".mcp.json", "mcpServers", {"type": "stdio", "command": "ragraf", "args": ["serve"], "env": {}}),
    "cursor": (".cursor/mcp.json", "mcpServers", {"command": "ragraf", "args": ["serve", "--root", "${workspaceFolder}"]}),
    "vscode": (".vscode/mcp.json", "servers", {"type": "stdio", "command": "ragraf", "args": ["serve", "--root", "${workspaceFolder}"]}),
    "gemini": (".gemini/settings.json", "mcpServers", {"command": "ragraf", "args": ["serve"]}),
    "zed": (".zed/settings.json", "context_servers", {"command": "ragraf", "args": ["serve"], "env": {}}),
    "opencode": ("opencode.json", "mcp", {"type": "local", "command": ["ragraf", "serve"], "enabled": True}),
}  # fmt: skip


@pytest.mark.parametrize("agent", sorted(AGENT_FILES))
def test_each_project_agent_gets_its_documented_file_in_the_portable_form(sample: Path, agent: str) -> None:
    rel, key, entry = AGENT_FILES[agent]
    out = mcp_config("--agent", agent, "--root", str(sample), "--write")
    assert out.exit_code == 0, out.output
    data = json.loads((sample / rel).read_text())
    assert data[key]["ragraf"] == entry
    assert str(sample.resolve()) not in (sample / rel).read_text()  # nothing of this machine
    absolute = mcp_config("--agent", agent, "--absolute", "--root", str(sample), "--json")
    assert str(sample.resolve()) in json.loads(absolute.stdout)["snippet"]


def test_codex_defaults_to_the_projects_own_config(sample: Path, home: Path) -> None:
    out = mcp_config("--agent", "codex", "--root", str(sample), "--write")
    assert out.exit_code == 0, out.output
    data = tomllib.loads((sample / ".codex" / "config.toml").read_text())
    assert data["mcp_servers"]["ragraf"] == {"command": "ragraf", "args": ["serve"]}
    assert not (home / ".codex").exists()


def test_windsurf_writes_the_user_file_with_an_absolute_root(sample: Path, home: Path) -> None:
    out = mcp_config("--agent", "windsurf", "--name", "ragraf-repo", "--root", str(sample), "--write")
    assert out.exit_code == 0, out.output
    data = json.loads((home / ".codeium" / "windsurf" / "mcp_config.json").read_text())
    entry = data["mcpServers"]["ragraf-repo"]
    assert Path(entry["command"]).is_absolute()
    _serve_args(entry["args"], sample)
    assert "user-wide" in out.stdout


def test_an_existing_opencode_jsonc_is_used_and_a_second_file_not_written(sample: Path) -> None:
    jsonc = sample / "opencode.jsonc"
    jsonc.write_text('{\n  "mcp": {"docs": {"type": "local", "command": ["docs"]},},\n}\n')  # trailing commas
    out = mcp_config("--agent", "opencode", "--root", str(sample), "--write")
    assert out.exit_code == 0, out.output
    assert not (sample / "opencode.json").exists()
    data = json.loads(jsonc.read_text())
    assert set(data["mcp"]) == {"docs", "ragraf"}
    commented = sample / "opencode.jsonc"
    commented.write_text(
        '{\n  // ours\n  "mcp": {"ragraf": {"type": "local", "command": ["ragraf", "serve"], "enabled": true}}\n}\n'
    )
    again = mcp_config("--agent", "opencode", "--root", str(sample), "--write")
    assert again.exit_code == 0 and "unchanged" in again.stdout  # read through its comments


@pytest.mark.anyio
async def test_the_portable_command_serves_the_folder_the_client_starts_it_in(indexed: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    out = mcp_config("--agent", "claude", "--root", str(indexed), "--json")
    entry = json.loads(out.stdout)["snippet"]
    entry = json.loads(entry)["mcpServers"]["ragraf"]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # ragraf on PATH
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={**os.environ, **SERVER_ENV, "PATH": path},
        cwd=indexed,
    )
    async with Client(params, read_timeout_seconds=60) as client:
        result = await client.call_tool("find_symbol", {"name": "TCPConnector"})
    assert result.is_error is False
    assert result.structured_content["results"][0]["path"] == "src/app/server.py"
