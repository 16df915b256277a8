"""Related code: the definitions most like one definition, by the identifiers they share and the graph.

Two definitions that use the same rare names (weighted by inverse document frequency, so `self`
and `len` count for nothing) are alike; a caller or callee of it is a neighbour and counts too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .graph import CodeGraph, Node, file_node, node_of

MAX_NAMES = 60  # identifiers of the definition followed
MAX_USERS = 400  # files using one name: past it the name says little
NEIGHBOUR = 1.5  # what a direct call edge is worth, in shared rare names


@dataclass(frozen=True)
class RelatedDef:
    node: Node
    score: float
    shared: tuple[str, ...]
    edge: str | None  # calls | called by


def definition_at(graph: CodeGraph, path: str, line: int) -> Node | None:
    """The innermost definition holding the line, else None."""
    best = None
    for d in graph.defs_in(path):
        if d.start_line <= line <= d.end_line and (best is None or d.start_line >= best.start_line):
            best = d
    return node_of(best) if best is not None else None


def related(graph: CodeGraph, node: Node, files_total: int, k: int) -> list[RelatedDef]:
    """The k definitions most like `node`, best first."""
    qual = node.qualified
    refs = [
        r for r in graph.store.find_facts(graph.rev_no, "ref", path=node.path, limit=100_000)
        if node.line <= r.line <= node.end_line or (r.container or "").startswith(qual)
    ]  # fmt: skip
    names = sorted({r.name for r in refs if len(r.name) > 2})
    scores: dict[tuple[str, int, str], float] = {}
    shared: dict[tuple[str, int, str], list[str]] = {}
    nodes: dict[tuple[str, int, str], Node] = {}
    for name in names[:MAX_NAMES]:
        users = graph.store.find_facts(graph.rev_no, "ref", name=name, exact=True, limit=5000)
        files = {u.path for u in users}
        if len(files) > MAX_USERS:
            continue
        idf = math.log(1 + files_total / (1 + len(files)))
        for holder in {(u.path, u.container) for u in users}:
            other = graph.enclosing(holder[0], holder[1], _a_line(users, holder))
            if other.key == node.key or other.kind == "module" and holder[1] is not None:
                continue
            nodes[other.key] = other
            scores[other.key] = scores.get(other.key, 0.0) + idf
            shared.setdefault(other.key, []).append(name)
    edges: dict[tuple[str, int, str], str] = {}
    for site in graph.callees(node):
        for t in site.targets:
            edges.setdefault(t.key, "calls")
            nodes.setdefault(t.key, t)
    for site in graph.callers(node):
        edges.setdefault(site.caller.key, "called by")
        nodes.setdefault(site.caller.key, site.caller)
    top = max(scores.values(), default=1.0) or 1.0
    out = []
    for key, n in nodes.items():
        if key == node.key or n == file_node(node.path):
            continue
        score = scores.get(key, 0.0) / top + (NEIGHBOUR / 4 if key in edges else 0.0)
        out.append(RelatedDef(n, score, tuple(shared.get(key, [])[:10]), edges.get(key)))
    out.sort(key=lambda r: (-r.score, r.node.path, r.node.line))
    return out[:k]


def _a_line(users: list, holder: tuple[str, str | None]) -> int:
    return next(u.line for u in users if (u.path, u.container) == holder)
