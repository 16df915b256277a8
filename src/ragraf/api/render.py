"""Agent-facing text: warnings first and never cut, results as path:start-end within a byte budget."""

from __future__ import annotations

from ragraf.api.envelope import Envelope, SearchResult

_MIN_SNIPPET_LINES = 3


def _header(env: Envelope) -> list[str]:
    lines = []
    cap = env.capability
    if env.error:  # as every other answer words it: ERROR [code]: message, then → what to do
        lines.append(f"ERROR [{env.error['code']}]: {env.error['message']}")
        if env.error.get("suggest"):
            lines.append(f"→ {env.error['suggest']}")
    if cap.degraded:
        lines.append("WARNING: degraded: " + "; ".join(cap.reasons))
    for w in env.stale_warnings:
        lines.append(f"WARNING: {w.path} {w.reason}; suggest {w.suggest}")
    for note in env.notes:
        lines.append(f"NOTE: {note}")
    lines.append(f"[{env.op} @ {env.index_rev or 'no index'} · state {env.state}]")
    return lines


def _result_block(r: SearchResult, max_lines: int | None) -> str:
    tag = f"  [{r.kind}{', STALE' if r.stale else ''}]"
    sym = f"  {r.symbol}" if r.symbol else ""
    lines = r.snippet.split("\n")
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines] + [f"… ({len(r.snippet.split(chr(10))) - max_lines} more lines)"]
    return f"{r.path}:{r.start_line}-{r.end_line}{sym}{tag}\n" + "\n".join(lines)


def _fitted(r: SearchResult, room: int, bare: bool) -> tuple[str, int]:
    """A result's block within `room` bytes if it can be: its snippet halved down to a few lines,
    then (when `bare`) to none, the path:start-end line alone; and how many snippet lines it keeps."""
    max_lines = len(r.snippet.split("\n"))
    block = _result_block(r, None)
    while len(block.encode()) + 2 > room and max_lines > _MIN_SNIPPET_LINES:
        max_lines = max(_MIN_SNIPPET_LINES, max_lines // 2)
        block = _result_block(r, max_lines)
    if bare and len(block.encode()) + 2 > room:
        max_lines = 0
        block = _result_block(r, 0)
    return block, max_lines


def render_search(env: Envelope, budget_bytes: int = 16 * 1024, more: str = "use --json or -k") -> str:
    """The text an agent reads; fits budget_bytes by trimming snippets, then eliding results (the
    header with its warnings is never cut). `more` says how to get what was elided."""
    head = "\n".join(_header(env))
    if not env.results:
        return head + "\nno results"
    results = env.results
    used = len(head.encode())  # each block adds itself and the blank line before it
    blocks: list[str] = []
    kept: list[int] = []  # snippet bytes each block shows
    for i, r in enumerate(results):
        remaining = budget_bytes - used
        # A share of what is left each, down to a few lines; the best result alone may go bare
        # rather than leave the answer empty (lower ones are elided first).
        block, max_lines = _fitted(r, remaining // (len(results) - i), bare=False)
        if len(block.encode()) + 2 > remaining and not blocks:
            block, max_lines = _fitted(r, remaining, bare=True)
        if len(block.encode()) + 2 > remaining:
            break
        blocks.append(block)
        kept.append(len("\n".join(r.snippet.split("\n")[:max_lines]).encode()))
        used += len(block.encode()) + 2

    def elision(count: int) -> str:
        return f"… {count} more results elided (byte budget {budget_bytes}); {more}"

    elided = len(results) - len(blocks)
    while elided and blocks and used + len(elision(elided).encode()) + 2 > budget_bytes:
        used -= len(blocks.pop().encode()) + 2  # make room for the line that says what is left out
        kept.pop()
        elided += 1
    if elided:
        env.truncated["results"] += elided
        blocks.append(elision(elided))
    env.truncated["bytes"] = sum(len(r.snippet.encode()) for r in results) - sum(kept)
    return head + "\n\n" + "\n\n".join(blocks)


def render_facts(env: Envelope) -> str:
    """def / refs: one `path:line  container › name (kind)` line each, grouped by enclosing definition."""
    lines = _header(env)
    if not env.results:
        return "\n".join(lines + ["no results"])
    group = None
    for f in env.results:
        if env.op == "refs" and (f["path"], f["container"]) != group:
            group = (f["path"], f["container"])
            lines.append(f"{f['path']} · in {f['container'] or '<module>'}")
        stale = "  [STALE]" if f["stale"] else ""
        where = f"{f['path']}:{f['line']}" + (f"-{f['end_line']}" if f["end_line"] != f["line"] else "")
        owner = f"{f['container']}." if f.get("container") and env.op != "refs" else ""
        detail = f"  {f['signature']}" if env.op == "def" and f.get("signature") else ""
        lines.append(f"  {where}  {owner}{f['name']} ({f['kind']}){stale}{detail}")
    if env.truncated["results"]:
        lines.append(f"… {env.truncated['results']} more results elided")
    return "\n".join(lines)


def render_outline(env: Envelope) -> str:
    lines = _header(env)
    for f in env.results:
        stale = "  [STALE]" if f["stale"] else ""
        lines.append(
            f"{'  ' * f['depth']}{f['name']} ({f['kind']})  {f['path']}:{f['line']}-{f['end_line']}{stale}"
        )
    return "\n".join(lines)


def render_read(env: Envelope) -> str:
    lines = _header(env)
    for r in env.results:
        state = (
            "not in the index"
            if r["indexed_sha256"] is None
            else "differs from the index"
            if r["differs_from_index"]
            else "same as the index"
        )
        lines.append(f"{r['path']}:{r['start_line']}-{r['end_line']} of {r['total_lines']} ({state})")
        width = len(str(r["end_line"]))
        for n, text in enumerate(r["content"].split("\n"), start=r["start_line"]):
            lines.append(f"{n:>{width}}  {text}")
    return "\n".join(lines)


def render_drift(env: Envelope) -> str:
    lines = _header(env)
    if not env.results:
        lines.append("no open drift entries")
    for e in env.results:
        lines.append(
            f"#{e['entry_id']} {e['change']:<6} {e['path']}  (by {e['detected_by']} at {e['detected_at']}; "
            f"{len(e['affected_symbols'])} symbols, {len(e['affected_nodes'])} chunks)"
        )
    return "\n".join(lines)


def render_status(env: Envelope) -> str:
    lines = _header(env)
    info = env.results[0]
    rev = info["revision"]
    lines.append(f"{rev['rev']} ({rev['created_at']}): {rev['files']} files, {rev['chunks']} chunks")
    lines.append(f"index: {info['index_file']}")
    return "\n".join(lines)
