"""The graph operations: callees, callers (transitive), a graph around a definition."""

from __future__ import annotations

from typing import Any

from ragraf.api.envelope import Envelope
from ragraf.api.guarded import Guarded
from ragraf.api.session import names_damage
from ragraf.errors import UsageError
from ragraf.facts.graph import (
    DEFAULT_BUDGET,
    MAX_DEPTH,
    CodeGraph,
    Node,
    Traversal,
    node_of,
    traverse,
)
from ragraf.facts.lookup import find_definitions
from ragraf.freshness.guard import DriftSet

MAX_ROOTS = 20  # definitions of one name followed at once
MAX_BUDGET = 5000
DIRECTIONS = ("in", "out", "both")


class GraphOps(Guarded):
    """`callees()`, `callers()` and `graph()`."""

    @names_damage
    def callees(self, name: str, reindex_on_drift: str | None = None) -> Envelope:
        """What the definitions of NAME call, each call site with its line and how it resolved."""
        rev, drift, env = self._begin("callees", reindex_on_drift)
        if env.state == "refused":
            return env
        graph = CodeGraph(self.store(), rev.rev_no)
        roots = self._roots(graph, name, rev.rev, env)
        for root in roots:
            for site in graph.callees(root):
                env.results.append({
                    **site.to_dict(), "caller": root.to_dict(), "stale": site.path in drift.paths,
                })  # fmt: skip
        if roots and not env.results:
            env.notes.append(f"{name!r} calls nothing the index sees")
        return env

    @names_damage
    def callers(
        self, name: str, depth: int = 1, budget: int = DEFAULT_BUDGET, reindex_on_drift: str | None = None
    ) -> Envelope:
        """Who calls NAME, transitively to `depth`, each caller with its distance and the chain of calls."""
        return self._walk("callers", name, depth, "in", budget, reindex_on_drift)

    @names_damage
    def graph(
        self,
        name: str,
        depth: int = 1,
        direction: str = "both",
        budget: int = DEFAULT_BUDGET,
        reindex_on_drift: str | None = None,
    ) -> Envelope:
        """The definitions around NAME: callers (`in`), callees (`out`) or both, with the edges between them."""
        if direction not in DIRECTIONS:
            raise UsageError(
                f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}",
                suggest="give --direction in, out or both",
            )
        return self._walk("graph", name, depth, direction, budget, reindex_on_drift)

    def _walk(
        self, op: str, name: str, depth: int, direction: str, budget: int, policy: str | None
    ) -> Envelope:
        depth, budget = _require_count("depth", depth), _require_count("budget", budget)
        rev, drift, env = self._begin(op, policy)
        if env.state == "refused":
            return env
        if depth > MAX_DEPTH:
            env.notes.append(f"depth {depth} clamped to {MAX_DEPTH}")
            depth = MAX_DEPTH
        if budget > MAX_BUDGET:
            env.notes.append(f"budget {budget} clamped to {MAX_BUDGET}")
            budget = MAX_BUDGET
        graph = CodeGraph(self.store(), rev.rev_no)
        roots = self._roots(graph, name, rev.rev, env)
        if not roots:
            return env
        walk = traverse(graph, roots, direction, depth, max(budget, len(roots)))
        env.results.extend(graph_nodes(walk, drift, skip_roots=op == "callers"))
        env.truncated["nodes"] = walk.cut
        if walk.cut:
            env.notes.append(
                f"{walk.cut} more definitions reached past the budget of {budget} nodes: not listed"
            )
        if op == "callers" and not env.results:
            env.notes.append(f"no callers of {name!r} in {rev.rev}")
        return env

    def _roots(self, graph: CodeGraph, name: str, rev: str, env: Envelope) -> list[Node]:
        """The definitions NAME names (a qualified name narrows), or a note saying there are none."""
        if not name.strip():
            raise UsageError("the name is empty", suggest="give a definition's name, e.g. Session.send")
        hits, how = find_definitions(graph.store, graph.rev_no, name)
        hits = [h for h in hits if h.fact_kind == "def" and h.kind not in ("heading", "import")]
        if not hits:
            env.notes.append(f"no definition of {name!r} in {rev}; try `ragraf search {name}`")
            return []
        if how not in ("exact", "qualified", "none"):
            env.notes.append(f"matched {how}")
        if len(hits) > MAX_ROOTS:
            env.notes.append(f"{len(hits)} definitions of {name!r}: the first {MAX_ROOTS} followed")
        return [node_of(h) for h in hits[:MAX_ROOTS]]


def graph_nodes(walk: Traversal, drift: DriftSet, skip_roots: bool = False) -> list[dict[str, Any]]:
    """Each node reached, nearest first, with its distance, the chain that reached it and its edges."""
    out_edges: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for src, dst, site in walk.edges:
        if src.key in walk.nodes and dst.key in walk.nodes:
            out_edges.setdefault(src.key, []).append({
                "to": dst.qualified, "to_path": dst.path, "to_line": dst.line, "kind": site.kind,
                "how": site.how, "path": site.path, "line": site.line,
            })  # fmt: skip
    nodes = sorted(walk.nodes.values(), key=lambda n: (walk.distance[n.key], n.is_test, n.path, n.line))
    return [
        {
            **n.to_dict(),
            "distance": walk.distance[n.key],
            "stale": n.path in drift.paths,
            "test": n.is_test,
            "chain": walk.chain(n),
            "edges": out_edges.get(n.key, []),
        }  # fmt: skip
        for n in nodes
        if not (skip_roots and walk.distance[n.key] == 0)
    ]


def _require_count(what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{what} {value!r} is not a count", suggest=f"give {what} as 0 or more")
    return value
