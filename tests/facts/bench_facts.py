"""Measure facts extraction against parsing alone: `python tests/facts/bench_facts.py [DIR] [LANG] [GLOB]`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ragraf.facts import extract_facts
from ragraf.facts.extract import parser_for

DEFAULT_DIR = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"


def main() -> None:
    """Print files/s and ms per file for parsing alone and for parsing plus facts."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    language = sys.argv[2] if len(sys.argv) > 2 else "python"
    pattern = sys.argv[3] if len(sys.argv) > 3 else "*.py"
    paths = sorted(p for p in root.rglob(pattern) if "site-packages" not in p.parts and p.is_file())
    texts = [p.read_bytes().decode("utf-8", "replace") for p in paths]
    parser = parser_for(language)
    data = [t.encode("utf-8", "surrogatepass") for t in texts]

    started = time.process_time()
    trees = [parser.parse(d) for d in data]
    parse_s = time.process_time() - started

    started = time.process_time()
    counts = [0, 0, 0]
    for text, tree in zip(texts, trees, strict=True):
        facts = extract_facts(text, language, tree=tree)
        counts[0] += len(facts.definitions)
        counts[1] += len(facts.references)
        counts[2] += len(facts.imports)
    facts_s = time.process_time() - started

    n = len(texts)
    mb = sum(map(len, data)) / 1e6
    print(f"{n} files, {mb:.1f} MB, {counts[0]} definitions, {counts[1]} references, {counts[2]} imports")
    print(f"parse only:      {parse_s:.2f}s  {n / parse_s:.0f} files/s  {1000 * parse_s / n:.2f} ms/file")
    print(f"facts on a tree: {facts_s:.2f}s  {n / facts_s:.0f} files/s  {1000 * facts_s / n:.2f} ms/file")
    print(f"facts cost: {100 * facts_s / parse_s:.0f}% of parsing")


if __name__ == "__main__":
    main()
