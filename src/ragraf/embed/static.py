"""The static tier: a token-vector table derived from all-MiniLM-L6-v2, a text's vector the mean of its tokens'.

No transformer at run time: tokenize, look up, average, normalize (30x faster than the model).
The table ships as package data; scripts/derive_static.py makes it (docs/embeddings.md).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import re
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragraf.embed.base import normalize
from ragraf.embed.errors import ModelFileError
from ragraf.errors import RagrafError
from ragraf.tokens import STOPWORDS, camel_words

if TYPE_CHECKING:
    from ragraf.config import Settings

STATIC_FORMAT = "ragraf-static-1"
_DATA = Path(__file__).parent / "data"
TABLE = _DATA / "minilm-static" / "static.npz"
TOKENIZER = _DATA / "all-MiniLM-L6-v2" / "tokenizer.json"  # the transformer's own vocabulary
# Tokens per text: the table costs the same per token at any length, so a chunk's whole embedded
# head counts (the transformer stops at 128).
MAX_TOKENS = 512
# BERT's pre-tokenizer on ASCII text: runs of letters and digits, and each other visible character
# alone. A text of such words is tokenized word by word through a cache (code repeats its words),
# 4-5x less CPU than the tokenizer over the whole text, the same ids.
_WORD = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # what the normalizer deletes
_WORD_CACHE = 200_000  # distinct words kept (~40 MB at most), then the cache starts again
# A query's words and punctuation, for dropping its stop words (static_query_text).
_QUERY_WORD = re.compile(r"\w+|[^\w\s]")
_FIX = "pip install --force-reinstall ragraf (or set RAGRAF_EMBEDDER=none for lexical-only search)"


def pack_table(path: Path, table: np.ndarray, recipe: dict[str, Any]) -> str:
    """Write a (vocab, dim) float table as int8 rows with float32 scales plus the recipe; its sha256."""
    scales = np.abs(table).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.rint(table / scales[:, None]).astype(np.int8)
    meta = np.frombuffer(json.dumps(recipe, sort_keys=True).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    # Uncompressed zip entries with fixed dates: the same table always makes the same bytes.
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, array in (("codes", codes), ("scales", scales.astype(np.float32)), ("recipe", meta)):
            entry = io.BytesIO()
            np.lib.format.write_array(entry, np.ascontiguousarray(array), allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", (1980, 1, 1, 0, 0, 0)), entry.getvalue())
    data = buf.getvalue()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def load_table(path: Path) -> tuple[np.ndarray, dict[str, Any], str]:
    """(float32 table, recipe, sha256) of a packed table; a damaged file raises ModelFileError naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(
            f"the static embedding table {path} cannot be read ({exc.strerror or exc})", suggest=_FIX
        ) from None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            codes, scales = npz["codes"], npz["scales"]
            recipe = json.loads(npz["recipe"].tobytes().decode())
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"the static embedding table {path} is truncated or corrupt ({exc})", suggest=_FIX
        ) from None
    ok = (
        isinstance(recipe, dict)
        and recipe.get("format") == STATIC_FORMAT
        and codes.dtype == np.int8
        and codes.ndim == 2
        and scales.shape == (codes.shape[0],)
        and bool(np.isfinite(scales).all())
    )
    if not ok:
        raise ModelFileError(
            f"the static embedding table {path} is not a {STATIC_FORMAT} table", suggest=_FIX
        )
    table = codes.astype(np.float32) * scales.astype(np.float32)[:, None]
    return table, recipe, hashlib.sha256(data).hexdigest()


class StaticEmbedder:
    """Tokenize with the transformer's WordPiece vocabulary, average the tokens' rows, normalize."""

    cacheable = False  # computing a vector costs less than looking one up in the machine-wide cache

    def __init__(self, table: Path = TABLE, max_tokens: int = MAX_TOKENS) -> None:
        self.table_path = table
        self.max_tokens = max_tokens
        self.tokens_used = 0
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None
        self._model_id = ""
        self._unknown = 0
        self._words: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> StaticEmbedder:
        """The shipped table (RAGRAF_STATIC_TABLE names another one, for measuring variants)."""
        other = os.environ.get("RAGRAF_STATIC_TABLE", "")
        return cls(Path(other) if other else TABLE)

    @property
    def model_id(self) -> str:
        """static:minilm@<sha256 prefix of the table>/words; loads it."""
        self.load()
        return self._model_id

    @property
    def dim(self) -> int:
        self.load()
        assert self._table is not None
        return int(self._table.shape[1])

    def load(self) -> None:
        """Read and check the table, open the tokenizer (idempotent, thread-safe)."""
        with self._lock:
            if self._table is not None:
                return
            table, _recipe, sha = load_table(self.table_path)
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(TOKENIZER))
            tokenizer.no_padding()
            tokenizer.enable_truncation(self.max_tokens)
            if tokenizer.get_vocab_size() != len(table):
                raise ModelFileError(
                    f"the static embedding table {self.table_path} has {len(table)} rows for a "
                    f"{tokenizer.get_vocab_size()}-token vocabulary",
                    suggest=_FIX,
                )
            self._unknown = tokenizer.token_to_id("[UNK]") or 0
            self._tokenizer = tokenizer
            self._model_id = f"static:minilm@{sha[:12]}/max{self.max_tokens}/words/sqrt-tf"
            self._table = table

    def embed(self, texts: list[str]) -> np.ndarray:
        """Each text's mean token row, unit length; a text with no tokens gets the [UNK] row."""
        self.load()
        assert self._table is not None
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids = [seq or [self._unknown] for seq in self.token_ids(texts)]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        self.tokens_used += int(lengths.sum())
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        # Each text's distinct tokens once, weighted by their count: code repeats its tokens, so
        # this gathers a third of the rows (the numpy side 2,400 -> 8,900 chunks per CPU-second).
        vocab = len(self._table)
        keys, counts = np.unique(np.repeat(np.arange(len(ids)), lengths) * vocab + flat, return_counts=True)
        rows, tokens = np.divmod(keys, vocab)
        starts = np.searchsorted(rows, np.arange(len(ids)))  # every text has a token: no empty segment
        # A token's weight grows with the square root of its count (sublinear term frequency): a name
        # a chunk repeats twenty times would otherwise outweigh everything else it says. Bench, static
        # tier alone, hybrid NDCG@10 by the count's exponent: 1 (the count) .838, .75 .844, .6 .846,
        # .5 .846, .4 .843, .25 .835, 0 (each token once) .829 (docs/embeddings.md).
        weights = np.sqrt(counts.astype(np.float32))
        # A weighted sum of each text's rows, one vector-matrix product per text: np.add.reduceat
        # over the weighted rows took 45 ms for a batch of 128 chunks, these products 4 (the
        # table's embedding of speed-corpus chunks 3,100 -> 6,900 per CPU-second).
        rows = self._table[tokens]
        bounds = [*starts.tolist(), len(tokens)]
        sums = np.stack([weights[a:b] @ rows[a:b] for a, b in itertools.pairwise(bounds)])
        return normalize(sums)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's WordPiece ids as the tokenizer gives them for camel_words(text), up to max_tokens:
        an ASCII text word by word through the cache, any other text whole."""
        self.load()
        words, out = self._words, [[] for _ in texts]
        whole = [i for i, t in enumerate(texts) if not t.isascii() or _CONTROL.search(t)]
        if whole:
            encoded = self._tokenizer.encode_batch(
                [camel_words(texts[i]) for i in whole], add_special_tokens=False
            )
            for i, e in zip(whole, encoded, strict=True):
                out[i] = e.ids
        skip = set(whole)
        found = {i: _WORD.findall(t) for i, t in enumerate(texts) if i not in skip}
        distinct = set(itertools.chain.from_iterable(found.values()))
        new = [w for w in distinct if w not in words]
        if new:  # the batch's new words in one call
            if len(words) + len(new) > _WORD_CACHE:
                words.clear()
                new = list(distinct)
            encoded = self._tokenizer.encode_batch([camel_words(w) for w in new], add_special_tokens=False)
            words.update((w, e.ids) for w, e in zip(new, encoded, strict=True))
        for i, seq in found.items():
            out[i] = list(itertools.chain.from_iterable(words[w] for w in seq))[: self.max_tokens]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """A query's vector from its content words (static_query_text), then as a document's."""
        return self.embed([static_query_text(text)])[0]


def static_query_text(query: str) -> str:
    """The query without its stop words (the lexical side's list), or whole when nothing else is left.

    A mean of token rows has no attention to discount "how does the ... work": the table's SIF
    weights come from code, where such words are rare, so they weigh as much as the words that
    name what is asked. Bench, static tier alone: hybrid NDCG@10 0.831 -> 0.838 (docs/embeddings.md).
    """
    words = _QUERY_WORD.findall(query)
    content = [w for w in words if w.lower() not in STOPWORDS]
    return " ".join(content) if content else query


_SHARED: dict[Path, StaticEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def static_tier(settings: Settings) -> StaticEmbedder | None:
    """The static tier beside a transformer embedder (None for embedder = none or static), one per
    table and process so indexing and searching load the table once."""
    if settings.embedder.strip().lower() in ("none", "static"):
        return None
    return _shared()


def _shared() -> StaticEmbedder:
    other = os.environ.get("RAGRAF_STATIC_TABLE", "")
    path = Path(other) if other else TABLE
    with _SHARED_LOCK:
        if path not in _SHARED:
            _SHARED[path] = StaticEmbedder(path)
        return _SHARED[path]


def pass_tier(model: str) -> StaticEmbedder | None:
    """The table an index worker embeds new chunks with when the run asks for `model`: this
    process's shared one (a forked worker inherits it loaded), None when it is another table or
    will not load (the run's embedding phase then embeds those chunks, or says why it cannot)."""
    tier = _shared()
    try:
        return tier if tier.model_id == model else None
    except RagrafError:
        return None


def static_tier_id(settings: Settings) -> str:
    """The static tier's model id for the index version; "" without one or when its table is damaged
    (the index run then says so, and the index stays lexical plus the transformer tier)."""
    tier = static_tier(settings)
    if tier is None:
        return ""
    try:
        return tier.model_id
    except ModelFileError:
        return ""
