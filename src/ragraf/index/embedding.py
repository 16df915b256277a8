"""The second phase of indexing: attach embeddings to a committed revision, in batches, resumably."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ragraf.config import Settings
from ragraf.embed import Embedder, NullCache, embed_with_cache, open_cache
from ragraf.embed.errors import EmbedInterrupted
from ragraf.errors import EmbedderError
from ragraf.index.progress import Progress
from ragraf.store import ChunkHit, Store

# Chunks fetched, embedded and stored at a time: bounded memory, and vectors land (and coverage
# rises, and a killed run keeps them) every few batches rather than every 512 chunks.
_WINDOW = 128
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
    stops this phase with a warning and leaves the lexical revision fully queryable.
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
    batches = -(-total // max(1, settings.embed_batch_size))
    progress.note(f"embedding {total} chunks in {batches} batches ({model})")
    progress.start("embedding chunks", total)
    after = 0
    stored = 0
    warning = None
    try:
        while True:
            window = store.chunks_missing_vectors(rev_no, model, _WINDOW, after_id=after)
            if not window:
                break
            after = window[-1].chunk_id
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
            if warning or len(window) < _WINDOW:
                break  # a short window was the last: no need to scan the revision once more
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
    elif mark is not None and not counts["failed"]:
        mark(rev_no, model)  # every window was embedded and stored: the revision is covered
    return dict(counts), warning


def _missing_count(store: Store, rev_no: int, model: str) -> int:
    coverage = store.vector_coverage(rev_no, model)
    if coverage >= 1.0:
        return 0
    total = store.count_chunks(rev_no)
    return max(1, round(total * (1.0 - coverage)))
