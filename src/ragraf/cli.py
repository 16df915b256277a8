"""The `ragraf` command: a thin adapter from arguments to the operations layer and back."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ragraf.api import Envelope, Index, error_envelope
from ragraf.api.render import render_search
from ragraf.errors import RagrafError
from ragraf.index.progress import make_progress


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, default=str))


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
    @functools.wraps(fn)
    def wrapper(root: Path, as_json: bool, **kwargs: Any) -> None:
        op = fn.__name__.removesuffix("_cmd")
        try:
            code = fn(root=root, as_json=as_json, **kwargs)
        except RagrafError as exc:
            if as_json:
                _print_json(error_envelope(op, exc).to_dict())
            msg = f"ragraf {op}: {exc.message}"
            if exc.suggest:
                msg += f"\n  → {exc.suggest}"
            click.echo(msg, err=True)
            sys.exit(exc.exit_code)
        sys.exit(code or 0)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ragraf")
def main() -> None:
    """ragraf: an honest, fast knowledge index of a code repository for AI coding agents."""


@main.command("index")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--full", is_flag=True, help="Re-read every file and rebuild (also repairs a corrupt index).")
@click.option("--dry-run", is_flag=True, help="Show what would be indexed, by folder; change nothing.")
@click.option("--no-wait", is_flag=True, help="Fail at once if another indexer holds the lock.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@common
def index_cmd(
    root: Path, as_json: bool, path: Path | None, full: bool, dry_run: bool, no_wait: bool, quiet: bool
) -> int:
    """Index PATH (default: --root) incrementally; a new revision when something changed."""
    idx = Index.open(path or root)
    progress = make_progress(quiet or as_json)
    report = idx.index(full=full, dry_run_only=dry_run, progress=progress, wait=not no_wait)
    data = report if isinstance(report, dict) else report.to_dict()
    if as_json:
        _print_json(data)
    elif dry_run:
        _print_dry_run(data)
    else:
        files = data["files"]
        if data.get("reason"):
            click.echo(str(data["reason"]))
        head = f"{data['index_rev']}" if data["new_revision"] else f"up to date at {data['index_rev']}"
        click.echo(
            f"{head}: {files['added']} added, {files['modified']} modified, {files['deleted']} deleted, "
            f"{files['unchanged']} unchanged; {data['chunks']['new']} new chunks of {data['chunks']['total']} "
            f"({data['duration_s']:.2f} s)"
        )
    return 0


def _print_dry_run(data: dict[str, Any]) -> None:
    click.echo(
        f"would index {data['files']} files ({data['bytes']:,} bytes) in {data['chunks']} chunks; "
        f"{data['files_to_process']} files to (re)process"
    )
    click.echo(f"{'folder':<50} {'files':>7} {'bytes':>12} {'chunks':>7}")
    for folder, row in data["folders"].items():
        click.echo(f"{folder:<50} {row['files']:>7} {row['bytes']:>12,} {row['chunks']:>7}")
    if data["skipped"]:
        click.echo("skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(data["skipped"].items())))


def _search_lines(queries_file: Path) -> list[str]:
    queries = []
    for line in queries_file.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            with contextlib.suppress(ValueError, AttributeError):
                line = str(json.loads(line).get("query", ""))
        queries.append(line)
    return queries


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
@common
def search_cmd(
    root: Path, as_json: bool, query: str | None, k: int, queries: Path | None, mode: str, budget: int | None
) -> int:
    """Search the index: the best chunks for QUERY with path:line."""
    if query is None and queries is None:
        raise click.UsageError("give a QUERY or --queries FILE")
    with Index.open(root) as idx:
        budget = budget or idx.settings.budget_bytes
        for q in [query] if query is not None else _search_lines(queries):  # type: ignore[arg-type]
            try:
                env = idx.search(q, k=k, mode=mode)
            except RagrafError as exc:
                if queries is None:
                    raise
                env = error_envelope("search", exc)
            _emit(env, as_json, budget)
    return 0


def _emit(env: Envelope, as_json: bool, budget: int) -> None:
    if as_json:
        _print_json(env.to_dict())
    else:
        click.echo(render_search(env, budget))


@main.command("status")
@common
def status_cmd(root: Path, as_json: bool) -> int:
    """The current revision and what changed on disk since."""
    with Index.open(root) as idx:
        env = idx.status()
    if as_json:
        _print_json(env.to_dict())
        return 0
    info = env.results[0]
    rev = info["revision"]
    click.echo(
        f"{env.index_rev} ({rev['created_at']}): {rev['files']} files, {rev['chunks']} chunks; state {env.state}"
    )
    click.echo(f"index: {info['index_file']}")
    for w in env.stale_warnings:
        click.echo(f"  {w.path}: {w.reason} (suggest {w.suggest})")
    return 0


@main.command("revisions")
@common
def revisions_cmd(root: Path, as_json: bool) -> int:
    """The retained revisions, oldest first."""
    with Index.open(root) as idx:
        env = idx.revisions()
    if as_json:
        _print_json(env.to_dict())
        return 0
    for r in env.results:
        click.echo(
            f"{r['rev']}  {r['created_at']}  {r['files']:>6} files {r['chunks']:>7} chunks  {r['corpus_hash'][:12]}"
            + (f"  {r['git_branch'] or ''}@{r['git_head'][:10]}" if r["git_head"] else "")
        )
    return 0


@main.command("gc")
@common
def gc_cmd(root: Path, as_json: bool) -> int:
    """Retention: keep the last N revisions (keep_revisions, default 20) and what they reference."""
    with Index.open(root) as idx:
        data = idx.gc()
    if as_json:
        _print_json(data)
    else:
        click.echo(
            f"kept the last {data['keep']} revisions; removed {data['revisions_removed']} revisions, "
            f"{data['contents_removed']} file contents, {data['chunks_removed']} chunks"
        )
    return 0


if __name__ == "__main__":
    main()
