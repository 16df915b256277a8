"""Whether a change to chunking or facts extraction changes what the index holds, file by file.

Dumps the chunks, facts and references the workers produce for every file of the bench corpora
(benchmarks/data/*), then compares two dumps and lists each file whose output differs, with the
facts that differ. Run the dump once with the old code and once with the new:

    PYTHONPATH=/tmp/old/src python benchmarks/extraction_diff.py dump /tmp/old.pkl
    python benchmarks/extraction_diff.py dump /tmp/new.pkl
    python benchmarks/extraction_diff.py compare /tmp/old.pkl /tmp/new.pkl   # exit 1 on a difference
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


class _Chunking:
    chunk_max_chars = 1500
    chunk_min_chars = 250


def dump(out: Path, data: Path = DATA) -> int:
    """Pickle {corpus path: (chunks, facts, refs, status)} of every indexable file; the file count."""
    from ragraf.corpus.extract import Unindexable, extract
    from ragraf.header_language import content_language
    from ragraf.index.workers import analyse
    from ragraf.languages import language_of

    found: dict[str, Any] = {}
    for corpus in sorted(p for p in data.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
            rel = path.relative_to(data).as_posix()
            try:
                ex = extract(path, rel, 10_000)
            except (Unindexable, OSError):
                continue
            chunks, facts, refs, status = analyse(
                ex.text,
                content_language(language_of(rel), rel, ex.text),
                _Chunking,  # type: ignore[arg-type]
            )
            found[rel] = (tuple(chunks), tuple(facts), tuple(sorted(refs)), status)
    with out.open("wb") as fh:
        pickle.dump(found, fh)
    return len(found)


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference: files only in one dump, then per file what differs."""
    lines = [f"only in old: {p}" for p in sorted(old.keys() - new.keys())]
    lines += [f"only in new: {p}" for p in sorted(new.keys() - old.keys())]
    for path in sorted(old.keys() & new.keys()):
        (oc, of, orefs, ostatus), (nc, nf, nrefs, nstatus) = old[path], new[path]
        if ostatus != nstatus:
            lines.append(f"{path}: facts status {ostatus} -> {nstatus}")
        if oc != nc:
            lines.append(f"{path}: chunks differ ({len(oc)} -> {len(nc)})")
        for label, a, b in (("fact", of, nf), ("refs", orefs, nrefs)):
            lines += [f"{path}: {label} lost {x}" for x in sorted(set(a) - set(b), key=repr)[:5]]
            lines += [f"{path}: {label} gained {x}" for x in sorted(set(b) - set(a), key=repr)[:5]]
            if a != b and set(a) == set(b):
                lines.append(f"{path}: {label} in another order")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="dump what this code extracts from the bench corpora")
    d.add_argument("out", type=Path)
    d.add_argument("--data", type=Path, default=DATA)
    c = sub.add_parser("compare", help="list the differences between two dumps")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        print(f"{dump(args.out, args.data)} files dumped to {args.out}")
        return 0
    with args.old.open("rb") as fh:
        old = pickle.load(fh)
    with args.new.open("rb") as fh:
        new = pickle.load(fh)
    lines = compare(old, new)
    for line in lines:
        print(line)
    print(f"{len(old)} / {len(new)} files; {len(lines)} differences")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
