"""Agent-facing text of the graph answers: callees, callers, graph, impact, related, map."""

from __future__ import annotations

from typing import Any

from ragraf.api.envelope import Envelope
from ragraf.api.render import _header


def _cite(r: dict[str, Any]) -> str:
    return f"{r['path']}:{r['line']}"


def _chain(chain: list[dict[str, Any]]) -> str:
    """root ← caller (call path:line, how) ← its caller …; → for a callee."""
    text = chain[0]["from"]
    for c in chain:
        arrow = "←" if c.get("direction") == "in" else "→"
        text += f" {arrow} {c['to']} ({c['kind']} {c['path']}:{c['line']}, {c['how']})"
    return text


def render_graph(env: Envelope) -> str:
    """One line per call site (callees), per node (callers, graph, impact, related), or the map."""
    lines = _header(env)
    for r in env.results:
        lines.extend(_lines(env.op, r))
    if not env.results:
        lines.append("no results")
    elif env.op == "impact" and not any(r.get("role") == "test_file" for r in env.results):
        lines.append("no test reaches the changed definitions through calls or imports")
    return "\n".join(lines)


def _lines(op: str, r: dict[str, Any]) -> list[str]:
    stale = " STALE" if r.get("stale") else ""
    if op == "callees":
        targets = ", ".join(f"{t['qualified']} {_cite(t)}" for t in r["targets"]) or (r.get("why") or "?")
        recv = f"{r['receiver']}." if r.get("receiver") else ""
        return [f"{_cite(r)}  {recv}{r['name']}() → [{r['how']}] {targets}{stale}"]
    if op == "map":
        return [
            f"{r['path']}  (rank {r['rank']:.4f})",
            *(f"  {s['line']}: {s['signature']}" for s in r["symbols"]),
        ]
    head = f"{_cite(r)}  {r['qualified']} ({r['kind']})"
    if r.get("distance") is not None:
        head += f"  distance {r['distance']}"
    if r.get("uses"):
        head += f"  uses {r['uses']} (by name)"
    if "score" in r:
        head += f"  score {r['score']:.3f}"
    if r.get("change"):
        head += f"  {r['change']}"
    out = [head + stale]
    if r.get("chain"):
        out.append(f"    via {_chain(r['chain'])}")
    return out
