"""The web page at / of `ragraf serve --http`: real HTTP requests to a subprocess server, and Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from servers import build_index, running_http

from ragraf import Index

TOKEN = "s3cret-token-for-the-page-0123456789"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_index(tmp_path_factory.mktemp("web") / "repo")
    server = root / "src/app/server.py"
    server.write_text(server.read_text().replace("limit=100", "limit=200"))
    (root / "src/app/evil.py").write_text('XSS = "<script>alert(1)</script>"\n')
    with Index.open(root, embedder="none") as idx:
        idx.index()
    return root


def _get(server, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    status, head, body = server.request("GET", path, headers=headers)
    return status, head, body.decode()


def test_search_page_lists_results_with_citations_marks_and_links(site: Path) -> None:
    with running_http(site) as server:
        status, head, page = _get(server, "/")
        assert status == 200 and head["content-type"].startswith("text/html")
        assert '<form class="search"' in page and '<input name="q"' in page and "rev-0002" in page
        status, _, page = _get(server, "/?q=TCPConnector+keep-alive&k=3")
        assert status == 200
        assert 'href="/file?path=src%2Fapp%2Fserver.py#L1">src/app/server.py:1-15</a>' in page
        assert "<mark>TCPConnector</mark>" in page and '<span class="tag">code</span>' in page
        assert 'href="/symbol?name=TCPConnector"' in page and 'href="/refs?name=TCPConnector"' in page
        assert "state <b>fresh</b>" in page
        _, _, page = _get(server, "/?q=TCPConnector&kind=test")
        assert "tests/test_server.py" in page and "src/app/server.py:" not in page


def test_file_view_has_line_anchors_and_is_confined_to_the_root(site: Path) -> None:
    with running_http(site) as server:
        status, _, page = _get(server, "/file?path=src/app/server.py")
        assert status == 200 and '<span class="row" id="L4">' in page and "class TCPConnector:" in page
        status, _, page = _get(server, "/file?path=" + quote("../../etc/passwd"))
        assert status == 400 and "root" in page and "root:x:" not in page


def test_definitions_references_and_the_changes_diff(site: Path) -> None:
    with running_http(site) as server:
        _, _, page = _get(server, "/symbol?name=TCPConnector")
        assert "src/app/server.py:4" in page and "def connect(self, host, port):" in page
        _, _, page = _get(server, "/refs?name=TCPConnector")
        assert "tests/test_server.py:5" in page and "test_connector" in page
        _, _, page = _get(server, "/changes?from=rev-0001&to=rev-0002")
        assert "Definitions changed" in page and "signature changed" in page
        assert '<span class="del">-    def __init__(self, limit=100):</span>' in page
        assert '<span class="add">+    def __init__(self, limit=200):</span>' in page
        assert "sha256" not in page


def test_everything_shown_is_escaped(site: Path) -> None:
    with running_http(site) as server:
        attack = '"><script>alert(2)</script>'
        _, head, page = _get(server, "/?q=" + quote(attack + " XSS"))
        assert "<script>" not in page and "&lt;script&gt;" in page
        assert "script-src" not in head["content-security-policy"]  # default-src 'none': no script runs
        _, _, page = _get(server, "/file?path=src/app/evil.py")
        assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        _, _, page = _get(server, "/symbol?name=" + quote(attack))
        assert "<script>" not in page


def test_with_a_token_the_page_wants_it_by_header_or_login_cookie(site: Path) -> None:
    with running_http(site, env={"RAGRAF_HTTP_TOKEN": TOKEN}) as server:
        status, _, page = _get(server, "/?q=TCPConnector")
        assert status == 401 and 'name="token"' in page and "TCPConnector</mark>" not in page
        status, _, page = _get(server, "/?q=TCPConnector", {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and "<mark>TCPConnector</mark>" in page
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        status, _, body = server.request("POST", "/login", "token=wrong&next=/", form)
        assert status == 401 and b"wrong token" in body
        status, _, body = server.request(
            "POST", "/login", f"token={TOKEN}&next=/", {**form, "Origin": "http://evil.example"}
        )
        assert status == 403
        status, head, _ = server.request("POST", "/login", f"token={TOKEN}&next=//evil.example/", form)
        assert status == 303 and head["location"] == "/"
        cookie = head["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        status, _, page = _get(server, "/?q=TCPConnector", {"Cookie": cookie.split(";")[0]})
        assert status == 200 and "<mark>TCPConnector</mark>" in page


def test_a_foreign_host_name_is_refused_on_a_loopback_bind(site: Path) -> None:
    with running_http(site) as server:
        status, _, page = _get(server, "/?q=TCPConnector", {"Host": "evil.example"})
        assert status == 403 and "TCPConnector" not in page


CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


@pytest.mark.skipif(not shutil.which("chromium"), reason="headless Chromium not installed (CI installs it)")
def test_chromium_loads_the_page_searches_and_follows_a_result_to_its_line(
    site: Path, tmp_path: Path
) -> None:
    with running_http(site) as server:

        def dom(url: str, profile: str) -> str:
            return subprocess.run(
                [*CHROMIUM, f"--user-data-dir={tmp_path / profile}", "--dump-dom", url],
                capture_output=True,
                text=True,
                timeout=120,
            ).stdout

        home = dom(server.base + "/", "p1")
        assert re.search(r'<form class="search" method="get" action="/"', home) and '<input name="q"' in home
        # What submitting the form asks for: its GET action with the input's name.
        results = dom(server.base + "/?q=TCPConnector", "p2")
        link = re.search(r'href="(/file\?path=src%2Fapp%2Fserver\.py#L(\d+))"', results)
        assert link and "<mark>TCPConnector</mark>" in results
        view = dom(server.base + link.group(1).replace("&amp;", "&"), "p3")
        assert f'id="L{link.group(2)}"' in view and "class TCPConnector:" in view
        shot = tmp_path / "page.png"
        subprocess.run(
            [*CHROMIUM, f"--user-data-dir={tmp_path / 'p4'}", f"--screenshot={shot}", "--window-size=1200,900",
             server.base + "/?q=TCPConnector+keep-alive"],
            capture_output=True,
            timeout=120,
        )  # fmt: skip
        assert shot.exists() and shot.stat().st_size > 5000
