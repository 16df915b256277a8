"""Chunking and facts of new content, spread over the machine's cores for big batches."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ragraf.chunking import SymbolSpan, chunk_text, parse
from ragraf.config import Settings
from ragraf.corpus import Unindexable, extract
from ragraf.facts import extract_facts, qualified_name
from ragraf.languages import TREE_SITTER_LANGUAGES
from ragraf.store import ChunkRecord, ContentBundle, ContentKey, FactRecord, RefSites
from ragraf.store.base import pack_sites
from ragraf.tokens import index_text

# Below this many files a pool costs more to start than it saves.
_POOL_MIN_FILES = 64


def _facts(
    text: str, language: str, tree: object | None
) -> tuple[list[FactRecord], list[RefSites], str, list[SymbolSpan] | None]:
    """Definition and import rows, references by name, their status, and the definitions that
    name chunks (None: the chunker guesses)."""
    facts = extract_facts(text, language, tree=tree)  # type: ignore[arg-type]
    if not facts.supported:
        return [], [], "unsupported", None
    lines = text.split("\n")
    rows: list[FactRecord] = []
    symbols: list[SymbolSpan] = []
    for d in facts.definitions:
        body = "\n".join(lines[d.start_line - 1 : d.end_line])
        digest = hashlib.sha1(body.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
        rows.append(
            FactRecord(
                "def",
                d.name,
                d.kind,
                d.container,
                d.line,
                d.start_line,
                d.end_line,
                d.signature,
                False,
                digest,
            )
        )
        symbols.append(SymbolSpan(qualified_name(d), d.start_line, d.end_line))
    rows.extend(
        FactRecord("import", i.name or i.module, None, None, i.line, i.line, i.line, i.module)
        for i in facts.imports
    )
    sites: dict[str, list[tuple[int, bool, str | None]]] = {}
    for r in facts.references:
        sites.setdefault(r.name, []).append((r.line, r.is_call, r.container))
    refs = [RefSites(name, pack_sites(uses)) for name, uses in sites.items()]
    return rows, refs, "partial" if facts.partial else "supported", symbols


def analyse(
    text: str, language: str, settings: Settings
) -> tuple[list[ChunkRecord], list[FactRecord], list[RefSites], str]:
    """Chunks and facts of one file's text, from one parse."""
    tree = parse(text, language) if language in TREE_SITTER_LANGUAGES else None
    facts, refs, status, symbols = _facts(text, language, tree)
    if language == "markdown":
        symbols = None  # the heading chunker names its own sections
    chunks = chunk_text(text, language, settings.chunk_max_chars, settings.chunk_min_chars, symbols, tree)
    records = [
        ChunkRecord(
            i, c.start_line, c.end_line, c.symbol, c.text, index_text(c.text + "\n" + (c.symbol or ""))
        )
        for i, c in enumerate(chunks)
    ]
    return records, facts, refs, status


def prepare(job: tuple[ContentKey, str, Settings]) -> ContentBundle | None:
    """Read, verify, chunk and extract facts of one file; None when it changed or vanished since hashing."""
    key, path, settings = job
    try:
        ex = extract(Path(settings.root) / path, path, settings.max_line_chars)
    except (Unindexable, OSError):
        return None
    if ex.sha256 != key[0]:
        return None  # changed again since hashing: the next run picks it up
    chunks, facts, refs, status = analyse(ex.text, key[1], settings)
    return ContentBundle(key, chunks, facts, status, refs)


def prepare_all(jobs: list[tuple[ContentKey, str]], settings: Settings) -> Iterator[ContentBundle | None]:
    """prepare() for every job, in order, on all cores when the batch is big enough."""
    tasks = [(key, path, settings) for key, path in jobs]
    workers = min(os.cpu_count() or 1, 8)
    if len(tasks) < _POOL_MIN_FILES or workers < 2:
        yield from map(prepare, tasks)
        return
    # spawn, not fork: the caller may be a threaded server.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_exit_with, initargs=(os.getpid(),)
    ) as pool:
        yield from pool.map(prepare, tasks, chunksize=16)


def _exit_with(parent: int) -> None:
    """A worker ends when the indexer that started it is gone (killed with SIGKILL, say): a pool
    worker waits for work forever otherwise, holding its memory."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="ragraf-parent-watch", daemon=True).start()
