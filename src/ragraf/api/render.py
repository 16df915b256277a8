"""Agent-facing text: warnings first and never cut, results as path:start-end within a byte budget."""

from __future__ import annotations

from ragraf.api.envelope import Envelope, SearchResult

_MIN_SNIPPET_LINES = 3


def _header(env: Envelope) -> list[str]:
    lines = []
    cap = env.capability
    if env.error:
        lines.append(
            f"ERROR: {env.error['message']}"
            + (f" ({env.error['suggest']})" if env.error.get("suggest") else "")
        )
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


def render_search(env: Envelope, budget_bytes: int = 16 * 1024) -> str:
    """The text an agent reads; fits budget_bytes by trimming snippets, then eliding results."""
    head = "\n".join(_header(env))
    if not env.results:
        return head + "\nno results"
    blocks: list[str] = []
    used = len(head.encode()) + 1
    results = env.results
    for i, r in enumerate(results):
        remaining = budget_bytes - used
        per_result = remaining // max(1, len(results) - i)
        block = _result_block(r, None)
        max_lines = len(r.snippet.split("\n"))
        while len(block.encode()) + 2 > per_result and max_lines > _MIN_SNIPPET_LINES:
            max_lines = max(_MIN_SNIPPET_LINES, max_lines // 2)
            block = _result_block(r, max_lines)
        if len(block.encode()) + 2 > remaining:
            elided = len(results) - i
            env.truncated["results"] += elided
            blocks.append(f"… {elided} more results elided (byte budget {budget_bytes}); use --json or -k")
            break
        blocks.append(block)
        used += len(block.encode()) + 2
    env.truncated["bytes"] = max(0, sum(len(r.snippet.encode()) for r in results) - used)
    return head + "\n\n" + "\n\n".join(blocks)
