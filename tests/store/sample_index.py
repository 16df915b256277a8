"""A small real index for store tests: contents chunked and fact-extracted by the real pipeline."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from ragraf.config import Settings
from ragraf.index.workers import analyse
from ragraf.languages import language_of
from ragraf.store import ContentBundle, DriftEvent, ManifestEntry, NewRevision, Revision, Store

CHUNKER = "chunker-test"
StoreFactory = Callable[..., Store]


def bundle(settings: Settings, path: str, text: str) -> ContentBundle:
    """Chunks and facts of one file, made by the real pipeline."""
    language = language_of(path)
    chunks, facts, refs, status = analyse(text, language, settings)
    return ContentBundle((sha(text), language, CHUNKER), chunks, facts, status, refs)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def commit_files(
    store: Store, settings: Settings, files: dict[str, str], events: list[DriftEvent] | None = None
) -> Revision:
    """Store the files' contents and commit them as the next revision."""
    bundles = {path: bundle(settings, path, text) for path, text in files.items()}
    ids = store.add_contents(list(bundles.values()))
    manifest = [
        ManifestEntry(path, b.key[0], ids[b.key], len(files[path])) for path, b in sorted(bundles.items())
    ]
    corpus = hashlib.sha1("".join(f"{e.path}\0{e.sha256}\n" for e in manifest).encode()).hexdigest()
    return store.commit_revision(NewRevision(corpus, "test-version", None, None, manifest, events or []))
