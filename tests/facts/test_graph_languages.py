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


JAVA = {
    "src/a/util/Strings.java": (
        "package a.util;\n\n"
        "public class Strings {\n"
        "    public static String copy(String s) {\n        return s;\n    }\n"
        "}\n"
    ),
    "src/a/util/Logger.java": (
        "package a.util;\n\npublic class Logger {\n    public void log(String s) {\n    }\n}\n"
    ),
    "src/a/net/Base.java": (
        "package a.net;\n\npublic class Base {\n    protected int client() {\n        return 1;\n    }\n}\n"
    ),
    "src/a/net/Other.java": (
        "package a.net;\n\n"
        "public class Other {\n"
        "    public boolean isEmpty() {\n        return true;\n    }\n"
        "    public static Other of() {\n        return new Other();\n    }\n"
        "}\n"
    ),
    "src/a/net/Conn.java": (
        "package a.net;\n\n"
        "import a.util.Logger;\n"
        "import a.util.Strings;\n"
        "import java.util.List;\n"
        "import static a.util.Strings.copy;\n\n"
        "public class Conn extends Base {\n"
        "    private final Logger logger = make();\n"
        "    private final List<String> queue = List.of();\n\n"
        "    public String send(String s) {\n"
        "        Strings.copy(s);\n"
        "        copy(s);\n"
        "        client();\n"
        "        logger.log(s);\n"
        "        queue.isEmpty();\n"
        "        List.of(s);\n"
        "        return s;\n"
        "    }\n\n"
        "    private static Logger make() {\n        return new Logger();\n    }\n"
        "}\n"
    ),
}


def test_java_calls_resolve_through_imports_static_imports_bases_and_declared_types(tmp_path: Path) -> None:
    sites = _callees(tmp_path / "java", JAVA, "send")
    assert _target(sites[("copy", 13)]) == "src/a/util/Strings.java:4"
    # `import static a.util.Strings.copy`: a bare call of the imported class's method
    assert (
        sites[("copy", 14)]["how"] == "import" and _target(sites[("copy", 14)]) == "src/a/util/Strings.java:4"
    )
    # a bare call in a class is this.client(): the method its base class has
    assert _target(sites[("client", 15)]) == "src/a/net/Base.java:4"
    # a field declared `Logger logger`: the project's Logger, though assigned from a call
    assert _target(sites[("log", 16)]) == "src/a/util/Logger.java:4"
    # a field of the JDK's List type, and a static call on the JDK's List: not the project's
    # isEmpty and of, though each is the only one of its name
    assert sites[("isEmpty", 17)]["how"] == "unresolved" and "List" in sites[("isEmpty", 17)]["why"]
    assert sites[("of", 18)]["how"] == "unresolved" and sites[("of", 18)]["targets"] == []


RUST = {
    "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": "pub mod classes;\npub mod parse;\n",
    "src/classes.rs": (
        "pub struct ByteClasses([u8; 256]);\n\n"
        "impl ByteClasses {\n"
        "    pub fn get(&self, b: u8) -> u8 {\n        self.0[b as usize]\n    }\n"
        "    pub fn empty() -> ByteClasses {\n        ByteClasses([0; 256])\n    }\n"
        "}\n\n"
        "pub struct Builder;\n\n"
        "impl Builder {\n    pub fn new() -> Builder {\n        Builder\n    }\n}\n"
    ),
    "src/parse.rs": (
        "use crate::classes::ByteClasses;\n\n"
        "pub struct Builder {\n    byte_classes: ByteClasses,\n}\n\n"
        "impl Builder {\n"
        "    pub fn new() -> Builder {\n        Builder { byte_classes: ByteClasses::empty() }\n    }\n\n"
        "    pub fn run(&self, cls: Vec<u8>) -> usize {\n"
        "        let b = Builder::new();\n"
        "        self.byte_classes.get(1);\n"
        "        cls.len();\n"
        "        b.len()\n"
        "    }\n\n"
        "    pub fn len(&self) -> usize {\n        0\n    }\n"
        "}\n"
    ),
}


def test_rust_calls_resolve_through_fields_use_paths_and_the_type_of_this_file(tmp_path: Path) -> None:
    sites = _callees(tmp_path / "rust", RUST, "run")
    # `Builder::new()`: the Builder of this file, not the other one of that name
    assert _target(sites[("new", 13)]) == "src/parse.rs:8"
    # `self.byte_classes.get()`: through the field's type, a value, not a `self::` path
    assert _target(sites[("get", 14)]) == "src/classes.rs:4"
    # `cls` is no receiver of a class here (Python's `cls`): a Vec's len is not the project's
    assert sites[("len", 15)]["how"] == "unresolved" and sites[("len", 15)]["targets"] == []


GO = {
    "go.mod": "module example.com/md\n\ngo 1.19\n",
    "text/reader.go": (
        "package text\n\n"
        "type Reader interface {\n\tPeekLine() []byte\n}\n\n"
        "type reader struct{}\n\n"
        "func (r *reader) PeekLine() []byte {\n\treturn nil\n}\n\n"
        "func NewReader() Reader {\n\treturn &reader{}\n}\n"
    ),
    "util/util.go": "package util\n\nfunc IsBlank(b []byte) bool {\n\treturn len(b) == 0\n}\n",
    "parser/parser.go": (
        "package parser\n\n"
        "import (\n"
        '\t"io"\n\n'
        '\t"example.com/md/text"\n'
        '\t"example.com/md/util"\n'
        ")\n\n"
        "type Buffer struct{}\n\n"
        "func (b *Buffer) Write(p []byte) (int, error) {\n\treturn 0, nil\n}\n\n"
        "func Parse(reader text.Reader, w io.Writer) bool {\n"
        "\tline := reader.PeekLine()\n"
        "\tw.Write(line)\n"
        "\treturn util.IsBlank(text.NewReader().PeekLine())\n"
        "}\n"
    ),
}


def test_go_calls_resolve_through_import_paths_and_declared_parameter_types(tmp_path: Path) -> None:
    sites = _callees(tmp_path / "go", GO, "Parse")
    # `reader text.Reader`: the interface's method, the project's package named by its import path
    assert _target(sites[("PeekLine", 17)]) == "text/reader.go:4"
    # `w io.Writer`: a type outside the index, not the project's only Write
    assert sites[("Write", 18)]["how"] == "unresolved" and "io.Writer" in sites[("Write", 18)]["why"]
    # a package qualifier: `util.IsBlank` is util's
    assert sites[("IsBlank", 19)]["how"] == "import" and _target(sites[("IsBlank", 19)]) == "util/util.go:3"
    assert _target(sites[("NewReader", 19)]) == "text/reader.go:13"
