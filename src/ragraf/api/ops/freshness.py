"""The freshness operations: status, the drift ledger, the knowledge changes between revisions, the revisions."""

from __future__ import annotations

from ragraf.api.envelope import Envelope
from ragraf.api.guarded import Guarded
from ragraf.api.session import names_damage
from ragraf.errors import UsageError


class FreshnessOps(Guarded):
    """`status()`, `drift()`, `changes()` and `revisions()`."""

    @names_damage
    def status(self, reindex_on_drift: str | None = None) -> Envelope:
        """The current revision, its counts, and what drifted on disk since."""
        rev, drift, env = self._begin("status", reindex_on_drift)
        env.results.append({
            "revision": rev.to_dict(), "root": str(self.settings.root), "home": str(self.settings.home),
            "store": self.settings.store, "index_file": str(self.settings.db_path),
            "embeddings": self.embedding_totals(),
            "drift": {"created": list(drift.created), "modified": list(drift.modified), "deleted": list(drift.deleted)},
        })  # fmt: skip
        return env

    @names_damage
    def drift(self, reindex_on_drift: str | None = None) -> Envelope:
        """The open drift-ledger entries of the current revision."""
        rev, _drift, env = self._begin("drift", reindex_on_drift)
        if env.state == "refused":
            return env
        env.results.extend(e.to_dict() for e in self.store().open_entries(rev.rev))
        return env

    @names_damage
    def changes(
        self, from_rev: str, to_rev: str | None = None, reindex_on_drift: str | None = None
    ) -> Envelope:
        """What changed in knowledge between two revisions (to_rev defaults to the current one)."""
        rev, _drift, env = self._begin("changes", reindex_on_drift)
        if env.state == "refused":
            return env
        a = self._named_revision(from_rev)
        b = self._named_revision(to_rev) if to_rev else rev
        if a.rev_no > b.rev_no:
            raise UsageError(
                f"--from {a.rev} is later than --to {b.rev}",
                suggest=f"swap them: --from {b.rev} --to {a.rev}",
            )
        from ragraf.freshness.changes import changes_report

        env.results.append(changes_report(self.store(), a, b))
        return env

    @names_damage
    def revisions(self) -> Envelope:
        """Every retained revision, oldest first."""
        env = self._envelope("revisions", self._current())
        env.results.extend(r.to_dict() for r in self.store().revisions())
        return env
