"""The `ragraf` command: a thin adapter from arguments to the operations layer and back.

Over 600 lines because it holds every command (about two dozen, a few lines each over `Index`) with
the one error path and the options they share: a reader finds any command's flags here, and
`ragraf --help` lists what this file defines. Serving and agent setup live in adapters/commands.py.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ragraf import __version__
from ragraf.adapters.terminal import CHOICES, colour_wanted, paint, paint_error
from ragraf.api.render import (
    render_drift,
    render_facts,
    render_localize,
    render_outline,
    render_read,
    render_revisions,
    render_search,
    render_status,
)
from ragraf.errors import EXIT_INTERRUPTED, RagrafError, UsageError

if TYPE_CHECKING:  # a command imports the operations layer, renderers and the indexer it runs
    from ragraf.api import Envelope, Index
    from ragraf.config import Settings


def _argv() -> list[str]:
    """This command's arguments as typed (for the line that shows the next page)."""
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx else None
    return list(root.meta.get("ragraf.argv", [])) if root else []


# The settings of the index this process's command opened: they say whether to start a server.
_opened: Settings | None = None


def _open(root: Path) -> Index:
    """The index of root (the operations layer loads with the first command that opens one)."""
    global _opened
    from ragraf.api.index import Index

    idx = Index.open(root)
    _opened = idx.settings
    return idx


def _start_server() -> None:
    """After a read (or a plain index run) that found no server of its root (fastcli.py): one in the
    background for the next, the root's index permitting (`server_idle_s` > 0, its home there), not
    under CI, where every command is a one-shot run."""
    from ragraf import fastcli

    settings, root = _opened, fastcli.no_server_for
    if settings is None or root is None or os.environ.get("CI", "").lower() not in ("", "0", "false"):
        return
    if settings.server_idle_s > 0 and settings.home.is_dir() and str(settings.root) == root:
        fastcli.start_server(root, settings.server_idle_s)


def _error_envelope(op: str, exc: RagrafError) -> Envelope:
    from ragraf.api.index import error_envelope

    return error_envelope(op, exc)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, default=str))


def _check_encodable(*values: object) -> None:
    """Arguments the shell passed as bytes that are not UTF-8 (a name, a path) cannot be looked up
    in a UTF-8 index: a usage error naming them escaped, not an encoding traceback."""
    texts = [str(value) for value in values if isinstance(value, str | Path)]
    if all(text.isascii() for text in texts):
        return
    from ragraf.corpus.extract import is_utf8

    for text in texts:
        if not is_utf8(text):
            shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise UsageError(f"'{shown}' is not valid UTF-8", suggest="pass names and paths as UTF-8")


def common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--root and --json on every command, and one error path: message + suggestion, exit code."""

    @click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=".",
        show_default=True,
        help="Folder to index / answer about.",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the JSON envelope.")
    @click.option(
        "--color",
        type=click.Choice(CHOICES),
        default="auto",
        show_default=True,
        help="Colour the text: auto is on a terminal only (NO_COLOR turns it off, FORCE_COLOR on).",
    )
    @functools.wraps(fn)
    def wrapper(root: Path, as_json: bool, color: str, **kwargs: Any) -> None:
        op = fn.__name__.removesuffix("_cmd")
        click.get_current_context().meta["ragraf.color"] = color
        try:
            _check_encodable(root, *kwargs.values())
            code = fn(root=root, as_json=as_json, **kwargs)
        except RagrafError as exc:
            if as_json:
                _print_json(_error_envelope(op, exc).to_dict())
            msg = f"ragraf {op}: {exc.message}"
            if exc.suggest:
                msg += f"\n  → {exc.suggest}"
            coloured = colour_wanted(sys.stderr, color)
            click.echo(paint_error(msg) if coloured else msg, err=True, color=coloured)
            sys.exit(exc.exit_code)
        _start_server()
        sys.exit(code or 0)

    return wrapper


class _Commands(click.Group):
    """The commands defined elsewhere (`migrate` loads the PostgreSQL driver; serve, watch, mcp and
    mcp-config the servers and agent setup) are registered only when named or listed, not on every
    command's start. A usage error click finds (a bad option value, a missing argument) prints its envelope under
    --json too, like every other error."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["ragraf.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            argv = ctx.meta.get("ragraf.argv", [])
            if "--json" in argv[: argv.index("--") if "--" in argv else None]:  # not a literal after --
                op = exc.ctx.command.name if exc.ctx and exc.ctx.command is not ctx.command else "ragraf"
                _print_json(_error_envelope(op or "ragraf", UsageError(exc.format_message())).to_dict())
            raise

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == "migrate" and name not in self.commands:
            _register_migrate(self)
        elif name in _ADAPTER_COMMANDS and name not in self.commands:
            from ragraf.adapters.commands import register

            register(self)
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "migrate", *_ADAPTER_COMMANDS})


_ADAPTER_COMMANDS = ("serve", "watch", "mcp", "mcp-config")  # adapters/commands.py register()s them


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, package_name="ragraf")  # no package metadata lookup
def main() -> None:
    """ragraf: an honest, fast knowledge index of a code repository for AI coding agents.

    \b
    Examples:
      ragraf index                          # build or update the index of this folder
      ragraf search 'retry backoff'         # hybrid search, each result as path:lines
      ragraf def TCPConnector               # where a name is defined
      ragraf serve                          # MCP for an agent (ragraf mcp-config --agent claude)
    """


@main.command("index")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--full", is_flag=True, help="Re-read every file and rebuild (also repairs a corrupt index).")
@click.option("--dry-run", is_flag=True, help="Show what would be indexed, by folder; change nothing.")
@click.option("--no-wait", is_flag=True, help="Fail at once if another indexer holds the lock.")
@click.option(
    "--lexical-only", is_flag=True, help="Commit the lexical index and facts; leave embeddings for later."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@common
def index_cmd(
    root: Path,
    as_json: bool,
    path: Path | None,
    full: bool,
    dry_run: bool,
    no_wait: bool,
    quiet: bool,
    lexical_only: bool,
) -> int:
    """Index PATH (default: --root) incrementally; a new revision when something changed.

    \b
    Examples:
      ragraf index                # incremental: only changed files are read
      ragraf index --dry-run      # what it would index, by folder, and the embedding cost
      ragraf index --full         # rebuild everything (also repairs a corrupt index)
    """
    from ragraf.adapters.render import render_report
    from ragraf.index.progress import make_progress

    idx = _open(path or root)
    progress = make_progress(quiet or as_json)
    started = time.time()
    try:
        report = idx.index(
            full=full, dry_run_only=dry_run, progress=progress, wait=not no_wait, lexical_only=lexical_only
        )
    except KeyboardInterrupt:
        progress.done()
        click.echo(_interrupted(path or root, started), err=True)
        return EXIT_INTERRUPTED
    data = report if isinstance(report, dict) else report.to_dict()
    if as_json:
        _print_json(data)
    elif dry_run:
        _print_dry_run(data)
    else:
        for warning in data.get("warnings", []):
            click.echo(f"WARNING: {warning}", err=True)
        click.echo(render_report(data, warnings=False))
    return 0


def _interrupted(root: Path, started: float) -> str:
    """What an interrupted index run kept, and how to resume: the last committed revision answers."""
    lines = ["ragraf index: interrupted"]
    try:
        env = _open(root).status()
    except (RagrafError, KeyboardInterrupt):
        lines.append("  no revision was committed yet; nothing answers until an index run finishes")
    else:
        revision = env.results[0]["revision"] if env.results else {}
        created = revision.get("created_at") or ""
        ours = created >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(started)))
        coverage = env.capability.semantic_coverage
        kept = "this run's lexical revision committed" if ours else "the previous one (none committed)"
        lines.append(f"  {env.index_rev} answers: {kept}; semantic coverage {coverage:.0%}")
        lines.append("  the vectors embedded so far are kept in the cache; the next run reuses them")
    lines.append("  → run `ragraf index` to resume")
    return "\n".join(lines)


def _print_dry_run(data: dict[str, Any]) -> None:
    from ragraf.adapters.render import SKIPPED_SHOWN

    click.echo(
        f"would index {data['files']} files ({data['bytes']:,} bytes) in {data['chunks']} chunks; "
        f"{data['files_to_process']} files to (re)process"
    )
    click.echo(f"{'folder':<50} {'files':>7} {'bytes':>12} {'chunks':>7}")
    for folder, row in data["folders"].items():
        click.echo(f"{folder:<50} {row['files']:>7} {row['bytes']:>12,} {row['chunks']:>7}")
    emb = data.get("embedding") or {}
    if emb.get("model", "none") != "none":
        click.echo(
            f"embedding: {emb['chunks']} new chunks with {emb['model']}: {emb['cached']} cached, "
            f"{emb['calls']} calls, about {emb['tokens_estimate']:,} tokens"
        )
    if data["skipped"]:
        click.echo("skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(data["skipped"].items())))
    for item in data["skipped_files"][:SKIPPED_SHOWN]:
        click.echo(f"  {item['path']}: {item['reason']}")


def _search_lines(queries_file: Path) -> list[str | RagrafError]:
    """The queries of a batch file, blank lines skipped; a JSON object without a string "query"
    is an error in its place (a line that only starts with "{" and is not JSON is a query)."""
    queries: list[str | RagrafError] = []
    lines = queries_file.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line) if line.lstrip().startswith("{") else None
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            query = obj.get("query")
            if not isinstance(query, str):
                queries.append(
                    UsageError(f'{queries_file.name} line {number}: "query" is not a string: {line[:80]}')
                )
                continue
            line = query
        queries.append(line)
    return queries


def filter_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """-g/--glob, --kind and --lang: which paths an answer may cite (search, def, refs, localize)."""
    fn = click.option(
        "--lang", "languages", multiple=True, help="Only this language (python, ts, go, …; repeatable)."
    )(fn)
    fn = click.option(
        "--kind",
        "kinds",
        multiple=True,
        type=click.Choice(["code", "test", "doc", "config"]),
        help="Only results of this kind (repeatable).",
    )(fn)
    return click.option(
        "-g",
        "--glob",
        "globs",
        multiple=True,
        help="Only paths matching this glob ('src/**', '*.py'); '!GLOB' excludes (repeatable).",
    )(fn)


def _filters(globs: tuple[str, ...], kinds: tuple[str, ...], languages: tuple[str, ...]) -> dict[str, Any]:
    return {"path": list(globs) or None, "kind": list(kinds) or None, "language": list(languages) or None}


def _again(argv: list[str], offset_flag: str = "--offset") -> Callable[[int], str]:
    """The command line that shows the next page: this one with `--offset N`."""
    import shlex

    def more(n: int) -> str:
        args, skip = [], False
        for a in argv:
            if skip:
                skip = False
                continue
            if a == offset_flag:
                skip = True
                continue
            if not a.startswith(offset_flag + "="):
                args.append(a)
        return f"run `ragraf {shlex.join([*args, offset_flag, str(n)])}` for the next"

    return more


offset_option = click.option(
    "--offset", type=click.IntRange(min=0), default=0, help="Skip this many results (the next page)."
)


policy_option = click.option(
    "--reindex-on-drift",
    "policy",
    type=click.Choice(["warn", "auto", "fail"]),
    default=None,
    help="When files changed since the index: answer marked (warn), reindex first (auto) or refuse (fail).",
)


def _finish(env: Envelope, as_json: bool, render: Callable[[Envelope], str], query: str = "") -> int:
    """Print an envelope (JSON, or text: with colour on a terminal); a refusal exits 3."""
    if as_json:
        _print_json(env.to_dict())
    else:
        text = render(env)
        ctx = click.get_current_context(silent=True)
        coloured = colour_wanted(sys.stdout, ctx.meta.get("ragraf.color", "auto") if ctx else "auto")
        click.echo(paint(text, env, query) if coloured else text, color=coloured)
    return 3 if env.state == "refused" else 0


@main.command("search")
@click.argument("query", required=False)
@click.option("-k", "k", default=5, show_default=True, help="Number of results (at most 10).")
@click.option(
    "--queries",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help='Batch mode: one query per line (text or JSON with "query"); one envelope per line.',
)
@click.option(
    "--mode", type=click.Choice(["hybrid", "lexical", "vector"]), default="hybrid", show_default=True
)
@click.option("--budget", type=int, default=None, help="Byte budget of the text output (default 16 KiB).")
@offset_option
@filter_options
@policy_option
@common
def search_cmd(
    root: Path,
    as_json: bool,
    query: str | None,
    k: int,
    queries: Path | None,
    mode: str,
    budget: int | None,
    policy: str | None,
    offset: int = 0,
    globs: tuple[str, ...] = (),
    kinds: tuple[str, ...] = (),
    languages: tuple[str, ...] = (),
) -> int:
    """Search the index: the best chunks for QUERY with path:line.

    \b
    Examples:
      ragraf search 'where is retry backoff implemented'
      ragraf search TCPConnector -k 10 --mode lexical
      ragraf search 'parse config' -g 'src/**' -g '!**/vendor/**' --kind code --lang py
      ragraf search 'parse config' --offset 5      # the next page
    """
    if (query is None) == (queries is None):
        raise UsageError("give a QUERY or --queries FILE (not both)")
    if budget is not None and budget < 1:
        raise UsageError(f"--budget {budget}: give a positive number of bytes (default {16 * 1024})")
    code = 0
    with _open(root) as idx:
        budget = budget or idx.settings.budget_bytes
        for q in [query] if query is not None else _search_lines(queries):  # type: ignore[arg-type]
            try:
                if isinstance(q, RagrafError):
                    raise q
                env = idx.search(
                    q, k=k, mode=mode, reindex_on_drift=policy, offset=offset,
                    **_filters(globs, kinds, languages),
                )  # fmt: skip
            except RagrafError as exc:
                if queries is None:
                    raise
                _finish(_error_envelope("search", exc), as_json, lambda e: render_search(e, budget))  # type: ignore[arg-type]
                code = max(code, exc.exit_code)  # the line's own error, not the refusal's 3
                continue
            more = _again(_argv()) if queries is None else None
            code = max(code, _finish(env, as_json, lambda e, more=more: render_search(e, budget, more), q))  # type: ignore[arg-type]
    return code


@main.command("localize")
@click.argument("source", metavar="FILE|-")
@click.option("-k", "k", default=5, show_default=True, help="Number of files (at most 10).")
@click.option("--budget", type=int, default=None, help="Byte budget of the text output (default 16 KiB).")
@filter_options
@policy_option
@common
def localize_cmd(
    root: Path,
    as_json: bool,
    source: str,
    k: int,
    budget: int | None,
    policy: str | None,
    globs: tuple[str, ...] = (),
    kinds: tuple[str, ...] = (),
    languages: tuple[str, ...] = (),
) -> int:
    """The files an issue report (FILE, or - for stdin) most likely asks to change, with the evidence.

    \b
    Examples:
      ragraf localize issue.md
      gh issue view 123 | ragraf localize - -k 10
    """
    text = _report_text(source)
    with _open(root) as idx:
        env = idx.localize(text, k=k, reindex_on_drift=policy, **_filters(globs, kinds, languages))
        budget = budget or idx.settings.budget_bytes
    return _finish(env, as_json, lambda e: render_localize(e, budget))  # type: ignore[arg-type]


def _report_text(source: str) -> str:
    """A report's text from a file or stdin, as UTF-8 (undecodable bytes replaced, said by no error)."""
    # Answered by a running server, a relative FILE and stdin are the calling shell's (cli_socket.py).
    meta = click.get_current_context().meta
    folder, stdin = meta.get("ragraf.cwd", "."), meta.get("ragraf.stdin")
    try:
        if source == "-":
            data = sys.stdin.buffer.read() if stdin is None else stdin
        else:
            data = Path(folder, source).read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read {source}: {exc.strerror}", suggest="give a readable file, or - for stdin"
        ) from None
    return data.decode("utf-8", errors="replace")


@main.command("def")
@click.argument("name")
@click.option("--body", "include_body", is_flag=True, help="Also print each definition's lines.")
@offset_option
@filter_options
@policy_option
@common
def def_cmd(
    root: Path,
    as_json: bool,
    name: str,
    policy: str | None,
    include_body: bool = False,
    offset: int = 0,
    globs: tuple[str, ...] = (),
    kinds: tuple[str, ...] = (),
    languages: tuple[str, ...] = (),
) -> int:
    """Where NAME is defined (exact, case-insensitive, then Class.method / pkg.Func).

    \b
    Examples:
      ragraf def TCPConnector
      ragraf def TCPConnector.connect --body
      ragraf def parse --kind code -g 'src/**'
    """
    with _open(root) as idx:
        env = idx.find_symbol(
            name, reindex_on_drift=policy, offset=offset, include_body=include_body,
            **_filters(globs, kinds, languages),
        )  # fmt: skip
        return _finish(env, as_json, lambda e: render_facts(e, None, _again(_argv())))


@main.command("refs")
@click.argument("name")
@click.option("--calls", is_flag=True, help="Only calls of NAME.")
@offset_option
@filter_options
@policy_option
@common
def refs_cmd(
    root: Path,
    as_json: bool,
    name: str,
    calls: bool,
    policy: str | None,
    offset: int = 0,
    globs: tuple[str, ...] = (),
    kinds: tuple[str, ...] = (),
    languages: tuple[str, ...] = (),
) -> int:
    """Who references (or --calls) NAME, grouped by enclosing definition.

    \b
    Examples:
      ragraf refs resolve_host
      ragraf refs resolve_host --calls --kind test    # the tests that call it
    """
    with _open(root) as idx:
        env = idx.find_references(
            name, calls=calls, reindex_on_drift=policy, offset=offset, **_filters(globs, kinds, languages)
        )
        return _finish(env, as_json, lambda e: render_facts(e, None, _again(_argv())))


def _graph_text(env: Envelope) -> str:
    from ragraf.api.graph_render import render_graph

    return render_graph(env)


@main.command("callees")
@click.argument("name")
@policy_option
@common
def callees_cmd(root: Path, as_json: bool, name: str, policy: str | None) -> int:
    """What NAME calls: each call site with its line, resolved (exact, import, name) or unresolved.

    \b
    Example:
      ragraf callees TCPConnector.connect
    """
    with _open(root) as idx:
        return _finish(idx.callees(name, reindex_on_drift=policy), as_json, _graph_text)


@main.command("callers")
@click.argument("name")
@click.option(
    "--depth", type=int, default=1, show_default=True, help="Hops of callers to follow (at most 10)."
)
@click.option("--budget", type=int, default=200, show_default=True, help="At most this many definitions.")
@policy_option
@common
def callers_cmd(root: Path, as_json: bool, name: str, depth: int, budget: int, policy: str | None) -> int:
    """Who calls NAME, transitively to --depth, each with its distance and chain of calls.

    \b
    Example:
      ragraf callers resolve_host --depth 3
    """
    with _open(root) as idx:
        env = idx.callers(name, depth=depth, budget=budget, reindex_on_drift=policy)
        return _finish(env, as_json, _graph_text)


@main.command("graph")
@click.argument("name")
@click.option("--depth", type=int, default=1, show_default=True, help="Hops to follow (at most 10).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True)
@click.option("--budget", type=int, default=200, show_default=True, help="At most this many definitions.")
@policy_option
@common
def graph_cmd(
    root: Path, as_json: bool, name: str, depth: int, direction: str, budget: int, policy: str | None
) -> int:
    """The definitions around NAME (callers: in, callees: out) with the edges between them.

    \b
    Example:
      ragraf graph TCPConnector.connect --direction out --depth 2
    """
    with _open(root) as idx:
        env = idx.graph(name, depth=depth, direction=direction, budget=budget, reindex_on_drift=policy)
        return _finish(env, as_json, _graph_text)


@main.command("impact")
@click.option("--staged", is_flag=True, help="The staged change (git diff --cached).")
@click.option("--rev", "rev_range", metavar="A..B", help="The change between two git revisions.")
@click.option("--diff", "diff_file", metavar="FILE|-", help="A unified diff from a file, or - for stdin.")
@click.option(
    "--depth", type=int, default=10, show_default=True, help="Hops of callers to follow (at most 10)."
)
@click.option("--budget", type=int, default=1000, show_default=True, help="At most this many definitions.")
@policy_option
@common
def impact_cmd(
    root: Path,
    as_json: bool,
    staged: bool,
    rev_range: str | None,
    diff_file: str | None,
    depth: int,
    budget: int,
    policy: str | None,
) -> int:
    """What a change reaches: touched definitions, their callers, the tests to run (default: the
    work tree against the index revision).

    \b
    Examples:
      ragraf impact                     # the work tree's change
      ragraf impact --staged
      ragraf impact --rev main..HEAD
      git diff | ragraf impact --diff -
    """
    diff = None
    if diff_file is not None:
        try:
            data = sys.stdin.buffer.read() if diff_file == "-" else Path(diff_file).read_bytes()
        except OSError as exc:
            raise UsageError(
                f"cannot read the diff {diff_file}: {exc.strerror}", suggest="give a readable file"
            ) from None
        diff = data.decode("utf-8", "replace")
    with _open(root) as idx:
        env = idx.impact(
            staged=staged, rev=rev_range, diff=diff, depth=depth, budget=budget, reindex_on_drift=policy
        )
        return _finish(env, as_json, _graph_text)


@main.command("map")
@click.option("--budget", type=int, default=1024, show_default=True, help="Tokens the map may take.")
@click.option(
    "--focus", "focus", multiple=True, metavar="PATH|NAME", help="Rank around these paths or names."
)
@policy_option
@common
def map_cmd(root: Path, as_json: bool, budget: int, focus: tuple[str, ...], policy: str | None) -> int:
    """The most central definitions as files with their key signatures, fitted to --budget tokens.

    \b
    Examples:
      ragraf map --budget 2000
      ragraf map --focus src/app/server.py
    """
    with _open(root) as idx:
        env = idx.repo_map(budget=budget, focus=list(focus), reindex_on_drift=policy)
        return _finish(env, as_json, _graph_text)


@main.command("related")
@click.argument("spec", metavar="PATH:LINE")
@click.option("-k", "k", default=10, show_default=True, help="Number of results (at most 50).")
@policy_option
@common
def related_cmd(root: Path, as_json: bool, spec: str, k: int, policy: str | None) -> int:
    """Code like the definition at PATH:LINE: shared identifiers, callers and callees.

    \b
    Example:
      ragraf related src/app/server.py:15
    """
    with _open(root) as idx:
        return _finish(idx.related(spec, k=k, reindex_on_drift=policy), as_json, _graph_text)


@main.command("outline")
@click.argument("path")
@policy_option
@common
def outline_cmd(root: Path, as_json: bool, path: str, policy: str | None) -> int:
    """The definitions of PATH as a tree, with lines.

    \b
    Example:
      ragraf outline src/app/server.py
    """
    with _open(root) as idx:
        return _finish(idx.outline(path, reindex_on_drift=policy), as_json, render_outline)


@main.command("read")
@click.argument("spec", metavar="PATH[:START-END]")
@common
def read_cmd(root: Path, as_json: bool, spec: str) -> int:
    """The file as it is on disk now, with line numbers; says whether it differs from the index.

    \b
    Examples:
      ragraf read src/app/server.py
      ragraf read src/app/server.py:10-40
    """
    with _open(root) as idx:
        return _finish(idx.read(spec), as_json, render_read)


@main.command("status")
@policy_option
@common
def status_cmd(root: Path, as_json: bool, policy: str | None) -> int:
    """The current revision and what changed on disk since.

    \b
    Examples:
      ragraf status
      ragraf status --json
    """
    with _open(root) as idx:
        return _finish(idx.status(reindex_on_drift=policy), as_json, render_status)


@main.command("drift")
@policy_option
@common
def drift_cmd(root: Path, as_json: bool, policy: str | None) -> int:
    """The open drift-ledger entries: what changed on disk since the current revision.

    \b
    Example:
      ragraf drift
    """
    with _open(root) as idx:
        return _finish(idx.drift(reindex_on_drift=policy), as_json, render_drift)


@main.command("changes")
@click.option("--from", "from_rev", required=True, help="The earlier revision, e.g. rev-0003.")
@click.option("--to", "to_rev", default=None, help="The later revision (default: the current one).")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "md", "json", "html"]), default="text", show_default=True
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report to a file."
)
@policy_option
@common
def changes_cmd(
    root: Path,
    as_json: bool,
    from_rev: str,
    to_rev: str | None,
    fmt: str,
    output: Path | None,
    policy: str | None,
) -> int:
    """What changed in knowledge between two revisions: files, symbols, and the ledger behind them.

    \b
    Examples:
      ragraf changes --from rev-0003
      ragraf changes --from rev-0003 --to rev-0005 --json
    """
    with _open(root) as idx:
        env = idx.changes(from_rev, to_rev, reindex_on_drift=policy)
    if env.state == "refused" or (as_json and not output):
        return _finish(env, as_json, lambda e: render_facts(e))
    from ragraf.api.changes_format import render_changes

    text = json.dumps(env.to_dict(), ensure_ascii=False) if as_json else render_changes(env.results[0], fmt)
    if not output:
        click.echo(text)
        return 0
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot write {output}: {exc.strerror}", suggest="give -o a path in a folder that exists"
        ) from None
    click.echo(f"wrote {output}", err=as_json)
    return 0


@main.command("revisions")
@common
def revisions_cmd(root: Path, as_json: bool) -> int:
    """The retained revisions, oldest first.

    \b
    Example:
      ragraf revisions
    """
    with _open(root) as idx:
        env = idx.revisions()
    if as_json:
        _print_json(env.to_dict())
        return 0
    click.echo(render_revisions(env, header=False))
    return 0


@main.command("gc")
@common
def gc_cmd(root: Path, as_json: bool) -> int:
    """Retention: keep the last N revisions (keep_revisions, default 20), the newest revision of
    each of the last 4 branches, and what they reference.

    \b
    Example:
      ragraf gc
    """
    with _open(root) as idx:
        data = idx.gc()
    if as_json:
        _print_json(data)
    else:
        click.echo(
            f"kept the last {data['keep']} revisions; removed {data['revisions_removed']} revisions, "
            f"{data['contents_removed']} file contents, {data['chunks_removed']} chunks"
        )
    return 0


@main.command("doctor")
@click.option("--pull", is_flag=True, help="Pull the configured model into Ollama when it is missing.")
@click.option("--check", is_flag=True, help="Also verify every invariant of the index data.")
@common
def doctor_cmd(root: Path, as_json: bool, pull: bool, check: bool) -> int:
    """Is everything healthy: the index, the embedder and its dimension, (--check) the data.

    \b
    Examples:
      ragraf doctor
      ragraf doctor --check          # also verify every invariant of the index data
    """
    with _open(root) as idx:
        env = idx.doctor(pull=pull, check=check)
    if as_json:
        _print_json(env.to_dict())
    else:
        for c in env.results:
            click.echo(
                f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}"
                + (f"\n     → {c['suggest']}" if c["suggest"] else "")
            )
    return 1 if env.error else 0


@main.group("cache")
def cache_group() -> None:
    """The embedding cache shared by every index on this machine.

    \b
    Examples:
      ragraf cache stats
      ragraf cache prune --older-than 30
    """


@cache_group.command("stats")
@common
def cache_stats_cmd(root: Path, as_json: bool) -> int:
    """How many vectors the cache holds, per model, and where.

    \b
    Example:
      ragraf cache stats
    """
    from dataclasses import asdict

    from ragraf.embed import open_cache

    stats = asdict(open_cache(_open(root).settings).stats())
    if as_json:
        _print_json({"op": "cache", **stats})
    else:
        click.echo(
            f"{stats['path'] or 'cache disabled (RAGRAF_CACHE=0)'}: {stats['vectors']} vectors, {stats['file_bytes']:,} bytes"
        )
        for m in stats["models"]:
            click.echo(f"  {m['model_id']}: {m['vectors']} vectors")
    return 0


@cache_group.command("prune")
@click.option("--model", "models", multiple=True, help="Drop this model's vectors (repeatable).")
@click.option(
    "--older-than", "days", type=float, default=None, help="Drop vectors stored more than DAYS ago."
)
@common
def cache_prune_cmd(root: Path, as_json: bool, models: tuple[str, ...], days: float | None) -> int:
    """Remove vectors by model and/or age.

    \b
    Examples:
      ragraf cache prune --older-than 30
      ragraf cache prune --model ollama:nomic-embed-text
    """
    from ragraf.embed import open_cache

    if not models and days is None:
        raise click.UsageError("say what to prune: --model MODEL and/or --older-than DAYS")
    removed = open_cache(_open(root).settings).prune(list(models) or None, days)
    if as_json:
        _print_json({"op": "cache", "removed": removed})
    else:
        click.echo(f"removed {removed} vectors")
    return 0


def _register_migrate(group: click.Group) -> None:
    try:
        from ragraf.store.migrate import register
    except ImportError:  # the PostgreSQL extra is not installed

        @group.command("migrate", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
        def migrate_cmd() -> None:
            """Copy this folder's SQLite index to PostgreSQL (needs the postgres extra)."""
            click.echo(
                "ragraf migrate: the PostgreSQL store is not installed\n  → pip install 'ragraf[postgres]'",
                err=True,
            )
            sys.exit(1)
    else:
        register(group)


if __name__ == "__main__":
    main()
