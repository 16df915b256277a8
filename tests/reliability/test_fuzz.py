"""Hostile input: random bytes and mutated real source through extraction, front matter, chunking
and facts; random queries through search; random paths through read and outline.
Zero crashes, zero escapes from the root (issue 10)."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragraf import Index
from ragraf.chunking import chunk_text
from ragraf.corpus.extract import Unindexable, extract, sha256_text, strip_front_matter
from ragraf.errors import RagrafError
from ragraf.facts import extract_facts
from ragraf.languages import TREE_SITTER_LANGUAGES

LANGUAGES = sorted(TREE_SITTER_LANGUAGES | {"markdown"})
# `reliability/report.py --long` sets this: many more examples.
LONG = os.environ.get("RAGRAF_RELIABILITY_LONG") == "1"
EXAMPLES = 2000 if LONG else 60
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
OUTSIDE_MARKER = "OUTSIDE_THE_ROOT_7f3a"

# A few lines of real-looking source per language: the seeds the mutations start from.
SEEDS: dict[str, str] = {
    "python": (Path(sysconfig.get_paths()["stdlib"]) / "json" / "decoder.py").read_text(encoding="utf-8"),
    "javascript": "import x from './x.js';\nexport class A extends B {\n  constructor(a) { super(); this.a = a; }\n  get v() { return `t${this.a}`; }\n}\nconst f = async (y) => { await g(y?.z ?? 1); };\n",
    "typescript": "interface P<T> { a: T; b?: string }\nexport function f<T extends object>(p: P<T>): T { return p.a as T; }\nenum E { A = 1, B }\ntype U = A | B;\n",
    "tsx": 'export const C = ({ x }: { x: number }) => <div className="a">{x > 1 ? <B/> : null}</div>;\nfunction D() { return <C x={1} />; }\n',
    "go": 'package main\n\nimport "fmt"\n\ntype S struct { A int }\n\nfunc (s *S) M(x int) error {\n\tfmt.Println(x)\n\treturn nil\n}\n',
    "rust": "use std::io;\npub struct S<'a> { a: &'a str }\nimpl<'a> S<'a> {\n    pub fn new(a: &'a str) -> Self { S { a } }\n}\nmacro_rules! m { ($x:expr) => { $x }; }\n",
    "java": "package a.b;\nimport java.util.List;\npublic class A<T> implements B {\n  @Override public void m(List<T> xs) { for (T x : xs) { g(x); } }\n}\n",
    "c": "#include <stdio.h>\n#define M(x) ((x)*2)\nstruct s { int a; };\nstatic int f(int *p) { return M(*p); }\nint main(void) { int x = 1; return f(&x); }\n",
    "cpp": "#include <vector>\nnamespace n {\ntemplate <typename T> class A : public B {\n public:\n  virtual ~A() = default;\n  T get() const { return t_; }\n private:\n  T t_;\n};\n}\n",
    "csharp": "using System;\nnamespace N {\n  public class A : IB {\n    public int P { get; set; }\n    public async Task<int> M(string s) => await F(s);\n  }\n}\n",
    "ruby": "module M\n  class A < B\n    attr_reader :x\n    def initialize(x) = @x = x\n    def m(*args, &blk); yield self; end\n  end\nend\n",
    "php": "<?php\nnamespace A;\nuse B\\C;\nclass D extends E {\n  public function f(int $x): int { return $this->g($x); }\n}\nfunction h() { return new D(); }\n",
    "kotlin": "package a\nimport b.C\ndata class P(val x: Int)\nclass A : B() {\n  override fun m(x: Int): Int = x * 2\n  companion object { fun of() = A() }\n}\n",
    "scala": "package a\nobject O {\n  case class P(x: Int)\n  def f[T](xs: List[T]): Int = xs.length\n}\ntrait T { def g: Int }\n",
    "swift": "import Foundation\nstruct S: P {\n  var a: Int\n  func m(_ x: Int) -> Int { return x + a }\n}\nextension S { static func make() -> S { S(a: 1) } }\n",
    "bash": '#!/bin/bash\nset -euo pipefail\nf() {\n  local x="$1"\n  echo "${x:-none}" | grep -q a && return 0\n}\nf "$@"\n',
    "lua": "local M = {}\nfunction M.f(a, b)\n  return a .. b\nend\nlocal function g(t) for k, v in pairs(t) do print(k, v) end end\nreturn M\n",
    "elixir": "defmodule A.B do\n  use GenServer\n  def start_link(opts), do: GenServer.start_link(__MODULE__, opts)\n  defp h(%{a: a}), do: a\nend\n",
    "haskell": "module Main where\nimport Data.List (sort)\ndata T = A | B deriving Show\nf :: Int -> Int\nf x = x * 2\nmain :: IO ()\nmain = print (sort [3, 1, 2])\n",
    "zig": 'const std = @import("std");\npub fn main() !void {\n    const x: u32 = 1;\n    std.debug.print("{d}\\n", .{x});\n}\nconst S = struct { a: i32 };\n',
    "markdown": "---\ntitle: T\ntags: [a, b]\n---\n# Title\n\nText with `code`.\n\n## Sub\n\n```python\ndef f():\n    pass\n```\n\n- item\n",
}

JUNK = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from(list("{}()[]<>;:'\"`\\/#\n\t\r\x00\x0c")),
    max_size=40,
)


@st.composite
def mutated(draw: st.DrawFn, language: str) -> str:
    """A seed of the language with a few random cuts, insertions, duplications and swaps."""
    text = SEEDS[language] if language in SEEDS else SEEDS["python"]
    for _ in range(draw(st.integers(0, 6))):
        if not text:
            text = draw(JUNK)
            continue
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 200)))
        op = draw(st.sampled_from(["cut", "insert", "duplicate", "swap", "truncate", "nest"]))
        if op == "cut":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(JUNK) + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] * draw(st.integers(1, 5)) + text[j:]
        elif op == "swap":
            text = text[j:] + text[:i]
        elif op == "truncate":
            text = text[:i]
        else:
            text = text[:i] + "(" * 50 + "{" * 50 + text[i:]
    return text


def check_chunks(text: str, language: str) -> None:
    lines = text.split("\n")
    for chunk in chunk_text(text, language, 300, 60):
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk
        # M6: a chunk's text is exactly its lines, so path:line citations verify.
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line]), chunk


def check_facts(text: str, language: str) -> None:
    facts = extract_facts(text, language)
    count = len(text.split("\n"))
    for d in facts.definitions:
        assert 1 <= d.start_line <= d.line <= d.end_line <= count, d
    for r in facts.references:
        assert 1 <= r.line <= count, r
    for i in facts.imports:
        assert 1 <= i.line <= count, i


# extraction and front matter ------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=3000), name=st.sampled_from(["a.py", "b.md", "c.ts", "d.txt", "e"]))
def test_random_bytes_extract_or_are_refused_never_crash(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, name: str
) -> None:
    path = tmp_path_factory.mktemp("x") / name
    path.write_bytes(data)
    try:
        ex = extract(path, name, 4000)
    except Unindexable:
        return
    assert "\r" not in ex.text
    assert ex.sha256 == sha256_text(ex.text)


@FUZZ
@given(
    text=st.text(max_size=400)
    | st.builds(lambda a, b: f"---\n{a}\n---\n{b}", st.text(max_size=100), st.text(max_size=100))
)
def test_front_matter_blanking_keeps_every_line_number(text: str) -> None:
    out = strip_front_matter(text)
    assert out.count("\n") == text.count("\n")
    if not text.startswith(("---", "+++")):
        assert out == text


# chunking and facts ---------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
@FUZZ
@given(data=st.data())
def test_mutated_source_chunks_and_yields_facts_without_crashing(language: str, data: st.DataObject) -> None:
    text = data.draw(mutated(language))
    check_chunks(text, language)
    check_facts(text, language)


@pytest.mark.parametrize("language", LANGUAGES)
@settings(FUZZ, max_examples=max(10, EXAMPLES // 4))
@given(raw=st.binary(max_size=2000))
def test_random_bytes_as_source_chunk_and_yield_facts(language: str, raw: bytes) -> None:
    text = raw.decode("utf-8", errors="replace")
    check_chunks(text, language)
    check_facts(text, language)


# search and read on a real index ---------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "repo"
    (root / "pkg").mkdir(parents=True)
    for name in ("decoder.py", "encoder.py", "scanner.py", "__init__.py"):
        (root / "pkg" / name).write_text(
            (Path(sysconfig.get_paths()["stdlib"]) / "json" / name).read_text(encoding="utf-8"),
            encoding="utf-8",
        )
    (root / "README.md").write_text("---\ntitle: x\n---\n# Readme\n\nThe decoder and the encoder.\n")
    (root / ".env").write_text("TOKEN=abc\n")
    outside = base / "outside.txt"
    outside.write_text(OUTSIDE_MARKER + "\n")
    outside_dir = base / "outside_dir"
    outside_dir.mkdir()
    (outside_dir / "f.py").write_text(f"# {OUTSIDE_MARKER}\n")
    os.symlink(outside, root / "link_out.txt")
    os.symlink(outside_dir, root / "dir_out")
    os.symlink(root / ".env", root / "innocent.txt")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    with Index.open(root, embedder="none", home=base / "home") as idx:
        idx.index()
    return root


QUERY = st.text(max_size=120) | st.lists(
    st.sampled_from(['"', "*", "^", "(", ")", "NEAR", "AND", "OR", "NOT", ":", "body:", "symbol:", "-", "+", "decoder",
                     "JSONDecoder", "\x00", "'", "{", "}", "\\", "NEAR(a b, 3)", "🙂", "ß", "İ", "\u200b", "  "]),
    max_size=12,
).map(" ".join)  # fmt: skip


@FUZZ
@given(query=QUERY, k=st.integers(-5, 50), mode=st.sampled_from(["hybrid", "lexical", "vector"]))
def test_random_queries_answer_or_refuse_cleanly(indexed: Path, query: str, k: int, mode: str) -> None:
    with Index.open(indexed, embedder="none", home=indexed.parent / "home") as idx:
        try:
            env = idx.search(query, k=k, mode=mode)
        except RagrafError:
            return
    assert len(env.results) <= 10
    for r in env.results:
        lines = (indexed / r.path).read_text(encoding="utf-8").split("\n")
        cited = "\n".join(lines[r.start_line - 1 : r.end_line])
        # A long snippet is cut and says so with a final "\n…".
        assert cited.startswith(r.snippet[:-2]) if r.snippet.endswith("\n…") else r.snippet == cited


PATH_PART = st.sampled_from(
    ["..", ".", "", "pkg", "decoder.py", "README.md", ".env", "link_out.txt", "dir_out", "f.py", "innocent.txt",
     "/", "//", "\\", "~", "~root", "/etc/passwd", "C:\\Windows", "%2e%2e", "\x00", "\n", " ", "..\\..", "pkg/..",
     "nonexistent", "ragraf", "..%2f", "\u2024\u2024", ".git", "home", "index.db", "loop_a", "loop_b"]
)  # fmt: skip
PATH = st.lists(PATH_PART, min_size=1, max_size=6).map("/".join) | st.text(max_size=60)


@FUZZ
@given(path=PATH, lines=st.none() | st.tuples(st.integers(-3, 400), st.integers(-3, 400)))
def test_random_paths_never_read_outside_the_root_or_a_secret(
    indexed: Path, path: str, lines: tuple[int, int] | None
) -> None:
    spec = path if lines is None else f"{path}:{lines[0]}-{lines[1]}"
    with Index.open(indexed, embedder="none", home=indexed.parent / "home") as idx:
        for call in (lambda: idx.read(spec), lambda: idx.outline(path)):
            try:
                env = call()
            except RagrafError:
                continue
            for r in env.results:
                text = r.get("content", "") if isinstance(r, dict) else ""
                assert OUTSIDE_MARKER not in text
                assert "TOKEN=abc" not in text
                target = (indexed / r["path"]).resolve()
                assert target == indexed.resolve() or indexed.resolve() in target.parents


def test_a_symlink_loop_inside_the_root_is_refused_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ok.py").write_text("x = 1\n")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    with Index.open(root, embedder="none", home=tmp_path / "home") as idx:
        idx.index()
        for path in ("loop_a", "loop_b/x.py"):
            for call in (idx.read, idx.outline):
                with pytest.raises(RagrafError):
                    call(path)


def test_a_path_through_a_file_is_refused_cleanly(indexed: Path) -> None:
    with (
        Index.open(indexed, embedder="none", home=indexed.parent / "home") as idx,
        pytest.raises(RagrafError),
    ):
        idx.read("README.md/pkg")
