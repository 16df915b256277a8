"""Fit the static table's per-token weights for retrieval: docstring -> function pairs, InfoNCE (numpy only).

Measured, not shipped (docs/embeddings.md, "Fitted for retrieval"). Where refine_static.py pulls the
static vectors towards the transformer's, this fits what search does: a query's vector should rank
its own code above others. Pairs come from Python code that is not the bench's (`--code` folders;
site-packages' pydantic, pydantic_core, starlette, pygments and the like are skipped by name): a
function's or class's first docstring paragraph (20-400 characters, the query side, its stop words
dropped as `embed_query` drops them) and the definition as the indexer embeds a chunk (path,
symbol, the first 1,200 characters) with its docstring cut out, so the pair shares no sentence.

Over the shipped rows R, a text's vector is normalize(sum over its tokens of exp(u_t) R_t) (u = 0
is the shipped table); u, one log-weight per vocabulary token, is fitted by Adam on the in-batch
softmax loss (each query against the batch's functions, temperature `--tau`) plus `--reg` * |u|^2
/ 2, a pull towards weight 1. `--side both` weights queries and functions alike (the table becomes
exp(u_t) R_t); `--side query` only the queries (the functions keep R; the weights go to a .u.npy
beside the output for a query-side experiment). 2,000 pairs (seeded) are held out: each
held-out query ranks the held-out functions by cosine, by BM25 over their words, and by the two
fused as search fuses them (reciprocal rank, k = 60); the epoch with the best fused MRR is kept.
The pairs BM25 ranks 6th or lower are the ones vectors must find, scored apart ("hard").

    python scripts/fit_static_pairs.py --code /usr/lib/python3.11 \
        --code .venv/lib/python3.11/site-packages --out /tmp/pairs.npz
    RAGRAF_STATIC_TABLE=/tmp/pairs.npz python benchmarks/quality.py --embedder static --repeat 1
"""

from __future__ import annotations

import argparse
import ast
import math
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from ragraf.embed.static import TABLE, TOKENIZER, StaticEmbedder, load_table, pack_table, static_query_text  # noqa: E402
from ragraf.tokens import index_text, query_terms  # noqa: E402

# Packages of the bench's corpora or their kin (and the speed corpus'), never fitted on.
BENCH_PACKAGES = frozenset(
    {"pydantic", "pydantic_core", "starlette", "sse_starlette", "pygments", "fastapi", "aiohttp"}
    | {"django", "sympy", "annotated_types", "typing_inspection", "test", "tests"}
)
_TERM = re.compile(r"[a-z0-9]+")


def definition_pairs(folders: list[Path], limit: int) -> list[tuple[str, str]]:
    """Up to `limit` (docstring paragraph, definition without its docstring) pairs, distinct
    paragraphs, spread evenly over a sorted walk (deterministic)."""
    pairs: dict[str, str] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder)
            if BENCH_PACKAGES & set(rel.parts):
                continue
            try:
                source = path.read_text(encoding="utf-8")
                tree = ast.parse(source)
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                continue
            lines = source.splitlines()
            for symbol, node in _definitions(tree):
                doc = ast.get_docstring(node)
                para = re.sub(r"\s+", " ", doc.split("\n\n")[0]).strip() if doc else ""
                if not 20 <= len(para) <= 400 or para.startswith((">>>", ":", "..")):
                    continue
                first = node.body[0]
                body = lines[node.lineno - 1 : first.lineno - 1] + lines[first.end_lineno : node.end_lineno]
                code = "\n".join(body)
                if len(body) < 3 or para in pairs:
                    continue
                pairs[para] = f"{rel.as_posix()}\n{symbol}\n{code[:1200]}"
    items = list(pairs.items())
    return items[:: max(1, len(items) // limit)][:limit]


def _definitions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of every function and class, methods as Class.method."""
    out: list[tuple[str, ast.AST]] = []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, kinds):
                name = f"{prefix}{child.name}"
                out.append((name, child))
                visit(child, f"{name}.")

    visit(tree, "")
    return out


class Bags:
    """Texts as bags of token ids (each distinct token once, with its count), the static vectors
    under log-weights u, and the gradient through them."""

    def __init__(self, rows: np.ndarray, ids: list[list[int]], unknown: int) -> None:
        self.rows = rows
        vocab = len(rows)
        lengths = [len(s or [unknown]) for s in ids]
        flat = np.concatenate([np.asarray(s or [unknown], dtype=np.int64) for s in ids])
        keys, counts = np.unique(np.repeat(np.arange(len(ids)), lengths) * vocab + flat, return_counts=True)
        self.owner, self.tokens = np.divmod(keys, vocab)
        self.counts = counts.astype(np.float64)
        self.starts = np.searchsorted(self.owner, np.arange(len(ids) + 1))

    def vectors(self, u: np.ndarray, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit vectors, norms before, the bag positions) of `texts`."""
        pos = np.concatenate([np.arange(self.starts[i], self.starts[i + 1]) for i in texts])
        lengths = self.starts[texts + 1] - self.starts[texts]
        tok = self.tokens[pos]
        sums = np.add.reduceat(
            self.rows[tok] * (self.counts[pos] * np.exp(u[tok]))[:, None],
            np.concatenate([[0], np.cumsum(lengths)[:-1]]),
            axis=0,
        )
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return sums / norms, norms, pos

    def grad_u(
        self,
        u: np.ndarray,
        texts: np.ndarray,
        x: np.ndarray,
        norms: np.ndarray,
        pos: np.ndarray,
        gx: np.ndarray,
    ) -> np.ndarray:
        """d loss / d u from d loss / d x (the unit vectors of `texts`)."""
        gsum = (gx - (gx * x).sum(1, keepdims=True) * x) / norms
        owner = np.repeat(np.arange(len(texts)), self.starts[texts + 1] - self.starts[texts])
        tok = self.tokens[pos]
        per = (self.rows[tok] * gsum[owner]).sum(1) * self.counts[pos] * np.exp(u[tok])
        return np.bincount(tok, weights=per, minlength=len(u))


def bm25_scores(queries: list[str], docs: list[str]) -> np.ndarray:
    """(queries, docs) BM25 scores (k1 1.2, b 0.75) over the lexical side's terms: the queries'
    `query_terms`, the documents' `index_text` words."""
    bags = [Counter(_TERM.findall(index_text(d).lower())) for d in docs]
    lengths = np.array([sum(b.values()) for b in bags], dtype=np.float64)
    df: Counter[str] = Counter(t for b in bags for t in b)
    n, avg = len(docs), lengths.mean()
    postings: dict[str, list[tuple[int, int]]] = {}
    for j, bag in enumerate(bags):
        for term, tf in bag.items():
            postings.setdefault(term, []).append((j, tf))
    scores = np.zeros((len(queries), n))
    for i, query in enumerate(queries):
        for term in query_terms(query):
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            for j, tf in postings.get(term, []):
                scores[i, j] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[j] / avg))
    return scores


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """Each entry's rank in its row (0 = best; ties in column order)."""
    ranks = np.empty_like(scores, dtype=np.int64)
    order = np.argsort(-scores, axis=1, kind="stable")
    np.put_along_axis(ranks, order, np.arange(scores.shape[1])[None, :], axis=1)
    return ranks


def held_scores(q: np.ndarray, d: np.ndarray, bm25: np.ndarray) -> dict[str, float]:
    """MRR of the held-out pairs (each query's own function among all held-out functions) by
    cosine, and by cosine and BM25 fused as search fuses them (RRF, k = 60); all, and the hard ones
    (BM25 ranks the own function 6th or lower)."""
    vec = ranks_of(q @ d.T)
    fused = ranks_of(1 / (60 + vec) + 1 / (60 + bm25))
    hard = np.diag(bm25) >= 5
    out = {"bm25": float((1.0 / (1 + np.diag(bm25))).mean())}
    for name, ranks in (("vector", vec), ("fused", fused)):
        rr = 1.0 / (1 + np.diag(ranks))
        out[name] = float(rr.mean())
        out[f"{name}_hard"] = float(rr[hard].mean())
    out["hard_share"] = float(hard.mean())
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--base", type=Path, default=TABLE, help="the table to weight (default: the shipped one)")
    ap.add_argument("--code", type=Path, action="append", required=True, help="Python folders to mine")
    ap.add_argument("--pairs", type=int, default=40000)
    ap.add_argument("--side", choices=("both", "query"), default="both")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--reg", type=float, default=1e-3, help="L2 pull of the log-weights towards 0")
    ap.add_argument("--hard-only", action="store_true", help="train on the pairs BM25 ranks below 1st")
    args = ap.parse_args(argv)

    pairs = definition_pairs(args.code, args.pairs)
    print(f"  {len(pairs)} pairs", file=sys.stderr)
    rows, recipe, sha = load_table(args.base)
    from tokenizers import Tokenizer

    embedder = StaticEmbedder(args.base)
    unknown = Tokenizer.from_file(str(TOKENIZER)).token_to_id("[UNK]")
    queries = [static_query_text(p) for p, _ in pairs]
    docs = [d for _, d in pairs]
    qbags = Bags(rows.astype(np.float64), embedder.token_ids(queries), unknown)
    dbags = Bags(qbags.rows, embedder.token_ids(docs), unknown)
    order = np.random.default_rng(0).permutation(len(pairs))
    held, train = np.sort(order[:2000]), np.sort(order[2000:])
    bm25 = ranks_of(bm25_scores([queries[i] for i in held], [docs[i] for i in held]))
    if args.hard_only:  # BM25 over each slice of 2,000 training pairs
        keep = [
            part[np.diag(ranks_of(bm25_scores([queries[i] for i in part], [docs[i] for i in part]))) > 0]
            for part in np.array_split(train, max(1, len(train) // 2000))
        ]
        train = np.concatenate(keep)
    zero = np.zeros(len(rows))

    def evaluate(u: np.ndarray) -> dict[str, float]:
        q = qbags.vectors(u, held)[0]
        d = dbags.vectors(u if args.side == "both" else zero, held)[0]
        return held_scores(q, d, bm25)

    best_u, best = zero.copy(), evaluate(zero)
    print(f"  epoch 0: {_show(best)}", file=sys.stderr)
    u = zero.copy()
    m1, m2, step = np.zeros_like(u), np.zeros_like(u), 0
    rng = np.random.default_rng(1)
    for epoch in range(args.epochs):
        shuffled = train[rng.permutation(len(train))]
        for b in range(0, len(shuffled) - args.batch + 1, args.batch):
            batch = shuffled[b : b + args.batch]
            q, qn, qpos = qbags.vectors(u, batch)
            d, dn, dpos = dbags.vectors(u if args.side == "both" else zero, batch)
            logits = q @ d.T / args.tau
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            g = (p - np.eye(len(batch))) / len(batch) / args.tau  # d loss / d logits, times 1/tau
            grad = qbags.grad_u(u, batch, q, qn, qpos, g @ d) + args.reg * u
            if args.side == "both":
                grad += dbags.grad_u(u, batch, d, dn, dpos, g.T @ q)
            step += 1
            m1 = 0.9 * m1 + 0.1 * grad
            m2 = 0.999 * m2 + 0.001 * grad * grad
            u -= args.lr * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
        scores = evaluate(u)
        print(
            f"  epoch {epoch + 1}: {_show(scores)}, log-weights {u.min():.2f}..{u.max():.2f}", file=sys.stderr
        )
        if scores["fused"] > best["fused"]:
            best_u, best = u.copy(), scores
    np.save(args.out.with_suffix(".u.npy"), best_u)
    out = rows * np.exp(best_u)[:, None] if args.side == "both" else rows
    recipe = {
        **recipe,
        "weighted_from": sha[:12],
        "pair_fit": args.side,
        "pairs": len(pairs),
        "tau": args.tau,
    }
    digest = pack_table(args.out, out.astype(np.float32), recipe)
    print(f"{args.out}: kept {_show(best)}, sha256 {digest[:12]}")
    return 0


def _show(scores: dict[str, float]) -> str:
    """The held-out scores on one line."""
    return ", ".join(f"{k} {v:.3f}" for k, v in scores.items())


if __name__ == "__main__":
    raise SystemExit(main())
