"""The code graph over a revision's facts: call sites resolved to definitions, callers, callees, traversal.

Nothing here is stored: the edges are derived at query time from the definitions, references and
imports the index holds, and from the text of each call's line (its receiver: `self.x()`,
`mod.f()`, `pkg::f()`), which the facts do not record. Each resolved edge says how it was
resolved, strongest first: `exact` (the same file, the same class, the same Go package),
`import` (through the file's imports, following re-exports), `name` (the only definition of that
name in the project that fits); a call that fits none is `unresolved`, never guessed, so a
`list.reverse()` is not passed off as a call of the project's `reverse`.

Over 600 lines because resolution is one job with a rule per language (Python's self/cls/super
and import aliases, JS/TS relative imports, Go packages, Rust paths, Java/Kotlin imports) that the
traversal below shares; splitting it by language would scatter one lookup order.
"""

from __future__ import annotations

import io
import re
import threading
import weakref
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ragraf.languages import is_example_path, is_test_path, language_of
from ragraf.store import FactHit, Store

from .lookup import ENTRY_STEMS

MAX_SITES = 20_000  # call sites of one name read for its callers
MAX_CANDIDATES = 3  # definitions of one name a call in a file, a class or a module may mean, listed
MAX_METHOD_GUESSES = 8  # methods of one name a call on a receiver of unknown type may run and still count
MAX_DISPATCH = 8  # definitions a call on a known class may run: its own or inherited, and overrides
MAX_OVERRIDE_SCAN = 400  # definitions of one method name read to find the overrides in subclasses
_TYPE_SCAN_LINES = 400  # lines of the caller read back from a call to find its receiver's type
_REEXPORT_HOPS = 4
_NODE_KINDS = frozenset(
    {"function", "method", "class", "struct", "interface", "trait", "enum", "type", "module"}
)
# Methods the builtin types have (`f.close()`, `d.update()`, `s.split()`): on a receiver of
# unknown type such a call is more likely theirs than the project's only method of that name.
_BUILTIN_METHODS = frozenset(
    name
    for t in (str, bytes, list, dict, set, tuple, int, float, io.TextIOWrapper, io.BytesIO, threading.Thread)
    for name in dir(t)
    if not name.startswith("_")
)
# The same for JavaScript/TypeScript: the methods of its builtin prototypes and of the web and
# node objects every program passes around (a Promise, a stream's controller, an AbortController).
_JS_BUILTIN_METHODS = frozenset(
    """toString valueOf hasOwnProperty isPrototypeOf toJSON then catch finally push pop shift unshift
    map filter reduce reduceRight forEach some every find findIndex findLast includes indexOf
    lastIndexOf join slice splice concat flat flatMap sort reverse keys values entries fill at get set
    has delete clear add split trim trimStart trimEnd startsWith endsWith replace replaceAll match
    matchAll search toLowerCase toUpperCase padStart padEnd charAt charCodeAt codePointAt substring
    substr repeat localeCompare normalize bind call apply test exec enqueue close error getReader read
    releaseLock cancel pipeTo pipeThrough write getWriter abort addEventListener removeEventListener
    dispatchEvent on once off emit removeListener end destroy pipe getTime toISOString next return
    throw resolve reject""".split()
)
# Receivers that are the language's own globals (`Object.keys()`, `Promise.resolve()`).
_JS_GLOBALS = frozenset(
    """Object Promise Reflect Array JSON Math Number String Symbol Date Map Set WeakMap WeakSet Error
    TypeError RegExp BigInt Intl console process Buffer globalThis window document URL
    URLSearchParams crypto performance Proxy ArrayBuffer Uint8Array TextEncoder TextDecoder
    ReadableStream WritableStream TransformStream AbortController AbortSignal Headers Response Request
    Function Boolean""".split()
)
_JS_LANGS = frozenset({"javascript", "typescript", "tsx"})
# Go: the methods of the standard library's interfaces every program passes around (io.Writer,
# fmt.Stringer, error, sync.Mutex, bytes.Buffer…).
_GO_BUILTIN_METHODS = frozenset(
    """Write WriteString WriteByte WriteRune Read ReadByte ReadRune ReadString Close String Error Len
    Bytes Reset Lock Unlock RLock RUnlock Add Done Wait Load Store Seek Flush Format Unwrap Is As Cap
    Grow Truncate Next Scan Text Err Value Get Set Del""".split()
)
# Rust: the methods of the standard library's common traits and collections (Clone, AsRef, Default,
# Iterator, Vec, Option, str…): on a receiver of unknown type, more likely theirs.
_RUST_BUILTIN_METHODS = frozenset(
    """len is_empty iter iter_mut into_iter clone cloned as_ref as_mut as_slice to_string to_owned
    to_vec borrow borrow_mut default map map_err and_then unwrap unwrap_or unwrap_or_else
    unwrap_or_default expect ok ok_or is_some is_none is_ok is_err push pop insert remove get get_mut
    contains contains_key extend any all find filter filter_map collect next rev last first take skip
    chars bytes as_bytes as_str cmp partial_cmp eq ne hash fmt from into try_from try_into deref
    entry or_insert sort sort_by dedup truncate clear drain retain split_at starts_with ends_with
    trim lock write read min max abs checked_add checked_sub saturating_sub wrapping_add
    count enumerate zip chain fold for_each position windows chunks""".split()
)
# Java: the methods of Object and of the JDK's collections, buffers, futures, streams and threads.
_JAVA_BUILTIN_METHODS = frozenset(
    """equals hashCode toString getClass compareTo clone size isEmpty contains containsKey
    containsValue get put putIfAbsent putAll add addAll remove removeIf removeAll retainAll iterator
    stream forEach length charAt substring isPresent orElse orElseGet ifPresent hasRemaining remaining
    position limit flip rewind duplicate slice complete completeExceptionally thenApply thenAccept
    thenCompose thenCombine whenComplete handle exceptionally isDone isCancelled cancel getMessage
    getCause printStackTrace addSuppressed lock unlock tryLock await signal signalAll notify notifyAll
    wait start interrupt join replaceAll getName getPath getKey getValue execute submit shutdown
    offer poll peek push pop first last next hasNext set incrementAndGet decrementAndGet getAndSet
    compareAndSet accept apply test run call valueOf format""".split()
)
_CLASS_KINDS = frozenset({"class", "struct", "interface", "trait", "enum"})
_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__", "constructor", "new", "init"})
_SELF = frozenset({"self", "cls", "this", "Self", "super"})
_RUST_ROOTS = frozenset({"crate", "self", "super"})
_IDENT = r"[A-Za-z_$][\w$]*"
_SEP = r"(?:\?\.|\.|::|->)"
_RECEIVER = re.compile(rf"({_IDENT}(?:\s*{_SEP}\s*{_IDENT})*)\s*{_SEP}\s*\Z")
_ALIAS = re.compile(rf"({_IDENT}|\*)\s+as\s+({_IDENT})")
_PY_BASES = re.compile(r"\bclass\s+[\w$]+\s*(?:\[[^\]]*\])?\s*\(([^)]*)\)")
_EXTENDS = re.compile(r"\b(?:extends|implements|:)\s+([\w$.,<>\s]+?)\s*(?:\{|\bwhere\b|$)")
_RETURNED = re.compile(rf"^\s*(?:return|yield)\s+({_IDENT}(?:\.{_IDENT})*)\s*\(")
_PROPERTY = re.compile(r"\s*@\s*(?:[\w.]+\.)?(?:property|cached_property|\w+\.(?:setter|getter|deleter))\b")
_TYPE_TESTS = re.compile(r"\b(?:isinstance|issubclass|except)\b|->")
_JS_DEFAULT = re.compile(rf"\bimport\s+({_IDENT})\s*(?:,|\bfrom\b)")
_SOURCE_SUFFIXES = (
    ".py", ".pyi", ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".go", ".rs", ".java", ".kt",
)  # fmt: skip


@dataclass(frozen=True)
class Node:
    """A definition in the graph (or a file, kind `module`, for code outside any definition)."""

    name: str
    kind: str
    path: str
    line: int
    end_line: int
    container: str | None = None
    signature: str | None = None

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.path, self.line, self.name)

    @property
    def qualified(self) -> str:
        return f"{self.container}.{self.name}" if self.container else self.name

    @property
    def is_test(self) -> bool:
        return is_test_path(self.path)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name, "qualified": self.qualified, "kind": self.kind, "path": self.path,
            "line": self.line, "end_line": self.end_line, "signature": self.signature,
        }  # fmt: skip


@dataclass(frozen=True)
class CallSite:
    """One use of a name inside a definition, and what it resolved to."""

    caller: Node
    name: str
    path: str
    line: int
    kind: str  # call | reference | import
    receiver: str | None
    how: str  # exact | import | name | unresolved
    targets: tuple[Node, ...] = ()
    why: str | None = None  # for an unresolved one: what was missing

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name, "path": self.path, "line": self.line, "kind": self.kind,
            "receiver": self.receiver, "how": self.how,
            "targets": [t.to_dict() for t in self.targets],
        }  # fmt: skip
        if self.why:
            out["why"] = self.why
        return out


@dataclass
class Traversal:
    """The nodes reached from the roots, with their distance, and the edges between them."""

    roots: list[Node]
    distance: dict[tuple[str, int, str], int] = field(default_factory=dict)
    nodes: dict[tuple[str, int, str], Node] = field(default_factory=dict)
    edges: list[tuple[Node, Node, CallSite]] = field(default_factory=list)
    via: dict[tuple[str, int, str], tuple[Node, CallSite]] = field(default_factory=dict)
    cut: int = 0  # nodes reached but left out by the budget
    frontier: int = 0  # nodes at the depth limit whose further edges were not followed

    def chain(self, node: Node) -> list[dict[str, object]]:
        """The edges from a root to `node`, root first: why the node is in the answer."""
        steps: list[dict[str, object]] = []
        seen = set()
        while node.key in self.via and node.key not in seen:
            seen.add(node.key)
            prev, site = self.via[node.key]
            steps.append({
                "from": prev.qualified, "to": node.qualified, "kind": site.kind, "how": site.how,
                "path": site.path, "line": site.line, "direction": "in" if site.caller.key == node.key else "out",
            })  # fmt: skip
            node = prev
        return steps[::-1]


def node_of(hit: FactHit) -> Node:
    return Node(
        hit.name, hit.kind or "function", hit.path, hit.line, hit.end_line, hit.container, hit.signature
    )


class RevisionMemo:
    """What the graphs of one revision read from the store and worked out from it, kept for the
    next graph of that revision in this process (a committed revision does not change)."""

    MAX_ENTRIES = 50_000  # per table; past it the table starts again empty

    def __init__(self) -> None:
        self.defs: dict[str, list[FactHit]] = {}
        self.imports: dict[str, list[FactHit]] = {}
        self.refs: dict[str, list[FactHit]] = {}
        self.named: dict[str, list[FactHit]] = {}
        self.lines: dict[str, dict[int, str]] = {}
        self.bindings: dict[str, dict[str, tuple[str, str | None]]] = {}
        self.ancestors: dict[str, list[str]] = {}
        self.resolved: dict[tuple[str, int, str, bool, str | None], CallSite] = {}
        # a definition's callers (by its key and calls_only), and what a method call on a class may
        # run (by class, name, inherited_only): asked again by every walk through them
        self.callers: dict[tuple[tuple[str, int, str], bool], list[CallSite]] = {}
        self.methods: dict[tuple[str, str, bool], list[FactHit]] = {}
        self.modules: ModuleIndex | None = None

    def trim(self) -> None:
        tables = (
            self.defs,
            self.imports,
            self.named,
            self.lines,
            self.bindings,
            self.ancestors,
            self.resolved,
            self.callers,
            self.methods,
        )
        for table in tables:
            if len(table) > self.MAX_ENTRIES:
                table.clear()


def revision_memo(store: Store, rev_no: int) -> RevisionMemo:
    by_rev = _MEMOS.setdefault(store, {})
    memo = by_rev.get(rev_no)
    if memo is None:
        if len(by_rev) >= 4:
            by_rev.pop(next(iter(by_rev)))
        memo = by_rev[rev_no] = RevisionMemo()
    memo.trim()
    return memo


class CodeGraph:
    """Call resolution over one revision; files' facts and lines are read once per revision and
    process (see RevisionMemo), a change's live texts once per graph."""

    def __init__(self, store: Store, rev_no: int, live: dict[str, str] | None = None) -> None:
        self.store, self.rev_no = store, rev_no
        self._memo = memo = revision_memo(store, rev_no)
        self._defs, self._imports, self._named = memo.defs, memo.imports, memo.named
        self._refs = memo.refs
        self._ancestors = memo.ancestors
        self._live = live or {}
        # lines and import bindings of live texts are this graph's own, not the revision's
        self._lines = memo.lines if not self._live else {}
        self._bindings = memo.bindings if not self._live else {}
        self._resolved = memo.resolved if not self._live else {}
        self._callers = memo.callers if not self._live else {}
        self._methods = memo.methods if not self._live else {}
        self.reads = 0  # store lookups made: what the tests count instead of time

    # --- what the revision holds, read once --------------------------------------------------

    def defs_in(self, path: str) -> list[FactHit]:
        if path not in self._defs:
            self.reads += 1
            hits = self.store.find_facts(self.rev_no, "def", path=path, limit=100_000)
            self._defs[path] = [h for h in hits if h.kind != "heading"]
        return self._defs[path]

    def imports_in(self, path: str) -> list[FactHit]:
        if path not in self._imports:
            self.reads += 1
            self._imports[path] = self.store.find_facts(self.rev_no, "import", path=path, limit=100_000)
        return self._imports[path]

    def refs_in(self, path: str) -> list[FactHit]:
        if path not in self._refs:
            self.reads += 1
            self._refs[path] = self.store.find_facts(self.rev_no, "ref", path=path, limit=100_000)
        return self._refs[path]

    def defs_named(self, name: str) -> list[FactHit]:
        if name not in self._named:
            self.reads += 1
            hits = self.store.find_facts(self.rev_no, "def", name=name, exact=True, limit=5000)
            self._named[name] = [h for h in hits if h.kind in _NODE_KINDS]
        return self._named[name]

    def line(self, path: str, line: int) -> str:
        if path not in self._lines:
            if path in self._live:
                self._lines[path] = dict(enumerate(self._live[path].split("\n"), start=1))
            else:
                self.reads += 1
                lines: dict[int, str] = {}
                for chunk in self.store.chunks_of(self.rev_no, path):
                    for n, text in enumerate(chunk.text.split("\n"), start=chunk.start_line):
                        lines.setdefault(n, text)
                self._lines[path] = lines
        return self._lines[path].get(line, "")

    def text_of(self, path: str) -> str:
        """A file's text as the revision holds it, from its chunks (a line they skip reads as empty)."""
        self.line(path, 1)
        lines = self._lines.get(path, {})
        return "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))

    def _module_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Source files by module key (`pkg/api` for pkg/api.py, pkg/__init__.py, pkg/api/index.ts)
        and by folder (a Go package is its folder)."""
        return self._modules_of_revision().modules, self._modules_of_revision().folders

    def _modules_of_revision(self) -> ModuleIndex:
        if self._memo.modules is None:
            self.reads += 1
            self._memo.modules = ModuleIndex.of(p for p, _ in self.store.manifest_hashes(self.rev_no))
        return self._memo.modules

    # --- nodes ------------------------------------------------------------------------------

    def enclosing(self, path: str, container: str | None, line: int) -> Node:
        """The definition a use sits in (by its container's qualified name), else the file."""
        if container:
            best = None
            for d in self.defs_in(path):
                if (
                    d.start_line <= line <= d.end_line
                    and _qualified(d) == container
                    and d.kind in _NODE_KINDS
                ) and (best is None or d.start_line >= best.start_line):
                    best = d
            if best is not None:
                return node_of(best)
        return file_node(path)

    # --- resolution -------------------------------------------------------------------------

    def resolve(self, hit: FactHit) -> CallSite:
        """What the call or reference `hit` (a ref fact) means, and how sure that is."""
        key = (hit.path, hit.line, hit.name, hit.is_call, hit.container)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve(hit)
        return found

    def _resolve(self, hit: FactHit) -> CallSite:
        caller = self.enclosing(hit.path, hit.container, hit.line)
        receiver = receiver_of(self.line(hit.path, hit.line), hit.name)
        kind = "call" if hit.is_call else "reference"

        def site(how: str, targets: list[FactHit] | list[Node], why: str | None = None) -> CallSite:
            nodes = tuple(t if isinstance(t, Node) else node_of(t) for t in targets)
            return CallSite(caller, hit.name, hit.path, hit.line, kind, receiver, how, nodes, why)

        if receiver is None:
            return self._bare(hit, caller, site)
        parts = [p for p in re.split(_SEP, receiver) if p.strip()]
        head = parts[0].strip()
        if len(parts) == 1 and head in _SELF and (head != "cls" or language_of(hit.path) == "python"):
            return self._on_self(hit, caller, head, site)
        bindings = self.bindings(hit.path)
        rust_path = (
            head in _RUST_ROOTS and receiver.startswith(head + "::") and language_of(hit.path) == "rust"
        )
        if head in bindings or rust_path:
            module, name = bindings.get(head, (head, None))
            rest = [p.strip() for p in parts[1:]]
            files = self.module_files(module, hit.path, [name, *rest] if name else rest)
            if files:
                found = self._in_files(files, hit.name, set())
                if found:
                    return site("import", found)
                # `Client.new()` where Client is imported: a method of the imported type
                found = [d for f in files for d in self.defs_in(f) if d.name == hit.name]
                if language_of(hit.path) == "rust" and name:
                    # `Literal::empty()` where Literal is imported: Literal's, not another type's
                    found = [d for d in found if _owner_class(d) == name]
                if found:
                    return site("import", found[:MAX_CANDIDATES])
            if not files and (name is None or language_of(hit.path) == "java"):
                return site("unresolved", [], f"{head} is imported from {module}, outside the index")
        # A local or attribute of a known class: `ctx: Context`, `runner = CliRunner()`, a fixture
        cls = None
        if len(parts) == 1 and head not in bindings:
            cls = self.type_of(head, caller, hit)
        elif len(parts) == 2 and head in ("self", "this"):
            cls = self.attribute_type(_class_of(caller), parts[1].strip(), hit.path)
        lang = language_of(hit.path)
        if lang == "java" and not cls and len(parts) == 1 and head not in bindings:
            # a local, parameter or field declared `Type name`: the type is known, in the index or not
            declared = self.java_declared(head, caller, hit)
            if declared and not self.classes_named(declared):
                return site("unresolved", [], f"called on {head}, a {declared}: a type outside the index")
            cls = declared
            if head[:1].isupper() and not declared and not self.classes_named(head):
                return site("unresolved", [], f"called on {head}, a class outside the index")
        if lang == "go" and not cls and len(parts) == 1 and head not in bindings:
            # a parameter, receiver or var declared `name Type` / `name *pkg.Type`
            declared = self.go_declared(head, caller, hit)
            if declared and "." in declared:
                return site("unresolved", [], f"called on {head}, a {declared}: a type outside the index")
            cls = declared
        if cls:
            found = self.methods_of(cls, hit.name)
            if found:
                return site("exact" if all(d.path == hit.path for d in found) else "name", found)
        if (
            lang in _JS_LANGS
            and head in _JS_GLOBALS
            and head not in bindings
            and not self.classes_named(head)
        ):
            return site("unresolved", [], f"called on {head}, a global of the language")
        # A type of the project named as the receiver: a static call (`Foo.bar()`, `Foo::new()`).
        owned = [
            d
            for d in self.defs_named(hit.name)
            if (d.container or "").rsplit(".", 1)[-1] == parts[-1].strip()
        ]
        if lang != "python":  # `Builder::new()`: the Builder of this file when it has one
            owned = [d for d in owned if d.path == hit.path] or owned
        if owned:
            return site("exact" if any(d.path == hit.path for d in owned) else "name", owned[:MAX_CANDIDATES])
        if (
            hit.name in _BUILTIN_METHODS
            or (lang in _JS_LANGS and hit.name in _JS_BUILTIN_METHODS)
            or (lang == "java" and hit.name in _JAVA_BUILTIN_METHODS)
            or (lang == "rust" and hit.name in _RUST_BUILTIN_METHODS)
            or (lang == "go" and hit.name in _GO_BUILTIN_METHODS)
        ):
            why = f"called on {receiver}: its type is not known, and builtin types have {hit.name} too"
            return site("unresolved", [], why)
        return self._by_name(hit, site, methods_only=True, why=f"called on {receiver}: its type is not known")

    def _bare(self, hit: FactHit, caller: Node, site) -> CallSite:  # type: ignore[no-untyped-def]
        here = [d for d in self.defs_in(hit.path) if d.name == hit.name and d.kind in _NODE_KINDS]
        if here:
            # the one in the caller's own class first (a Java call of a sibling method), then top level
            top = [d for d in here if d.container in (None, caller.container, caller.qualified)]
            return site("exact", (top or here)[:MAX_CANDIDATES])
        bindings = self.bindings(hit.path)
        lang = language_of(hit.path)
        jvm = lang in ("java", "kotlin")
        if hit.name in bindings:
            module, name = bindings[hit.name]
            # a Java import names a class (or, static, a member) after its package
            files = self.module_files(module, hit.path, [name] if jvm and name else [])
            if files:
                found = self._in_files(files, name or hit.name, set())
                if jvm and not found:  # `import static a.b.Utils.copy`: a method of the class
                    found = [d for f in files for d in self.defs_in(f) if d.name == hit.name][:MAX_CANDIDATES]
                if found:
                    return site("import", found)
                if name is None:  # the module itself, called (`import x; x()`) or a default export
                    return site("import", [file_node(files[0])])
            if not files:
                return site("unresolved", [], f"imported from {module}, outside the index")
        if jvm and _class_of(caller):
            # a bare call in a class is a call on this: a method it inherits from its bases
            found = self.methods_of(_class_of(caller) or "", hit.name)
            if found:
                return site("name", found)
        if language_of(hit.path) == "go":
            folder = hit.path.rpartition("/")[0]
            _, folders = self._module_index()
            same = [
                d for f in folders.get(folder, []) if f != hit.path for d in self.defs_in(f)
                if d.name == hit.name and d.kind in _NODE_KINDS and d.container is None
            ]  # fmt: skip
            if same:
                return site("exact", same[:MAX_CANDIDATES])
        return self._by_name(hit, site, methods_only=False, why="not defined in this file nor imported")

    def _on_self(self, hit: FactHit, caller: Node, head: str, site) -> CallSite:  # type: ignore[no-untyped-def]
        cls = _class_of(caller)
        if cls:
            # its own method or the nearest base's, and the overrides a subclass may dispatch to
            found = self.methods_of(cls, hit.name, inherited_only=head == "super")
            if found:
                return site("exact" if all(d.path == hit.path for d in found) else "name", found)
            if head == "super":
                return site("unresolved", [], f"inherited by {cls} from a class outside the index")
        here = [d for d in self.defs_in(hit.path) if d.name == hit.name and d.container is not None]
        mine = [d for d in here if cls and (d.container == cls or d.container.endswith("." + cls))]
        if mine:
            return site("exact", mine[:MAX_CANDIDATES])
        if here:
            return site("exact", here[:MAX_CANDIDATES])
        return self._by_name(hit, site, methods_only=True, why=f"not a method of {cls or head} in this file")

    def _by_name(self, hit: FactHit, site, methods_only: bool, why: str) -> CallSite:  # type: ignore[no-untyped-def]
        """The project's only definition(s) of the name that fit: a method for a call on an object."""
        found = self.defs_named(hit.name)
        if methods_only:
            found = [d for d in found if d.container is not None and d.kind in ("method", "function")]
        else:
            found = [d for d in found if d.container is None]
        if not is_test_path(hit.path) and not is_example_path(hit.path):
            # the library does not call into its tests and examples
            found = [d for d in found if not is_test_path(d.path) and not is_example_path(d.path)]
        if 0 < len(found) <= (MAX_METHOD_GUESSES if methods_only else 1):
            return site("name", found)
        if found:
            why = f"{why}; {len(found)} definitions of {hit.name} fit"
        return site("unresolved", [], why)

    # --- classes: their bases, their methods, the types of receivers --------------------------

    def classes_named(self, name: str) -> list[FactHit]:
        return [d for d in self.defs_named(name) if d.kind in _CLASS_KINDS]

    def bases(self, cls: str) -> list[str]:
        """The names of the classes `cls` extends, as its definitions' first lines give them."""
        out: list[str] = []
        for d in self.classes_named(cls):
            text = d.signature or self.line(d.path, d.line)
            m = _PY_BASES.search(text) if language_of(d.path) == "python" else _EXTENDS.search(text)
            if m is None:
                continue
            for part in re.split(r",|\bimplements\b|\bextends\b", m.group(1)):
                names = re.findall(_IDENT, re.sub(r"<.*", "", part)) if "=" not in part else []
                if names and names[-1] not in out and names[-1] != cls:
                    # `pkg.Base` → Base; `Generic[T]` → Generic
                    dotted = re.match(rf"\s*({_IDENT}(?:\.{_IDENT})*)", part)
                    out.append(dotted.group(1).rsplit(".", 1)[-1] if dotted else names[-1])
        return out

    def ancestors(self, cls: str) -> list[str]:
        """`cls` and the classes it extends, nearest first (breadth first, each once)."""
        if cls in self._ancestors:
            return self._ancestors[cls]
        order, queue = [cls], deque([cls])
        while queue and len(order) < 32:
            for base in self.bases(queue.popleft()):
                if base not in order:
                    order.append(base)
                    queue.append(base)
        self._ancestors[cls] = order
        return order

    def methods_of(self, cls: str, name: str, inherited_only: bool = False) -> list[FactHit]:
        """What `obj.name()` may run when obj is a `cls`: the method of cls or of its nearest base
        that has one, and the overrides in cls's subclasses (a call dispatches to either)."""
        key = (cls, name, inherited_only)
        if key not in self._methods:
            self._methods[key] = self._methods_of(cls, name, inherited_only)
        return list(self._methods[key])

    def _methods_of(self, cls: str, name: str, inherited_only: bool) -> list[FactHit]:
        methods = [d for d in self.defs_named(name) if d.container]
        chain = self.ancestors(cls)[1:] if inherited_only else self.ancestors(cls)
        own: list[FactHit] = []
        for c in chain:
            own = [d for d in methods if _owner_class(d) == c]
            if own:
                break
        overrides = []
        if not inherited_only and len(methods) <= MAX_OVERRIDE_SCAN:
            overrides = [
                d for d in methods
                if d not in own and _owner_class(d) != cls and not is_test_path(d.path) and not is_example_path(d.path)
                and cls in self.ancestors(_owner_class(d))[1:]
            ]  # fmt: skip
        return (own + overrides)[:MAX_DISPATCH]

    def class_in(self, text: str) -> str | None:
        """The project's class an annotation or constructor names (`t.Optional["Context"]` → Context)."""
        for name in reversed(re.findall(_IDENT, text)):
            if name[:1].isupper() and self.classes_named(name):
                return name
        return None

    def type_of(self, var: str, caller: Node, hit: FactHit) -> str | None:
        """The class of a local `var` at a call, from the nearest line above that says it: an
        annotation, an assignment of a constructor call, `with X() as var`, `Type var`; for a
        Python test's argument, the class its pytest fixture returns."""
        v = re.escape(var)
        patterns = (
            rf"(?<![\w$.]){v}\s*:\s*([^=,)\n]+)",
            rf"(?<![\w$.]){v}\s*(?::[^=\n]*)?:?=\s*(?:await\s+|new\s+|&)?({_IDENT}(?:\.{_IDENT})*)\s*[({{]",
            rf"({_IDENT}(?:\.{_IDENT})*)\s*\([^\n]*\)\s+as\s+{v}\b",
            rf"\b([A-Z][\w$]*)(?:<[^>\n]*>)?\s+{v}\s*[=;,)]",
        )
        first = max(caller.line if caller.kind != "module" else 1, hit.line - _TYPE_SCAN_LINES)
        for n in range(hit.line, first - 1, -1):
            text = self.line(hit.path, n)
            if var not in text:
                continue
            for pattern in patterns:
                for m in re.finditer(pattern, text):
                    cls = self.class_in(m.group(1))
                    if cls:
                        return cls
        if caller.kind != "module" and is_test_path(hit.path) and language_of(hit.path) == "python":
            return self._fixture_type(var, hit.path)
        return None

    def _fixture_type(self, var: str, path: str) -> str | None:
        """The class a pytest fixture named `var` returns, from a conftest.py above `path` or `path`."""
        folder = path.rpartition("/")[0]
        for d in self.defs_named(var):
            where = d.path.rpartition("/")[0]
            local = d.path == path or (
                d.path.rpartition("/")[2] == "conftest.py"
                and (folder + "/").startswith(where + "/" if where else "")
            )
            if d.kind != "function" or d.container is not None or not local:
                continue
            for n in range(d.line, min(d.end_line, d.line + 50) + 1):
                m = _RETURNED.match(self.line(d.path, n))
                cls = self.class_in(m.group(1)) if m else None
                if cls:
                    return cls
        return None

    def java_declared(self, var: str, caller: Node, hit: FactHit) -> str | None:
        """The type a Java local, parameter or field is declared with (`Logger debug`), in the index
        or not: the nearest declaration above the call in its method, else in its classes."""
        pattern = re.compile(
            rf"(?<![\w$.])([A-Z][\w$]*(?:\.[A-Z][\w$]*)*)(?:<[^;=(){{}}]*>)?(?:\[\])*\s+{re.escape(var)}\s*[=;,):]"
        )
        first = max(caller.line if caller.kind != "module" else 1, hit.line - _TYPE_SCAN_LINES)
        for n in range(hit.line, first - 1, -1):
            m = pattern.search(self.line(hit.path, n))
            if m:
                return self._java_type(m.group(1))
        classes = [
            d
            for d in self.defs_in(hit.path)
            if d.kind in _CLASS_KINDS and d.start_line <= hit.line <= d.end_line
        ]
        for d in sorted(classes, key=lambda d: -d.start_line):  # the innermost class first
            for n in range(d.start_line, min(d.end_line, d.start_line + 3000) + 1):
                text = self.line(hit.path, n)
                if var in text:
                    m = pattern.search(text)
                    if m:
                        return self._java_type(m.group(1))
        return None

    def _java_type(self, dotted: str) -> str:
        """`Flow.Subscription` → itself when Flow is no class of the index (the JDK's), else Subscription."""
        head, _, last = dotted.rpartition(".")
        return last if not head or self.classes_named(head.split(".")[0]) else dotted

    def go_declared(self, var: str, caller: Node, hit: FactHit) -> str | None:
        """The type a Go parameter, receiver or var is declared with, from the nearest declaration
        above the call in its function: a type of the index (`Reader` for `r text.Reader`, when the
        package is the project's), `pkg.Type` for one outside it, None when not said."""
        v = re.escape(var)
        pattern = re.compile(rf"(?:^|[(,]|\bvar\s)\s*{v}(?:\s*,\s*\w+)*\s+\*?(?:\[\]\*?)*(?:(\w+)\.)?(\w+)")
        first = max(caller.line if caller.kind != "module" else 1, hit.line - _TYPE_SCAN_LINES)
        for n in range(hit.line, first - 1, -1):
            m = pattern.search(self.line(hit.path, n))
            if m is None:
                continue
            package, name = m.groups()
            module = self.bindings(hit.path).get(package or "", ("", None))[0]
            # the project's root package (`goldmark.Markdown`): no folder an import path ends with
            root = module.rsplit("/", 1)[-1] == package and any(
                "/" not in d.path for d in self.classes_named(name)
            )
            if package is None or root or self.module_files(module, hit.path, []):
                return name if self.classes_named(name) else None
            return f"{package}.{name}"
        return None

    def attribute_type(self, cls: str | None, attr: str, path: str) -> str | None:
        """The class of `self.attr`, from the class body (`self.attr = X(...)`, `attr: X`)."""
        if not cls:
            return None
        a = re.escape(attr)
        pattern = re.compile(
            rf"(?:\b(?:self|this)\.{a}|^\s*{a})\s*(?::\s*([^=\n]+))?=\s*(?:new\s+)?({_IDENT}(?:\.{_IDENT})*)\s*\("
            rf"|^\s*{a}\s*:\s*([^=\n]+)"
        )
        for d in self.classes_named(cls):
            if d.path != path:
                continue
            for n in range(d.line, min(d.end_line, d.line + 2000) + 1):
                m = pattern.search(self.line(path, n))
                for group in m.groups() if m else ():
                    found = self.class_in(group) if group else None
                    if found:
                        return found
        return None

    def _in_files(self, files: list[str], name: str, seen: set[str]) -> list[FactHit]:
        """Definitions of `name` at top level in the files, following re-exports (`from .api import get`)."""
        found = [d for f in files for d in self.defs_in(f) if d.name == name and d.container is None]
        if found or len(seen) >= _REEXPORT_HOPS:
            return found[:MAX_CANDIDATES]
        for f in files:
            if f in seen:
                continue
            seen.add(f)
            binding = self.bindings(f).get(name)
            if binding is None:
                star = [
                    i
                    for i in self.imports_in(f)
                    if (i.name or "") == "*" or _js_star(i, self.line(f, i.line))
                ]
                for imp in star:
                    nested = self.module_files(imp.signature or "", f, [])
                    hit = self._in_files(nested, name, seen)
                    if hit:
                        return hit
                continue
            module, imported = binding
            nested = self.module_files(module, f, [])
            if nested:
                hit = self._in_files(nested, imported or name, seen)
                if hit:
                    return hit
        return []

    def bindings(self, path: str) -> dict[str, tuple[str, str | None]]:
        """The names a file's imports bind: local name → (module, imported name or None for the module)."""
        if path in self._bindings:
            return self._bindings[path]
        out: dict[str, tuple[str, str | None]] = {}
        lang = language_of(path)
        for imp in self.imports_in(path):
            module, name = imp.signature or "", imp.name
            text = self.line(path, imp.line)
            aliases = {a: b for a, b in _ALIAS.findall(text)}
            if lang == "go":
                # the name of a Go import is its alias; else the last part of its path
                out[name if name and name != module else module.rsplit("/", 1)[-1]] = (module, None)
                continue
            if lang in _JS_LANGS and name == module:
                name = None  # `import * as x from "m"`, `export * from "m"`: the module, no name
            if name and name != "*":
                out[aliases.get(name, name)] = (module, name)
                continue
            if "*" in aliases:
                out[aliases["*"]] = (module, None)
                continue
            default = _JS_DEFAULT.search(text) if lang in ("javascript", "typescript", "tsx") else None
            if default:
                out[default.group(1)] = (module, None)
                continue
            alias = next((b for a, b in aliases.items() if module.endswith(a)), None)
            if alias:
                out[alias] = (module, None)
            elif lang == "python":
                out.setdefault(module.split(".", 1)[0].lstrip("."), (module.split(".", 1)[0], None))
                out.setdefault(module, (module, None))
            else:
                out.setdefault(re.split(r"[./:\\]+", module.rstrip("/"))[-1], (module, None))
        self._bindings[path] = out
        return out

    def module_files(self, module: str, importer: str, rest: list[str]) -> list[str]:
        """The project's files a module names, seen from `importer`; [] for one outside the index.
        `rest` are the parts used after the binding (`pkg.sub.f` → ["sub"]), tried as submodules."""
        index = self._modules_of_revision()
        lang = language_of(importer)
        keys = _module_keys(module, importer, lang)
        for extra in _prefixes(rest):
            for key in keys:
                key = "/".join(p for p in [key, *extra] if p)
                hit = index.match(key, by_folder=lang == "go")
                if hit:
                    return hit
        return []

    # --- the edges of one node ----------------------------------------------------------------

    def callees(self, node: Node, calls_only: bool = True) -> list[CallSite]:
        """What a definition calls (or uses), in line order, each site resolved."""
        refs = self.refs_in(node.path)
        qual = node.qualified
        inside = [
            r for r in refs
            if _within(node, r) and (node.kind == "module" or r.container == qual or (r.container or "").startswith(qual + "."))
        ]  # fmt: skip
        if calls_only:
            inside = [r for r in inside if r.is_call]
        return [self.resolve(r) for r in sorted(inside, key=lambda r: (r.line, r.name))]

    def callers(self, node: Node, calls_only: bool = True) -> list[CallSite]:
        """The uses of a definition elsewhere that resolve to it, found once per revision and process."""
        key = (node.key, calls_only)
        found = self._callers.get(key)
        if found is None:
            found = self._callers[key] = self._callers_of(node, calls_only)
        return list(found)

    def _callers_of(self, node: Node, calls_only: bool) -> list[CallSite]:
        if node.kind == "module":
            return self.importers(node)
        self.reads += 1
        refs = self.store.find_facts(self.rev_no, "ref", name=node.name, exact=True, limit=MAX_SITES)
        named_runs = self._runs_when_named(node)
        if calls_only:
            refs = [r for r in refs if r.is_call or named_runs]
        out = []
        for r in refs:
            site = self.resolve(r)
            if not any(t.key == node.key for t in site.targets) or site.caller.key == node.key:
                continue
            if calls_only and not r.is_call and not self._hands_on(site, node):
                continue
            out.append(site)
        owner = self._owner(node)
        if owner is not None:
            # a constructor runs where its class is called; a nested function where its enclosing one runs
            out.append(CallSite(owner, node.name, node.path, node.line, "reference", None, "exact", (node,)))
        return out + self.importers(node)

    def _runs_when_named(self, node: Node) -> bool:
        """Whether a use of a Python function without a call may run it: handed on as a value (a
        callback, a dict of handlers, a decorator) or, for a property, read."""
        return node.kind in ("function", "method", "class") and language_of(node.path) == "python"

    def _hands_on(self, site: CallSite, node: Node) -> bool:
        """A reference that runs `node` later: a property read (`ctx.meta`), or the function named
        bare or on self where it resolves through the file or its imports (`callback=cb`,
        `{"x": self._on_x}`, `@register`), not a guess by name of a method on an unknown object; a
        class only where it is handed on as a value (`cls=Group`, `setdefault("cls", Group)`), to be
        made later, not where an annotation or isinstance names it."""
        if self.is_property(node):
            return True
        if site.how not in ("exact", "import") or (site.receiver is not None and site.receiver not in _SELF):
            return False
        return node.kind != "class" or _handed_on(self.line(site.path, site.line), node.name)

    def is_property(self, node: Node) -> bool:
        """A Python method under `@property`, `@cached_property` or a property's `.setter`."""
        if node.kind != "method" or language_of(node.path) != "python":
            return False
        for n in range(node.line - 1, max(0, node.line - 6), -1):
            text = self.line(node.path, n)
            if not text.lstrip().startswith("@"):
                break
            if _PROPERTY.match(text):
                return True
        return False

    def _owner(self, node: Node) -> Node | None:
        """The class of a constructor, or the function a nested function sits in: what runs it."""
        if not node.container:
            return None
        for d in self.defs_in(node.path):
            if _qualified(d) == node.container and d.start_line <= node.line <= d.end_line:
                is_class = d.kind in ("class", "struct")
                if (is_class and node.name in _CONSTRUCTORS) or d.kind in ("function", "method"):
                    return node_of(d)
        return None

    def importers(self, node: Node) -> list[CallSite]:
        """The files that import the definition (or the module) by name: an agent's callers too."""
        name = node.name if node.kind != "module" else PurePosixPath(node.path).stem
        self.reads += 1
        out = []
        for imp in self.store.find_facts(self.rev_no, "import", name=name, exact=True, limit=MAX_SITES):
            if imp.path == node.path:
                continue
            files = self.module_files(imp.signature or "", imp.path, [])
            if not files:
                continue
            if node.kind == "module":
                hit = node.path in files or any(
                    node.path.startswith(f.rpartition("/")[0] + "/") for f in files
                )
                hit = hit and PurePosixPath(node.path).stem == name
            else:
                hit = any(
                    t.path == node.path and t.line == node.line for t in self._in_files(files, name, set())
                )
            if not hit:
                continue
            caller = file_node(imp.path)
            out.append(CallSite(caller, name, imp.path, imp.line, "import", None, "import", (node,)))
            # calls through an alias (`from .util import reverse as rev; rev(x)`) are not named `reverse`
            alias = next(
                (a for a, (m, n) in self.bindings(imp.path).items() if n == name and a != name), None
            )
            if alias is not None and node.kind != "module":
                for r in self.store.find_facts(
                    self.rev_no, "ref", name=alias, path=imp.path, limit=MAX_SITES
                ):
                    site = self.resolve(r)
                    if r.is_call and any(t.key == node.key for t in site.targets):
                        out.append(site)
        return out


def _js_star(imp: FactHit, text: str) -> bool:
    """`export * from "m"` (not `export * as x from "m"`): every name of m is the file's too."""
    return imp.name == imp.signature and re.match(r"\s*export\s+\*\s+from\b", text) is not None


def _handed_on(text: str, name: str) -> bool:
    """Whether a line hands `name` on as a value (`cls=Group`, `x = Group`, `f(Group)`, `, Group)`,
    `return Group`), not called, subscripted or read from there, nor named in an annotation or a
    type test (isinstance, issubclass, except)."""
    if _TYPE_TESTS.search(text):
        return False
    at = rf"(?:(?<![=!<>:])=\s*|\(\s*|,\s*|\breturn\s+){re.escape(name)}(?![\w$.(\[\]])"
    return re.search(at, text) is not None


def _within(node: Node, r: FactHit) -> bool:
    return (
        node.kind == "module"
        or node.line <= r.line <= node.end_line
        or (r.container is not None and r.container.startswith(node.qualified))
    )


def _qualified(d: FactHit) -> str:
    return f"{d.container}.{d.name}" if d.container else d.name


def _owner_class(d: FactHit) -> str:
    return (d.container or "").rsplit(".", 1)[-1]


def _class_of(caller: Node) -> str | None:
    """The class a method sits in (its container), or the class itself."""
    if caller.kind in ("class", "struct", "interface", "trait", "enum"):
        return caller.name
    return caller.container.rsplit(".", 1)[-1] if caller.container else None


def file_node(path: str) -> Node:
    """The file as a node: for uses outside every definition (module level, a test file's imports)."""
    return Node(path.rpartition("/")[2], "module", path, 1, 1, None, None)


def receiver_of(text: str, name: str) -> str | None:
    """What `name` is called on at its first call on the line (`self`, `os.path`, `Foo`), or None for
    a bare call; `<expr>` when it is called on an expression (`foo().name()`)."""
    best = None
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
        after = text[m.end() :].lstrip()
        prefix = text[: m.start()]
        if best is None or after[:1] in ("(", "<", "!", "{"):
            best = prefix
            if after[:1] in ("(", "<", "!", "{"):
                break
    if best is None:
        return None
    stripped = best.rstrip()
    if not re.search(rf"{_SEP}\Z", stripped) or re.search(r"(?<!\.)\.\.\.\Z", stripped):
        return None  # a bare call, or a spread of one (`...f(x)`)
    if re.search(rf"\bsuper\s*\([^()]*\)\s*{_SEP}\Z", stripped):
        return "super"
    found = _RECEIVER.search(stripped)
    if found is None:
        return "<expr>"
    return re.sub(r"\s+", "", found.group(1))


def module_key(path: str) -> str:
    """The module a file is: `pkg/api` for pkg/api.py, pkg for pkg/__init__.py or pkg/index.ts."""
    stem = path
    for suffix in (".d.ts", *_SOURCE_SUFFIXES):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    folder, _, name = stem.rpartition("/")
    return folder if name in ENTRY_STEMS and folder else stem


def _module_keys(module: str, importer: str, lang: str) -> list[str]:
    """The module keys a module string may mean from `importer`."""
    here = importer.rpartition("/")[0]
    if lang == "python" and module.startswith("."):
        dots = len(module) - len(module.lstrip("."))
        base = here.split("/") if here else []
        base = base[: len(base) - (dots - 1)] if dots > 1 else base
        rest = [p for p in module[dots:].split(".") if p]
        return ["/".join(base + rest)]
    if module.startswith(("./", "../")) or module in (".", ".."):
        parts = [p for p in here.split("/") if p]
        for p in module.split("/"):
            if p == "..":
                parts = parts[:-1]
            elif p not in (".", ""):
                parts.append(p)
        key = "/".join(parts)
        return [module_key(key), key]
    if lang == "rust":
        parts = [p for p in module.split("::") if p]
        if parts and parts[0] in _RUST_ROOTS:
            base = here.split("/") if here else []
            if parts[0] == "crate":
                base = base[: base.index("src") + 1] if "src" in base else []
            elif parts[0] == "super":
                base = base[:-1]
            rest = parts[1:]
            return ["/".join(base + rest[: i + 1]) for i in reversed(range(len(rest)))] + ["/".join(base)]
        return ["/".join(parts[: i + 1]) for i in reversed(range(len(parts)))]
    if lang in ("java", "kotlin"):
        parts = module.split(".")
        return ["/".join(parts), "/".join(parts[:-1])]
    key = "/".join(p for p in re.split(r"[./:\\]+", module.lstrip("@~/")) if p)
    return [key] if lang == "go" else [key, module.replace(".", "/")]


def _prefixes(rest: list[str]) -> list[list[str]]:
    """The submodule parts to try, longest first, then none."""
    return [rest[:i] for i in range(min(len(rest), 3), -1, -1)]


class ModuleIndex:
    """A revision's source files by module key and by folder, and every key by each of its endings
    at a folder boundary (`db/models/query` under `query`, `models/query` …), so that an import
    finds its file in src/ layouts and Go module paths without a scan of all keys."""

    def __init__(self, modules: dict[str, list[str]], folders: dict[str, list[str]]) -> None:
        self.modules, self.folders = modules, folders
        self._endings: dict[bool, dict[str, list[str]]] = {}
        self._memo: dict[tuple[str, bool], list[str]] = {}

    @classmethod
    def of(cls, paths: Iterable[str]) -> ModuleIndex:
        modules: dict[str, list[str]] = {}
        folders: dict[str, list[str]] = {}
        for path in paths:
            if path.endswith(_SOURCE_SUFFIXES):
                modules.setdefault(module_key(path), []).append(path)
                folders.setdefault(path.rpartition("/")[0], []).append(path)
        return cls(modules, folders)

    def match(self, key: str, by_folder: bool) -> list[str]:
        """The files of the module `key` names: itself, else the one whose key ends with it at a
        folder boundary (the shortest when several do), else, for a Go import path that names its
        module first, the folder its tail is."""
        if not key:
            return []
        index = self.folders if by_folder else self.modules
        if not by_folder and key in index:
            return index[key]
        memo = self._memo.get((key, by_folder))
        if memo is not None:
            return memo
        endings = self._endings.get(by_folder)
        if endings is None:
            endings = {}
            for k in index:
                parts = k.split("/")
                for i in range(len(parts)):
                    endings.setdefault("/".join(parts[i:]), []).append(k)
            self._endings[by_folder] = endings
        found = endings.get(key)
        hit: list[str] = []
        if found:
            hit = index[min(found, key=len)]
        else:
            parts = key.split("/")
            hit = next(
                (index["/".join(parts[i:])] for i in range(1, len(parts)) if "/".join(parts[i:]) in index), []
            )
        self._memo[(key, by_folder)] = hit
        return hit


_MEMOS: weakref.WeakKeyDictionary[Store, dict[int, RevisionMemo]] = weakref.WeakKeyDictionary()


def traverse(
    graph: CodeGraph, roots: list[Node], direction: str, depth: int, budget: int, calls_only: bool = True
) -> Traversal:
    """Breadth first from the roots, `in` (callers), `out` (callees) or `both`; each node once, so
    recursion and cycles end; at most `budget` nodes, the rest counted in `cut`."""
    t = Traversal(roots=roots)
    queue: deque[Node] = deque()
    for r in roots:
        t.nodes[r.key], t.distance[r.key] = r, 0
        queue.append(r)
    cut_keys: set[tuple[str, int, str]] = set()
    while queue:
        node = queue.popleft()
        d = t.distance[node.key]
        if d >= depth:
            t.frontier += 1
            continue
        steps: list[tuple[Node, Node, CallSite]] = []
        if direction in ("in", "both"):
            steps += [(s.caller, node, s) for s in graph.callers(node, calls_only)]
        if direction in ("out", "both"):
            steps += [(node, target, s) for s in graph.callees(node, calls_only) for target in s.targets]
        for src, dst, site in steps:
            other = src if dst.key == node.key else dst
            if other.key not in t.nodes:
                if len(t.nodes) >= budget:
                    cut_keys.add(other.key)
                    continue
                t.nodes[other.key], t.distance[other.key] = other, d + 1
                t.via[other.key] = (node, site)
                queue.append(other)
            t.edges.append((src, dst, site))
    t.cut = len(cut_keys)
    return t
