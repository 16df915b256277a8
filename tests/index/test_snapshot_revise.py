"""The guard snapshot revised after a change equals the one packed from scratch for the same stat
cache and folder stamps, and revising it needs no numpy (a one-file edit pays no numpy import)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from ragraf.freshness import snapshot
from ragraf.store import StatEntry

RACY = 2 * 10**9


def _entry(rng: random.Random) -> StatEntry:
    mtime = rng.randrange(10**18)
    return StatEntry(
        rng.randrange(10**6), mtime, mtime + 5, rng.randrange(10**9), "h", mtime + rng.choice((0, 3 * RACY))
    )


def test_revised_and_patched_snapshots_equal_those_packed_from_the_changed_stat_cache() -> None:
    rng = random.Random(7)
    for _case in range(60):
        names = [f"{rng.choice('abcd')}/{rng.choice('xyz')}{i}.py" for i in range(rng.randrange(0, 40))]
        stats = {n: _entry(rng) for n in names}
        stamps = {f: rng.randrange(10**18) for f in ("", "a", "b", "c", "d")[: rng.randrange(1, 6)]}
        blob = snapshot.pack(stats, stamps, RACY)
        removed = rng.sample(sorted(stats), min(len(stats), rng.randrange(0, 4)))
        changed = {n: _entry(rng) for n in rng.sample(sorted(stats), min(len(stats), rng.randrange(0, 4)))}
        changed.update({f"{rng.choice('abce')}/new{k}.py": _entry(rng) for k in range(rng.randrange(0, 4))})
        gone = rng.sample(sorted(stamps), rng.randrange(0, len(stamps)))
        restamped = {f: rng.randrange(10**18) for f in rng.sample(["a", "e", "f/g"], rng.randrange(0, 3))}
        after = {n: s for n, s in stats.items() if n not in removed}
        after.update(changed)
        folders = {f: m for f, m in stamps.items() if f not in gone}
        folders.update(restamped)
        revised = snapshot.revise(blob, changed, removed, restamped, gone, RACY)
        packed = snapshot.pack(after, folders, RACY)
        assert snapshot.folded(revised) == packed
        assert snapshot.file_count(revised) == len(after)
        assert view_of(revised) == view_of(packed)
        # A second change joins the first one's delta.
        again = {n: _entry(rng) for n in rng.sample(sorted(after), min(len(after), 2))}
        again["e/later.py"] = _entry(rng)
        twice = snapshot.revise(revised, again, [], {}, [], RACY)
        repacked = snapshot.pack({**after, **again}, folders, RACY)
        assert snapshot.folded(twice) == repacked and view_of(twice) == view_of(repacked)
        in_place = {n: s for n, s in changed.items() if n in stats}
        patched = snapshot.patch(blob, {**in_place, "not/listed.py": _entry(rng)}, RACY)
        assert snapshot.folded(patched) == snapshot.pack({**stats, **in_place}, stamps, RACY)
        assert snapshot.folded(snapshot.patch(twice, in_place, RACY)) == snapshot.pack(
            {**after, **again, **{n: e for n, e in in_place.items() if n in after}}, folders, RACY
        )


def view_of(blob: bytes) -> tuple[object, ...]:
    """What the guard reads of a snapshot (its stat view), parsed anew."""
    snapshot._VIEWS.clear()
    view = snapshot.stat_view(Path("/nowhere"), blob)
    assert view is not None
    return (view.names, view.paths, [view.key(i) for i in range(len(view.names))], view.folder_names,
            view.folders, view.folder_mtimes, view.untrusted)  # fmt: skip


def test_a_change_to_a_large_snapshot_keeps_its_base_and_adds_a_small_delta_until_it_is_folded() -> None:
    rng = random.Random(3)
    stats = {f"pkg{i % 50}/m{i}.py": _entry(rng) for i in range(20_000)}
    blob = snapshot.pack(stats, {"": 1, **{f"pkg{d}": d for d in range(50)}}, RACY)
    base = snapshot.base_length(blob)
    assert base == len(blob)
    for n in range(snapshot._DELTA_MIN):
        blob = snapshot.revise(blob, {f"pkg{n % 50}/m{n}.py": _entry(rng)}, [], {}, [], RACY)
        assert snapshot.base_length(blob) == base and len(blob) - base < 200 * (n + 1)
    folded_at = snapshot.revise(
        blob, {f"pkg{k}/new{k}.py": _entry(rng) for k in range(20_000 // 256)}, [], {}, [], RACY
    )
    assert snapshot.base_length(folded_at) == len(folded_at)  # past 1/256 of the files: one base again
    assert snapshot.file_count(folded_at) == 20_000 + 20_000 // 256


def test_a_view_of_a_delta_with_many_new_files_is_read_folded_once_per_snapshot() -> None:
    rng = random.Random(5)
    stats = {f"pkg{i % 20}/m{i}.py": _entry(rng) for i in range(30_000)}
    blob = snapshot.pack(stats, {"": 1, **{f"pkg{d}": d for d in range(20)}}, RACY)
    new = {f"pkg{k}/new{k}.py": _entry(rng) for k in range(snapshot._APPLIED_MAX + 5)}
    revised = snapshot.revise(blob, new, [], {}, [], RACY)
    assert snapshot.base_length(revised) < len(revised)  # still a delta: too small to fold
    snapshot._VIEWS.clear()
    first = snapshot.stat_view(Path("/nowhere"), revised)
    assert first is snapshot.stat_view(Path("/nowhere"), revised)  # kept for the same snapshot
    assert view_of(revised) == view_of(
        snapshot.pack({**stats, **new}, {"": 1, **{f"pkg{d}": d for d in range(20)}}, RACY)
    )


def test_revising_a_snapshot_imports_no_numpy(tmp_path: Path) -> None:
    stats = {
        f"src/m{i}.py": StatEntry(i, 10**18 + i, 10**18 + i, i, "h", 10**18 + i + 3 * RACY) for i in range(50)
    }
    blob = snapshot.pack(stats, {"": 1, "src": 2}, RACY)
    (tmp_path / "snap").write_bytes(blob)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ragraf.freshness import snapshot\n"
        "from ragraf.store import StatEntry\n"
        f"blob = Path({str(tmp_path / 'snap')!r}).read_bytes()\n"
        "e = StatEntry(9, 7, 7, 9, 'h', 7 + 3 * 10**9)\n"
        "out = snapshot.revise(blob, {'src/m3.py': e, 'src/new.py': e}, ['src/m4.py'], {'src': 5}, [], 2 * 10**9)\n"
        "out = snapshot.patch(out, {'src/m5.py': e}, 2 * 10**9)\n"
        "assert snapshot.file_count(out) == 50\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"
