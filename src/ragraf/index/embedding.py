"""The second phase of indexing: attach embeddings to a committed revision, in batches, resumably."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np

from ragraf.config import Settings
from ragraf.corpus.gitrepo import recently_changed
from ragraf.embed import Embedder, NullCache, embed_with_cache, open_cache
from ragraf.embed.errors import EmbedInterrupted
from ragraf.errors import EmbedderError
from ragraf.index.progress import Progress
from ragraf.index.queue import recent_paths, value_order
from ragraf.store import ChunkHit, Store

# Chunks fetched, embedded and stored at a time: bounded memory, and vectors land (and coverage
# rises, and a killed run keeps them) every few batches rather than every 512 chunks.
_WINDOW = 128
# The static tier's windows: it embeds 4,096 chunks in a few CPU-seconds, and each window costs a
# query over the revision (2-4 s on 77,000 chunks under load: 600 windows of 128 took half an hour).
_FAST_WINDOW = 4096
EMBED_TEXT_CHARS = 1200  # ~ the model's 128 tokens and then some; the head of a chunk says most


def embed_text(hit: ChunkHit) -> str:
    """What the model sees of a chunk: where it lives, what it defines, then its first lines."""
    head = f"{hit.path}\n{hit.symbol}\n" if hit.symbol else f"{hit.path}\n"
    return head + hit.text[:EMBED_TEXT_CHARS]


def embed_revision(
    store: Store, settings: Settings, embedder: Embedder, rev_no: int, progress: Progress | None = None
) -> tuple[dict[str, int], str | None]:
    """Embed every chunk of the revision the store has no vector for; (counts, warning or None).

    Vectors land per batch, so a killed run resumes where it stopped; a provider that goes down
    stops this phase with a warning and leaves the lexical revision fully queryable. A transformer
    embeds the most valuable chunks first (index/queue.py), at most settings.embed_max_chunks of
    them per run; the static table, which embeds a whole revision in seconds, in chunk order.
    """
    progress = progress or Progress()
    counts: Counter[str] = Counter(computed=0, cache_hits=0, failed=0, tokens=0)
    model, dim = embedder.model_id, embedder.dim
    # A static table computes a vector faster than the cache finds one: it skips the cache.
    cache = open_cache(settings) if getattr(embedder, "cacheable", True) else NullCache()
    total = _missing_count(store, rev_no, model)
    mark = getattr(store, "mark_covered", None)  # lets later reads skip counting the vectors
    if not total:
        if mark is not None:
            mark(rev_no, model)
        return dict(counts), None
    by_value = getattr(embedder, "cacheable", True)  # a slow tier; the static table is not cached
    windows, deferred = _windows_by_id(store, rev_no, model, _FAST_WINDOW), 0
    if by_value:
        order = value_order(store, rev_no, model, _recent(store, settings))
        budget = settings.embed_max_chunks or len(order)
        total, deferred = min(len(order), budget), max(0, len(order) - budget)
        windows = _windows_in_order(store, rev_no, order[:total])
    batches = -(-total // max(1, settings.embed_batch_size))
    progress.note(f"embedding {total} chunks in {batches} batches ({model})")
    if deferred:
        progress.note(
            f"embed_max_chunks = {settings.embed_max_chunks}: {deferred} less valuable chunks wait for "
            "the next `ragraf index` (the static tier answers for them meanwhile)"
        )
    progress.start("embedding chunks", total)
    stored = 0
    warning = None
    try:
        for window in windows:
            done_before = 0

            def advance(done: int, _total: int) -> None:
                nonlocal done_before
                progress.advance(done - done_before)
                done_before = done

            try:
                result = embed_with_cache(
                    embedder, cache, [embed_text(h) for h in window], settings.embed_batch_size, advance
                )
            except EmbedInterrupted as exc:
                result = exc.result
                warning = (
                    f"embedding stopped: {exc.message}; search answers lexically for what is not embedded "
                    f"({exc.suggest or 'run `ragraf index` again to resume'})"
                )
            else:  # the window's cached and repeated texts are done too, not only the computed ones
                progress.advance(len(window) - done_before)
            rows = [
                (h.chunk_id, np.asarray(v, dtype=np.float32).tobytes())
                for h, v in zip(window, result.vectors, strict=True)
                if v is not None
            ]
            store.add_vectors(model, rows, dim)
            stored += len(rows)
            counts.update(result.counts())
            for position, why in result.failures[:5]:
                progress.note(f"not embedded: {window[position].path}:{window[position].start_line} ({why})")
            if warning:
                break
    except EmbedderError as exc:  # the model would not even load
        warning = f"embedding skipped: {exc.message} ({exc.suggest})"
    finally:
        progress.done()
        close = getattr(cache, "close", None)
        if close:
            close()
    if warning:
        counts["failed"] = max(counts["failed"], total - stored)  # what this run left unembedded
        progress.note(warning)
    elif mark is not None and not counts["failed"] and not deferred:
        mark(rev_no, model)  # every window was embedded and stored: the revision is covered
    return dict(counts), warning


def _windows_by_id(store: Store, rev_no: int, model: str, size: int) -> Iterator[list[ChunkHit]]:
    """The chunks without a vector of model, `size` at a time in chunk order."""
    after = 0
    while window := store.chunks_missing_vectors(rev_no, model, size, after_id=after):
        yield window
        if len(window) < size:
            return  # a short window was the last: no need to scan the revision once more
        after = window[-1].chunk_id


def _windows_in_order(store: Store, rev_no: int, order: list[tuple[int, str]]) -> Iterator[list[ChunkHit]]:
    """The chunks of order ((chunk id, path), most valuable first), _WINDOW at a time, read by path."""
    for start in range(0, len(order), _WINDOW):
        part = order[start : start + _WINDOW]
        found = store.chunks_of_paths(rev_no, sorted({path for _id, path in part}))
        by_id = {hit.chunk_id: hit for hits in found.values() for hit in hits}
        window = [by_id[chunk_id] for chunk_id, _path in part if chunk_id in by_id]
        if window:
            yield window


def _recent(store: Store, settings: Settings) -> frozenset[str]:
    """The paths changed recently (index/queue.py): the last commits' and the newest modified."""
    mtimes = {path: entry.mtime_ns for path, entry in store.stat_cache().items()}
    return recent_paths(mtimes, recently_changed(settings.root))


def _missing_count(store: Store, rev_no: int, model: str) -> int:
    coverage = store.vector_coverage(rev_no, model)
    if coverage >= 1.0:
        return 0
    total = store.count_chunks(rev_no)
    return max(1, round(total * (1.0 - coverage)))
