"""The corpus hash of DESIGN §5, and the same hash after a change from the lines a process kept."""

from __future__ import annotations

import hashlib
import random

from ragraf.index import corpus_hash as ch


def by_definition(entries: dict[str, str]) -> str:
    body = "".join(f"{p}\0{entries[p]}\n" for p in sorted(entries))
    return hashlib.sha1(body.encode("utf-8", errors="surrogateescape")).hexdigest()


def sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(256):064x}"


def test_the_hash_is_sha1_of_the_sorted_path_nul_sha256_lines() -> None:
    entries = {
        "b.py": "1" * 64,
        "a/z.py": "2" * 64,
        "a.py": "3" * 64,
        "é/ü.txt": "4" * 64,
        "bad\udcff": "5" * 64,
    }
    assert ch.corpus_hash(entries) == by_definition(entries)
    assert ch.corpus_hash({}) == hashlib.sha1(b"").hexdigest()


def test_a_change_gives_the_hash_of_the_changed_corpus_with_or_without_kept_lines() -> None:
    rng = random.Random(7)
    entries = {f"d{rng.randrange(20)}/f{i}.py": sha(rng) for i in range(300)}
    current = ch.corpus_hash(entries)
    reads = []
    for step in range(40):
        changed = [(rng.choice(sorted(entries)), sha(rng)) for _ in range(rng.randrange(3))]
        changed += [(f"new{step}/{k}.py", sha(rng)) for k in range(rng.randrange(3))]
        removed = rng.sample(sorted(set(entries) - {p for p, _ in changed}), rng.randrange(3))
        if step % 5 == 4:
            ch._LINES.clear()  # another process made the revision: nothing kept
        before = dict(entries)
        entries.update(changed)
        for path in removed:
            del entries[path]
        current = ch.changed_corpus_hash(
            current, lambda b=before: reads.append(1) or b.items(), changed, removed
        )
        assert current == by_definition(entries)
    assert len(reads) == 8  # only after the clears
