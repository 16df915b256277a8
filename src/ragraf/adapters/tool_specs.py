"""The tools' catalogue: each operation's name, title, description for the agent, argument schema,
output schema and how it maps onto `Index`. MCP and HTTP both serve it (adapters/tools.py runs it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragraf.api import Index
from ragraf.index.progress import Progress

MAX_TOP_K = 10  # what an answer holds; a larger top_k is clamped to it, with a note
# search's default: ten results fit the 16 KiB answer budget whole (bench, via MCP: p50 13.1 KB, max
# 15.7 KB) and give NDCG@10 0.858, the library's, where five gave 0.838 (benchmarks/mcp_path.py).
SEARCH_TOP_K = 10
MAX_TOP_K_ASKED = 1000
MAX_OFFSET = 100_000
MAX_TEXT = 2000
MAX_QUERY = 100_000  # a pasted bug report with its traceback is 2-5 KB; the HTTP body caps at 1 MiB
MAX_PATH = 4096


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it is for, its argument schema, and how it maps onto `Index`."""

    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    method: str
    call: Callable[[Index, dict[str, Any], Progress | None], Any]
    read_only: bool = True

    @property
    def output_schema(self) -> dict[str, Any]:
        return ENVELOPE_SCHEMA if self.read_only else REPORT_SCHEMA

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {**self.properties, "repo": REPO if self.name == "search" else ONE_REPO},
            "required": list(self.required),
            "additionalProperties": False,
        }


_COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message", "suggest"],
    "properties": {
        "code": {
            "type": "string",
            "description": "Machine-readable: bad_arguments, index_missing, locked, …",
        },
        "message": {"type": "string", "description": "What happened."},
        "suggest": {"type": "string", "description": "What to do next."},
    },
}
ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The ragraf envelope (DESIGN §4): revision, freshness, capability, results.",
    "required": ["op", "state"],
    "properties": {
        "op": {"type": "string"},
        "index_rev": {"type": ["string", "null"]},
        "corpus_hash": {"type": ["string", "null"]},
        "state": {"type": "string", "enum": ["fresh", "drifted", "refused"]},
        "drift": _COUNTS,
        "stale_warnings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "reason", "suggest"],
                "properties": {
                    "path": {"type": "string"},
                    "reason": {"type": "string"},
                    "suggest": {"type": "string"},
                },
            },
        },
        "capability": {"type": "object"},
        "results": {"type": "array"},
        "truncated": _COUNTS,
        "notes": {"type": "array", "items": {"type": "string"}},
        "error": ERROR_SCHEMA,
    },
}
ERROR_ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A refusal or failure: what happened and what to do next.",
    "required": ["op", "state", "error"],
    "properties": {"op": {"type": "string"}, "state": {"const": "refused"}, "error": ERROR_SCHEMA},
}
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "What an index run did: the revision, file and chunk counts, duration.",
    "required": ["op", "index_rev", "files", "chunks"],
    "properties": {
        "op": {"type": "string"},
        "index_rev": {"type": ["string", "null"]},
        "corpus_hash": {"type": ["string", "null"]},
        "files": _COUNTS,
        "chunks": _COUNTS,
        "duration_s": {"type": "number"},
        "new_revision": {"type": "boolean"},
        "full_rebuild": {"type": "boolean"},
        "reason": {"type": ["string", "null"]},
    },
}
_STRING = {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}
# the arguments the graph tools share
_DEFINITION_NAME = {**_STRING, "maxLength": 500, "description": "A definition's name (Class.method narrows)."}
_DEPTH = {
    "type": "integer", "minimum": 0, "maximum": 1000, "default": 1,
    "description": "Hops to follow (more than 10 is clamped).",
}  # fmt: skip
_NODE_BUDGET = {
    "type": "integer", "minimum": 1, "maximum": 5000, "default": 200,
    "description": "At most this many definitions; the rest are counted.",
}  # fmt: skip
FILE_PATH = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_PATH,
    "description": "Path relative to the repository root, e.g. 'src/app/server.py'.",
}
_REV = {"type": "string", "minLength": 1, "maxLength": 64, "description": "A revision name, e.g. 'rev-0003'."}
_OFFSET = {
    "type": "integer",
    "minimum": 0,
    "maximum": MAX_OFFSET,
    "default": 0,
    "description": "Skip this many results: the next page (an answer that stops early names it).",
}
ONE_REPO = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_PATH,
    "description": "Which served repository to answer about: its name or its root's path "
    "(default: the first; the status tool lists them).",
}
REPO = {
    "anyOf": [ONE_REPO, {"type": "array", "items": ONE_REPO, "minItems": 1, "maxItems": 50}],
    "description": "Which served repositories to search: a name or root path, several, or '*' for "
    "all of them (their rankings merged, each result naming its repo); default: the first.",
}
_GLOB = {"type": "string", "minLength": 1, "maxLength": 500}
# The filters search, find_symbol and find_references share.
_FILTERS: dict[str, Any] = {
    "path": {
        "anyOf": [_GLOB, {"type": "array", "items": _GLOB, "maxItems": 50}],
        "description": "Only paths matching these globs ('src/**', '*.py'; '!' excludes: '!**/vendor/**'). "
        "A glob without '/' matches a file or folder name at any depth.",
    },
    "kind": {
        "anyOf": [
            {"enum": ["code", "test", "doc", "config"]},
            {"type": "array", "items": {"enum": ["code", "test", "doc", "config"]}, "maxItems": 4},
        ],
        "description": "Only results of these kinds: code, test, doc or config.",
    },
    "language": {
        "anyOf": [_STRING, {"type": "array", "items": _STRING, "maxItems": 20}],
        "description": "Only these languages: python, typescript, go, rust, … (py, ts, js, rs also work).",
    },
}


def _filters(a: dict[str, Any]) -> dict[str, Any]:
    return {"path": a.get("path"), "kind": a.get("kind"), "language": a.get("language")}


TOOL_LIST: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search",
        "Search the code",
        "Hybrid (lexical + semantic) search over the indexed code, tests and docs. Use it for open "
        "questions in words or identifiers ('where is retry backoff implemented', 'TCPConnector "
        "keep-alive'). Returns up to top_k chunks, best first, each cited as path:start-end with a "
        "snippet. Know the exact name? Use find_symbol (definition) or find_references (users). "
        "Results marked STALE come from files changed since the index revision: read them live.",
        {
            "query": {
                **_STRING,
                "maxLength": MAX_QUERY,
                "description": "What to look for, in words and/or identifiers, or a whole bug report.",
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TOP_K_ASKED,
                "default": SEARCH_TOP_K,
                "description": f"How many results (1-{MAX_TOP_K}; more is clamped to {MAX_TOP_K}, with a note).",
            },
            "offset": _OFFSET,
            "mode": {
                "enum": ["hybrid", "lexical", "vector", "semantic"],
                "default": "hybrid",
                "description": "hybrid (default), lexical (words only) or vector/semantic (meaning only).",
            },
            **_FILTERS,
        },
        ("query",),
        "search",
        lambda idx, a, p: idx.search(
            a["query"],
            k=a.get("top_k", SEARCH_TOP_K),
            mode=a.get("mode", "hybrid"),
            offset=a.get("offset", 0),
            **_filters(a),
        ),
    ),
    ToolSpec(
        "localize",
        "Find the files to change",
        "Paste an issue report, a bug report or a task (prose, traceback, code, paths, error "
        "messages): the files most likely to need the change, best first, each with its evidence "
        "(where a named function is defined, a traceback frame, the line holding an error message) "
        "and its best chunks as path:start-end. Use it as the first step of a task; then read or "
        "outline the files it names. For a short question use search.",
        {
            "text": {
                **_STRING,
                "maxLength": MAX_QUERY,
                "description": "The report as the user wrote it: prose, tracebacks, code, paths.",
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TOP_K_ASKED,
                "default": 5,
                "description": f"How many files (1-{MAX_TOP_K}; more is clamped to {MAX_TOP_K}, with a note).",
            },
            **_FILTERS,
        },
        ("text",),
        "localize",
        lambda idx, a, p: idx.localize(a["text"], k=a.get("top_k", 5), **_filters(a)),
    ),
    ToolSpec(
        "find_symbol",
        "Find a definition",
        "Where a named symbol (class, function, method, variable, type) is defined: each definition "
        "as path:line with its kind and container. Use it when you know the name ('TCPConnector', "
        "'TCPConnector.connect'); use search when you only know what the code does.",
        {
            "name": {**_STRING, "maxLength": 500, "description": "The symbol name, optionally qualified."},
            "include_body": {
                "type": "boolean",
                "default": False,
                "description": "Also show each definition's lines as indexed (within the byte budget).",
            },
            "offset": _OFFSET,
            **_FILTERS,
        },
        ("name",),
        "find_symbol",
        lambda idx, a, p: idx.find_symbol(
            a["name"], offset=a.get("offset", 0), include_body=a.get("include_body", False), **_filters(a)
        ),
    ),
    ToolSpec(
        "find_references",
        "Find references / callers",
        "Who uses a name: every reference to the symbol as path:line with the enclosing definition; "
        "with calls=true only the call sites (the callers). Use it before changing, renaming or "
        "removing a symbol, to see what depends on it.",
        {
            "name": {**_STRING, "maxLength": 500, "description": "The symbol name."},
            "calls": {"type": "boolean", "default": False, "description": "Only call sites."},
            "offset": _OFFSET,
            **_FILTERS,
        },
        ("name",),
        "find_references",
        lambda idx, a, p: idx.find_references(
            a["name"], calls=a.get("calls", False), offset=a.get("offset", 0), **_filters(a)
        ),
    ),
    ToolSpec(
        "callees",
        "What a definition calls",
        "The call sites inside a definition, each as path:line with what it calls, resolved to the "
        "project's definition where it can be and saying how (exact: same file or class; import: "
        "through the imports; name: the only definition of that name) or unresolved (a call on a "
        "value of unknown type, a library function). Use it to follow code downwards.",
        {"name": {**_STRING, "maxLength": 500, "description": "A definition's name (Class.method narrows)."}},
        ("name",),
        "callees",
        lambda idx, a, p: idx.callees(a["name"]),
    ),
    ToolSpec(
        "callers",
        "Who calls a definition, transitively",
        "The definitions that call NAME (depth 1), their callers (depth 2) and so on, each as "
        "path:line with its distance and the chain of calls that reaches it; calls are resolved, so a "
        "list.reverse() is not a caller of the project's reverse. Use it before changing a function's "
        "behaviour or signature.",
        {
            "name": _DEFINITION_NAME,
            "depth": _DEPTH,
            "budget": _NODE_BUDGET,
        },
        ("name",),
        "callers",
        lambda idx, a, p: idx.callers(a["name"], depth=a.get("depth", 1), budget=a.get("budget", 200)),
    ),
    ToolSpec(
        "graph",
        "The call graph around a definition",
        "The definitions around NAME to a depth: its callers (direction in), its callees (out) or both, "
        "each node as path:line with its distance and its edges (call, reference, import; with line).",
        {
            "name": _DEFINITION_NAME,
            "depth": _DEPTH,
            "direction": {"enum": ["in", "out", "both"], "default": "both"},
            "budget": _NODE_BUDGET,
        },
        ("name",),
        "graph",
        lambda idx, a, p: idx.graph(
            a["name"],
            depth=a.get("depth", 1),
            direction=a.get("direction", "both"),
            budget=a.get("budget", 200),
        ),
    ),
    ToolSpec(
        "impact",
        "The impact of a change: callers and tests",
        "What a change reaches: the definitions its changed lines touch (added, removed, signature or "
        "body changed), their callers to a depth, and the tests that reach them (test files and test "
        "functions, nearest first), each as path:line with the chain of calls that explains it. By "
        "default the work tree against the index revision; or the staged change, a git range A..B, or "
        "a unified diff. Use it to choose the tests to run and the callers to update.",
        {
            "staged": {"type": "boolean", "default": False, "description": "The staged change."},
            "rev": {**_STRING, "maxLength": 200, "description": "A git range A..B."},
            "diff": {"type": "string", "maxLength": 5_000_000, "description": "A unified diff."},
            "depth": {
                "type": "integer",
                "minimum": 0,
                "maximum": 1000,
                "default": 10,
                "description": "Hops of callers to follow (more than 10 is clamped).",
            },
        },
        (),
        "impact",
        lambda idx, a, p: idx.impact(
            staged=a.get("staged", False), rev=a.get("rev"), diff=a.get("diff"), depth=a.get("depth", 10)
        ),
    ),
    ToolSpec(
        "repo_map",
        "A map of the repository",
        "The most central definitions of the repository (PageRank over which files use which "
        "definitions), as files in rank order with their key signatures and lines, fitted to a token "
        "budget; focus on paths or names to rank around them. Use it first to orient yourself in an "
        "unfamiliar codebase, then outline or read the files it names.",
        {
            "budget": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100_000,
                "default": 1024,
                "description": "Tokens the map may take.",
            },
            "focus": {
                "type": "array",
                "items": {**_STRING, "maxLength": 500},
                "maxItems": 50,
                "description": "Paths or names to rank around.",
            },
        },
        (),
        "repo_map",
        lambda idx, a, p: idx.repo_map(budget=a.get("budget", 1024), focus=a.get("focus")),
    ),
    ToolSpec(
        "related",
        "Code like a definition",
        "The definitions most like the one at path:line: those sharing its rare identifiers (the "
        "names they use in common), and its callers and callees, best first, each as path:line with "
        "the shared names. Use it to find the other places a change or a fix may belong.",
        {
            "spec": {**_STRING, "maxLength": 1000, "description": "PATH:LINE inside the definition."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        },
        ("spec",),
        "related",
        lambda idx, a, p: idx.related(a["spec"], k=a.get("top_k", 10)),
    ),
    ToolSpec(
        "outline",
        "Outline a file",
        "The definitions in one file (classes, functions, methods, headings) as a tree with line "
        "ranges, from the index. Use it to see a file's structure before reading it, then read only "
        "the lines you need.",
        {"path": FILE_PATH},
        ("path",),
        "outline",
        lambda idx, a, p: idx.outline(a["path"]),
    ),
    ToolSpec(
        "read",
        "Read a file (live)",
        "The current content of a file under the repository root, read from disk (not the index), "
        "optionally a 1-based inclusive line range, and whether it differs from the indexed revision. "
        "Always current: use it to check a STALE result or to see more around a citation. '..', "
        "absolute paths, paths leaving the root and secrets are refused.",
        {
            "path": FILE_PATH,
            "start_line": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line (inclusive)."},
        },
        ("path",),
        "read",
        lambda idx, a, p: idx.read(a["path"], start_line=a.get("start_line"), end_line=a.get("end_line")),
    ),
    ToolSpec(
        "status",
        "Index status",
        "Which index revision answers, its file and chunk counts, and which files changed on disk "
        "since. Use it when answers look stale or wrong, or to see whether an index exists.",
        {},
        (),
        "status",
        lambda idx, a, p: idx.status(),
    ),
    ToolSpec(
        "drift",
        "Drift since the index",
        "The drift ledger of the current revision: files created, modified or deleted on disk since "
        "it was indexed, with the symbols affected. Use it to see what the index does not know yet; "
        "call reindex to catch up.",
        {},
        (),
        "drift",
        lambda idx, a, p: idx.drift(),
    ),
    ToolSpec(
        "changes",
        "Knowledge changes between revisions",
        "What changed in the indexed knowledge between two revisions: files and symbols added, "
        "removed or changed, with path:line. Get revision names from the revisions tool.",
        {"from_rev": _REV, "to_rev": {**_REV, "description": "A revision name; default: the current one."}},
        ("from_rev",),
        "changes",
        lambda idx, a, p: idx.changes(a["from_rev"], a.get("to_rev")),
    ),
    ToolSpec(
        "reindex",
        "Update the index",
        "Bring the index up to date with the disk, incrementally (only changed files are re-read); "
        "full=true rebuilds everything and repairs a corrupt index. Makes a new revision when "
        "something changed. Use it when no index exists yet, after substantial edits, or when "
        "status/drift list many stale files. The other tools keep answering from the previous "
        "revision meanwhile.",
        {"full": {"type": "boolean", "default": False, "description": "Rebuild from scratch."}},
        (),
        "index",
        lambda idx, a, p: idx.index(full=a.get("full", False), quiet=True, progress=p, wait=False),
        read_only=False,
    ),
    ToolSpec(
        "revisions",
        "List revisions",
        "The retained index revisions, oldest first, with creation time, counts and git commit. Use "
        "it to pick from_rev / to_rev for changes.",
        {},
        (),
        "revisions",
        lambda idx, a, p: idx.revisions(),
    ),
)
TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOL_LIST}
