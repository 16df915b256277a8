"""What every operation stands on: the settings, the store and embedder opened once, the current revision."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ragraf.config import Settings, load_settings
from ragraf.embed.factory import make_embedder
from ragraf.errors import IndexMissingError, RagrafError, UsageError
from ragraf.index.lock import WriterLock
from ragraf.store import Revision, Store, open_base, open_store

if TYPE_CHECKING:  # the embedder (numpy) and the overlay (the indexer) load only when a command uses them
    from ragraf.corpus.gitrepo import BaseRef
    from ragraf.embed.base import Embedder
    from ragraf.index.overlay import Seed

QUERY_TIMEOUT_S = 5.0


Op = TypeVar("Op", bound=Callable[..., Any])


def names_damage(op: Op) -> Op:
    """An operation that reaches a damaged page of the index file fails with index_corrupt (and
    `ragraf index --full` to rebuild), one that meets a full disk or a read-only home says so: not
    SQLite's error."""

    @functools.wraps(op)
    def checked(self: Session, *args: Any, **kwargs: Any) -> Any:
        try:
            return op(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            from ragraf.store.sqlite.connection import damage

            error = damage(exc, self.settings.db_path)
            if error is None:
                raise
            self.close()
            raise error from None

    return checked  # type: ignore[return-value]


class Session:
    """The plumbing of an Index: settings, the store and embedder (opened once), the current revision."""

    # Methods of the other rooms that Index composes, called across them: an index run before an
    # answer (ops/lifecycle.py), the guard (guarded.py) and a work tree's read (views.py).
    index: Callable[..., Any]
    _guard: Callable[..., Any]
    _view_begin: Callable[..., Any]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: Store | None = None
        self._embedder: Embedder | None = None
        self._embedder_made = False
        self._query_embedder: Embedder | None = None
        self._base_store: Store | None = None
        self._seed: Seed | None = None  # what a read just asked git, for the refresh it starts
        self._behind_cache: tuple[str, float, tuple[BaseRef, int | None] | None] | None = None

    @classmethod
    def open(cls, root: str | Path = ".", **overrides: Any) -> Self:
        """Settings for root (config files, RAGRAF_* env, then keyword overrides)."""
        home = overrides.pop("home", None)
        settings = load_settings(root, **overrides)
        if home is not None:
            settings = dataclasses.replace(settings, home=Path(home).expanduser().resolve())
        return cls(settings)

    def store(self) -> Store:
        if self._store is not None and self.settings.store == "sqlite" and not self.settings.db_path.exists():
            self.close()  # the index home was deleted under us: say so rather than answer from a ghost
        if self._store is None:
            self._store = open_store(self.settings)
        return self._store

    def embedder(self) -> Embedder | None:
        """The configured embedder (None for embedder = none); made once, loaded on first use."""
        if not self._embedder_made:
            self._embedder = make_embedder(self.settings)
            self._embedder_made = True
        return self._embedder

    def query_embedder(self) -> Embedder | None:
        """The embedder for queries: a remote one fails fast (one try, short timeout) so search
        answers degraded in seconds instead of retrying for the indexer's patience."""
        if self.settings.embedder.strip().lower() not in ("ollama", "openai"):
            return self.embedder()
        if self._query_embedder is None:
            from ragraf.embed.http import RetryPolicy  # httpx only for the HTTP providers

            timeout = min(QUERY_TIMEOUT_S, self.settings.embed_timeout_s)
            self._query_embedder = make_embedder(
                self.settings,
                timeout_s=timeout,
                # One try; a 429 asking for a second or two is waited within the query's budget.
                retry=RetryPolicy(max_attempts=1, budget_s=QUERY_TIMEOUT_S),
            )
        return self._query_embedder

    def _model(self) -> tuple[str, int | None, str | None]:
        """(model id, dim or None when unknown, why not) of the configured embedder."""
        try:
            embedder = self.embedder()
        except RagrafError as exc:
            return f"{self.settings.embedder}:unavailable", None, exc.message
        if embedder is None:
            return "none", 0, None
        try:
            model_id = embedder.model_id
        except RagrafError as exc:
            return f"{self.settings.embedder}:unavailable", None, exc.message
        try:
            return model_id, embedder.dim, None
        except RagrafError as exc:
            return model_id, None, exc.message

    def close(self) -> None:
        for store in (self._store, self._base_store):
            if store is not None:
                store.close()
        self._store = self._base_store = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _current(self) -> Revision:
        rev = self.store().current_revision()
        if rev is None and self.settings.view:
            rev = self._base_revision()  # a new work tree: the base answers until its view exists
        if rev is None:
            raise IndexMissingError("the index has no revision yet", suggest="run `ragraf index`")
        return rev

    def _base_revision(self) -> Revision | None:
        if self._base_store is None:
            self._base_store = open_base(self.settings)
        return self._base_store.current_revision()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The writer lock, now or LockHeldError."""
        store = self.store()
        if self.settings.store == "postgres":
            with store.writer_lock(wait=False):  # type: ignore[attr-defined]
                yield
        else:
            with WriterLock(self.settings.home, wait=False):
                yield

    def _named_revision(self, name: str) -> Revision:
        found = self.store().revision(name.strip())
        if found is None:
            valid = [r.rev for r in self.store().revisions()]
            raise UsageError(
                f"no revision named {name!r}; retained revisions: {', '.join(valid)}",
                suggest="pick one of the listed revisions (`ragraf revisions`)",
            )
        return found
