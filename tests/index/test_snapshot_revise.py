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
        assert revised == snapshot.pack(after, folders, RACY)
        in_place = {n: s for n, s in changed.items() if n in stats}
        assert snapshot.patch(blob, in_place, RACY) == snapshot.pack({**stats, **in_place}, stamps, RACY)


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
