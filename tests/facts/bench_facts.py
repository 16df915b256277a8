"""Measure facts extraction against parsing and chunking.

    python tests/facts/bench_facts.py [DIR] [LANGUAGE] [GLOB]

Defaults to the Python standard library. Prints files/s and ms per file for each step, and
the cost facts add to an index run that parses and chunks every file: without facts the
chunker finds symbols with its own walk of the tree; with facts it takes their definitions.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from ragraf.chunking import SymbolSpan, chunk_text
from ragraf.facts import FileFacts, extract_facts, qualified_name
from ragraf.facts.extract import parser_for

DEFAULT_DIR = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"


def best_of(runs: int, step: Callable[[], object]) -> float:
    """The fastest of a few runs, in CPU seconds (other work on the machine skews wall time)."""
    times = []
    for _ in range(runs):
        started = time.process_time()
        step()
        times.append(time.process_time() - started)
    return min(times)


def each(items: list, step: Callable[..., object]) -> Callable[[], None]:
    """A timed step that drops each result, as an index run does after storing it."""

    def run() -> None:
        for item in items:
            step(*item)

    return run


def symbols_of(facts: FileFacts) -> list[SymbolSpan]:
    """Definitions as the chunker's symbols, as the indexer passes them."""
    return [SymbolSpan(qualified_name(d), d.start_line, d.end_line) for d in facts.definitions]


def main() -> None:
    """Print the timings of parsing, facts and chunking over one folder of one language."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    language = sys.argv[2] if len(sys.argv) > 2 else "python"
    pattern = sys.argv[3] if len(sys.argv) > 3 else "*.py"
    paths = sorted(p for p in root.rglob(pattern) if "site-packages" not in p.parts and p.is_file())
    texts = [p.read_bytes().decode("utf-8", "replace") for p in paths]
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    parser = parser_for(language)
    trees = [parser.parse(d) for d in data]
    pairs = list(zip(texts, trees, strict=True))
    facts = [extract_facts(text, language, tree=tree) for text, tree in pairs]
    symbols = [symbols_of(f) for f in facts]

    parse_s = best_of(3, lambda: [parser.parse(d) for d in data])
    facts_s = best_of(3, lambda: [extract_facts(text, language, tree=tree) for text, tree in pairs])
    chunk_own_s = best_of(3, lambda: [chunk_text(text, language, tree=tree) for text, tree in pairs])
    chunk_given_s = best_of(
        3,
        lambda: [
            chunk_text(text, language, symbols=s, tree=tree)
            for (text, tree), s in zip(pairs, symbols, strict=True)
        ],
    )

    n = len(texts)
    counts = [sum(len(getattr(f, part)) for f in facts) for part in ("definitions", "references", "imports")]
    print(f"{n} {language} files, {sum(map(len, data)) / 1e6:.1f} MB under {root}")
    print(f"{counts[0]} definitions, {counts[1]} references, {counts[2]} imports")
    for label, seconds in (
        ("parse", parse_s),
        ("facts (on the parsed tree)", facts_s),
        ("chunk, own symbol walk", chunk_own_s),
        ("chunk, symbols from facts", chunk_given_s),
    ):
        print(f"{label:28s} {seconds:6.2f}s  {n / seconds:7.0f} files/s  {1000 * seconds / n:6.2f} ms/file")
    without = parse_s + chunk_own_s
    with_facts = parse_s + facts_s + chunk_given_s
    print(
        f"facts alone: {100 * facts_s / parse_s:.0f}% of parsing, {100 * facts_s / without:.0f}% of parse+chunk"
    )
    print(
        f"index run parse+chunk: {without:.2f}s without facts, {with_facts:.2f}s with facts ({100 * (with_facts / without - 1):+.0f}%)"
    )


if __name__ == "__main__":
    main()
