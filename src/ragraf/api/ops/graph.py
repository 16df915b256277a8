"""The graph operations: callees, callers (transitive), a graph around a definition."""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragraf.api.envelope import Envelope
from ragraf.api.guarded import Guarded
from ragraf.api.session import names_damage
from ragraf.corpus.gitcmd import run_watched
from ragraf.errors import UsageError
from ragraf.facts.lookup import find_definitions
from ragraf.freshness.guard import DriftSet
from ragraf.freshness.live_read import confine, parse_spec

if TYPE_CHECKING:  # the graph's modules load with the first graph operation, not with every read
    from ragraf.facts.graph import CodeGraph, Node, Traversal
    from ragraf.facts.impact import Change
    from ragraf.facts.repomap import Columns

MAX_DEPTH = 10  # a deeper ask is clamped: past ten hops a graph is the whole program
DEFAULT_BUDGET = 200  # nodes of one traversal; what is cut is counted

MAX_ROOTS = 20  # definitions of one name followed at once
MAX_RELATED = 50
MAP_BUDGET = 1024  # tokens of a repo map
MAP_CACHED_FILES = 3000
MAP_FORMAT = 3  # a cached map is repomap.to_bytes: the ranking's columns marshalled (its version in the key)
MAP_CACHE_KEEP = 32  # cached maps kept in the index home (a revision and focus each); the oldest go
_MAPS: dict[str, Columns] = {}  # this process's rankings, by revision and focus
IMPACT_DEPTH = 10  # a test reaches library code through its runner: 8 hops in click
IMPACT_BUDGET = 1000
MAX_TESTS = 10  # test files and tests listed by impact; the rest are counted
MAX_CALLERS = 50
MAX_NEW_TEXTS = 200  # files of a staged or A..B change read whole to see what they define now
MAX_LIVE_BYTES = 2_000_000
MAX_BUDGET = 5000
DIRECTIONS = ("in", "out", "both")


class GraphOps(Guarded):
    """`callees()`, `callers()`, `graph()`, `impact()`, `repo_map()` and `related()`."""

    @names_damage
    def related(self, spec: str, k: int = 10, reindex_on_drift: str | None = None) -> Envelope:
        """The definitions most like the one at PATH:LINE: the rare identifiers they share, and its
        callers and callees."""
        k = _require_count("k", k)
        path, line, _ = parse_spec(spec)
        if line is None:
            raise UsageError(f"{spec!r} names no line", suggest="give PATH:LINE, e.g. src/app/server.py:14")
        rel, _real = confine(self.settings.root, path)
        rev, drift, env = self._begin("related", reindex_on_drift)
        if env.state == "refused":
            return env
        from ragraf.facts.graph import CodeGraph
        from ragraf.facts.related import definition_at
        from ragraf.facts.related import related as similar

        graph = CodeGraph(self.store(), rev.rev_no)
        node = definition_at(graph, rel, line)
        if node is None:
            known = self.store().facts_status(rev.rev_no, rel) is not None
            env.notes.append(
                f"no definition holds {rel}:{line} in {rev.rev}; try `ragraf outline {rel}`"
                if known
                else f"{rel} is not in {rev.rev}; try `ragraf search`"
            )
            return env
        files_total = max(1, rev.files)
        for r in similar(graph, node, files_total, min(k, MAX_RELATED)):
            env.results.append({
                **r.node.to_dict(), "score": round(r.score, 4), "shared": list(r.shared), "edge": r.edge,
                "stale": r.node.path in drift.paths,
            })  # fmt: skip
        return env

    @names_damage
    def repo_map(
        self, budget: int = MAP_BUDGET, focus: list[str] | None = None, reindex_on_drift: str | None = None
    ) -> Envelope:
        """The most central definitions (PageRank over the definition/use graph, personalized by
        `focus`: paths or names), as files with their key signatures fitted to `budget` tokens;
        the ranking is cached per revision and focus."""
        budget = _require_count("budget", budget)
        focus = [f for f in (focus or []) if f.strip()]
        rev, drift, env = self._begin("map", reindex_on_drift)
        if env.state == "refused":
            return env
        from ragraf.facts.repomap import fit_budget

        ranked, _ = self._ranked(rev.rev_no, rev.corpus_hash, focus)
        kept, cut = fit_budget(ranked, budget)
        for f in kept:
            env.results.append({
                "path": f.path, "rank": round(f.rank, 6), "stale": f.path in drift.paths,
                "symbols": [{"name": s.name, "kind": s.kind, "line": s.line, "signature": s.signature[:160]}
                            for s in f.symbols],
            })  # fmt: skip
        env.truncated["results"] = cut
        if cut:
            env.notes.append(f"{cut} more files with definitions past the budget of {budget} tokens")
        if focus and not any(r["rank"] for r in env.results):
            env.notes.append(f"nothing in the index matches the focus {focus}: the map is unfocused")
        return env

    def _ranked(self, rev_no: int, corpus_hash: str, focus: list[str]) -> tuple[Columns, bool]:
        from ragraf.facts.repomap import first_files, from_bytes, rank_columns, to_bytes

        key = hashlib.sha1(
            json.dumps([corpus_hash, sorted(focus), MAP_FORMAT, marshal.version]).encode()
        ).hexdigest()[:20]
        memo = _MAPS.get(key)
        if memo is not None:
            return memo, True
        path = self.settings.home / "maps" / f"{key}.marshal"
        try:
            ranked = from_bytes(path.read_bytes())
            _MAPS[key] = ranked
            return ranked, True
        except (OSError, ValueError):
            pass  # none yet, or not what to_bytes wrote (cut short, damaged): ranked again
        ranked = rank_columns(self.store(), rev_no, focus)
        _MAPS[key] = ranked
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(to_bytes(first_files(ranked, MAP_CACHED_FILES)))
            tmp.replace(path)
            _prune_maps(path.parent)
        except OSError:
            pass  # a map not cached is only slower next time
        return ranked, False

    @names_damage
    def callees(self, name: str, reindex_on_drift: str | None = None) -> Envelope:
        """What the definitions of NAME call, each call site with its line and how it resolved."""
        rev, drift, env = self._begin("callees", reindex_on_drift)
        if env.state == "refused":
            return env
        from ragraf.facts.graph import CodeGraph

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
        from ragraf.facts.graph import CodeGraph, traverse

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

    @names_damage
    def impact(
        self,
        staged: bool = False,
        rev: str | None = None,
        diff: str | None = None,
        depth: int = IMPACT_DEPTH,
        budget: int = IMPACT_BUDGET,
        reindex_on_drift: str | None = None,
    ) -> Envelope:
        """What a change reaches: the definitions its lines touch (added, removed, signature or body
        changed), their callers to `depth`, and the tests that reach them, nearest first, each with
        the chain of edges. The change is the work tree against the index revision (default), the
        staged one, `rev` (A..B), or a unified `diff` text."""
        if sum(bool(x) for x in (staged, rev, diff is not None)) > 1:
            raise UsageError("give one of staged, rev and diff", suggest="ask for one change at a time")
        depth, budget = _require_count("depth", depth), _require_count("budget", budget)
        depth = min(depth, MAX_DEPTH)
        rev_info, drift, env = self._begin("impact", reindex_on_drift or "warn")
        if env.state == "refused":
            return env
        from ragraf.facts.graph import CodeGraph
        from ragraf.facts.impact import git_diff, impact_of, parse_diff, touched_definitions

        graph = CodeGraph(self.store(), rev_info.rev_no)
        root = self.settings.root
        new_texts: dict[str, str | None] = {}
        old_graph = graph
        # In a git work tree the revision is a view: its changes laid over the base index are the
        # work tree's change too, and the old side of any change is the base.
        from ragraf.index.indexer import laid_over

        base = self._base_revision() if laid_over(rev_info) else None
        if base is not None and base.rev_no != rev_info.rev_no:
            old_graph = CodeGraph(self.store(), base.rev_no)
        if diff is None and not staged and not rev:
            laid: set[str] = set()
            if old_graph is not graph and base is not None:
                before = dict(self.store().manifest_hashes(base.rev_no))
                now = dict(self.store().manifest_hashes(rev_info.rev_no))
                laid = {p for p in before.keys() | now.keys() if before.get(p) != now.get(p)}
            change = self._drift_change(old_graph, drift, laid, new_texts)
            source = f"the work tree against {base.rev if base is not None and laid else rev_info.rev}"
        else:
            if diff is not None:
                text, source, show = diff, "the diff", None
            elif staged:
                text, source, show = git_diff(root, ["--cached"]), "the staged change", ":"
            else:
                a, sep, b = (rev or "").partition("..")
                if not sep or not a or not b:
                    raise UsageError(
                        f"rev {rev!r} is not A..B", suggest="give two revisions, e.g. HEAD~1..HEAD"
                    )
                text, source, show = git_diff(root, [a, b]), f"{a}..{b}", f"{b}:"
            change = parse_diff(text)
            self._check_diff(old_graph, change, env, show, new_texts)
        env.notes.extend(change.notes)
        if change.lines_cut:
            env.notes.append(f"the diff is long: its last {change.lines_cut} lines were not read")
            env.truncated["diff_lines"] = change.lines_cut
        if change.files_cut:
            env.notes.append(f"{change.files_cut} more changed files not followed")
            env.truncated["files"] = change.files_cut
        touched = []
        for f in change.files:
            if f.binary:
                continue
            live = f.path in drift.paths
            touched += touched_definitions(old_graph, f, new_texts.get(f.path), live)
        if not change.files:
            env.notes.append(f"no changes in {source}")
        elif not touched:
            env.notes.append(f"the changed lines of {source} touch no definition the index knows")
        # callers as the old side had them: a removed definition's callers are only there
        found = impact_of(old_graph, touched, depth, budget)
        for t in touched:
            env.results.append({
                **t.node.to_dict(), "role": "changed", "change": t.change, "distance": 0,
                "stale": t.stale or t.node.path in drift.paths, "chain": [],
            })  # fmt: skip
        walk = found.walk
        if walk is not None:
            env.truncated["nodes"] = walk.cut
            calls = {path: (dist, nearest) for path, dist, nearest in found.test_files}
            names = {path: (weight, there, name) for path, weight, there, name in found.by_name}
            for path, how in found.ranked[:MAX_TESTS]:  # a name used ranks among the chains
                if how == "calls":
                    dist, nearest = calls[path]
                    env.results.append({
                        "name": path.rsplit("/", 1)[-1], "qualified": path, "kind": "test_file", "path": path,
                        "line": nearest.line, "end_line": nearest.end_line, "role": "test_file", "distance": dist, "how": "calls",
                        "stale": path in drift.paths, "chain": walk.chain(nearest),
                    })  # fmt: skip
                    continue
                weight, there, name = names[path]
                env.results.append({
                    "name": path.rsplit("/", 1)[-1], "qualified": path, "kind": "test_file", "path": path,
                    "line": there.line, "end_line": there.end_line, "role": "test_file", "distance": None,
                    "how": "name", "uses": name, "weight": round(weight, 3), "stale": path in drift.paths,
                    "chain": [],
                })  # fmt: skip
            for n in found.tests[:MAX_TESTS]:
                env.results.append({
                    **n.to_dict(), "role": "test", "distance": walk.distance[n.key],
                    "stale": n.path in drift.paths, "chain": walk.chain(n),
                })  # fmt: skip
            callers = [n for n in walk.nodes.values() if walk.distance[n.key] > 0 and not n.is_test]
            callers.sort(key=lambda n: (walk.distance[n.key], n.path, n.line))
            for n in callers[:MAX_CALLERS]:
                env.results.append({
                    **n.to_dict(), "role": "caller", "distance": walk.distance[n.key],
                    "stale": n.path in drift.paths, "chain": walk.chain(n),
                })  # fmt: skip
            cut = {
                "test files": len(found.ranked) - MAX_TESTS, "tests": len(found.tests) - MAX_TESTS,
                "callers": len(callers) - MAX_CALLERS,
            }  # fmt: skip
            left = [f"{v} more {k}" for k, v in cut.items() if v > 0]
            if left:
                env.notes.append(", ".join(left) + " not listed")
            env.truncated["results"] = sum(max(0, v) for v in cut.values())
            if walk.cut:
                env.notes.append(f"{walk.cut} more definitions reached past the budget of {budget} nodes")
        return env

    def _drift_change(
        self, graph: CodeGraph, drift: DriftSet, laid: set[str], new_texts: dict[str, str | None]
    ) -> Change:
        """The work tree's change against the revision `graph` reads, line by line: the drift the
        guard found and the paths a view laid over its base."""
        from ragraf.facts.impact import Change, FileChange, line_changes

        change = Change(files=[])
        root = self.settings.root
        indexed = {p for p, _ in graph.store.manifest_hashes(graph.rev_no)} if laid else set()
        paths = sorted(drift.paths | laid)
        for path in paths[:MAX_FILES_FOLLOWED]:
            kind = drift.change_of(path)
            if kind is None:
                on_disk = (root / path).is_file()
                kind = "modify" if path in indexed and on_disk else "create" if on_disk else "delete"
            new = None if kind == "delete" else _read_text(root / path)
            if kind != "delete" and new is None:
                change.notes.append(f"{path} is binary or unreadable now: left out")
                continue
            new_texts[path] = new
            if kind == "create":
                f = FileChange(None, path, set(), set(range(1, new.count("\n") + 2)))  # type: ignore[union-attr]
            elif kind == "delete":
                f = FileChange(path, None, {1}, set())
            else:
                old_lines, new_lines = line_changes(graph.text_of(path), new or "")
                f = FileChange(path, path, old_lines, new_lines)
            change.files.append(f)
        if len(paths) > MAX_FILES_FOLLOWED:
            change.files_cut = len(paths) - MAX_FILES_FOLLOWED
        return change

    def _check_diff(
        self,
        graph: CodeGraph,
        change: Change,
        env: Envelope,
        show: str | None,
        new_texts: dict[str, str | None],
    ) -> None:
        """Refuse paths outside the root; say which files are binary, renamed, not in the revision, or
        where the diff does not match the revision's lines."""
        root = self.settings.root
        indexed = {p for p, _ in graph.store.manifest_hashes(graph.rev_no)}
        base = self._base_revision() if laid_over_label(env.index_rev) else None
        against = base.rev if base is not None and base.rev_no == graph.rev_no else env.index_rev
        for f in change.files:
            for p in (f.old_path, f.new_path):
                if p is not None:
                    confine(root, p)  # raises: a diff naming a path outside the root is refused
            if f.binary:
                change.notes.append(f"{f.path} is binary: left out")
                continue
            if f.old_path and f.new_path and f.old_path != f.new_path:
                change.notes.append(f"{f.old_path} renamed to {f.new_path}")
            if f.old_path and f.old_path not in indexed:
                change.notes.append(f"{f.old_path} is not in {against}: its old lines are not known")
                continue
            if f.old_path:
                bad = next(
                    (n for n, text in f.expected if graph.line(f.old_path, n).rstrip() != text.rstrip()), None
                )
                if bad is not None:
                    change.notes.append(
                        f"the diff does not apply to {against} at {f.old_path}:{bad} "
                        "(the line differs): its lines are mapped as the diff gives them"
                    )
            if show is not None and f.new_path and len(new_texts) < MAX_NEW_TEXTS:
                new_texts[f.new_path] = _git_show(root, show + f.new_path)

    def _roots(self, graph: CodeGraph, name: str, rev: str, env: Envelope) -> list[Node]:
        """The definitions NAME names (a qualified name narrows), or a note saying there are none."""
        from ragraf.facts.graph import node_of

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


MAX_FILES_FOLLOWED = 500


def laid_over_label(rev: str | None) -> bool:
    return rev is not None and "+" in rev


def _read_text(path: Path) -> str | None:
    """A file's text now, or None when it is binary, unreadable or too big to parse here."""
    try:
        data = path.read_bytes()[: MAX_LIVE_BYTES + 1]
    except OSError:
        return None
    if len(data) > MAX_LIVE_BYTES or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _git_show(root: Path, spec: str) -> str | None:
    try:
        out = run_watched(["git", "show", spec], root)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or b"\0" in out.stdout[:8192]:
        return None
    return out.stdout.decode("utf-8", "replace")


def _require_count(what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{what} {value!r} is not a count", suggest=f"give {what} as 0 or more")
    return value


def _prune_maps(folder: Path) -> None:
    """Keep the MAP_CACHE_KEEP newest cached maps: every revision and focus writes one, and the
    older revisions' maps (and files of older formats, never read) would otherwise pile up."""
    aged = []
    for entry in os.scandir(folder):
        try:
            aged.append((entry.stat().st_mtime_ns, entry.path))
        except OSError:
            continue  # removed meanwhile by another process's prune
    aged.sort(reverse=True)
    for _, old in aged[MAP_CACHE_KEEP:]:
        with contextlib.suppress(OSError):
            os.unlink(old)
