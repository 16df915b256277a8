"""Derive, once per machine, an int8-compute ONNX model from pinned int8-storage weights.

The packaged all-MiniLM-L6-v2 file stores int8 weights but computes in float32 (each weight
is cast back before its MatMul). Dynamic per-channel quantization makes the MatMuls run in
int8 (VNNI/AVX2 kernels): 3-4x faster here at the same retrieval quality
(benchmarks/embed_speed.py). The recipe is deterministic, so the result is content-addressed
and cached under <cache dir>/models; the model id names the hash of the file actually run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

RECIPE = "dq-pc1"  # dynamic quantization, int8 weights per channel; bump when the recipe changes
# The versions that produced the pinned int8 file (LocalModel.int8_sha256); others may differ by a byte.
PINNED_VERSIONS = {"onnx": "1.23.2", "onnxruntime": "1.32.0"}


def sha256_file(path: Path, memo_dir: Path | None = None) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks; with memo_dir, remembered by the file's stat
    (size, mtime, ctime, inode), so each process does not re-read 20 MB of weights to know them."""
    st = path.stat()
    key, stamp = str(path.resolve()), [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    memo_file = memo_dir / "sha256-memo.json" if memo_dir is not None else None
    memo: dict[str, list] = {}
    if memo_file is not None:
        with contextlib.suppress(OSError, ValueError):
            memo = json.loads(memo_file.read_text())
        known = memo.get(key)
        if isinstance(known, list) and known[:4] == stamp and isinstance(known[-1], str):
            return known[-1]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if memo_file is not None:
        memo[key] = [*stamp, digest.hexdigest()]
        with contextlib.suppress(OSError):
            memo_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(memo))
            os.replace(tmp, memo_file)
    return digest.hexdigest()


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    # The quantizer calls logging.warning(), which would also install a stderr handler on the
    # root logger of the host program; a NullHandler keeps basicConfig() from firing.
    root = logging.getLogger()
    guard = logging.NullHandler() if not root.handlers else None
    if guard:
        root.addHandler(guard)
    was, root.disabled = root.disabled, True
    try:
        yield
    finally:
        root.disabled = was
        if guard:
            root.removeHandler(guard)


def _derive(ort: Any, source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="ragraf-quant-") as tmp:
        folded = Path(tmp) / "folded.onnx"
        # Basic optimisation folds the Cast/Mul that dequantize each weight into plain float
        # initializers, which is what the quantizer needs to find the MatMul weights.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        with _quiet_root_logger():
            quantize_dynamic(folded, target, weight_type=QuantType.QInt8, per_channel=True)


def int8_model(ort: Any, source: Path, source_sha: str, models_dir: Path | None) -> tuple[bytes | Path, str]:
    """The derived model (a cached path, or bytes when no folder is writable) and its sha256."""
    name = f"{source.stem}-{source_sha[:12]}-{RECIPE}.onnx"
    if models_dir is not None:
        cached = models_dir / name
        if cached.is_file():
            return cached, sha256_file(cached, models_dir)
        tmp: Path | None = None
        try:
            models_dir.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", dir=models_dir)
            os.close(fd)
            tmp = Path(tmp_name)
            _derive(ort, source, tmp)
            tmp.chmod(0o644)
            os.replace(tmp, cached)  # atomic: concurrent first loads write identical bytes
            return cached, sha256_file(cached)
        except OSError as exc:
            log.warning("cannot cache the int8 model in %s (%s); deriving it in memory", models_dir, exc)
        finally:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragraf-quant-") as scratch:
        target = Path(scratch) / name
        _derive(ort, source, target)
        data = target.read_bytes()
    return data, hashlib.sha256(data).hexdigest()
