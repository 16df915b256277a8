"""The facts operations: definitions, references and callers, a file's outline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragraf.api.envelope import Envelope
from ragraf.api.guarded import Guarded
from ragraf.api.session import names_damage
from ragraf.config import Settings
from ragraf.errors import UsageError
from ragraf.facts.lookup import bare_name, find_definitions, find_references
from ragraf.freshness.guard import DriftSet
from ragraf.freshness.live_read import broken_link_error, confine
from ragraf.languages import language_of
from ragraf.search.filters import ResultFilter, build_filter
from ragraf.store import FactHit

MAX_FACTS = 200  # one page of definitions or references; `offset` asks for the next
MAX_BODY_LINES = 400  # of one definition's body (`include_body`); the text fits them to the budget


class FactOps(Guarded):
    """`find_symbol()`, `find_references()` and `outline()`."""

    @names_damage
    def find_symbol(
        self,
        name: str,
        reindex_on_drift: str | None = None,
        offset: int = 0,
        path: str | list[str] | None = None,
        kind: str | list[str] | None = None,
        language: str | list[str] | None = None,
        include_body: bool = False,
    ) -> Envelope:
        """Where NAME is defined: exact, then case-insensitive, then qualified (Class.method, pkg.Func).
        `path` globs (`!` excludes), `kind` and `language` narrow it; `include_body` adds each
        definition's lines as indexed; `offset` pages past the first MAX_FACTS."""
        _require_name(name)
        keep = build_filter(path, kind, language)
        offset = _require_offset(offset)
        rev, drift, env = self._begin("def", reindex_on_drift)
        if env.state == "refused":
            return env
        hits, how = find_definitions(self.store(), rev.rev_no, name)
        if how == "imported":
            env.notes.append(
                f"no definition of {name!r} in {rev.rev}: it comes from outside the index; "
                "the results are where it is imported (kind: import)"
            )
        elif how not in ("exact", "none"):
            env.notes.append(f"matched {how}")
        hits = _filtered(hits, keep, env)
        if not hits:
            env.notes.append(f"no definition of {name!r} in {rev.rev}; try `ragraf search`")
        page = _page(hits, offset, env)
        env.results.extend(_fact(h, drift) for h in page)
        if include_body:
            self._add_bodies(rev.rev_no, env.results)
        return env

    def _add_bodies(self, rev_no: int, facts: list[dict[str, Any]]) -> None:
        """Each definition's lines as the revision holds them, from its chunks (`body`; None when
        the chunks do not cover them)."""
        store = self.store()
        chunks = store.chunks_of_paths(rev_no, list(dict.fromkeys(f["path"] for f in facts)))
        for f in facts:
            start, end = f.get("start_line") or f["line"], f["end_line"]
            lines: dict[int, str] = {}
            for c in chunks.get(f["path"], []):
                if c.end_line < start or c.start_line > end:
                    continue
                for n, text in enumerate(c.text.split("\n"), start=c.start_line):
                    lines.setdefault(n, text)
            wanted = range(start, min(end, start + MAX_BODY_LINES - 1) + 1)
            f["body"] = "\n".join(lines[n] for n in wanted) if all(n in lines for n in wanted) else None
            f["body_start_line"] = start

    @names_damage
    def find_references(
        self,
        name: str,
        calls: bool = False,
        reindex_on_drift: str | None = None,
        offset: int = 0,
        path: str | list[str] | None = None,
        kind: str | list[str] | None = None,
        language: str | list[str] | None = None,
    ) -> Envelope:
        """Who references (or with calls=True, calls) NAME, grouped by enclosing definition;
        `path`, `kind` and `language` narrow it, `offset` pages past the first MAX_FACTS."""
        _require_name(name)
        keep = build_filter(path, kind, language)
        offset = _require_offset(offset)
        rev, drift, env = self._begin("refs", reindex_on_drift)
        if env.state == "refused":
            return env
        hits = _filtered(find_references(self.store(), rev.rev_no, name, calls), keep, env)
        bare = bare_name(name)
        if bare != name.strip():
            # A use records the name used, not what it was called on: the qualifier cannot narrow.
            env.notes.append(
                f"uses are matched by their last part, {bare!r}: uses of any {bare!r} are listed"
            )
        if not hits:
            env.notes.append(f"no {'calls' if calls else 'references'} of {name!r} in {rev.rev}")
        env.results.extend(_fact(h, drift) for h in _page(hits, offset, env))
        return env

    @names_damage
    def outline(self, path: str, reindex_on_drift: str | None = None) -> Envelope:
        """The definitions of one file as a tree (depth by containment), with lines."""
        rev, drift, env = self._begin("outline", reindex_on_drift)
        if env.state == "refused":
            return env
        rel, real = confine(self.settings.root, path)
        store = self.store()
        status = store.facts_status(rev.rev_no, rel)
        if status is None:
            raise _not_outlined(self.settings, rel or ".", real, rev.rev)
        hits = sorted(
            store.find_facts(rev.rev_no, "def", path=rel, limit=100_000),
            key=lambda h: (h.start_line, -h.end_line),
        )
        open_ends: list[int] = []
        for h in hits:
            while open_ends and open_ends[-1] < h.start_line:
                open_ends.pop()
            env.results.append({**_fact(h, drift), "depth": len(open_ends)})
            open_ends.append(h.end_line)
        if status in ("unsupported", "failed"):
            env.capability.facts = False
            env.notes.append(
                f"no fact rules for {language_of(rel)}; outline from the chunks instead"
                if status == "unsupported"
                else f"the parser gave up on {rel} when it was indexed; outline from the chunks instead"
            )
            for chunk in store.chunks_of(rev.rev_no, rel):
                env.results.append({
                    "name": chunk.symbol or f"lines {chunk.start_line}-{chunk.end_line}", "kind": "chunk",
                    "path": rel, "line": chunk.start_line, "end_line": chunk.end_line, "container": None,
                    "stale": rel in drift.paths, "depth": 0,
                })  # fmt: skip
        elif status == "partial":
            env.notes.append(f"{rel} has syntax errors: the outline may be incomplete")
        return env


def _fact(hit: FactHit, drift: DriftSet) -> dict[str, Any]:
    """The fact shape of DESIGN §4, plus what an agent needs to act on it."""
    return {
        "name": hit.name, "kind": hit.kind or ("call" if hit.is_call else "reference"), "path": hit.path,
        "line": hit.line, "end_line": hit.end_line, "container": hit.container, "stale": hit.path in drift.paths,
        "start_line": hit.start_line, "signature": hit.signature,
    }  # fmt: skip


def _require_offset(offset: int) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise UsageError(f"offset {offset!r} is not a count", suggest="give offset as 0 or more")
    return offset


def _filtered(hits: list[FactHit], keep: ResultFilter | None, env: Envelope) -> list[FactHit]:
    """The hits the filter keeps; the note says what it left out."""
    if keep is None:
        return hits
    kept = [h for h in hits if keep.keep(h.path)]
    env.notes.append(f"filtered to {keep.describe()}: {len(kept)} of {len(hits)} kept")
    return kept


def _page(hits: list[FactHit], offset: int, env: Envelope) -> list[FactHit]:
    """One page of MAX_FACTS from offset; `page` and `truncated.results` say what is left."""
    page = hits[offset : offset + MAX_FACTS]
    following = max(0, len(hits) - offset - len(page))
    env.truncated["results"] = following
    env.page = {
        "offset": offset,
        "total": len(hits),
        "next_offset": offset + len(page) if following else None,
    }
    return page


def _require_name(name: str) -> None:
    if not name.strip():
        raise UsageError("the name is empty", suggest="give a symbol name, e.g. TCPConnector or Client.send")


def _not_outlined(settings: Settings, rel: str, real: Path, rev: str) -> UsageError:
    """Why a path has no outline in the revision, in the words that say what to do."""
    from ragraf.corpus.discover import left_out, special_kind

    if real.is_dir():
        return UsageError(
            f"{rel} is a folder", suggest="give a file, e.g. `ragraf outline src/app/server.py`"
        )
    kind = special_kind(real)
    if kind is not None:
        return UsageError(
            f"{rel} is {kind}, not a regular file: never indexed", suggest="give a regular file"
        )
    broken = broken_link_error(settings.root, rel)
    if broken is not None:
        return broken
    if not real.is_file():
        return UsageError(f"{rel} is not in {rev} and not on disk", suggest="check the path")
    why = left_out(settings.root, rel, settings.max_file_bytes, settings.max_line_chars)
    if why:
        return UsageError(f"{rel} is {why}", suggest="read it yourself if you need it")
    return UsageError(
        f"{rel} is not in {rev}: it is new since",
        suggest="run `ragraf index`, or `ragraf read` it as it is now",
    )
