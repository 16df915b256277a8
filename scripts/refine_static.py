"""Fit the static table to the transformer on code that is not the bench (tokenlearn's recipe, numpy only).

Measured, not shipped (docs/embeddings.md, "Refined towards the transformer"). Training texts, none
from the bench's repositories: chunks of `--code` folders as ragraf's chunker cuts them (path,
symbol, first 1,200 characters) and the first paragraphs of docstrings under `--docs` folders
(short English, as queries are). The shipped all-MiniLM-L6-v2 embeds them (the machine-wide
cache, as the indexer does). Then, over the base table's rows R, a text's static vector is
x = normalize(sum over its tokens of exp(u_t) R_t), exactly as StaticEmbedder computes it with
u = 0, and

- `--fit map`: a ridge least-squares map W with x W ~ the transformer's vector; the table becomes
  R W (reduced back to R's width by an SVD of W, which keeps every cosine);
- `--fit weights`: W as above, then the per-token log-weights u (and W unless `--fixed-map`) by
  Adam on the cosine to the transformer's vector, u pulled to 0 by `--reg`; the table becomes
  exp(alpha u_t) R_t (`--alpha` shrinks the learnt weights towards the base), W only bridges to the
  transformer's space;
- `--fit both`: the weights, then the map applied to the rows too.

Deterministic (a seeded permutation holds out a tenth; no torch). The base table by default is the
shipped one (its SIF weights and common-direction removal already applied):

    python scripts/refine_static.py --code /usr/lib/python3.11 --code /usr/lib/node_modules \
        --docs /usr/lib/python3.11 --fit weights --epochs 4 --out /tmp/weights.npz
    RAGRAF_STATIC_TABLE=/tmp/weights.npz python benchmarks/quality.py --embedder static --repeat 1
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

from derive_static import teacher_vectors, training_texts  # noqa: E402

from ragraf.embed.static import TABLE, TOKENIZER, StaticEmbedder, load_table, pack_table  # noqa: E402


def docstring_texts(folders: list[Path], limit: int) -> list[str]:
    """Up to `limit` distinct first paragraphs (20-400 characters) of the Python docstrings under
    `folders`, tests left out, spread evenly (sorted walk: deterministic)."""
    seen: dict[str, None] = {}
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if {"test", "tests"} & set(path.parts):
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                doc = ast.get_docstring(node) if isinstance(node, kinds) else None
                para = re.sub(r"\s+", " ", doc.split("\n\n")[0]).strip() if doc else ""
                if 20 <= len(para) <= 400 and not para.startswith((">>>", ":", "..")):
                    seen.setdefault(para)
    texts = list(seen)
    return texts[:: max(1, len(texts) // limit)][:limit] if limit else []


class Fit:
    """A text's static vector under per-token log-weights u, and its cosine to the transformer's
    vector through a map W (the loss and its gradients)."""

    def __init__(self, rows: np.ndarray, ids: list[list[int]], targets: np.ndarray, unknown: int) -> None:
        self.rows = rows.astype(np.float64)
        seqs = [np.asarray(s or [unknown], dtype=np.int64) for s in ids]
        self.lengths = np.array([len(s) for s in seqs])
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        self.flat = np.concatenate(seqs)
        self.targets = targets.astype(np.float64)

    def features(self, u: np.ndarray, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit vectors, their norms before, the token positions) of `texts` under weights u."""
        pos = np.concatenate([np.arange(self.offsets[i], self.offsets[i + 1]) for i in texts])
        starts = np.concatenate([[0], np.cumsum(self.lengths[texts])[:-1]])
        sums = np.add.reduceat(self.rows[self.flat[pos]] * np.exp(u[self.flat[pos]])[:, None], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return sums / norms, norms, pos

    def cosine(self, u: np.ndarray, w: np.ndarray, texts: np.ndarray) -> float:
        """Mean cosine of x W to the transformer's vectors over `texts`."""
        x, _, _ = self.features(u, texts)
        y = x @ w
        return float(((y / np.linalg.norm(y, axis=1, keepdims=True)) * self.targets[texts]).sum(1).mean())

    def ridge(self, u: np.ndarray, texts: np.ndarray, lam: float) -> np.ndarray:
        """The least-squares map from the texts' static vectors to the transformer's."""
        x, _, _ = self.features(u, texts)
        return np.linalg.solve(x.T @ x + lam * np.eye(x.shape[1]), x.T @ self.targets[texts])

    def gradients(self, u: np.ndarray, w: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """d(mean of 1 - cosine)/du and /dW over one batch."""
        x, norms, pos = self.features(u, batch)
        y = x @ w
        ny = np.linalg.norm(y, axis=1, keepdims=True)
        yh, t = y / ny, self.targets[batch]
        gy = -(t - (yh * t).sum(1, keepdims=True) * yh) / ny / len(batch)
        gx = gy @ w.T
        gsum = (gx - (gx * x).sum(1, keepdims=True) * x) / norms
        owner = np.repeat(np.arange(len(batch)), self.lengths[batch])
        tokens = self.flat[pos]
        per = (self.rows[tokens] * gsum[owner]).sum(1) * np.exp(u[tokens])
        return np.bincount(tokens, weights=per, minlength=len(u)), x.T @ gy


def adam(
    params: list[np.ndarray], fit: Fit, train: np.ndarray, held: np.ndarray, args: argparse.Namespace
) -> None:
    """Adam over [u, W] on batches of 256 training texts (W kept when --fixed-map), u pulled to 0."""
    rng = np.random.default_rng(0)
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    step = 0
    for epoch in range(args.epochs):
        order = train[rng.permutation(len(train))]
        for b in range(0, len(order), 256):
            gu, gw = fit.gradients(params[0], params[1], order[b : b + 256])
            step += 1
            for i, (p, g) in enumerate(((params[0], gu + args.reg * params[0]), (params[1], gw))):
                if i == 1 and args.fixed_map:
                    continue
                m1, m2 = moments[i]
                m1 *= 0.9
                m1 += 0.1 * g
                m2 *= 0.999
                m2 += 0.001 * g * g
                p -= args.lr * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
        u = params[0]
        print(
            f"  epoch {epoch + 1}: held-out cosine {fit.cosine(u, params[1], held):.4f}, "
            f"log-weights {u.min():.2f}..{u.max():.2f}",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--base", type=Path, default=TABLE, help="the table to refine (default: the shipped one)")
    ap.add_argument("--code", type=Path, action="append", default=[], help="code folders for chunks")
    ap.add_argument("--docs", type=Path, action="append", default=[], help="Python folders for docstrings")
    ap.add_argument("--chunks", type=int, default=8000, help="code chunks to fit on")
    ap.add_argument("--sentences", type=int, default=12000, help="docstring paragraphs to fit on")
    ap.add_argument("--fit", choices=("map", "weights", "both"), default="weights")
    ap.add_argument("--ridge", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--reg", type=float, default=1e-4, help="L2 pull of the log-weights towards 0")
    ap.add_argument("--alpha", type=float, default=1.0, help="the learnt log-weights times this")
    ap.add_argument("--fixed-map", action="store_true", help="fit the weights with the ridge map fixed")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ragraf-static-work"))
    args = ap.parse_args(argv)
    from tokenizers import Tokenizer

    texts = (training_texts(args.code, args.chunks) if args.code else []) + docstring_texts(
        args.docs, args.sentences
    )
    if not texts:
        ap.error("give --code or --docs folders to fit on")
    targets = np.concatenate(
        [teacher_vectors(texts[i : i + 8000], args.work) for i in range(0, len(texts), 8000)]
    )
    rows, recipe, sha = load_table(args.base)
    embedder = StaticEmbedder(args.base)
    fit = Fit(
        rows, embedder.token_ids(texts), targets, Tokenizer.from_file(str(TOKENIZER)).token_to_id("[UNK]")
    )
    order = np.random.default_rng(0).permutation(len(texts))
    held, train = np.sort(order[: len(texts) // 10]), np.sort(order[len(texts) // 10 :])
    u = np.zeros(len(rows))
    w = fit.ridge(u, train, args.ridge)
    print(f"  ridge map: held-out cosine {fit.cosine(u, w, held):.4f}", file=sys.stderr)
    if args.fit in ("weights", "both"):
        adam([u, w], fit, train, held, args)
    out = fit.rows * np.exp(args.alpha * u)[:, None]
    if args.fit in ("map", "both"):
        left, sigma, _ = np.linalg.svd(w, full_matrices=False)
        out = (out @ left) * sigma
    recipe = {
        **recipe,
        "refined_from": sha[:12],
        "refit": args.fit,
        "refit_texts": len(texts),
        "ridge": args.ridge,
        "epochs": args.epochs if args.fit != "map" else 0,
        "alpha": args.alpha,
    }
    digest = pack_table(args.out, out.astype(np.float32), recipe)
    print(f"{args.out}: {out.shape}, {args.out.stat().st_size / 1e6:.1f} MB, sha256 {digest[:12]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
