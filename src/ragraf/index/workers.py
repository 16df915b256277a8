"""Chunking and facts of new content, spread over the machine's cores for big batches."""

from __future__ import annotations

import gc
import hashlib
import json
import multiprocessing
import os
import signal
import struct
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from itertools import accumulate, islice
from pathlib import Path

from ragraf.chunking import SymbolSpan, chunk_text, parse
from ragraf.config import Settings
from ragraf.corpus.extract import Unindexable, extract
from ragraf.facts import qualified_name
from ragraf.facts.extract import Sites, compile_queries, extract_index_facts
from ragraf.header_language import content_language
from ragraf.languages import TREE_SITTER_LANGUAGES
from ragraf.store import ChunkHit, ChunkRecord, ContentBundle, ContentKey, FactRecord, RefSites
from ragraf.tokens import index_texts

# Below this many files a pool costs more to start than it saves.
_POOL_MIN_FILES = 64
_CHUNK = 16  # files a pool worker takes at a time
# ... or fewer, up to this much source: the bundles of a few submissions wait in this process, and
# sixteen 1 MB generated headers (register maps) come back as hundreds of MB of chunks and facts.
_CHUNK_BYTES = 1 << 20
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode  # as pack_sites writes sites
_MARK = struct.Struct("q")  # the job a worker has under way
FAILED = "failed"  # the facts status of a file whose parse ran past the timeout or crashed


def _facts(
    text: str, language: str, tree: object | None
) -> tuple[list[FactRecord], list[RefSites], str, list[SymbolSpan] | None]:
    """Definition and import rows, references by name, their status, and the definitions that
    name chunks (None: the chunker guesses)."""
    facts, sites = extract_index_facts(text, language, tree=tree)  # type: ignore[arg-type]
    if not facts.supported:
        return [], [], "unsupported", None
    # Where each line starts (one past the end last), so a definition's body is one slice of the text.
    starts = [total + i for i, total in enumerate(accumulate(map(len, text.split("\n")), initial=0))]
    last = len(starts) - 1
    rows: list[FactRecord] = []
    symbols: list[SymbolSpan] = []
    for d in facts.definitions:
        body = text[starts[min(d.start_line - 1, last)] : starts[min(d.end_line, last)] - 1]
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
    if sites is None:
        sites = {}
        for r in facts.references:
            sites.setdefault(r.name, []).append((r.line, int(r.is_call), r.container))
    return rows, _packed(sites), "partial" if facts.partial else "supported", symbols


def _packed(sites: Sites) -> list[RefSites]:
    """A row per name, its sites as pack_sites() gives them (the same string), from one encoder
    call per file: the JSON of every name's list, cut at the boundaries between lists."""
    if not sites:
        return []
    lists = list(sites.values())
    # Each list holds a site at least, so every boundary reads "]],[[", which only a container
    # holding those characters could add: then the count is off, and each list is encoded alone.
    parts = _COMPACT_JSON(lists)[3:-3].split("]],[[")
    if len(parts) != len(lists):
        return [RefSites(name, _COMPACT_JSON(uses)) for name, uses in sites.items()]
    return [RefSites(name, "[[" + part + "]]") for name, part in zip(sites, parts, strict=True)]


def analyse(
    text: str, language: str, settings: Settings
) -> tuple[list[ChunkRecord], list[FactRecord], list[RefSites], str]:
    """Chunks and facts of one file's text, from one parse."""
    tree = parse(text, language) if language in TREE_SITTER_LANGUAGES else None
    facts, refs, status, symbols = _facts(text, language, tree)
    if language == "markdown":
        symbols = None  # the heading chunker names its own sections
    chunks = chunk_text(text, language, settings.chunk_max_chars, settings.chunk_min_chars, symbols, tree)
    bodies = index_texts([c.text + "\n" + (c.symbol or "") for c in chunks])
    records = [
        ChunkRecord(i, c.start_line, c.end_line, c.symbol, c.text, body[len(c.text) + 1 :])
        for i, (c, body) in enumerate(zip(chunks, bodies, strict=True))
    ]
    return records, facts, refs, status


def prepare(job: tuple[ContentKey, str, Settings], parsed: bool = True) -> ContentBundle | None:
    """Read, verify, chunk and extract facts of one file; None when it changed or vanished since
    hashing. Not `parsed`: chunked by lines, without facts (status "failed"). A key without a
    sha256 is hashed here, from the same read (a first index reads each file once)."""
    key, path, settings = job
    try:
        ex = extract(Path(settings.root) / path, path, settings.max_line_chars)
    except (Unindexable, OSError):
        return None
    if not key[0]:
        key = (ex.sha256, key[1], key[2])
    elif ex.sha256 != key[0]:
        return None  # changed again since hashing: the next run picks it up
    if not parsed:
        chunks, _, _, _ = analyse(ex.text, "text", settings)  # as plain text: lines, no parse
        return ContentBundle(key, chunks, [], FAILED, vectors=_static_vectors(settings, path, chunks))
    chunks, facts, refs, status = analyse(ex.text, content_language(key[1], path, ex.text), settings)
    return ContentBundle(key, chunks, facts, status, refs, _static_vectors(settings, path, chunks))


def _static_vectors(settings: Settings, path: str, chunks: list[ChunkRecord]) -> bytes:
    """The static tier's vectors of the chunks, packed, when the run embeds in its pass (b"" else)."""
    if not settings.static_model or not chunks:
        return b""
    from ragraf.embed.static import pass_tier
    from ragraf.index.embedding import embed_text

    tier = pass_tier(settings.static_model)
    if tier is None:
        return b""
    texts = [embed_text(ChunkHit(0, path, c.start_line, c.end_line, c.symbol, c.text, 0.0)) for c in chunks]
    return tier.embed(texts).tobytes()


def _prepare_in_time(
    job: tuple[ContentKey, str, Settings], mark: int | None = None, i: int = 0
) -> ContentBundle | None:
    """prepare() in a pool worker, which the kernel ends past the parse timeout; `mark`, an open
    file in the marks folder, holds `i` while the job is under way (-1 after).

    Tree-sitter's error recovery can run for minutes on a few hundred bytes of garbage, holding
    the GIL, and nothing in the process can stop it; SIGALRM's default action ends the worker.
    """
    if mark is not None:
        os.pwrite(mark, _MARK.pack(i), 0)
    timed = hasattr(signal, "setitimer")  # not on Windows: there the parse runs untimed
    if timed:
        signal.setitimer(signal.ITIMER_REAL, job[2].parse_timeout_s)
    try:
        return prepare(job)
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if mark is not None:
            os.pwrite(mark, _MARK.pack(-1), 0)


def _under_way(marks: Path) -> set[int]:
    """The jobs under way in the workers of a broken pool, from their marks (which are removed)."""
    found = set()
    for mark in marks.iterdir():
        data = mark.read_bytes()
        if len(data) == _MARK.size and (i := _MARK.unpack(data)[0]) >= 0:
            found.add(i)
        mark.unlink()
    return found


def prepare_all(jobs: list[tuple[ContentKey, str]], settings: Settings) -> Iterator[ContentBundle | None]:
    """prepare() for every job, in order: in worker processes, where the parse timeout holds.

    A big batch goes to a pool on all cores, a small one to one worker. Both are forked from this
    process when it runs a single thread (8 ms a worker). A threaded one (the MCP and HTTP
    servers), where forking is unsafe, forks them from a fork server that it starts once (about a
    second) and keeps, as it keeps a small batch's worker for the next (a server's live runs: a new
    worker cost each run about 0.1 s to start and to load its grammars again).

    When a worker ends (a parse past the timeout, a grammar that crashed), the jobs under way
    then are prepared one by one, each in a worker of its own; one that ends its worker again, or
    that was alone in the only worker, is chunked by lines, without facts. The rest go on in a new
    pool.
    """
    tasks = [(key, path, settings) for key, path in jobs]
    if not tasks:
        return
    methods = multiprocessing.get_all_start_methods()
    threaded = threading.active_count() > 1
    if len(tasks) >= _POOL_MIN_FILES:
        workers = min(os.cpu_count() or 1, 8)
        if not threaded and "fork" in methods and _resident_bytes() <= _FORK_MAX_RESIDENT:
            # Forked, the workers start with this process's modules and the facts queries of the
            # batch's languages, compiled here once rather than in each worker (the speed corpus's
            # 20 languages: 0.5 CPU-s a worker; a spawned worker's imports 0.2 more).
            method = "fork"
            compile_queries({key[1] for key, _ in jobs})
        else:
            # A threaded process forks the pool from its fork server: a spawned worker imports
            # everything anew, which a server's branch switch paid.
            method = "forkserver" if threaded and "forkserver" in methods else "spawn"
    elif not threaded and "fork" in methods:
        method, workers = "fork", 1
    elif "forkserver" in methods:
        method, workers = "forkserver", 1
    else:  # Windows: no fork at all, and a spawned worker costs more than a small batch
        yield from map(prepare, tasks)
        return
    alone: set[int] = set()
    given_up: set[int] = set()
    start = 0
    with _fewer_collections(), tempfile.TemporaryDirectory(prefix="ragraf-jobs-") as folder:
        marks = Path(folder)
        while start < len(tasks):
            if start in alone or start in given_up:
                yield (
                    prepare(tasks[start], parsed=False)
                    if start in given_up
                    else _prepare_alone(tasks[start], method)
                )
                start += 1
                continue
            end = min((i for i in alone | given_up if i > start), default=len(tasks))
            batch = range(start, end)
            try:
                with _kept_or_new(workers, method) as pool:
                    for bundle in _in_order(pool, tasks, marks, batch, workers):
                        yield bundle
                        start += 1
            except BrokenProcessPool:
                under_way = _under_way(marks)
                if len(under_way) == 1 and workers == 1:
                    given_up |= under_way  # it was alone in its worker already: no second wait
                else:
                    # With no job under way the worker was lost otherwise: the next job goes
                    # alone, so every round moves on.
                    alone |= under_way or {start}


# A forked worker's resident size counts its parent's pages: past this size (a user's program
# holding its own data, a repository of very many or long paths) the workers are spawned, about
# 95 MB each with their imports, rather than each counted at its parent's size. The indexer held
# 53 MB when it forked over the speed corpus, 95 MB over 100,000 files with short names.
_FORK_MAX_RESIDENT = 128 << 20


def _resident_bytes() -> int:
    """This process's resident memory now (Linux), or its peak where /proc is missing."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource  # POSIX: a system with fork has it

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes there, KiB elsewhere


# The bundles are lists and tuples by the hundred thousand, and hold no cycles; at the collector's
# default young threshold (700) a worker ran 1,500 collections over 3,000 files (0.22 of 12 CPU-s;
# 46 at these, 0.06) and the main process 1,160 over the speed corpus (0.43 CPU-s).
_FEWER_COLLECTIONS = (10_000, 50, 100)
_raised: list[tuple[int, int, int]] = []  # the threshold before the first batch, once per batch under way
_raised_lock = threading.Lock()


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """The collector's threshold raised while a batch's bundles come in; the last batch of those
    running at once (two threads) puts it back."""
    with _raised_lock:
        _raised.append(_raised[0] if _raised else gc.get_threshold())
        gc.set_threshold(*_FEWER_COLLECTIONS)
    try:
        yield
    finally:
        with _raised_lock:
            before = _raised.pop()
            if not _raised:
                gc.set_threshold(*before)


def _prepare_chunk(
    jobs: list[tuple[ContentKey, str, Settings]], marks: Path, first: int
) -> list[ContentBundle | None]:
    # One mark file per submission, rewritten in place: a file made and removed per job cost
    # four system calls and a path each.
    path = marks / str(first)
    mark = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        return [_prepare_in_time(job, mark, first + k) for k, job in enumerate(jobs)]
    finally:
        os.close(mark)
        path.unlink()


def _in_order(
    pool: ProcessPoolExecutor,
    tasks: list[tuple[ContentKey, str, Settings]],
    marks: Path,
    batch: range,
    workers: int,
) -> Iterator[ContentBundle | None]:
    """The bundles of tasks[batch], in order, a few submissions (_submissions) ahead of the
    caller: Executor.map would submit them all at once, and bundles done before the caller (the
    writes to the index) takes them would pile up in this process, the whole repository's chunks
    and facts at worst."""
    ahead = workers * 4
    pending: deque[Future[list[ContentBundle | None]]] = deque()
    submissions = _submissions(tasks, batch)
    while True:
        for first, last in islice(submissions, ahead - len(pending)):
            pending.append(pool.submit(_prepare_chunk, tasks[first:last], marks, first))
        if not pending:
            return
        yield from pending.popleft().result()


def _submissions(tasks: list[tuple[ContentKey, str, Settings]], batch: range) -> Iterator[tuple[int, int]]:
    """Consecutive [first, last) slices of batch: _CHUNK files each, fewer when they hold more
    than _CHUNK_BYTES of source (a file that has vanished counts as empty)."""
    first, size = batch.start, 0
    for i in batch:
        _, path, settings = tasks[i]
        if i > first and (i - first == _CHUNK or size >= _CHUNK_BYTES):
            yield first, i
            first, size = i, 0
        with suppress(OSError):
            size += os.stat(Path(settings.root) / path).st_size
    if first < batch.stop:
        yield first, batch.stop


def _prepare_alone(task: tuple[ContentKey, str, Settings], method: str) -> ContentBundle | None:
    try:
        with _pool(1, method) as pool:
            return pool.submit(_prepare_in_time, task).result()
    except BrokenProcessPool:
        return prepare(task, parsed=False)


_KEPT: list[ProcessPoolExecutor] = []  # a threaded process's one fork-server worker, between batches
_KEPT_LOCK = threading.Lock()


@contextmanager
def _kept_or_new(workers: int, method: str) -> Iterator[ProcessPoolExecutor]:
    """A pool for one batch. The one fork-server worker is kept for the next batch when the batch
    went well; a batch running beside it (another root's run) gets a worker of its own, and one
    that broke its worker (a parse past the timeout) or stopped early leaves no worker behind."""
    if method != "forkserver" or workers != 1:
        with _pool(workers, method) as pool:
            yield pool
        return
    with _KEPT_LOCK:
        pool = _KEPT.pop() if _KEPT else None
    pool = pool or _pool(1, method)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    with _KEPT_LOCK:
        keep = not _KEPT
        if keep:
            _KEPT.append(pool)
    if not keep:
        pool.shutdown(wait=False)


def _pool(workers: int, method: str) -> ProcessPoolExecutor:
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([__name__])  # workers start with this module imported
    served = method == "forkserver"
    return ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), served)
    )


def _start_worker(owner: int, served: bool) -> None:
    gc.set_threshold(*_FEWER_COLLECTIONS)  # a worker's whole life is bundles (above)
    if hasattr(signal, "SIGALRM"):  # the parse timeout ends the worker, whatever its parent handled
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    _exit_with(owner, served)


def _exit_with(owner: int, served: bool) -> None:
    """A worker ends when the process that made its pool is gone (an indexer or a server killed
    with SIGKILL or SIGTERM, say): a pool worker waits for work forever otherwise, holding its
    memory. A fork server's worker is the server's child, and holds the server's end of the line
    to the owner itself (multiprocessing hands it to every child), so neither would see the owner
    go: it asks whether the owner's pid still lives."""

    def gone() -> bool:
        if not served:
            return os.getppid() != owner
        try:
            os.kill(owner, 0)
        except (ProcessLookupError, PermissionError):  # gone, or its pid now another user's
            return True
        return False

    def watch() -> None:
        while not gone():
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="ragraf-owner-watch", daemon=True).start()
