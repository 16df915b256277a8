"""The knowledge-change report as text, Markdown, JSON or one self-contained HTML page."""

from __future__ import annotations

import html
import json
from typing import Any


def _where(s: dict[str, Any]) -> str:
    return f"{s['path']}:{s['line']}"


def _sections(report: dict[str, Any]) -> list[tuple[str, list[tuple[str, ...]], tuple[str, ...]]]:
    """(title, rows, headers) for every table of the report."""
    files = report["files"]
    symbols = report["symbols"]
    return [
        ("Files added", [(f["path"],) for f in files["added"]], ("path",)),
        ("Files modified", [(f["path"],) for f in files["modified"]], ("path",)),
        ("Files deleted", [(f["path"],) for f in files["deleted"]], ("path",)),
        ("Symbols added", [(s["name"], s["kind"] or "", _where(s), s["rev"]) for s in symbols["added"]],
         ("symbol", "kind", "where", "revision")),
        ("Symbols removed", [(s["name"], s["kind"] or "", _where(s), s["rev"]) for s in symbols["removed"]],
         ("symbol", "kind", "where (last seen)", "revision")),
        ("Symbols changed",
         [(s["name"], s["kind"] or "", _where(s), "signature" if s["signature_changed"] else "body")
          for s in symbols["changed"]],
         ("symbol", "kind", "where", "what changed")),
        ("Ledger entries",
         [(str(e["entry_id"]), e["change"], e["path"], e["detected_by"], e["detected_at"], e["rev"], e["closed_by"])
          for e in report["ledger"]],
         ("entry", "change", "path", "detected by", "detected at", "against", "closed by")),
    ]  # fmt: skip


def _title(report: dict[str, Any]) -> str:
    return f"ragraf: knowledge changes {report['from']['rev']} → {report['to']['rev']}"


def _count(key: str, n: int) -> str:
    """'1 file added', '3 files added', '1 ledger entry' (the keys are files_added, ledger_entries …)."""
    noun, _, rest = key.partition("_")
    if noun == "ledger":
        noun, rest = "ledger entr" + ("y" if n == 1 else "ies"), ""
    elif n == 1:
        noun = noun.removesuffix("s")
    return f"{n} {noun} {rest}".rstrip()


def _counts(report: dict[str, Any]) -> str:
    return ", ".join(_count(k, v) for k, v in report["counts"].items())


def as_text(report: dict[str, Any]) -> str:
    out = [_title(report), _counts(report)]
    for title, rows, _headers in _sections(report):
        if rows:
            out.append(f"\n{title} ({len(rows)}):")
            out.extend("  " + "  ".join(row) for row in rows)
    return "\n".join(out)


def as_markdown(report: dict[str, Any]) -> str:
    out = [f"# {_title(report)}", "", _counts(report)]
    for title, rows, headers in _sections(report):
        out += ["", f"## {title} ({len(rows)})", ""]
        if not rows:
            out.append("none")
            continue
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "---|" * len(headers))
        out.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows)
    return "\n".join(out) + "\n"


_CSS = """body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#1d232b;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #d6dbe1;padding-bottom:.25rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.3rem .6rem;
border-bottom:1px solid #eceff2;vertical-align:top}th{background:#f5f7f9}code{font:.85rem ui-monospace,monospace}
.counts{display:flex;flex-wrap:wrap;gap:.5rem}.counts span{background:#eef3f8;border-radius:4px;padding:.2rem .5rem}
.none{color:#7a8694}h3{font-size:.95rem;margin:1.2rem 0 .3rem}
pre.diff{background:#f7f8fa;padding:.5rem;overflow-x:auto;font:.82rem/1.4 ui-monospace,monospace}
.diff .add{background:#e4f6e6;display:inline-block;width:100%}.diff .del{background:#fbe6e6;display:inline-block;width:100%}.diff .hunk{color:#6a5acd}"""


def diff_html(diff: str) -> str:
    """A unified diff as a <pre>, its added and removed lines marked (every line escaped)."""
    rows = []
    for line in diff.split("\n"):
        cls = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")
        if line.startswith(("+++", "---", "@@")):
            cls = "hunk"
        rows.append(f'<span class="{cls}">{html.escape(line)}</span>' if cls else html.escape(line))
    return '<pre class="diff">' + "\n".join(rows) + "</pre>"


def as_html(report: dict[str, Any]) -> str:
    """One self-contained page (inline CSS, no scripts) a person can open anywhere."""
    e = html.escape
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>{e(_title(report))}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(_title(report))}</h1>",
        f"<p>{e(report['from']['rev'])} ({e(report['from']['created_at'])}) → "
        f"{e(report['to']['rev'])} ({e(report['to']['created_at'])})</p>",
        '<div class="counts">' + "".join(
            f"<span>{e(_count(k, v))}</span>" for k, v in report["counts"].items()) + "</div>",
    ]  # fmt: skip
    for title, rows, headers in _sections(report):
        parts.append(f"<h2>{e(title)} ({len(rows)})</h2>")
        if not rows:
            parts.append('<p class="none">none</p>')
            continue
        parts.append(
            "<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in headers) + "</tr></thead><tbody>"
        )
        parts.extend("<tr>" + "".join(f"<td><code>{e(c)}</code></td>" for c in row) + "</tr>" for row in rows)
        parts.append("</tbody></table>")
    diffs = [s for s in report["symbols"]["changed"] if s.get("diff")]
    if diffs:
        parts.append(f"<h2>What changed in each definition ({len(diffs)})</h2>")
        parts.extend(
            f"<h3><code>{e(s['name'])}</code> {e(_where(s))}</h3>{diff_html(s['diff'])}" for s in diffs
        )
    parts.append("</body></html>")
    return "\n".join(parts)


def render_changes(report: dict[str, Any], fmt: str) -> str:
    """The report in one of: text, md, json, html."""
    if fmt == "json":
        return json.dumps(report, ensure_ascii=False, indent=2)
    return {"text": as_text, "md": as_markdown, "html": as_html}[fmt](report)
