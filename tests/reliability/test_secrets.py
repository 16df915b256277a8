"""Secrets never enter the index and no operation returns them: library, CLI, MCP and HTTP (issue 10)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from servers import mcp_client, running_http
from support import init_git, run_cli, write

from ragraf import Index
from ragraf.errors import RagrafError

MARK = "s3cr3t_marker"
# Each secret file holds a marker unique to it, and code-looking text so def/refs would find it.
SECRETS = {
    ".env": "API_TOKEN={m}\n",
    ".env.production": "DATABASE_URL=postgres://admin:{m}@db/prod\n",
    "config/.env.local": "STRIPE_KEY={m}\n",
    "config/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n{m}\n-----END OPENSSH PRIVATE KEY-----\n",
    "config/id_rsa.pub": "ssh-rsa AAAA{m} user@host\n",
    "config/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\n{m}\n-----END OPENSSH PRIVATE KEY-----\n",
    "certs/server.pem": "-----BEGIN CERTIFICATE-----\n{m}\n-----END CERTIFICATE-----\n",
    "certs/server.key": "-----BEGIN PRIVATE KEY-----\n{m}\n-----END PRIVATE KEY-----\n",
    "certs/client.p12": "p12 bundle {m}\n",
    ".aws/credentials": "[default]\naws_access_key_id = AKIA{m}\naws_secret_access_key = {m}\n",
    "ops/.aws/credentials": "[ci]\naws_secret_access_key = {m}\n",
    ".npmrc": "//registry.npmjs.org/:_authToken={m}\n",
    "credentials.json": '{{"type": "service_account", "private_key": "{m}"}}\n',
    ".netrc": "machine api.example.com login me password {m}\n",
}
NORMAL = {
    "docs/setup.md": (
        "# Setup\n\nPut your token in `.env` (or `.env.production`), your key in `config/id_rsa` or "
        "`config/id_ed25519`, certificates in `certs/server.pem` and `certs/server.key`, the bundle in "
        "`certs/client.p12`, cloud keys in `.aws/credentials`, registry auth in `.npmrc`, the service "
        "account in `credentials.json` and FTP logins in `.netrc`. Never commit them.\n"
    ),
    "src/app.py": "import os\n\n\ndef load_settings():\n    return os.environ.get('API_TOKEN')\n",
    # `!pattern` re-includes default excludes, but never secrets.
    ".ragrafignore": "!.env\n!.env.*\n!*.pem\n!*.key\n!config/id_rsa\n!.aws/\n!credentials.json\n!.netrc\n",
}


def _secret_text(i: int, template: str) -> str:
    return template.format(m=f"{MARK}_{i}") + f"def leaked_secret_function_{i}():\n    pass\n"


def _markers() -> list[str]:
    return [f"{MARK}_{i}" for i in range(len(SECRETS))]


@pytest.fixture(scope="module", params=["walk", "git"])
def repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp(f"secrets-{request.param}") / "repo"
    root.mkdir()
    write(root, {path: _secret_text(i, t) for i, (path, t) in enumerate(SECRETS.items())})
    write(root, NORMAL)
    # Innocent names that point at secrets: symlinks are never followed, nor read through.
    os.symlink(".env", root / "innocent.txt")
    os.symlink("../certs/server.key", root / "docs" / "key.md")
    if request.param == "git":
        init_git(root)  # the secrets are tracked, as they too often are
    with Index.open(root, embedder="none") as idx:
        idx.index()
    return root


def _no_secret_in(text: str) -> None:
    for marker in _markers():
        assert marker not in text
    assert "leaked_secret_function" not in text


def test_dry_run_and_the_manifest_hold_no_secret(repo: Path) -> None:
    with Index.open(repo, embedder="none") as idx:
        plan = idx.index(dry_run_only=True)
        assert plan["files"] == len(NORMAL)
        assert plan["skipped"].get("secret") == len(SECRETS)
        status = idx.status().to_dict()
        db = idx.settings.db_path
    assert status["results"][0]["revision"]["files"] == len(NORMAL)
    _no_secret_in(json.dumps(status))
    import sqlite3

    from ragraf.store.sqlite.sql import unpack_text

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        paths = {r[0] for r in conn.execute("SELECT path FROM manifest")}
        texts = "\n".join(unpack_text(r[0]) for r in conn.execute("SELECT text FROM chunks"))
    assert paths == set(NORMAL)
    _no_secret_in(texts)


def test_no_operation_returns_a_secret(repo: Path) -> None:
    with Index.open(repo, embedder="none") as idx:
        answers = []
        for query in [
            *_markers(),
            MARK,
            "PRIVATE KEY",
            "aws_secret_access_key password token",
            "leaked_secret_function",
        ]:
            for mode in ("hybrid", "lexical"):
                answers.append(idx.search(query, k=10, mode=mode).to_dict())
        for i in range(len(SECRETS)):
            answers.append(idx.find_symbol(f"leaked_secret_function_{i}").to_dict())
            answers.append(idx.find_references(f"leaked_secret_function_{i}").to_dict())
        answers.append(idx.drift().to_dict())
        for path in [*SECRETS, "innocent.txt", "docs/key.md"]:
            for call in (idx.outline, idx.read):
                try:
                    answers.append(call(path).to_dict())
                except RagrafError as exc:
                    answers.append({"error": exc.as_dict()})
        for env in answers:
            # What an answer carries, less the notes that echo the query back.
            _no_secret_in(json.dumps([env.get("results"), env.get("stale_warnings"), env.get("error")]))
            for r in env.get("results", []):
                assert r.get("path") not in SECRETS, r
        # The normal file that names the secret files is found, so the searches did run.
        names = idx.search("where do I put certificates and the service account", k=5).to_dict()
        assert any(r["path"] == "docs/setup.md" for r in names["results"])


@pytest.mark.parametrize("path", [*SECRETS, "./.env", "config//id_rsa", "innocent.txt", "docs/key.md"])
def test_read_refuses_every_secret_path(repo: Path, path: str) -> None:
    with Index.open(repo, embedder="none") as idx, pytest.raises(RagrafError):
        idx.read(path)


def test_the_cli_refuses_to_read_a_secret(repo: Path) -> None:
    for path in (".env", "certs/server.key", ".aws/credentials", "innocent.txt"):
        out = run_cli("read", path, "--root", str(repo), "--json", env={"RAGRAF_EMBEDDER": "none"})
        assert out.returncode != 0
        _no_secret_in(out.stdout + out.stderr)
    out = run_cli(
        "search", f"{MARK}_1 {MARK}_5", "--root", str(repo), "--json", env={"RAGRAF_EMBEDDER": "none"}
    )
    assert out.returncode == 0
    _no_secret_in(json.dumps(json.loads(out.stdout)["results"]))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_server_refuses_to_read_a_secret(repo: Path, anyio_backend: str) -> None:
    async with mcp_client(repo) as client:
        for path in (".env", "config/id_rsa", "credentials.json", "innocent.txt"):
            result = await client.call_tool("read", {"path": path})
            assert result.is_error
            _no_secret_in(json.dumps(result.structured_content) + result.content[0].text)
        result = await client.call_tool("search", {"query": f"{MARK}_3 PRIVATE KEY", "top_k": 10})
        assert not result.is_error
        _no_secret_in(json.dumps(result.structured_content["results"]))


def test_the_http_api_refuses_to_read_a_secret(repo: Path) -> None:
    with running_http(repo) as server:
        for path in (".env", ".netrc", "certs/server.pem", "docs/key.md"):
            status, body = server.post("read", {"path": path})
            assert status >= 400
            _no_secret_in(json.dumps(body))
        status, body = server.post("search", {"query": f"{MARK}_0 {MARK}_12", "top_k": 10})
        assert status == 200
        _no_secret_in(json.dumps(body["results"]))


def test_secret_names_in_upper_case_are_secrets_too(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    upper = {"certs/DEPLOY.PEM": "a", "certs/prod.KEY": "b", "keys/ID_RSA": "c", ".ENV": "d"}
    write(root, {p: f"{MARK}_{t} upper case secret\n" for p, t in upper.items()})
    write(root, NORMAL)
    with Index.open(root, embedder="none") as idx:
        idx.index()
        hits = idx.search(f"{MARK}_a {MARK}_b {MARK}_c {MARK}_d upper case secret", k=10).results
        readable = []
        for path in upper:
            try:
                idx.read(path)
                readable.append(path)
            except RagrafError:
                pass
    assert [h.path for h in hits] == []
    assert readable == []
