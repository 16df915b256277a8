"""Derive ragraf's static token-vector table from the shipped all-MiniLM-L6-v2 (the model2vec recipe).

Offline, numpy + onnxruntime + tokenizers only, deterministic:

1. every token of the vocabulary goes through the transformer alone (`[CLS] token [SEP]`, the
   packaged weights in float32 compute, so a batch of equal-length inputs changes nothing) and its
   output, mean-pooled as the model pools sentences, becomes the token's vector;
2. PCA (an SVD of the centred table) keeps the first `--dims` components;
3. each row is weighted by SIF, a / (a + p(token)), with p from token counts over `--corpus`
   folders of code (ragraf tokenizes them as it tokenizes chunks), or by Zipf over the token ids;
4. optionally (`--remove K`, SIF's second step) the first K directions that chunks of the
   `--corpus` code share are projected out of every row;
5. rows are stored as int8 with one float32 scale per row, in one .npz with the recipe's metadata.

Variants: `--contextual N` averages each token's outputs over N chunks of code (shrunk towards
its vector alone by `--prior`), `--refine N` fits the rows to the transformer's chunk vectors,
`--pass position|code` reads a token's vector from its own output (alone, or inside a short call).
The shipped table (docs/embeddings.md):

    python scripts/derive_static.py --corpus /usr/lib/python3.11 --corpus /usr/lib/node_modules \
        --sif 1e-5 --remove 2 --out src/ragraf/embed/data/minilm-static/static.npz
    python scripts/derive_static.py --dims 128 --weighting zipf --out /tmp/variant.npz

The transformer pass is cached in `--work` (the step every variant shares: ~30,000 inputs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from ragraf.embed.local import MINILM, LocalEmbedder, _import_onnxruntime  # noqa: E402
from ragraf.embed.static import STATIC_FORMAT, pack_table  # noqa: E402
from ragraf.tokens import camel_words  # noqa: E402

SIF_A = 1e-4  # model2vec's SIF coefficient
CODE_SUFFIXES = (".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h", ".md", ".rst", ".txt", ".toml")


# What each vocabulary token's vector is read from (--pass): "alone" the mean of the outputs of
# `[CLS] token [SEP]` (model2vec's recipe, shipped), "position" the token's own output there,
# "code" the token's own output inside a short call, `[CLS] x = token ( ) [SEP]`.
PASSES = ("alone", "position", "code")


def token_vectors(work: Path, batch: int = 256, how: str = "alone") -> np.ndarray:
    """The transformer's vector of every vocabulary token (`how`: PASSES), (vocab, 384) float32; cached."""
    cached = work / ("token_vectors.npy" if how == "alone" else f"token_vectors-{how}.npy")
    if cached.exists():
        return np.load(cached)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MINILM.tokenizer))
    vocab = tok.get_vocab_size()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    ort = _import_onnxruntime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    path = LocalEmbedder().weights_path()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    out = np.empty((vocab, MINILM.dim), dtype=np.float32)
    t0 = time.monotonic()
    for start in range(0, vocab, batch):
        ids = np.arange(start, min(vocab, start + batch), dtype=np.int64)
        if how == "code":
            before = [tok.token_to_id(t) for t in ("x", "=")]
            after = [tok.token_to_id(t) for t in ("(", ")")]
            cols = [cls, *before, ids, *after, sep]
            at = 1 + len(before)
        else:
            cols, at = [cls, ids, sep], 1
        input_ids = np.stack([c if isinstance(c, np.ndarray) else np.full_like(ids, c) for c in cols], axis=1)
        feed = {
            "input_ids": input_ids,
            "attention_mask": np.ones_like(input_ids),
            "token_type_ids": np.zeros_like(input_ids),
        }
        (hidden,) = session.run(None, feed)
        out[ids] = hidden.mean(axis=1) if how == "alone" else hidden[:, at]
        if start // batch % 20 == 0:
            print(f"  {start + len(ids)}/{vocab} tokens, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    work.mkdir(parents=True, exist_ok=True)
    np.save(cached, out)
    return out


def contextual_vectors(texts: list[str], work: Path, batch: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Each vocabulary token's transformer output averaged over its occurrences in `texts` (the
    sentence vector is the mean of these outputs, so their means are what a static mean should
    reproduce), and how often each token occurred; (vocab, 384) float32 and (vocab,) counts; cached."""
    key = hashlib.sha1("\0".join(texts).encode()).hexdigest()[:12]
    cached = work / f"contextual-{key}.npz"
    if cached.exists():
        with np.load(cached) as npz:
            return npz["sums"], npz["counts"]
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MINILM.tokenizer))
    tok.no_padding()
    tok.enable_truncation(128)  # what the transformer sees of a chunk
    ids = [e.ids for e in tok.encode_batch([camel_words(t) for t in texts])]
    ort = _import_onnxruntime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    session = ort.InferenceSession(
        str(LocalEmbedder().weights_path()), options, providers=["CPUExecutionProvider"]
    )
    sums = np.zeros((tok.get_vocab_size(), MINILM.dim), dtype=np.float64)
    counts = np.zeros(tok.get_vocab_size(), dtype=np.float64)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths: little padding
    t0 = time.monotonic()
    for b in range(0, len(order), batch):
        part = [ids[i] for i in order[b : b + batch]]
        width = max(len(seq) for seq in part)
        input_ids = np.zeros((len(part), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, seq in enumerate(part):
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        (hidden,) = session.run(None, feed)
        real = mask.astype(bool)
        np.add.at(sums, input_ids[real], hidden[real].astype(np.float64))
        np.add.at(counts, input_ids[real], 1.0)
        if b // batch % 25 == 0:
            print(
                f"  contextual {b + len(part)}/{len(ids)} texts, {time.monotonic() - t0:.0f} s",
                file=sys.stderr,
            )
    work.mkdir(parents=True, exist_ok=True)
    np.savez(cached, sums=sums.astype(np.float32), counts=counts)
    return sums.astype(np.float32), counts


def token_counts(folders: list[Path], work: Path, camel: bool) -> np.ndarray:
    """How often each token id occurs in the code under `folders` (sorted walk: deterministic)."""
    key = hashlib.sha1(json.dumps([str(f) for f in folders] + [camel]).encode()).hexdigest()[:12]
    cached = work / f"counts-{key}.npy"
    if cached.exists():
        return np.load(cached)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MINILM.tokenizer))
    tok.no_padding()
    tok.no_truncation()
    counts: Counter[int] = Counter()
    files = sorted(p for f in folders for p in f.rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file())
    texts: list[str] = []
    for i, path in enumerate(files):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[:200_000]
        except OSError:
            continue
        texts.append(camel_words(text) if camel else text)
        if len(texts) == 256 or i == len(files) - 1:
            for enc in tok.encode_batch(texts, add_special_tokens=False):
                counts.update(enc.ids)
            texts = []
    out = np.zeros(tok.get_vocab_size(), dtype=np.float64)
    for token, n in counts.items():
        out[token] = n
    work.mkdir(parents=True, exist_ok=True)
    np.save(cached, out)
    print(f"  counted {int(out.sum())} tokens in {len(files)} files", file=sys.stderr)
    return out


def training_texts(folders: list[Path], limit: int) -> list[str]:
    """Up to `limit` chunk texts of the code under `folders`, as the indexer embeds them, spread evenly."""
    from ragraf.chunking import chunk_text
    from ragraf.languages import language_of

    texts: list[str] = []
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.suffix in CODE_SUFFIXES[:6] and p.is_file()):
            rel = path.relative_to(folder).as_posix()
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for chunk in chunk_text(source, language_of(rel) or "text"):
                head = f"{rel}\n{chunk.symbol}\n" if chunk.symbol else f"{rel}\n"
                texts.append(head + chunk.text[:1200])
    step = max(1, len(texts) // limit)
    return texts[::step][:limit]


def teacher_vectors(texts: list[str], work: Path) -> np.ndarray:
    """The transformer's vectors of the texts, through the machine-wide cache (the indexer's path)."""
    key = hashlib.sha1("\0".join(texts).encode()).hexdigest()[:12]
    cached = work / f"teacher-{key}.npy"
    if cached.exists():
        return np.load(cached)
    from ragraf.config import load_settings
    from ragraf.embed import embed_with_cache, open_cache

    settings = load_settings(work)
    embedder = LocalEmbedder.from_settings(settings)
    t0 = time.monotonic()

    def progress(done: int, total: int) -> None:
        if done % 512 < 32:
            print(f"  teacher {done}/{total}, {time.monotonic() - t0:.0f} s", file=sys.stderr)

    result = embed_with_cache(embedder, open_cache(settings), texts, 32, progress)
    out = np.stack([np.asarray(v, dtype=np.float32) for v in result.vectors])
    np.save(cached, out)
    return out


def refine(table: np.ndarray, texts: list[str], targets: np.ndarray, epochs: int, lr: float) -> np.ndarray:
    """Tokenlearn's idea in numpy: move the token rows so a text's mean row points where the transformer's
    vector of it points (cosine loss, Adam on the rows a batch touches); 1/10 of the texts held out."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MINILM.tokenizer))
    tok.no_padding()
    tok.enable_truncation(128)  # what the transformer saw of each text
    ids = [
        np.asarray(e.ids or [100], dtype=np.int64)
        for e in tok.encode_batch([camel_words(t) for t in texts], add_special_tokens=False)
    ]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(texts))
    held, train = order[: len(order) // 10], order[len(order) // 10 :]
    table = table.astype(np.float32).copy()
    m1, m2 = np.zeros_like(table), np.zeros_like(table)
    step = 0

    def predict(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        lengths = np.array([len(ids[i]) for i in batch])
        flat = np.concatenate([ids[i] for i in batch])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        mean = np.add.reduceat(table[flat], starts, axis=0) / lengths[:, None]
        return mean, flat, lengths, starts

    def held_cosine() -> float:
        mean, *_ = predict(held)
        unit = mean / np.linalg.norm(mean, axis=1, keepdims=True)
        return float((unit * targets[held]).sum(axis=1).mean())

    print(f"  refine: held-out cosine {held_cosine():.4f} before", file=sys.stderr)
    for epoch in range(epochs):
        for b in range(0, len(train), 128):
            batch = train[b : b + 128]
            mean, flat, lengths, starts = predict(batch)
            norm = np.linalg.norm(mean, axis=1, keepdims=True)
            unit = mean / norm
            g_unit = unit - targets[batch]
            g_mean = (g_unit - (g_unit * unit).sum(axis=1, keepdims=True) * unit) / norm / lengths[:, None]
            owner = np.repeat(np.arange(len(batch)), lengths)
            rows, inverse = np.unique(flat, return_inverse=True)
            grad = np.zeros((len(rows), table.shape[1]), dtype=np.float64)
            np.add.at(grad, inverse, g_mean[owner])
            step += 1
            m1[rows] = 0.9 * m1[rows] + 0.1 * grad
            m2[rows] = 0.999 * m2[rows] + 0.001 * grad * grad
            hat1, hat2 = m1[rows] / (1 - 0.9**step), m2[rows] / (1 - 0.999**step)
            table[rows] -= lr * hat1 / (np.sqrt(hat2) + 1e-8)
        train = train[rng.permutation(len(train))]
        print(f"  refine: epoch {epoch + 1}, held-out cosine {held_cosine():.4f}", file=sys.stderr)
    return table


def remove_common(table: np.ndarray, texts: list[str], k: int) -> np.ndarray:
    """SIF's common-component removal: the first `k` directions of the texts' static vectors (what
    every chunk shares, not what tells one from another) projected out of every row, so out of
    every mean too."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MINILM.tokenizer))
    tok.no_padding()
    tok.enable_truncation(512)
    means = []
    for enc in tok.encode_batch([camel_words(t) for t in texts], add_special_tokens=False):
        if enc.ids:
            mean = table[np.asarray(enc.ids)].mean(axis=0)
            means.append(mean / (np.linalg.norm(mean) or 1.0))
    _, _, vt = np.linalg.svd(np.asarray(means, dtype=np.float64), full_matrices=False)
    u = vt[:k]
    return (table - (table @ u.T) @ u).astype(np.float32)


def pca(table: np.ndarray, dims: int) -> np.ndarray:
    """The first `dims` principal components of the rows (signs fixed: deterministic)."""
    centred = table.astype(np.float64) - table.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    vt = vt[:dims]
    vt *= np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)])[:, None]
    return (centred @ vt.T).astype(np.float32)


def weights(kind: str, counts: np.ndarray | None, vocab: int, a: float = SIF_A) -> np.ndarray:
    """SIF weights a / (a + p) with p from corpus counts (add-one) or from Zipf over the ids; or ones."""
    if kind == "none":
        return np.ones(vocab, dtype=np.float32)
    if kind == "zipf":
        p = 1.0 / np.arange(1, vocab + 1, dtype=np.float64)
    else:
        assert counts is not None
        p = counts + 1.0
    p = p / p.sum()
    return (a / (a + p)).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--weighting", choices=("sif", "zipf", "none"), default="sif")
    ap.add_argument("--corpus", type=Path, action="append", default=[], help="code folders for token counts")
    ap.add_argument("--no-camel", action="store_true", help="count tokens without splitting camelCase")
    ap.add_argument("--sif", type=float, default=SIF_A, help="the SIF coefficient a")
    ap.add_argument("--refine", type=int, default=0, help="refine on this many chunks of --train folders")
    ap.add_argument("--train", type=Path, action="append", default=[], help="code folders to refine on")
    ap.add_argument("--contextual", type=int, default=0, help="average tokens' outputs over this many chunks")
    ap.add_argument(
        "--prior", type=float, default=2.0, help="the vocabulary pass counts as this many occurrences"
    )
    ap.add_argument("--remove", type=int, default=0, help="project out this many common directions")
    ap.add_argument(
        "--pass",
        dest="token_pass",
        choices=PASSES,
        default="alone",
        help="what a token's vector is read from",
    )
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/ragraf-static-work"))
    args = ap.parse_args(argv)

    if args.weighting == "sif" and not args.corpus:
        ap.error("--weighting sif needs at least one --corpus folder")
    table = token_vectors(args.work, how=args.token_pass)
    counts = token_counts(args.corpus, args.work, not args.no_camel) if args.weighting == "sif" else None
    sif = weights(args.weighting, counts, len(table), args.sif)[:, None]
    if args.contextual:
        # A token seen in context takes the mean of its outputs there, shrunk towards its vector alone.
        sums, seen = contextual_vectors(training_texts(args.train or args.corpus, args.contextual), args.work)
        table = (sums + args.prior * table) / (seen + args.prior)[:, None]
    if args.refine:
        # Refined in the transformer's own space (its vectors are the targets), reduced afterwards.
        texts = training_texts(args.train or args.corpus, args.refine)
        table = refine(table * sif, texts, teacher_vectors(texts, args.work), args.epochs, args.lr)
        reduced = pca(table, args.dims) if args.dims < table.shape[1] else table
    else:
        reduced = pca(table, args.dims) if args.dims < table.shape[1] else table
        reduced = reduced * sif
    if args.remove:
        reduced = remove_common(reduced, training_texts(args.train or args.corpus, 4000), args.remove)
    recipe = {
        "format": STATIC_FORMAT,
        "source": f"{MINILM.name}@{MINILM.sha256[:12]}",
        "dims": args.dims,
        "weighting": args.weighting,
        "sif": args.sif,
        "camel": not args.no_camel,
        "corpus_tokens": int(counts.sum()) if counts is not None else 0,
        "refined_on": args.refine,
        "removed": args.remove,
        "contextual": args.contextual,
        "prior": args.prior if args.contextual else 0,
        "epochs": args.epochs if args.refine else 0,
    }
    if args.token_pass != "alone":
        recipe["pass"] = args.token_pass
    args.out.parent.mkdir(parents=True, exist_ok=True)
    digest = pack_table(args.out, reduced, recipe)
    print(f"{args.out}: {reduced.shape}, {args.out.stat().st_size / 1e6:.1f} MB, sha256 {digest[:12]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
