"""The impact of a change: changed lines → the definitions they touch → their callers → the tests.

A change comes as a unified diff (`git diff`, a patch file) or as the work tree's drift against
the index revision. Its lines are mapped onto the definitions of the revision (what was there)
and of the text now (what is there: read live and parsed, so a change not yet indexed is seen),
each touched definition marked added, removed, or changed in its signature or body. The callers
come from the code graph (`graph.py`); the tests are the test definitions and files among them,
nearest first.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ragraf.corpus.gitcmd import run_watched
from ragraf.errors import RagrafError, UsageError
from ragraf.languages import is_test_path, language_of

from .graph import CodeGraph, Node, Traversal, traverse

MAX_DIFF_LINES = 20_000  # of one diff: past it the rest of the diff is counted, not read
MAX_FILES = 500  # changed files followed
MAX_ROOTS = 200  # changed definitions whose callers are followed
MAX_NAME_WALK = 200  # names of reached definitions looked up in the tests, nearest first
NAME_HOPS = 2  # a test file that only uses a reached name ranks with the chains this much longer
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"diff --git a/(\S+) b/(\S+)\s*$")
_TEST_NAME = re.compile(r"(?:^test|^Test|_test$|Test$|^it$|^describe$)")


class DiffError(RagrafError):
    code = "bad_diff"
    exit_code = 2


@dataclass
class FileChange:
    """One file of a change: its paths, and the changed lines on each side (1-based)."""

    old_path: str | None  # None for a created file
    new_path: str | None  # None for a deleted file
    old_lines: set[int] = field(default_factory=set)
    new_lines: set[int] = field(default_factory=set)
    inserts: set[int] = field(default_factory=set)  # lines added after old line k, with no old line changed
    # for diffs: (old line, text) of the lines the diff says were there (context and removed)
    expected: list[tuple[int, str]] = field(default_factory=list)
    added: list[tuple[int, str]] = field(default_factory=list)  # (new line, text) of added lines
    binary: bool = False
    from_header: bool = False  # named by a `diff --git` line, which the --- and +++ lines refine

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


@dataclass
class Change:
    """A parsed change: its files, and what was left out on the way."""

    files: list[FileChange]
    notes: list[str] = field(default_factory=list)
    lines_cut: int = 0
    files_cut: int = 0


@dataclass(frozen=True)
class Touched:
    """A definition a change touches, and how."""

    node: Node
    change: str  # added | removed | signature | body
    stale: bool  # read from the text now, not from the index


def parse_diff(text: str) -> Change:
    """The files and changed lines of a unified diff (git's or plain), bounded by MAX_DIFF_LINES."""
    lines = text.split("\n")
    change = Change(files=[])
    if len(lines) > MAX_DIFF_LINES:
        change.lines_cut = len(lines) - MAX_DIFF_LINES
        lines = lines[:MAX_DIFF_LINES]
    current: FileChange | None = None
    old_no = new_no = 0
    in_hunk = False
    for raw in lines:
        if raw.startswith("diff --git "):
            m = _GIT_HEADER.match(raw)
            current = _new_file(change, m.group(1) if m else None, m.group(2) if m else None)
            current.from_header = True
            in_hunk = False
            continue
        if raw.startswith("--- ") and not in_hunk:
            if current is None or not current.from_header or current.expected:
                current = _new_file(change, None, None)
            current.from_header = False
            current.old_path = _diff_path(raw[4:])
            continue
        if raw.startswith("+++ ") and not in_hunk and current is not None:
            current.new_path = _diff_path(raw[4:])
            continue
        if current is None:
            continue
        if raw.startswith("rename from "):
            current.old_path = raw[len("rename from ") :].strip()
        elif raw.startswith("rename to "):
            current.new_path = raw[len("rename to ") :].strip()
        elif raw.startswith(("Binary files ", "GIT binary patch")):
            current.binary = True
        elif raw.startswith("@@"):
            m = _HUNK.match(raw)
            if m is None:
                raise DiffError(
                    f"a hunk header the diff cannot be read by: {raw[:80]!r}", suggest="give a unified diff"
                )
            old_no, new_no, in_hunk = int(m.group(1)), int(m.group(3)), True
            if m.group(4) == "0":
                current.new_lines.add(max(new_no, 1))
        elif in_hunk and raw.startswith("-"):
            current.old_lines.add(old_no)
            current.expected.append((old_no, raw[1:]))
            old_no += 1
        elif in_hunk and raw.startswith("+"):
            current.new_lines.add(new_no)
            current.inserts.add(old_no - 1)
            current.added.append((new_no, raw[1:]))
            new_no += 1
        elif in_hunk and raw.startswith(" "):
            current.expected.append((old_no, raw[1:]))
            old_no, new_no = old_no + 1, new_no + 1
        elif raw.startswith("\\"):
            continue
        else:
            in_hunk = False
    change.files = [f for f in change.files if f.old_path or f.new_path]
    if len(change.files) > MAX_FILES:
        change.files_cut = len(change.files) - MAX_FILES
        change.files = change.files[:MAX_FILES]
    return change


def _new_file(change: Change, old: str | None, new: str | None) -> FileChange:
    f = FileChange(old, new)
    change.files.append(f)
    return f


def _diff_path(spec: str) -> str | None:
    spec = spec.split("\t", 1)[0].strip()
    if spec.startswith('"') and spec.endswith('"'):
        spec = spec[1:-1]
    if spec == "/dev/null":
        return None
    if spec.startswith(("a/", "b/")):
        spec = spec[2:]
    return spec


def git_diff(root: Path, args: list[str]) -> str:
    """`git diff` with `args` in the root (`--cached`, or two revisions)."""
    try:
        out = run_watched(
            ["git", "-c", "core.quotepath=off", "diff", "--no-color", "--no-ext-diff", "-M", *args], root
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"git diff failed: {exc}", suggest="check that git works in this folder") from None
    if out.returncode != 0:
        why = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(
            f"git diff {' '.join(args)} failed: {why[0] if why else 'exit ' + str(out.returncode)}",
            suggest="check the revisions (A..B) and that the root is a git repository",
        )
    return out.stdout.decode("utf-8", "replace")


def line_changes(old: str, new: str) -> tuple[set[int], set[int]]:
    """The changed lines of each side (1-based) between two texts."""
    a, b = old.rstrip("\n").split("\n"), new.rstrip("\n").split("\n")
    old_lines: set[int] = set()
    new_lines: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        old_lines.update(range(i1 + 1, i2 + 1))
        new_lines.update(range(j1 + 1, j2 + 1) if j2 > j1 else [max(j1, 1)])
    return old_lines, new_lines


def touched_definitions(graph: CodeGraph, f: FileChange, new_text: str | None, live: bool) -> list[Touched]:
    """The definitions of the revision and of the text now that a file's change touches."""
    old_defs = list(graph.defs_in(f.old_path)) if f.old_path else []
    new_defs = []
    added_only = new_text is None and bool(f.added) and f.new_path is not None
    if added_only:
        # a diff without the text after it: its added lines, in place, say what it defines anew
        at = dict(f.added)
        new_text = "\n".join(at.get(n, "") for n in range(1, max(at) + 1))
    if new_text is not None and f.new_path:
        from ragraf.facts.extract import extract_facts  # tree-sitter: only when a change is parsed

        facts = extract_facts(new_text, language_of(f.new_path))
        new_defs = [d for d in facts.definitions if d.kind != "heading"]
    old_by_name = {(d.container, d.name): d for d in old_defs}
    new_by_name = {(d.container, d.name): d for d in new_defs}
    out: list[Touched] = []
    seen: set[tuple[str | None, str]] = set()
    for d in old_defs:
        key = (d.container, d.name)
        overlaps = any(d.start_line <= n <= d.end_line for n in f.old_lines) or any(
            d.start_line <= k < d.end_line for k in f.inserts
        )
        now = new_by_name.get(key)
        if f.new_path is None or (new_text is not None and not added_only and now is None):
            how = "removed"
        elif not overlaps:
            continue
        elif now is not None and not added_only:
            how = "signature" if (now.signature or "").strip() != (d.signature or "").strip() else "body"
        else:  # a diff without the text after it: a change on the name's line is a signature's
            how = "signature" if d.line in f.old_lines else "body"
        seen.add(key)
        node = Node(d.name, d.kind or "function", d.path, d.line, d.end_line, d.container, d.signature)
        out.append(Touched(node, how, False))
    old_names = {d.name for d in old_defs}
    for d in new_defs:
        key = (d.container, d.name)
        if key in seen or (added_only and d.name in old_names):  # out of its class: the same one
            continue
        if key not in old_by_name or (
            not added_only and any(d.start_line <= n <= d.end_line for n in f.new_lines)
        ):
            how = "added" if key not in old_by_name else "body"
            node = Node(d.name, d.kind, f.new_path or "", d.line, d.end_line, d.container, d.signature)
            out.append(Touched(node, how, live))
    return _innermost(out)


def _innermost(touched: list[Touched]) -> list[Touched]:
    """A class whose method changed is not itself changed: only the innermost definitions count."""

    def holds(outer: Node, inner: Node) -> bool:
        return (
            outer is not inner
            and outer.path == inner.path
            and (
                inner.container is not None
                and (inner.container == outer.qualified or inner.container.startswith(outer.qualified + "."))
            )
        )

    return [
        t
        for t in touched
        if not any(holds(t.node, o.node) for o in touched if o.change != "removed" or t.change == "removed")
    ]


def _is_test(node: Node) -> bool:
    return is_test_path(node.path) and (node.kind == "module" or bool(_TEST_NAME.search(node.name)))


def _holds_tests(graph: CodeGraph, path: str) -> bool:
    """Whether a file under the tests defines a test: a helper, fixture or type-checking sample
    there runs none of its own, so its reach is not a test file's. A Python file is collected by
    the test runners only under a test file's name (test*.py, *_test.py: pytest's and unittest's)."""
    name = path.rpartition("/")[2]
    if name.endswith(".py") and not (name.startswith("test") or name.endswith("_test.py")):
        return False
    return any(
        d.kind in ("function", "method", "class") and _TEST_NAME.search(d.name) for d in graph.defs_in(path)
    )


@dataclass
class Impact:
    """What a change reaches: the touched definitions, the traversal of their callers, the tests."""

    touched: list[Touched]
    walk: Traversal | None
    tests: list[Node]
    test_files: list[tuple[str, int, Node]]  # (path, distance, nearest test node)
    by_name: list[tuple[str, float, Node, str]] = field(default_factory=list)  # see by_name()
    ranked: list[tuple[str, str]] = field(default_factory=list)  # (path, calls | name), likeliest first


def impact_of(graph: CodeGraph, touched: list[Touched], depth: int, budget: int) -> Impact:
    """Callers of the touched definitions to `depth`, and the tests among them, nearest first."""
    roots = [t.node for t in touched if t.change != "added" or t.node.kind == "module"][:MAX_ROOTS]
    # an added definition has no callers in the revision, but the tests that call its name now might
    roots += [t.node for t in touched if t.change == "added"][: max(0, MAX_ROOTS - len(roots))]
    if not roots:
        return Impact(touched, None, [], [], [])
    walk = traverse(graph, roots, "in", depth, budget)
    nodes = sorted(walk.nodes.values(), key=lambda n: (walk.distance[n.key], n.path, n.line))
    tests = [n for n in nodes if _is_test(n)]
    files: dict[str, tuple[int, Node]] = {}
    reaching: dict[str, int] = {}  # tests of a file the change reaches: more, the likelier one fails
    holds: dict[str, bool] = {}
    for n in nodes:
        if is_test_path(n.path) and (_is_test(n) or walk.distance[n.key] > 0):
            if n.path not in holds:
                holds[n.path] = _holds_tests(graph, n.path)
            if not holds[n.path]:
                continue
            files.setdefault(n.path, (walk.distance[n.key], n))
            reaching[n.path] = reaching.get(n.path, 0) + 1
    test_files = sorted(
        ((p, d, n) for p, (d, n) in files.items()), key=lambda t: (t[1], -reaching[t[0]], t[0])
    )
    near: dict[str, int] = {}
    names = by_name(graph, walk, set(files), near)
    # one order for both kinds: a name used is as good as a chain NAME_HOPS longer; at one distance,
    # the test file named after a changed file first (test_types.py for types.py), then the most tests
    stems = {_stem(t.node.path) for t in touched}
    keyed = [((d, _stem(p) not in stems, 0, -reaching[p], p), (p, "calls")) for p, d, _ in test_files]
    keyed += [((near[p] + NAME_HOPS, _stem(p) not in stems, 1, -w, p), (p, "name")) for p, w, _, _ in names]
    ranked = [entry for _, entry in sorted(keyed)]
    return Impact(touched, walk, tests, test_files, names, ranked)


def _stem(path: str) -> str:
    """What a file is named for: `types` for click/types.py, tests/test_types.py and types_test.go."""
    name = path.rpartition("/")[2].split(".", 1)[0].lstrip("_")
    for affix in ("test_", "tests_"):
        name = name.removeprefix(affix)
    for affix in ("_test", "_tests", "_spec"):
        name = name.removesuffix(affix)
    return name


def by_name(
    graph: CodeGraph, walk: Traversal, reached: set[str], near: dict[str, int] | None = None
) -> list[tuple[str, float, Node, str]]:
    """Test files the calls do not reach but that use the names reached (a call on a value whose type
    is not known, a fixture, a framework's dispatch): (path, weight, a node there, the name), most
    names nearest first; `near` gets each file's distance of the nearest name it uses. Weaker than a
    resolved chain of the same length."""
    weight: dict[str, float] = {}
    example: dict[str, tuple[Node, str]] = {}
    nodes = sorted(walk.nodes.values(), key=lambda n: walk.distance[n.key])
    seen: set[str] = set()
    holds: dict[str, bool] = {}
    for n in nodes:
        if n.kind == "module" or n.name in seen or n.name.startswith("__") or len(seen) >= MAX_NAME_WALK:
            continue
        seen.add(n.name)
        users = graph.store.find_facts(graph.rev_no, "ref", name=n.name, exact=True, limit=5000)
        files = {u.path: u for u in users if is_test_path(u.path) and u.path not in reached}
        for path, u in files.items():
            if path not in holds:
                holds[path] = _holds_tests(graph, path)
            if not holds[path]:
                continue
            weight[path] = weight.get(path, 0.0) + 1.0 / (1 + walk.distance[n.key])
            if path not in example:
                example[path] = (graph.enclosing(path, u.container, u.line), n.name)
                if near is not None:
                    near[path] = walk.distance[n.key]
    ranked = sorted(weight.items(), key=lambda t: (-t[1], t[0]))
    return [(p, w, example[p][0], example[p][1]) for p, w in ranked]
