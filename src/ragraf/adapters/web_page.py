"""The web page of `ragraf serve --http`: search, file view, definitions, references and the changes report.

Server-rendered HTML from the same envelopes the API returns (through `ToolRunner`, as /v1 does), no
JavaScript. Everything from the index or the request is escaped. With RAGRAF_HTTP_TOKEN set, a page
wants the token: `Authorization: Bearer`, or the `ragraf_token` cookie the /login form sets
(HttpOnly, SameSite=Strict).
"""

from __future__ import annotations

import hmac
import html
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ragraf.adapters.tools import ServedRoots, ToolRunner
from ragraf.api.changes_format import diff_html

COOKIE = "ragraf_token"
KINDS = ("", "code", "test", "doc", "config")
MODES = ("hybrid", "lexical", "vector")
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
}

_CSS = """body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d232b}
header{background:#1d2a38;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center}
header a{color:#cfe3ff;text-decoration:none}header b{font-size:1.1rem}main{max-width:78rem;margin:0 auto;padding:1rem}
.banner{padding:.45rem .8rem;border-radius:4px;margin:.6rem 0;background:#e8f4ea;font-size:.9rem}
.banner.warn{background:#fff4d6}.banner.bad{background:#fde4e4}form.search{display:flex;gap:.5rem;flex-wrap:wrap}
form.search input[name=q]{flex:1;min-width:18rem;font-size:1rem;padding:.35rem .5rem}
.result{border:1px solid #e1e5ea;border-radius:6px;margin:.8rem 0;overflow:hidden}
.result h3{margin:0;padding:.4rem .7rem;font-size:.95rem;background:#f5f7f9;font-weight:500}
.tag{font-size:.75rem;border-radius:3px;padding:0 .35rem;margin-left:.4rem;background:#e3e9f0}
.tag.stale{background:#ffd9a8}pre{margin:0;overflow-x:auto;font:.83rem/1.45 ui-monospace,monospace}
.code .ln{display:inline-block;width:3.5rem;color:#8792a0;text-align:right;padding-right:.8rem;user-select:none;
text-decoration:none}.code .row:target{background:#fff3b0}mark{background:#ffe066}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.3rem .6rem;
border-bottom:1px solid #eceff2}.note{color:#5a6572;font-size:.88rem}code{font:.85rem ui-monospace,monospace}
pre.diff{background:#f7f8fa;padding:.5rem}.diff .add{background:#e4f6e6;display:inline-block;width:100%}
.diff .del{background:#fbe6e6;display:inline-block;width:100%}.diff .hunk{color:#6a5acd}"""

e = html.escape


def _url(route: str, **params: object) -> str:
    """An escaped link to one of the page's routes with its query parameters."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return e(f"{route}?{query}" if query else route)


def _file_link(path: str, line: int | None = None, text: str | None = None) -> str:
    anchor = f"#L{line}" if line else ""
    shown = text if text is not None else (f"{path}:{line}" if line else path)
    return f'<a href="{_url("/file", path=path)}{anchor}">{e(shown)}</a>'


def _terms(query: str) -> list[str]:
    words = {w for w in re.findall(r"[A-Za-z0-9_]{2,}", query)}
    return sorted(words, key=len, reverse=True)[:20]


def highlight(text: str, terms: list[str]) -> str:
    """`text` escaped, each of `terms` (case-insensitive) wrapped in <mark>."""
    if not terms:
        return e(text)
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    out, last = [], 0
    for m in pattern.finditer(text):
        out += [e(text[last : m.start()]), f"<mark>{e(m.group())}</mark>"]
        last = m.end()
    out.append(e(text[last:]))
    return "".join(out)


def _code(text: str, first: int, path: str, terms: list[str], anchors: bool = False) -> str:
    """Numbered lines; each number links to the file view's line (or is its anchor there)."""
    rows = []
    for n, line in enumerate(text.split("\n"), start=first):
        number = f'<a class="ln" href="#L{n}">{n}</a>' if anchors else _ln_link(path, n)
        row_id = f' id="L{n}"' if anchors else ""
        rows.append(f'<span class="row"{row_id}>{number}{highlight(line, terms)}</span>')
    return '<pre class="code">' + "\n".join(rows) + "</pre>"


def _ln_link(path: str, n: int) -> str:
    return f'<a class="ln" href="{_url("/file", path=path)}#L{n}">{n}</a>'


def banner(payload: dict[str, Any]) -> str:
    """The freshness banner: revision, state, drift, stale warnings, degraded capability, notes."""
    if payload.get("error"):
        err = payload["error"]
        suggest = f" → {e(err['suggest'])}" if err.get("suggest") else ""
        return f'<div class="banner bad" role="alert"><b>{e(err["message"])}</b>{suggest}</div>'
    cap = payload.get("capability", {})
    drift = payload.get("drift", {})
    state = payload.get("state", "")
    bits = [f"index <b>{e(str(payload.get('index_rev')))}</b>", f"state <b>{e(state)}</b>"]
    if drift.get("files"):
        bits.append(f"{drift['files']} file(s) changed on disk since it was indexed")
    coverage = cap.get("semantic_coverage")
    if cap.get("semantic"):
        bits.append(f"semantic coverage {round(100 * (coverage or 0))}%")
    elif not cap.get("degraded"):
        bits.append("lexical search only (no embedder)")
    level = "bad" if state == "refused" else "warn" if state != "fresh" or cap.get("degraded") else ""
    lines = ["; ".join(bits)]
    lines += [f"degraded: {e(r)}" for r in cap.get("reasons", [])]
    lines += [f"⚠ {e(str(w))}" for w in payload.get("stale_warnings", [])]
    lines += [f'<span class="note">{e(str(n))}</span>' for n in payload.get("notes", [])]
    return f'<div class="banner {level}" role="status">' + "<br>".join(lines) + "</div>"


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    nav = (
        '<header><b>ragraf</b><a href="/">search</a><a href="/changes">changes</a>'
        '<a href="/openapi.json">API</a></header>'
    )
    doc = (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)} · ragraf</title>"
        f'<meta name="viewport" content="width=device-width"><style>{_CSS}</style></head>'
        f"<body>{nav}<main>{body}</main></body></html>"
    )
    return HTMLResponse(doc, status, headers=HEADERS)


def _search_form(q: str, k: int, mode: str, glob: str, kind: str) -> str:
    modes = "".join(f"<option{' selected' if m == mode else ''}>{m}</option>" for m in MODES)
    kinds = "".join(
        f'<option value="{k_}"{" selected" if k_ == kind else ""}>{k_ or "any kind"}</option>' for k_ in KINDS
    )
    return (
        '<form class="search" method="get" action="/" role="search">'
        f'<input name="q" value="{e(q)}" placeholder="what to find: words or identifiers" autofocus>'
        f'<input name="glob" value="{e(glob)}" placeholder="path glob, e.g. src/** or !tests/**" size="22">'
        f'<select name="kind">{kinds}</select><select name="mode">{modes}</select>'
        f'<input name="k" type="number" min="1" max="20" value="{k}" size="3">'
        '<button type="submit">Search</button></form>'
    )


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(high, int(value))) if value else default
    except ValueError:
        return default


def _symbol_links(name: str) -> str:
    return (
        f' <a class="tag" href="{_url("/symbol", name=name)}">definition</a>'
        f'<a class="tag" href="{_url("/refs", name=name)}">references</a>'
    )


def page_routes(
    runner: ToolRunner | ServedRoots, token: str | None, host_ok: Callable[[Request], bool]
) -> list[Route]:
    """The page's routes, guarded as /v1 is: loopback Host names on a loopback bind, the token if set."""
    secret = token.encode() if token else None

    def authorized(request: Request) -> bool:
        if secret is None:
            return True
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), secret):
            return True
        return hmac.compare_digest(request.cookies.get(COOKIE, "").encode(), secret)

    def guarded(view: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not host_ok(request):
                return _page("refused", '<div class="banner bad">this server answers loopback host names only; '
                             "use 127.0.0.1</div>", 403)  # fmt: skip
            if not authorized(request):
                return _login_page(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
            return await view(request)

        return endpoint

    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return (await runner.call(tool, args)).payload

    async def home(request: Request) -> Response:
        p = request.query_params
        q, glob, kind = p.get("q", "").strip(), p.get("glob", "").strip(), p.get("kind", "")
        mode = p.get("mode", "hybrid") if p.get("mode") in MODES else "hybrid"
        k, offset = _int(p.get("k"), 10, 1, 20), _int(p.get("offset"), 0, 0, 10_000)
        form = _search_form(q, k, mode, glob, kind if kind in KINDS else "")
        if not q:
            return _page("search", form + banner(await call("status", {})))
        args: dict[str, Any] = {"query": q, "top_k": k, "mode": mode, "offset": offset}
        if glob:
            args["path"] = glob.split()
        if kind in KINDS[1:]:
            args["kind"] = kind
        payload = await call("search", args)
        terms = _terms(q)
        body = [form, banner(payload)]
        results = payload.get("results", [])
        if not results and not payload.get("error"):
            body.append('<p class="note">no results; try other words, another mode or no filter</p>')
        for r in results:
            tags = f'<span class="tag">{e(str(r.get("kind") or ""))}</span>'
            if r.get("stale"):
                tags += (
                    '<span class="tag stale" title="changed on disk since indexed: read it live">STALE</span>'
                )
            symbol = f" <code>{e(r['symbol'])}</code>{_symbol_links(r['symbol'])}" if r.get("symbol") else ""
            where = _file_link(r["path"], r["start_line"], f"{r['path']}:{r['start_line']}-{r['end_line']}")
            body.append(
                f'<section class="result"><h3>{where}{tags}{symbol}</h3>'
                f"{_code(r.get('snippet', ''), r['start_line'], r['path'], terms)}</section>"
            )
        page = payload.get("page") or {}
        if page.get("next_offset") is not None:
            more = _url("/", q=q, k=k, mode=mode, glob=glob, kind=kind, offset=page["next_offset"])
            body.append(f'<p><a href="{more}">next {k} of {page.get("total")}</a></p>')
        return _page(f"search: {q}", "".join(body))

    async def file_view(request: Request) -> Response:
        path = request.query_params.get("path", "")
        payload = await call("read", {"path": path})
        body = [f"<h2>{e(path)}</h2>", banner(payload)]
        for r in payload.get("results", []):
            if r.get("differs_from_index"):
                body.append(
                    '<p class="note">this is the file on disk; it differs from the indexed revision</p>'
                )
            body.append(_code(r.get("content", ""), r.get("start_line", 1), path, [], anchors=True))
        status = (
            200 if not payload.get("error") else 404 if payload["error"].get("code") == "not_found" else 400
        )
        return _page(path or "file", "".join(body), status)

    async def facts(request: Request, tool: str, title: str) -> Response:
        name = request.query_params.get("name", "").strip()
        offset = _int(request.query_params.get("offset"), 0, 0, 100_000)
        args: dict[str, Any] = {"name": name, "offset": offset}
        if tool == "find_symbol":
            args["include_body"] = True
        payload = await call(tool, args) if name else {"results": [], "notes": ["give a name"]}
        body = [f"<h2>{e(title)} of <code>{e(name)}</code>{_symbol_links(name)}</h2>", banner(payload)]
        rows = payload.get("results", [])
        if not rows and not payload.get("error"):
            body.append(f'<p class="note">no {e(title)} of {e(name)} in the index</p>')
        for r in rows:
            stale = '<span class="tag stale">STALE</span>' if r.get("stale") else ""
            inside = f" in <code>{e(r['container'])}</code>" if r.get("container") else ""
            head = f"{_file_link(r['path'], r['line'])} <span class='tag'>{e(str(r.get('kind') or ''))}</span>{stale}"
            code = ""
            if r.get("body"):
                code = _code(
                    r["body"], r.get("body_start_line") or r["line"], r["path"], [name.split(".")[-1]]
                )
            elif r.get("signature"):
                code = f"<pre>{e(r['signature'])}</pre>"
            body.append(f'<section class="result"><h3>{head}{inside}</h3>{code}</section>')
        page = payload.get("page") or {}
        if page.get("next_offset") is not None:
            more = _url(request.url.path, name=name, offset=page["next_offset"])
            body.append(f'<p><a href="{more}">next page ({page.get("total")} in all)</a></p>')
        return _page(f"{title}: {name}", "".join(body))

    async def symbol(request: Request) -> Response:
        return await facts(request, "find_symbol", "definitions")

    async def refs(request: Request) -> Response:
        return await facts(request, "find_references", "references")

    async def changes(request: Request) -> Response:
        revs = (await call("revisions", {})).get("results", [])
        names = [r["rev"] for r in revs]
        a = request.query_params.get("from") or (names[-2] if len(names) > 1 else "")
        b = request.query_params.get("to") or (names[-1] if names else "")

        def options(chosen: str) -> str:
            return "".join(f"<option{' selected' if n == chosen else ''}>{e(n)}</option>" for n in names)

        form = (
            '<form class="search" method="get" action="/changes">from <select name="from">'
            f'{options(a)}</select> to <select name="to">{options(b)}</select><button>Show</button></form>'
        )
        if not a or a == b:
            return _page("changes", form + '<p class="note">one revision only: nothing to compare yet</p>')
        payload = await call("changes", {"from_rev": a, "to_rev": b})
        return _page(f"changes {a} → {b}", form + banner(payload) + _report(payload))

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return _login_page(request.query_params.get("next", "/"))
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
            return _page("refused", '<div class="banner bad">cross-origin login refused</div>', 403)
        form = parse_qs((await request.body())[:4096].decode("utf-8", "replace"))
        given = form.get("token", [""])[0].strip()
        target = form.get("next", ["/"])[0]
        target = target if target.startswith("/") and not target.startswith("//") else "/"
        if secret is None or not hmac.compare_digest(given.encode(), secret):
            return _login_page(target, wrong=True)
        response = RedirectResponse(target, 303, headers=HEADERS)
        response.set_cookie(COOKIE, given, httponly=True, samesite="strict", path="/")
        return response

    async def login_guarded(request: Request) -> Response:
        if not host_ok(request):
            return _page("refused", '<div class="banner bad">loopback host names only</div>', 403)
        return await login(request)

    return [
        Route("/", guarded(home), methods=["GET"]),
        Route("/file", guarded(file_view), methods=["GET"]),
        Route("/symbol", guarded(symbol), methods=["GET"]),
        Route("/refs", guarded(refs), methods=["GET"]),
        Route("/changes", guarded(changes), methods=["GET"]),
        Route("/login", login_guarded, methods=["GET", "POST"]),
    ]


def _login_page(target: str, wrong: bool = False) -> HTMLResponse:
    note = '<div class="banner bad" role="alert">wrong token</div>' if wrong else ""
    body = (
        "<h2>This server wants its token</h2>"
        f"{note}<p>Enter the RAGRAF_HTTP_TOKEN the server was started with; it is kept in an HttpOnly cookie.</p>"
        '<form method="post" action="/login"><input type="password" name="token" autocomplete="current-password">'
        f'<input type="hidden" name="next" value="{e(target)}"><button type="submit">Sign in</button></form>'
    )
    return _page("sign in", body, 401)


def _report(payload: dict[str, Any]) -> str:
    """The changes report: counts, files, symbols, and each changed definition's diff."""
    if not payload.get("results"):
        return ""
    report = payload["results"][0]
    files, symbols = report["files"], report["symbols"]
    out = []
    for title, rows in (("Files added", files["added"]), ("Files modified", files["modified"]),
                        ("Files deleted", files["deleted"])):  # fmt: skip
        if rows:
            out.append(f"<h3>{title} ({len(rows)})</h3><ul>")
            out += [f"<li>{_file_link(f['path'])}</li>" for f in rows]
            out.append("</ul>")
    for title, rows in (("Definitions added", symbols["added"]), ("Definitions removed", symbols["removed"])):
        if rows:
            out.append(f"<h3>{title} ({len(rows)})</h3><ul>")
            out += [
                f"<li><code>{e(s['name'])}</code> <span class='tag'>{e(str(s.get('kind') or ''))}</span> "
                f"{_file_link(s['path'], s['line']) if title.endswith('added') else e(s['path'] + ':' + str(s['line']))}"
                "</li>"
                for s in rows
            ]
            out.append("</ul>")
    changed = symbols["changed"]
    if changed:
        out.append(f"<h3>Definitions changed ({len(changed)})</h3>")
        for s in changed:
            what = "signature changed" if s.get("signature_changed") else "body changed"
            out.append(
                f'<section class="result"><h3><code>{e(s["name"])}</code> {_file_link(s["path"], s["line"])}'
                f'<span class="tag">{e(what)}</span>{_symbol_links(s["name"])}</h3>'
                f"{diff_html(s.get('diff') or '')}</section>"
            )
    if not out:
        out.append('<p class="note">no knowledge changed between these revisions</p>')
    return "".join(out)
