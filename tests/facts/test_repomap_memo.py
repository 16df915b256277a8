"""What the graphs of a revision keep for the next ask in the process: a definition's callers and a
class's methods are found once (the second ask reads nothing from the store), a live change's
graph finds its own, and a new revision starts again."""

from __future__ import annotations

from pathlib import Path

from facts.test_graph import PROJECT
from support import write

from ragraf.api import Index
from ragraf.facts.graph import CodeGraph, Node, revision_memo


def _node(graph: CodeGraph, name: str) -> Node:
    from ragraf.facts.graph import node_of

    return node_of(graph.defs_named(name)[0])


def test_a_definitions_callers_are_found_once_per_revision(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write(root, PROJECT)
    with Index.open(root) as idx:
        idx.index()
        store, rev_no = idx.store(), idx._current().rev_no
        revision_memo(store, rev_no).callers.clear()
        first = CodeGraph(store, rev_no)
        request = _node(first, "request")
        callers = first.callers(request)
        assert {s.caller.name for s in callers} == {"get", "post"}
        again = CodeGraph(store, rev_no)
        assert again.callers(request) == callers
        assert again.reads == 0  # nothing read: the revision's answer is kept
        callers.clear()  # what a caller does with its list is its own
        assert len(again.callers(request)) == 2
        # a graph over a live change finds its callers again, from the change's text
        live_text = PROJECT["pkg/api.py"].replace("return request('post', url)", "return url")
        live = CodeGraph(store, rev_no, live={"pkg/api.py": live_text})
        assert live.reads == 0
        live.callers(request)
        assert live.reads > 0
        # a new revision keeps its own
        write(
            root,
            {"pkg/extra.py": "from .api import request\n\n\ndef put(url):\n    return request('put', url)\n"},
        )
        idx.index()
        newer = idx._current().rev_no
        assert newer != rev_no
        fresh = CodeGraph(idx.store(), newer)
        names = {s.caller.name for s in fresh.callers(_node(fresh, "request"))}
        assert names == {"get", "post", "put", "extra.py"}  # the new caller, and the file importing it
        assert fresh.reads > 0


def test_the_methods_a_call_on_a_class_may_run_are_worked_out_once(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write(root, PROJECT)
    with Index.open(root) as idx:
        idx.index()
        store, rev_no = idx.store(), idx._current().rev_no
        revision_memo(store, rev_no).methods.clear()
        graph = CodeGraph(store, rev_no)
        found = graph.methods_of("Session", "prepare")
        assert [(d.name, d.container) for d in found] == [("prepare", "Session")]
        assert ("Session", "prepare", False) in revision_memo(store, rev_no).methods
        before = graph.reads
        assert graph.methods_of("Session", "prepare") == found
        assert graph.reads == before


def test_a_files_references_are_read_without_a_pass_over_every_files(tmp_path: Path) -> None:
    """The work of reading one file's references (SQLite VM steps) does not grow with the index."""
    root = tmp_path / "proj"
    write(root, PROJECT)

    def steps_to_read_refs(idx: Index) -> int:
        store, rev_no = idx.store(), idx._current().rev_no
        count = [0]

        def step() -> int:
            count[0] += 1
            return 0

        store.db.set_progress_handler(step, 10)
        try:
            refs = store.find_facts(rev_no, "ref", path="pkg/api.py", limit=100_000)
        finally:
            store.db.set_progress_handler(None, 10)
        assert {"request", "Session", "rev"} <= {r.name for r in refs}
        return count[0]

    with Index.open(root) as idx:
        idx.index()
        small = steps_to_read_refs(idx)
        many = {
            f"gen/m{i}.py": "".join(
                f"def f{i}_{j}(x):\n    return g{j}(x) + h{j}(x)\n\n\n" for j in range(20)
            )
            for i in range(150)
        }
        write(root, many)
        idx.index()
        large = steps_to_read_refs(idx)
    assert large < 2 * small + 50  # 150 more files, 6,000 more reference rows: about the same work
