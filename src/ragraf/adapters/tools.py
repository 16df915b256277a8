"""The operations as agent tools: arguments checked against the catalogue's schemas
(adapters/tool_specs.py), and one runner shared by MCP and HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ragraf.adapters.render import render_envelope, render_error, render_report, tool_words
from ragraf.adapters.tool_specs import FILE_PATH, MAX_TOP_K, SEARCH_TOP_K, TOOL_LIST, TOOLS, ToolSpec
from ragraf.api import Envelope, Index, error_envelope
from ragraf.api.render import printable, render_search
from ragraf.corpus.extract import is_utf8
from ragraf.errors import PathOutsideRootError, RagrafError, UsageError
from ragraf.index.progress import Progress

log = logging.getLogger("ragraf.adapters")

T = TypeVar("T")


class BadArgumentsError(UsageError):
    """Arguments that do not match the tool's schema."""

    code = "bad_arguments"


class NotAvailableError(RagrafError):
    """The installed operations layer lacks this operation."""

    code = "not_implemented"


class InternalError(RagrafError):
    """An unexpected exception, contained so the server keeps serving."""

    code = "internal"


_VALIDATORS = {spec.name: Draft202012Validator(spec.input_schema) for spec in TOOL_LIST}


def available(name: str) -> bool:
    """Whether the installed operations layer has the operation behind tool `name`."""
    spec = TOOLS.get(name)
    return spec is not None and callable(getattr(Index, spec.method, None))


def validate_arguments(name: str, arguments: object) -> dict[str, Any]:
    """The arguments if they match the tool's schema; BadArgumentsError naming the first problem."""
    spec = TOOLS.get(name)
    if spec is None:
        raise BadArgumentsError(f"unknown tool {name!r}", suggest="use one of: " + ", ".join(TOOLS))
    args = {} if arguments is None else arguments
    if not isinstance(args, dict):
        raise BadArgumentsError(f"{name}: arguments must be a JSON object", suggest=_usage(spec))
    error = best_match(_VALIDATORS[name].iter_errors(args))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "arguments"
        what = _short(error.message)
        if error.validator == "maxLength":  # the message would quote the whole text and be cut
            what = f"{len(error.instance)} characters, more than the {error.validator_value} allowed"
        raise BadArgumentsError(f"{name}: {where}: {what}", suggest=_usage(spec))
    for key, value in args.items():
        if isinstance(value, str) and not is_utf8(value):
            raise BadArgumentsError(
                f"{name}: {key}: not valid Unicode (a lone surrogate)", suggest=_usage(spec)
            )
    start, end = args.get("start_line"), args.get("end_line")
    if start is not None and end is not None and end < start:
        raise BadArgumentsError(f"{name}: end_line {end} is before start_line {start}", suggest=_usage(spec))
    return args


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[:limit] + "…"


def _usage(spec: ToolSpec) -> str:
    parts = []
    for key, prop in spec.input_schema["properties"].items():
        optional = "" if key in spec.required else "?"
        kind = prop.get("type", "any" if "enum" not in prop else "|".join(map(str, prop["enum"])))
        if "anyOf" in prop:  # a string, or a list of them
            kind = "|".join(sorted({str(p.get("type", "enum")) for p in prop["anyOf"]}))
        if "minimum" in prop and "maximum" in prop:
            kind += f" {prop['minimum']}..{prop['maximum']}"
        parts.append(f"{key}{optional}: {kind}")
    return f"call {spec.name} with {{{', '.join(parts)}}}"


_DRIVE = re.compile(r"^[A-Za-z]:")


def check_path(root: Path, path: str) -> None:
    """Refuse a path that could leave the root (NUL, absolute, '..', symlink out) before the API sees it."""
    suggest = "pass a path relative to the repository root, e.g. 'src/app/server.py'"
    if "\0" in path:
        raise PathOutsideRootError("the path contains a NUL byte", suggest=suggest)
    posix = path.replace("\\", "/")
    if posix.startswith(("/", "~")) or _DRIVE.match(posix):
        raise PathOutsideRootError(f"{path!r} is absolute; only paths inside the root can be read", suggest)
    if ".." in posix.split("/"):
        raise PathOutsideRootError(f"{path!r} climbs out of the root with '..'", suggest)
    real_root = root.resolve()
    try:
        target = (real_root / posix).resolve()
    except (OSError, RuntimeError):
        raise PathOutsideRootError(f"{path!r} cannot be resolved (a symlink loop?)", suggest) from None
    if target != real_root and real_root not in target.parents:
        raise PathOutsideRootError(f"{path!r} leads outside the root through a symlink", suggest)


@dataclass
class ToolOutcome:
    """What a tool call produced: the JSON payload (envelope or error envelope) and its text rendering."""

    tool: str
    payload: dict[str, Any]
    text: str
    error_code: str | None = None

    @property
    def failed(self) -> bool:
        return self.error_code is not None


def failure(tool: str, exc: RagrafError, hint: str = "") -> ToolOutcome:
    """An outcome carrying the error envelope of `exc` (state refused)."""
    env = error_envelope(tool, exc)
    if hint and env.error is not None:
        env.error["suggest"] = f"{env.error['suggest']} ({hint})" if env.error["suggest"] else hint
    return ToolOutcome(tool, env.to_dict(), render_error(env), exc.code)


class CallbackProgress(Progress):
    """Progress that forwards (done, total, message) to a callback, at most every `interval` seconds."""

    def __init__(self, emit: Callable[[float, float | None, str], None], interval: float = 0.5) -> None:
        self.emit, self.interval = emit, interval
        self.phase, self.total, self.count, self.last = "", 0, 0, 0.0

    def _send(self, message: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.interval:
            self.last = now
            self.emit(float(self.count), float(self.total) if self.total else None, message)

    def start(self, phase: str, total: int) -> None:
        self.phase, self.total, self.count = phase, total, 0
        self._send(phase, force=True)

    def advance(self, n: int = 1) -> None:
        self.count += n
        self._send(f"{self.phase}: {self.count}/{self.total}")

    def done(self) -> None:
        self.count = self.total
        self._send(f"{self.phase}: done", force=True)

    def note(self, message: str) -> None:
        self._send(message, force=True)


def _in_tool_words(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with its notes, reasons and error in the words of the tools."""
    out = dict(payload)
    if out.get("notes"):
        out["notes"] = [tool_words(n) for n in out["notes"]]
    if isinstance(out.get("error"), dict):
        out["error"] = {k: tool_words(v) if isinstance(v, str) else v for k, v in out["error"].items()}
    cap = out.get("capability")
    if isinstance(cap, dict) and cap.get("reasons"):
        out["capability"] = {**cap, "reasons": [tool_words(r) for r in cap["reasons"]]}
    if out.get("warnings"):
        out["warnings"] = [tool_words(w) if isinstance(w, str) else w for w in out["warnings"]]
    return out


@dataclass
class _Reader:
    index: Index | None = None
    generation: int = -1


@dataclass
class ToolRunner:
    """Runs tools against one root: reads on `readers` threads (one Index each), reindex on its own thread."""

    root: Path
    overrides: dict[str, Any] = field(default_factory=dict)
    readers: int = 1
    hints: dict[str, str] = field(default_factory=dict)
    # MCP: the payload's messages too name the tools to call, not CLI commands.
    in_tool_words: bool = False

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser().resolve()
        self._read_pool = ThreadPoolExecutor(self.readers, thread_name_prefix="ragraf-read")
        self._write_pool = ThreadPoolExecutor(1, thread_name_prefix="ragraf-index")
        self._local = threading.local()
        # Bumped after a reindex or a store failure: each reader thread reopens its Index lazily.
        self._generation = 0
        self._generation_lock = threading.Lock()

    def _invalidate(self) -> None:
        with self._generation_lock:
            self._generation += 1

    async def call(self, tool: str, arguments: object, progress: Progress | None = None) -> ToolOutcome:
        """Validate, run on a worker thread, render; every failure becomes an error outcome."""
        outcome = await self._call(tool, arguments, progress)
        if self.in_tool_words:
            outcome.payload = _in_tool_words(outcome.payload)
        return outcome

    async def _call(self, tool: str, arguments: object, progress: Progress | None) -> ToolOutcome:
        try:
            args = validate_arguments(tool, arguments)
            spec = TOOLS[tool]
            if "path" in args and spec.properties.get("path") is FILE_PATH:  # a file to read, not a glob
                check_path(self.root, args["path"])
            if not available(tool):
                raise NotAvailableError(
                    f"this ragraf has no `{spec.method}` operation yet", suggest="upgrade ragraf"
                )
            if spec.read_only:
                return await self._run(self._read_pool, self._read, spec, args)
            return await self._run(self._write_pool, self._reindex, args, progress)
        except RagrafError as exc:
            log.info("%s: %s: %s", tool, exc.code, exc.message)
            return failure(tool, exc, self.hints.get(exc.code, ""))
        except Exception as exc:  # the server must outlive any bug below it
            log.exception("%s: unexpected failure", tool)
            self._invalidate()
            return failure(
                tool,
                InternalError(
                    f"{tool} failed unexpectedly: {type(exc).__name__}: {_short(str(exc))}",
                    suggest="retry; if it persists call `status` and report the server's stderr log",
                ),
            )

    async def _run(self, pool: ThreadPoolExecutor, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    def _reader_index(self) -> Index:
        reader: _Reader = getattr(self._local, "reader", None) or _Reader()
        self._local.reader = reader
        if reader.index is not None and reader.generation != self._generation:
            reader.index.close()
            reader.index = None
        if reader.index is None:
            reader.index = Index.open(self.root, **self.overrides)
            reader.generation = self._generation
        return reader.index

    def _read(self, spec: ToolSpec, args: dict[str, Any]) -> ToolOutcome:
        idx = self._reader_index()
        try:
            env: Envelope = spec.call(idx, args, None)
        except RagrafError as exc:
            if exc.code in ("index_corrupt", "store", "index_missing"):
                self._invalidate()  # reopen: the file may have been rebuilt or created since
            raise
        budget = idx.settings.budget_bytes
        text = render_envelope(env, budget)  # before to_dict: rendering records what it truncated
        refused = (env.error or {}).get("code", "refused") if env.state == "refused" else None
        return ToolOutcome(spec.name, env.to_dict(), text, refused)

    def _reindex(self, args: dict[str, Any], progress: Progress | None) -> ToolOutcome:
        with Index.open(self.root, **self.overrides) as idx:
            report = TOOLS["reindex"].call(idx, args, progress)
        self._invalidate()
        data = report if isinstance(report, dict) else report.to_dict()
        return ToolOutcome("reindex", data, render_report(data))

    def budget_bytes(self) -> int:
        """The text budget of this root's answers (its settings'; the default when they do not load)."""
        from ragraf.config import load_settings

        try:
            return load_settings(self.root, **self.overrides).budget_bytes
        except RagrafError:
            return 16 * 1024

    def warm(self) -> None:
        """Open the reader Index and read its revisions ahead of the first call (errors wait for that call)."""

        def _open() -> None:
            with contextlib.suppress(Exception):
                self._reader_index().revisions()

        self._read_pool.submit(_open)

    def close(self) -> None:
        """Stop the worker threads; a running reindex finishes (its writes are atomic either way)."""
        self._read_pool.shutdown(wait=False, cancel_futures=True)
        self._write_pool.shutdown(wait=False, cancel_futures=True)


class UnknownRepoError(UsageError):
    """A `repo` argument naming no served root."""

    code = "unknown_repo"


def repo_names(roots: list[Path]) -> list[str]:
    """Each root's name: its folder's name, a second `app` named `app-2`."""
    names: list[str] = []
    for root in roots:
        name, n = root.name or str(root), 1
        while name in names:
            n += 1
            name = f"{root.name}-{n}"
        names.append(name)
    return names


_PAGE_NOTE = re.compile(r"^(\d+ of k=\d+ found|nothing matched|k=\d+ clamped)")


def _merged_state(states: list[str]) -> str:
    if all(s == "refused" for s in states):
        return "refused"
    return "drifted" if "drifted" in states else "fresh"


class ServedRoots:
    """The roots one server answers about, a ToolRunner each: a call's `repo` (a root's name or
    path) picks one, the first by default; `search` over several (or '*') merges their rankings.
    A root's confinement is its runner's: a path is checked against the root it is read from."""

    def __init__(
        self, roots: list[Path], make: Callable[[Path], ToolRunner], from_client: bool = False
    ) -> None:
        self.make = make
        # True while the roots are only the default (no --root): the MCP client's roots may replace them.
        self.from_client = from_client
        self.runners: dict[str, ToolRunner] = {}
        self._set(roots)

    def _set(self, roots: list[Path]) -> None:
        resolved = list(dict.fromkeys(Path(r).expanduser().resolve() for r in roots))
        self.runners = {
            name: self.make(root) for name, root in zip(repo_names(resolved), resolved, strict=True)
        }

    def replace(self, roots: list[Path]) -> None:
        """Serve these roots instead (the client's roots/list); the old runners are closed."""
        old = list(self.runners.values())
        self._set(roots)
        for runner in old:
            runner.close()
        for runner in self.runners.values():
            runner.warm()

    @property
    def root(self) -> Path:
        return self.first.root

    @property
    def first(self) -> ToolRunner:
        return next(iter(self.runners.values()))

    def described(self) -> str:
        return ", ".join(f"{name} ({runner.root})" for name, runner in self.runners.items())

    def _match(self, repo: str) -> str:
        if repo in self.runners:
            return repo
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            target = Path(repo).expanduser().resolve()
            for name, runner in self.runners.items():
                if runner.root == target:
                    return name
        raise UnknownRepoError(
            f"repo {repo!r} is not served here; served: {self.described()}",
            suggest=f"pass one of their names or paths as repo, or leave repo out for {next(iter(self.runners))}",
        )

    def pick(self, tool: str, repo: object) -> list[str]:
        """The names of the roots a call is for; UnknownRepoError for one not served."""
        if repo is None:
            return [next(iter(self.runners))]
        wanted = [repo] if isinstance(repo, str) else list(repo)  # type: ignore[call-overload]
        names = list(self.runners) if "*" in wanted else list(dict.fromkeys(self._match(w) for w in wanted))
        if len(names) > 1 and tool != "search":
            raise BadArgumentsError(
                f"{tool}: repo: one repository at a time (only search merges several)",
                suggest=f"call {tool} once per repo; served: {self.described()}",
            )
        return names

    async def call(self, tool: str, arguments: object, progress: Progress | None = None) -> ToolOutcome:
        """The call on the root its `repo` names; the payload names the repo, and so does the text
        when several roots are served."""
        try:
            args = validate_arguments(tool, arguments)
            names = self.pick(tool, args.get("repo"))
        except RagrafError as exc:
            log.info("%s: %s: %s", tool, exc.code, exc.message)
            return failure(tool, exc, self.first.hints.get(exc.code, ""))
        args = {k: v for k, v in args.items() if k != "repo"}
        if len(names) > 1:
            return await self._search_across(names, args)
        name = names[0]
        outcome = await self.runners[name].call(tool, args, progress)
        outcome.payload = {**outcome.payload, "repo": name}
        if len(self.runners) > 1:
            if tool == "status":
                outcome.payload["repos"] = [{"name": n, "root": str(r.root)} for n, r in self.runners.items()]
                outcome.text += f"\nserved repositories (pass repo=NAME): {self.described()}"
            outcome.text = f"repo {name} ({self.runners[name].root})\n{outcome.text}"
        return outcome

    async def _search_across(self, names: list[str], args: dict[str, Any]) -> ToolOutcome:
        """One search over several roots: each root's first offset+k results, merged by their fused
        scores (rank-based, so comparable across indexes), each naming its repo."""
        asked = int(args.get("top_k", SEARCH_TOP_K))
        k, offset = min(asked, MAX_TOP_K), int(args.get("offset", 0))
        answers = await asyncio.gather(*(self._collect(self.runners[n], args, offset + k) for n in names))
        merged: list[dict[str, Any]] = []
        notes = [f"k={asked} clamped to {k} (allowed 1..{MAX_TOP_K})"] if k != asked else []
        warnings, states, repos, total = [], [], {}, 0
        drift: dict[str, int] = {}
        for name, (payload, results, count) in zip(names, answers, strict=True):
            states.append(payload.get("state", "refused"))
            repos[name] = {
                "root": str(self.runners[name].root),
                **{key: payload.get(key) for key in ("index_rev", "corpus_hash", "state", "capability")},
            }
            if payload.get("error"):
                repos[name]["error"] = payload["error"]
                error = payload["error"]
                notes.append(
                    f"{name}: not searched: {error['message']} ({error['suggest']} with repo={name})"
                )
            # Each repo was asked its own pages: what they say of k is said once below for the merge.
            notes += [f"{name}: {n}" for n in payload.get("notes") or [] if not _PAGE_NOTE.match(n)]
            reasons = (payload.get("capability") or {}).get("reasons") or []
            notes += [f"{name}: {r}" for r in reasons]
            warnings += [{**w, "repo": name} for w in payload.get("stale_warnings") or []]
            for key, value in (payload.get("drift") or {}).items():
                drift[key] = drift.get(key, 0) + value
            merged += [{**r, "repo": name} for r in results]
            total += count
        merged.sort(key=lambda r: -float(r.get("score") or 0.0))  # stable: repo order breaks ties
        page = merged[offset : offset + k]
        if len(page) < k:
            found = "nothing matched" if not page else f"{len(page)} of k={k} found"
            notes.append(f"{found}{f' from offset {offset}' if offset else ''} in {len(names)} repos")
        following = max(0, total - offset - len(page))
        data = {
            "op": "search",
            "repo": names,
            "repos": repos,
            "index_rev": None,
            "corpus_hash": None,
            "state": _merged_state(states),
            "drift": drift,
            "stale_warnings": warnings,
            "results": page,
            "truncated": {"results": following, "bytes": 0},
            "notes": notes,
            "page": {
                "offset": offset,
                "total": total,
                "next_offset": offset + len(page) if following else None,
            },
        }
        if all(p.get("error") for p, _, _ in answers):
            data["error"] = {
                "code": "refused",
                "message": "no repository answered: " + "; ".join(notes),
                "suggest": "call status with each repo",
            }
        budget = self.first.budget_bytes()
        return ToolOutcome(
            "search", data, render_merged_search(data, budget), "refused" if "error" in data else None
        )

    async def _collect(
        self, runner: ToolRunner, args: dict[str, Any], want: int
    ) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
        """A root's first `want` results, page by page: (its first answer, the results, its total)."""
        first: dict[str, Any] | None = None
        results: list[dict[str, Any]] = []
        total = 0
        while True:
            outcome = await runner.call("search", {**args, "top_k": MAX_TOP_K, "offset": len(results)})
            first = first or outcome.payload
            if outcome.failed:
                return first, results, total
            page = outcome.payload.get("page") or {}
            got = outcome.payload.get("results") or []
            results += got
            total = int(page.get("total") or len(results))
            if len(results) >= want or not got or page.get("next_offset") is None:
                return first, results[:want], total

    def warm(self) -> None:
        for runner in self.runners.values():
            runner.warm()

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()


def render_merged_search(data: dict[str, Any], budget_bytes: int) -> str:
    """A search over several repositories as the agent reads it: each result as `[repo] path:lines`."""
    from ragraf.api.envelope import SearchResult

    head = []
    if data.get("error"):
        head += [
            f"ERROR [{data['error']['code']}]: {data['error']['message']}",
            f"→ {data['error']['suggest']}",
        ]
    for w in data["stale_warnings"]:
        where = f"`read` with path={printable(w['path'])} repo={w['repo']}"
        action = (
            f"call `reindex` with repo={w['repo']}" if w["suggest"] == "reindex" else f"read it live: {where}"
        )
        head.append(f"WARNING: [{w['repo']}] {printable(w['path'])} {w['reason']}; {action}")
    head += [f"NOTE: {tool_words(n)}" for n in data["notes"]]
    revs = ", ".join(
        f"{name} @ {info.get('index_rev') or 'no index'}" for name, info in data["repos"].items()
    )
    env = Envelope(op="search", index_rev=revs, state=data["state"], page=data["page"])
    env.truncated = dict(data["truncated"])
    fields = ("start_line", "end_line", "score", "kind", "language", "symbol", "stale", "snippet")
    env.results = [
        SearchResult(path=f"[{r['repo']}] {r['path']}", **{f: r.get(f) for f in fields})
        for r in data["results"]
    ]
    body = render_search(
        env, budget_bytes, more=lambda n: f"call `search` again with offset={n} for the next"
    )
    return "\n".join([*head, body])
