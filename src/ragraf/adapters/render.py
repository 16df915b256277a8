"""Agent-facing text for envelopes other than search: warnings first, then `path:line` lines, in a budget."""

from __future__ import annotations

import json
from typing import Any

from ragraf.api import Envelope
from ragraf.api.render import render_search

SKIPPED_SHOWN = 5  # skipped files an index report's text names; --json lists more


def _header(data: dict[str, Any]) -> list[str]:
    lines = []
    error = data.get("error")
    if error:
        lines.append(f"ERROR [{error['code']}]: {error['message']}")
        if error.get("suggest"):
            lines.append(f"→ {error['suggest']}")
    cap = data.get("capability") or {}
    if cap.get("degraded"):
        lines.append("WARNING: degraded: " + "; ".join(cap.get("reasons") or []))
    for w in data.get("stale_warnings") or []:
        lines.append(f"WARNING: {w['path']} {w['reason']}; suggest {w['suggest']}")
    for note in data.get("notes") or []:
        lines.append(f"NOTE: {note}")
    if not error:
        lines.append(f"[{data['op']} @ {data.get('index_rev') or 'no index'} · state {data.get('state')}]")
    return lines


def _result(r: Any) -> str:
    if not isinstance(r, dict):
        return json.dumps(r, ensure_ascii=False, default=str)
    path = r.get("path")
    if path and "line" in r:
        end = r.get("end_line")
        where = f"{path}:{r['line']}" + (f"-{end}" if end and end != r["line"] else "")
        indent = "  " * int(r.get("depth") or 0)
        container = f" in {r['container']}" if r.get("container") else ""
        stale = "  [STALE]" if r.get("stale") else ""
        return f"{indent}{where}  {r.get('kind') or ''} {r.get('name') or ''}{container}{stale}".rstrip()
    if path and "start_line" in r:
        head = f"{path}:{r['start_line']}-{r.get('end_line', r['start_line'])}"
        if r.get("differs_from_index"):
            head += "  [differs from the index]"
        body = r.get("content", r.get("snippet"))
        return head if body is None else f"{head}\n{body}"
    return json.dumps(r, ensure_ascii=False, default=str, separators=(",", ":"))


def render_envelope(env: Envelope, budget_bytes: int) -> str:
    """The text an agent reads for any envelope; search keeps its own renderer."""
    if env.op == "search":
        return render_search(
            env, budget_bytes, more="the structured content holds them all, or ask a smaller top_k"
        )
    data = env.to_dict()
    head = "\n".join(_header(data))
    results = data.get("results") or []
    if not results:
        return head + "\nno results"
    used = len(head.encode()) + 1
    lines = []
    for i, r in enumerate(results):
        text = _result(r)
        if used + len(text.encode()) + 1 > budget_bytes:
            lines.append(
                f"… {len(results) - i} more results elided (byte budget {budget_bytes}); see the JSON"
            )
            break
        lines.append(text)
        used += len(text.encode()) + 1
    return head + "\n" + "\n".join(lines)


def render_error(env: Envelope) -> str:
    """ERROR [code]: message, then → what to do."""
    return "\n".join(_header(env.to_dict()))


def render_report(data: dict[str, Any], warnings: bool = True) -> str:
    """An index report as `ragraf index` prints it: its warnings first (unless the caller shows
    them apart), the reason for a full rebuild, its line, then the files skipped for their content."""
    files, chunks = data.get("files") or {}, data.get("chunks") or {}
    head = f"{data['index_rev']}" if data.get("new_revision") else f"up to date at {data.get('index_rev')}"
    line = (
        f"{head}: {files.get('added', 0)} added, {files.get('modified', 0)} modified, "
        f"{files.get('deleted', 0)} deleted, {files.get('unchanged', 0)} unchanged; "
        f"{chunks.get('new', 0)} new chunks of {chunks.get('total', 0)} ({data.get('duration_s', 0):.2f} s)"
    )
    lines = [f"WARNING: {w}" for w in data.get("warnings") or []] if warnings else []
    if data.get("reason"):
        lines.append(str(data["reason"]))
    lines.append(line)
    skipped = data.get("skipped_files") or []
    if skipped:
        named = ", ".join(f"{s['path']} ({s['reason']})" for s in skipped[:SKIPPED_SHOWN])
        more = len(skipped) - SKIPPED_SHOWN
        lines.append(
            f"skipped for their content: {named}"
            + (f" and {more} more (--json lists them)" if more > 0 else "")
        )
    return "\n".join(lines)
