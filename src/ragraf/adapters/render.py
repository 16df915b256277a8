"""Agent-facing text for envelopes other than search: warnings first, then `path:line` lines, in a budget."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ragraf.api import Envelope
from ragraf.api.render import (
    printable,
    render_drift,
    render_facts,
    render_localize,
    render_read,
    render_revisions,
    render_search,
    render_status,
    stale_action,
)

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
        lines.append(
            f"WARNING: {printable(w['path'])} {w['reason']}; {stale_action(w['path'], w['suggest'])}"
        )
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
        where = f"{printable(path)}:{r['line']}" + (f"-{end}" if end and end != r["line"] else "")
        indent = "  " * int(r.get("depth") or 0)
        container = f" in {r['container']}" if r.get("container") else ""
        stale = "  [STALE]" if r.get("stale") else ""
        return f"{indent}{where}  {r.get('kind') or ''} {r.get('name') or ''}{container}{stale}".rstrip()
    if path and "start_line" in r:
        head = f"{printable(path)}:{r['start_line']}-{r.get('end_line', r['start_line'])}"
        if r.get("differs_from_index"):
            head += "  [differs from the index]"
        body = r.get("content", r.get("snippet"))
        return head if body is None else f"{head}\n{body}"
    return json.dumps(r, ensure_ascii=False, default=str, separators=(",", ":"))


# The CLI commands an operation's message may name, as the tools an agent calls instead.
_TOOL_OF = {
    "search": "search", "def": "find_symbol", "refs": "find_references", "outline": "outline",
    "read": "read", "status": "status", "drift": "drift", "changes": "changes",
    "revisions": "revisions", "index": "reindex", "localize": "localize",
}  # fmt: skip
_RUN_COMMAND = re.compile(r"(?:run |try |use )?`ragraf (\w+)((?: [^`]*)?)`")


def tool_words(text: str) -> str:
    """A message in the words of the tools: "run `ragraf index --full`" → "call `reindex`
    with full=true", "`ragraf read src/a.py`" → "`read` (path=src/a.py)"; other commands stay."""

    def call(m: re.Match[str]) -> str:
        tool = _TOOL_OF.get(m.group(1))
        if tool is None:
            return m.group(0)
        args = m.group(2).split()
        named = ""
        if tool == "reindex" and "--full" in args:
            named = " with full=true"
        elif tool in ("read", "outline") and args and not args[0].startswith(("-", "<")):
            named = f" with path={args[0]}"
        lead = "call " if m.group(0).startswith(("run ", "try ", "use ")) else ""
        return f"{lead}`{tool}`{named}"

    return _RUN_COMMAND.sub(call, text)


def _tool_more(tool: str, key: str = "offset") -> Callable[[int], str]:
    return lambda n: f"call `{tool}` again with {key}={n} for the next"


def render_envelope(env: Envelope, budget_bytes: int) -> str:
    """The text an agent reads for any envelope, in the words of the tools and within the budget:
    the CLI's renderings, each elision with its true total and the call that gets the rest."""
    op = env.op
    if op == "search":
        text = render_search(env, budget_bytes, more=_tool_more("search"))
    elif op in ("def", "refs"):
        text = render_facts(env, budget_bytes, more=_tool_more(_TOOL_OF[op]))
    elif op in ("callees", "callers", "graph", "impact", "related", "map"):
        from ragraf.api.graph_render import render_graph

        text = render_graph(env)
    elif op == "localize":
        text = render_localize(env, budget_bytes)
    elif op == "read":
        text = render_read(env, budget_bytes, more=_tool_more("read", "start_line"))
    elif op == "status" and env.results:
        text = render_status(env)
    elif op == "drift":
        text = render_drift(env)
    elif op == "revisions":
        text = render_revisions(env)
    elif op == "changes" and env.results and not env.error:
        from ragraf.api.changes_format import as_text  # html and its entities: for a change report only

        text = "\n".join(_header(env.to_dict()) + [as_text(env.results[0])])
    else:
        text = _render_generic(env, budget_bytes)
    return _fit(tool_words(text), budget_bytes)


def _fit(text: str, budget_bytes: int) -> str:
    """A last guard for renderings without their own budget (a long drift, a big change report)."""
    data = text.encode()
    if len(data) <= budget_bytes:
        return text
    cut = data[: max(0, budget_bytes - 120)].decode("utf-8", "ignore").rsplit("\n", 1)[0]
    return (
        cut
        + f"\n… {len(data) - len(cut.encode())} more bytes not shown (byte budget {budget_bytes}); the structured content holds all of it"
    )


def _render_generic(env: Envelope, budget_bytes: int) -> str:
    data = env.to_dict()
    head = "\n".join(_header(data))
    results = data.get("results") or []
    if not results:
        return head + "\nno results"
    used = len(head.encode()) + 1
    lines = []
    for i, r in enumerate(results):
        text = _result(r)
        if used + len(text.encode()) + 1 > budget_bytes - 120:
            lines.append(
                f"… {len(results) - i} more results of {len(results)} not shown (byte budget {budget_bytes}); "
                "the structured content holds them all"
            )
            break
        lines.append(text)
        used += len(text.encode()) + 1
    return head + "\n" + "\n".join(lines)


def render_error(env: Envelope) -> str:
    """ERROR [code]: message, then → what to do (in the words of the tools)."""
    return tool_words("\n".join(_header(env.to_dict())))


def _base_line(base: dict[str, Any]) -> str:
    """A work tree's base in an index report: the base branch's committed files, indexed once for
    every work tree of the repository."""
    where = f"base {base.get('branch')}@{str(base.get('commit') or '')[:10]}"
    files, chunks = base.get("files") or {}, base.get("chunks") or {}
    return (
        f"{where} (its committed files, shared by every work tree): {base.get('index_rev')}: "
        f"{files.get('added', 0)} added, {files.get('modified', 0)} modified, {files.get('deleted', 0)} deleted; "
        f"{chunks.get('new', 0)} new chunks of {chunks.get('total', 0)}"
    )


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
    base = data.get("base") or {}
    if base.get("new_revision"):  # a base that did not move goes unsaid
        lines.append(_base_line(base))
    lines.append(line)
    over = str(data.get("index_rev") or "").partition("+")[0]
    first_view = not (files.get("modified") or files.get("deleted") or files.get("unchanged"))
    if base and data.get("new_revision") and "+" in str(data.get("index_rev") or "") and first_view:
        read = data.get("files_read", 0)
        lines.append(
            f"  (this work tree over {over}: the files git says match {base.get('branch')}'s commit are "
            f"the base's, not read again; {read} file{'s' * (read != 1)} read from disk)"
        )
    skipped = data.get("skipped_files") or []
    if skipped:
        named = ", ".join(f"{printable(s['path'])} ({s['reason']})" for s in skipped[:SKIPPED_SHOWN])
        more = len(skipped) - SKIPPED_SHOWN
        lines.append(
            f"skipped for their content: {named}"
            + (f" and {more} more (--json lists them)" if more > 0 else "")
        )
    return "\n".join(lines)
