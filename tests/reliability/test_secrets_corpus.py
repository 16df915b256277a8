"""A secrets corpus (issue 27): more than 30 kinds of secret file, by name and by content, and more
than 20 token formats inside ordinary source, docs and config. No secret is returned by the CLI,
the MCP server or the HTTP API, none is in the index file, and answers count what they redacted."""

from __future__ import annotations

import json
import random
import sqlite3
import string
from pathlib import Path

import pytest
from servers import mcp_client, running_http
from support import init_git, run_cli, write

from ragraf import Index
from ragraf.corpus.secrets import TOKEN_FORMATS, redact

_R = random.Random(27)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _rs(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


# One made-up token of each format (none is a real credential).
TOKENS = {
    "aws-access-key": "AKIA" + _rs(16, string.ascii_uppercase + string.digits),
    "github-token": "ghp_" + _rs(36),
    "github-fine-grained-token": "github_pat_" + _rs(22) + "_" + _rs(59),
    "gitlab-token": "glpat-" + _rs(20),
    "slack-token": "xoxb-" + _rs(11, string.digits) + "-" + _rs(24),
    "slack-webhook": "https://hooks.slack.com/services/T" + _rs(8) + "/B" + _rs(8) + "/" + _rs(24),
    "stripe-key": "sk_live_" + _rs(24),
    "stripe-webhook-secret": "whsec_" + _rs(32),
    "openai-key": "sk-proj-" + _rs(48),
    "google-api-key": "AIza" + _rs(35),
    "google-oauth-secret": "GOCSPX-" + _rs(28),
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _rs(43),
    "npm-token": "npm_" + _rs(36),
    "pypi-token": "pypi-AgEIcHlwaS5vcmc" + _rs(60),
    "huggingface-token": "hf_" + _rs(34),
    "sendgrid-key": "SG." + _rs(22) + "." + _rs(43),
    "twilio-key": "SK" + _rs(32, HEX),
    "mailgun-key": "key-" + _rs(32, string.ascii_lowercase + string.digits),
    "digitalocean-token": "dop_v1_" + _rs(64, HEX),
    "shopify-token": "shpat_" + _rs(32, HEX),
    "square-token": "sq0atp-" + _rs(22),
    "telegram-bot-token": "123456789:AA" + _rs(33),
    "azure-storage-key": _rs(86) + "==",
    "databricks-token": "dapi" + _rs(32, HEX),
    "age-secret-key": "AGE-SECRET-KEY-1" + _rs(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    "password-in-url": _rs(18),
    "assigned-secret": _rs(32),
}
assert {kind for kind, _lits, _pattern in TOKEN_FORMATS} | {"assigned-secret"} == set(TOKENS)
SOURCE = "\n".join(
    [
        '"""Settings of the payment service."""',
        "",
        "import os",
        "",
        *(f'{kind.upper().replace("-", "_")}_VALUE = "{tok}"' for kind, tok in TOKENS.items()
          if kind not in ("azure-storage-key", "password-in-url", "assigned-secret")),
        f'AZURE = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={TOKENS["azure-storage-key"]}"',
        f'DATABASE_URL = "postgres://admin:{TOKENS["password-in-url"]}@db.internal/prod"',
        f'CLIENT_SECRET = "{TOKENS["assigned-secret"]}"',
        "",
        "",
        "def connect_payment_gateway(timeout):",
        '    """Open the payment gateway connection."""',
        f'    return Gateway(api_key="{TOKENS["stripe-key"]}", token="{TOKENS["github-token"]}", timeout=timeout)',
        "",
    ]
)  # fmt: skip
DOTENV_LIKE = (
    "\n".join(f"{kind.upper().replace('-', '_')}={tok}" for kind, tok in list(TOKENS.items())[:8]) + "\n"
)
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{m}\n-----END OPENSSH PRIVATE KEY-----\n"
# Secret files: each holds its own marker (and a function name def/refs would find).
SECRET_FILES = [
    ".env", ".env.production", "config/.env.local", ".envrc", "env.local", "deploy/app.env",
    "keys/id_rsa", "keys/id_ed25519", "keys/id_ecdsa", "keys/deploy_rsa", "certs/server.pem", "certs/server.key",
    "certs/client.p12", "certs/client.pfx", "apple/AuthKey_ABC123.p8", "java/release.jks", "java/app.keystore",
    ".aws/credentials", ".kube/config", ".docker/config.json", ".ssh/config", ".netrc", ".pgpass", ".npmrc",
    ".pypirc", ".git-credentials", "putty/key.ppk", "credentials.json", "credentials.csv", "secrets.yml",
    "service-account-prod.json", "infra/prod.tfvars", "infra/terraform.tfstate", "infra/terraform.tfstate.backup",
    ".htpasswd", "vpn/office.ovpn", "krb/service.keytab", "gcloud/application_default_credentials.json",
    "client_secret_123.json", "app.secret", ".boto", ".s3cfg", "kubeconfig",
]  # fmt: skip
# Secret by content: innocent names, a private key in the opening lines.
KEY_FILES = ["my_id_rsa_backup", "notes/deploy.txt", "src/fixture_key.py"]
NORMAL = {
    "src/settings.py": SOURCE,
    "config/app.yaml": "service:\n  name: payments\n"
    + "".join(f"  {k.replace('-', '_')}_token: {v}\n" for k, v in list(TOKENS.items())[8:16]),
    "docs/tokens.md": "# Tokens\n\nThe CI uses these:\n\n```\n"
    + DOTENV_LIKE
    + "```\n\nRotate them yearly.\n",
    "src/app.py": "from settings import connect_payment_gateway\n\n\ndef main():\n    return connect_payment_gateway(5)\n",
}


def _secret_text(i: int) -> str:
    return f"value = secretmarker{i}x\ndef leaked_function_{i}():\n    pass\n"


def _forbidden() -> list[str]:
    marks = [f"secretmarker{i}x" for i in range(len(SECRET_FILES) + len(KEY_FILES))]
    tokens = [t for k, t in TOKENS.items()]
    return [*marks, *tokens, "b3BlbnNzaC1rZXktdjEAAAAA"]


def _clean(text: str) -> None:
    leaked = [s for s in _forbidden() if s in text]
    assert leaked == [], leaked


@pytest.fixture(scope="module", params=["walk", "git"])
def repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp(f"secrets27-{request.param}") / "repo"
    root.mkdir()
    write(root, {path: _secret_text(i) for i, path in enumerate(SECRET_FILES)})
    for j, path in enumerate(KEY_FILES, len(SECRET_FILES)):
        write(root, {path: KEY.format(m=f"secretmarker{j}x") + _secret_text(j)})
    write(root, NORMAL)
    if request.param == "git":
        init_git(root)
    with Index.open(root, embedder="none") as idx:
        idx.index()
    return root


def test_the_corpus_has_30_secret_kinds_and_20_token_formats() -> None:
    assert len(SECRET_FILES) + len(KEY_FILES) >= 30
    assert len(TOKENS) >= 20
    context = {"password-in-url", "azure-storage-key", "assigned-secret"}  # caught by what surrounds them
    for kind, tok in TOKENS.items():  # each token alone is caught, not only beside others
        if kind not in context:
            assert redact(f'x = "{tok}"\n') == (f'x = "[redacted:{kind}]"\n', 1), kind


def test_the_index_file_holds_no_secret(repo: Path) -> None:
    with Index.open(repo, embedder="none") as idx:
        db = idx.settings.db_path
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        paths = {r[0] for r in conn.execute("SELECT path FROM manifest")}
        dumped = "\n".join(line for line in conn.iterdump())
    assert paths == set(NORMAL)
    _clean(dumped)


def test_no_library_answer_returns_a_secret_and_answers_count_redactions(repo: Path) -> None:
    queries = [*TOKENS.values(), "OPENSSH PRIVATE KEY", "secretmarker1x", "payment gateway api_key token",
               "AKIA", "leaked_function_3", "redacted"]  # fmt: skip
    with Index.open(repo, embedder="none") as idx:
        answers = [idx.search(q, k=10).to_dict() for q in queries]
        answers += [
            idx.outline(p).to_dict() for p in ("src/settings.py", "config/app.yaml", "docs/tokens.md")
        ]
        answers += [
            idx.find_symbol("connect_payment_gateway").to_dict(),
            idx.find_references("Gateway").to_dict(),
        ]
        read = idx.read("src/settings.py").to_dict()
        found = idx.search("payment gateway connection", k=5).to_dict()
    for env in [*answers, read]:
        _clean(json.dumps([env.get("results"), env.get("stale_warnings")]))
    assert read["redacted"] >= len(TOKENS)
    assert any(r["path"] == "src/settings.py" for r in found["results"])
    assert found["redacted"] >= 1 and "[redacted:stripe-key]" in json.dumps(found["results"])


def test_the_cli_returns_no_secret(repo: Path) -> None:
    env = {"RAGRAF_EMBEDDER": "none"}
    for args in (("search", "OPENSSH PRIVATE KEY"), ("search", TOKENS["aws-access-key"]), ("read", "src/settings.py"),
                 ("outline", "src/settings.py"), ("read", "my_id_rsa_backup"), ("read", ".kube/config"),
                 ("search", "payment gateway token")):  # fmt: skip
        for fmt in ((), ("--json",)):
            out = run_cli(*args, "--root", str(repo), *fmt, env=env)
            assert "Traceback" not in out.stderr
            _clean(out.stdout + out.stderr)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_server_returns_no_secret(repo: Path, anyio_backend: str) -> None:
    async with mcp_client(repo) as client:
        calls = [("search", {"query": "OPENSSH PRIVATE KEY"}), ("search", {"query": TOKENS["github-token"]}),
                 ("read", {"path": "src/settings.py"}), ("read", {"path": "notes/deploy.txt"}),
                 ("outline", {"path": "src/settings.py"}), ("find_symbol", {"name": "connect_payment_gateway"})]  # fmt: skip
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            _clean(json.dumps(result.structured_content) + "".join(c.text for c in result.content))


def test_the_http_api_returns_no_secret(repo: Path) -> None:
    with running_http(repo) as server:
        for op, body in (("search", {"query": "OPENSSH PRIVATE KEY"}), ("read", {"path": "src/settings.py"}),
                         ("read", {"path": "src/fixture_key.py"}), ("search", {"query": TOKENS["jwt"]})):  # fmt: skip
            _status, answer = server.post(op, body)
            _clean(json.dumps(answer))
