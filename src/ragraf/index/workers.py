"""Chunking (and later facts) of new content, spread over the machine's cores for big batches."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ragraf.chunking import chunk_text
from ragraf.config import Settings
from ragraf.corpus import Unindexable, extract
from ragraf.store import ChunkRecord
from ragraf.tokens import index_text

ContentKey = tuple[str, str, str]
# Below this many files a pool costs more to start than it saves.
_POOL_MIN_FILES = 64


def chunk_records(text: str, language: str, settings: Settings) -> list[ChunkRecord]:
    """The chunks of one file's text, with their lexical index text."""
    chunks = chunk_text(text, language, settings.chunk_max_chars, settings.chunk_min_chars)
    return [
        ChunkRecord(i, c.start_line, c.end_line, c.symbol, c.text, index_text(c.text + "\n" + (c.symbol or "")))
        for i, c in enumerate(chunks)
    ]


def prepare(job: tuple[ContentKey, str, Settings]) -> tuple[ContentKey, list[ChunkRecord] | None]:
    """Read, verify and chunk one file; None when it changed or vanished since it was hashed."""
    key, path, settings = job
    try:
        ex = extract(Path(settings.root) / path, path, settings.max_line_chars)
    except (Unindexable, OSError):
        return key, None
    if ex.sha256 != key[0]:
        return key, None  # changed again since hashing: the next run picks it up
    return key, chunk_records(ex.text, key[1], settings)


def prepare_all(jobs: list[tuple[ContentKey, str]], settings: Settings) -> Iterator[tuple[ContentKey, list[ChunkRecord] | None]]:
    """prepare() for every job, in order, on all cores when the batch is big enough."""
    tasks = [(key, path, settings) for key, path in jobs]
    workers = min(os.cpu_count() or 1, 8)
    if len(tasks) < _POOL_MIN_FILES or workers < 2:
        yield from map(prepare, tasks)
        return
    # spawn, not fork: the caller may be a threaded server.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(prepare, tasks, chunksize=16)
