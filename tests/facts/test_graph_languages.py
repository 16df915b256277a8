"""Call resolution in TypeScript, Java, Rust and Go: small multi-file projects, each call checked."""

from __future__ import annotations

from pathlib import Path

from support import write

from ragraf.api import Index


def _callees(root: Path, files: dict[str, str], name: str) -> dict[tuple[str, int], dict]:
    write(root, files)
    with Index.open(root) as idx:
        idx.index()
        env = idx.callees(name)
    return {(r["name"], r["line"]): r for r in env.results}


def _target(site: dict) -> str | None:
    return f"{site['targets'][0]['path']}:{site['targets'][0]['line']}" if site["targets"] else None


TS = {
    "src/util.ts": (
        "export function normalize(x: string): string {\n  return x.trim();\n}\n"
        "export class Money {\n  toString(): string {\n    return '';\n  }\n}\n"
    ),
    "src/checks.ts": "export function gte(n: number) {\n  return n;\n}\n",
    "src/all.ts": 'export * from "./checks.js";\nexport * as util from "./util.js";\n',
    "src/api.ts": (
        'import * as util from "./util.js";\n'
        'import * as all from "./all.js";\n'
        "export function params(x: string, n: number, xs: number[]) {\n"
        "  const a = util.normalize(x);\n"
        "  const b = all.gte(n);\n"
        "  const c = n.toString();\n"
        "  const d = Object.keys({ a, b, c });\n"
        "  return [...wrap(xs), d];\n"
        "}\n"
        "function wrap(xs: number[]) {\n  return xs;\n}\n"
    ),
}


def test_typescript_calls_resolve_through_namespace_imports_and_star_reexports(tmp_path: Path) -> None:
    sites = _callees(tmp_path / "ts", TS, "params")
    # `import * as util from "./util.js"`: the module's own function
    assert sites[("normalize", 4)]["how"] == "import"
    assert _target(sites[("normalize", 4)]) == "src/util.ts:1"
    # `export * from "./checks.js"` in all.ts is followed to the definition
    assert _target(sites[("gte", 5)]) == "src/checks.ts:1"
    # a number's toString and a global's method are not passed off as the project's
    assert sites[("toString", 6)]["how"] == "unresolved" and sites[("toString", 6)]["targets"] == []
    assert sites[("keys", 7)]["how"] == "unresolved"
    # a spread (`...wrap(xs)`) is a bare call of the file's own function
    assert sites[("wrap", 8)]["how"] == "exact" and _target(sites[("wrap", 8)]) == "src/api.ts:10"
