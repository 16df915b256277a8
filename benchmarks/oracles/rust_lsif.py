"""rust-analyzer's answer for call sites: which definition each called name means, from its LSIF dump.

    python rust_lsif.py RUST_ANALYZER ROOT SITES.tsv [DEP_NAME=DEP_CRATE_DIR ...] > LABELS.tsv

ROOT is a crate (Cargo.toml, src/lib.rs); its dependencies are other crate folders, named as the
crate uses them. A rust-project.json beside ROOT (not in it) describes them with no Cargo and no
registry, every feature of the crate's Cargo.toml on, the Rust library sources from
$RUST_SRC (default: Debian's rust-src package, /usr/src/rustc-*/library) as the sysroot. SITES.tsv: `path<TAB>line<TAB>col<TAB>name`
a line (line 1-based, col 0-based). For each, the range rust-analyzer emitted at that position
is followed to its definition: "internal<TAB>path<TAB>line" when it is a fn, struct, enum,
union, trait, type or macro of ROOT, "external" when it lies outside ROOT (std, a dependency),
"unknown" when there is none or it is something else (a local closure, an enum variant, a field).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

RUST_SRC = Path(
    os.environ.get("RUST_SRC")
    or next(iter(sorted(Path("/usr/src").glob("rustc-*/library"))), "/usr/src/rustc/library")
)
_ITEM = r"\b(?:fn|struct|enum|union|trait|type|macro_rules!)\s+{name}\b"


def project(root: Path, deps: dict[str, Path]) -> Path:
    """A rust-project.json for the crate and its dependencies, in a folder beside root."""
    crates = []
    for i, crate in enumerate([root, *deps.values()]):
        toml = (crate / "Cargo.toml").read_text(errors="replace")
        edition = re.search(r'^edition\s*=\s*"(\d+)"', toml, re.M)
        section = re.search(r"^\[features\]\n(.*?)(?:^\[|\Z)", toml, re.M | re.S)
        features = re.findall(r"^([\w-]+)\s*=", section.group(1), re.M) if section else []
        crates.append({
            "display_name": crate.name, "root_module": str(crate / "src/lib.rs"),
            "edition": edition.group(1) if edition else "2015",
            "deps": [{"crate": j + 1, "name": n} for j, n in enumerate(deps)] if i == 0 else [],
            "cfg": [f'feature="{f}"' for f in features], "is_workspace_member": i == 0,
        })  # fmt: skip
    where = root.parent / f"{root.name}-lsif"
    where.mkdir(exist_ok=True)
    (where / "rust-project.json").write_text(json.dumps({"sysroot_src": str(RUST_SRC), "crates": crates}))
    return where


def definitions(analyzer: str, where: Path) -> tuple[dict, dict]:
    """(path → {(line, col) → range id}, range id → [(path, line)] of its definitions) from the dump."""
    out = subprocess.run([analyzer, "lsif", str(where)], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"rust-analyzer lsif failed: {out.stderr[-2000:]}")
    docs, ranges, nexts, defs, items = {}, {}, {}, {}, {}
    contains: dict[int, list[int]] = {}
    for line in out.stdout.splitlines():
        e = json.loads(line)
        label = e.get("label")
        if label == "document":
            docs[e["id"]] = Path(unquote(urlparse(e["uri"]).path))
        elif label == "range":
            ranges[e["id"]] = (e["start"]["line"], e["start"]["character"])
        elif label == "contains":
            contains.setdefault(e["outV"], []).extend(e["inVs"])
        elif label == "next":
            nexts[e["outV"]] = e["inV"]
        elif label == "textDocument/definition":
            defs[e["outV"]] = e["inV"]
        elif label == "item" and "document" in e:
            items.setdefault(e["outV"], []).extend((r, e["document"]) for r in e["inVs"])
    at: dict[Path, dict[tuple[int, int], int]] = {}
    for doc, inside in contains.items():
        if doc in docs:
            at[docs[doc]] = {ranges[r]: r for r in inside if r in ranges}
    targets = {}
    for r in ranges:
        result = defs.get(nexts.get(r, r))
        if result is not None:
            targets[r] = [
                (docs[d], ranges[i][0] + 1) for i, d in items.get(result, []) if d in docs and i in ranges
            ]
    return at, targets


def main() -> None:
    analyzer, root, sites = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3])
    deps = {k: Path(v).resolve() for k, v in (a.split("=", 1) for a in sys.argv[4:])}
    at, targets = definitions(analyzer, project(root, deps))
    lines: dict[Path, list[str]] = {}
    for row in sites.read_text().splitlines():
        path, line, col, name = row.split("\t")
        r = at.get(root / path, {}).get((int(line) - 1, int(col)))
        found = targets.get(r, []) if r is not None else []
        inside = []
        for file, n in found:
            if not file.is_relative_to(root):
                continue
            text = lines.setdefault(file, file.read_text(errors="replace").split("\n"))
            if re.search(_ITEM.format(name=re.escape(name)), text[n - 1] if n <= len(text) else ""):
                inside.append(f"{file.relative_to(root).as_posix()}\t{n}")
        if inside:
            print("internal\t" + "\t".join(inside))
        elif found and all(not f.is_relative_to(root) for f, _ in found):
            print("external")
        else:
            print("unknown")


if __name__ == "__main__":
    main()
