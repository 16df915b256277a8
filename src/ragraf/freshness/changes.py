"""What changed in knowledge between two revisions: files, symbols and the ledger entries behind them."""

from __future__ import annotations

import difflib
from collections import defaultdict

from ragraf.store import FactHit, Revision, Store

DIFF_LINES = 80  # a changed definition's diff is cut here, with the count of lines left out


def _lines(store: Store, rev: Revision, path: str) -> dict[int, str]:
    """The file's lines as the revision's chunks hold them, by line number."""
    lines: dict[int, str] = {}
    for chunk in store.chunks_of(rev.rev_no, path):
        texts = chunk.text.split("\n")
        if len(texts) == chunk.end_line - chunk.start_line + 1:  # a chunk that is not the file's lines as-is
            lines.update(zip(range(chunk.start_line, chunk.end_line + 1), texts, strict=True))
    return lines


def _diff(old: dict[int, str], new: dict[int, str], was: FactHit, now: FactHit) -> str:
    """A unified diff of one definition between two revisions, cut at DIFF_LINES."""
    a = [old.get(n, "") for n in range(was.line, (was.end_line or was.line) + 1)]
    b = [new.get(n, "") for n in range(now.line, (now.end_line or now.line) + 1)]
    out = list(
        difflib.unified_diff(a, b, f"{was.path}:{was.line}", f"{now.path}:{now.line}", lineterm="", n=2)
    )
    if len(out) > DIFF_LINES:
        out = [*out[:DIFF_LINES], f"… {len(out) - DIFF_LINES} more diff lines"]
    return "\n".join(out)


def _symbol(hit: FactHit, rev: str) -> dict[str, object]:
    name = f"{hit.container}.{hit.name}" if hit.container else hit.name
    return {
        "name": name,
        "kind": hit.kind,
        "path": hit.path,
        "line": hit.line,
        "end_line": hit.end_line,
        "rev": rev,
        "signature": hit.signature,
    }


def _defs(store: Store, rev: Revision, path: str) -> dict[tuple[str, str], list[FactHit]]:
    by_key: dict[tuple[str, str], list[FactHit]] = defaultdict(list)
    for hit in store.find_facts(rev.rev_no, "def", path=path, limit=100_000):
        by_key[(f"{hit.container}.{hit.name}" if hit.container else hit.name, hit.kind or "")].append(hit)
    return by_key


def changes_report(store: Store, a: Revision, b: Revision) -> dict[str, object]:
    """Files added / modified / deleted, symbols added / removed / changed, and the archived ledger entries."""
    ma, mb = store.manifest(a.rev_no), store.manifest(b.rev_no)
    added = sorted(p for p in mb if p not in ma)
    deleted = sorted(p for p in ma if p not in mb)
    modified = sorted(p for p in mb if p in ma and mb[p].sha256 != ma[p].sha256)
    sym_added: list[dict[str, object]] = []
    sym_removed: list[dict[str, object]] = []
    sym_changed: list[dict[str, object]] = []
    for path in added:
        sym_added += [_symbol(h, b.rev) for hits in _defs(store, b, path).values() for h in hits]
    for path in deleted:
        sym_removed += [_symbol(h, a.rev) for hits in _defs(store, a, path).values() for h in hits]
    for path in modified:
        old, new = _defs(store, a, path), _defs(store, b, path)
        old_lines, new_lines = _lines(store, a, path), _lines(store, b, path)
        for key in sorted(set(old) | set(new)):
            before, after = old.get(key, []), new.get(key, [])
            for i in range(max(len(before), len(after))):
                if i >= len(before):
                    sym_added.append(_symbol(after[i], b.rev))
                elif i >= len(after):
                    sym_removed.append(_symbol(before[i], a.rev))
                elif (before[i].signature, before[i].body_hash) != (after[i].signature, after[i].body_hash):
                    entry = _symbol(after[i], b.rev)
                    entry["was"] = {
                        "line": before[i].line,
                        "end_line": before[i].end_line,
                        "rev": a.rev,
                        "signature": before[i].signature,
                    }
                    entry["signature_changed"] = before[i].signature != after[i].signature
                    entry["diff"] = _diff(old_lines, new_lines, before[i], after[i])
                    sym_changed.append(entry)
    # The revisions after a up to b that could have closed entries: this view's by name (a work
    # tree's are `rev-0003+wt-name.2`), and the plain names of numbers no longer retained.
    closers = [r.rev for r in store.revisions() if a.rev_no < r.rev_no <= b.rev_no]
    closers += [f"rev-{n:04d}" for n in range(a.rev_no + 1, b.rev_no + 1)]
    entries = [e.to_dict() for e in store.archived_entries(closers)]
    files = {
        "added": [{"path": p, "sha256": mb[p].sha256} for p in added],
        "modified": [{"path": p, "old_sha256": ma[p].sha256, "sha256": mb[p].sha256} for p in modified],
        "deleted": [{"path": p, "old_sha256": ma[p].sha256} for p in deleted],
    }
    symbols = {"added": sym_added, "removed": sym_removed, "changed": sym_changed}
    return {
        "from": a.to_dict(),
        "to": b.to_dict(),
        "files": files,
        "symbols": symbols,
        "ledger": entries,
        "counts": {
            "files_added": len(added),
            "files_modified": len(modified),
            "files_deleted": len(deleted),
            "symbols_added": len(sym_added),
            "symbols_removed": len(sym_removed),
            "symbols_changed": len(sym_changed),
            "ledger_entries": len(entries),
        },
    }
