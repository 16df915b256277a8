"""What redaction costs and how often it is wrong (issue 27): every text file of real corpora (the
Python standard library, the benchmark corpora present under benchmarks/data/) through the same
extraction the index uses; each redaction is listed with its line so a person can judge it, and
the CPU the redaction adds to extraction is timed.

    python -m reliability.redaction [--corpus PATH ...]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from ragraf.config import Settings
from ragraf.corpus.extract import decode, looks_binary
from ragraf.corpus.rules import excluded_reason
from ragraf.corpus.secrets import REDACTED, opens_with_private_key, redact
from reliability.common import REPO, STDLIB, save_result

MAX_LINE_CHARS = Settings.__dataclass_fields__["max_line_chars"].default
DEFAULT_CORPORA = [STDLIB, *sorted(p for p in (REPO / "benchmarks" / "data").glob("[!.]*") if p.is_dir())]


def _files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "site-packages", "node_modules", ".git")]
        out += [Path(dirpath) / f for f in files]
    return sorted(out)


def measure(corpora: list[Path]) -> dict[str, Any]:
    """Redactions and private-key files per corpus, with every redacted line; extraction time with
    and without redaction."""
    per: list[dict[str, Any]] = []
    for root in corpora:
        files = redactions = key_files = bytes_ = 0
        lines: list[str] = []
        decode_s = redact_s = 0.0
        for path in _files(root):
            rel = path.relative_to(root).as_posix()
            if (
                excluded_reason(rel)
                or path.is_symlink()
                or not path.is_file()
                or path.stat().st_size > 1 << 20
            ):
                continue
            data = path.read_bytes()
            if looks_binary(data):
                continue
            t0 = time.process_time()
            text = decode(data)
            t1 = time.process_time()
            if opens_with_private_key(text):
                key_files += 1
                continue
            if max((len(line) for line in text.split("\n")), default=0) > MAX_LINE_CHARS:
                continue  # extraction refuses it as minified before redaction would run
            out, n = redact(text)
            redact_s += time.process_time() - t1
            decode_s += t1 - t0
            files += 1
            bytes_ += len(data)
            if n:
                redactions += n
                lines += [f"{rel}: {line.strip()[:140]}" for line in out.split("\n") if REDACTED in line]
        per.append({
            "corpus": str(root.relative_to(REPO)) if root.is_relative_to(REPO) else str(root),
            "files": files, "mib": round(bytes_ / 2**20, 1), "redactions": redactions,
            "files_with_redactions": len({line.split(":", 1)[0] for line in lines}),
            "private_key_files": key_files, "redacted_lines": lines[:60],
            "redact_cpu_s": round(redact_s, 2), "decode_cpu_s": round(decode_s, 2),
        })  # fmt: skip
    return {"corpora": per, "ok": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", action="append", type=Path, help="a folder (default: stdlib + benchmarks/data/*)"
    )
    args = parser.parse_args()
    corpora = args.corpus or DEFAULT_CORPORA
    result = measure(corpora)
    cmd = "python -m reliability.redaction" + "".join(f" --corpus {c}" for c in args.corpus or [])
    save_result("redaction", result, cmd)
    for c in result["corpora"]:
        print(f"{c['corpus']}: {c['files']} files, {c['mib']} MiB, {c['redactions']} redactions in "
              f"{c['files_with_redactions']} files, {c['private_key_files']} private-key files, "
              f"redaction {c['redact_cpu_s']} s CPU (decoding {c['decode_cpu_s']} s)")  # fmt: skip
        for line in c["redacted_lines"]:
            print("   ", line)


if __name__ == "__main__":
    main()
