"""Definitions per language: names, kinds, containers and lines on small real snippets."""

from __future__ import annotations

import pytest

from ragraf.facts import extract_facts, qualified_name
from ragraf.facts.model import DEFINITION_KINDS
from ragraf.facts.rules import rules_for
from ragraf.languages import TREE_SITTER_LANGUAGES

# language -> (source, expected (kind, qualified name, name line) triples)
CASES: dict[str, tuple[str, set[tuple[str, str, int]]]] = {
    "python": (
        "import os\nMAX = 3\n@dec\ndef f():\n    pass\nclass A(B):\n    def m(self):\n        pass\n",
        {("constant", "MAX", 2), ("function", "f", 4), ("class", "A", 6), ("method", "A.m", 7)},
    ),
    "javascript": (
        "import fs from 'fs';\n"
        "export function resolveHost(h) { return h; }\n"
        "export const handler = async (req) => { resolveHost(req.host); };\n"
        "let g = function named() {};\n"
        "class Server extends Base {\n"
        "  constructor(p) { super(); }\n"
        "  async listen() { this.start(); }\n"
        "}\n"
        "module.exports.helper = function () {};\n"
        "const LIMIT = 10;\n",
        {
            ("function", "resolveHost", 2),
            ("function", "handler", 3),
            ("function", "g", 4),
            ("class", "Server", 5),
            ("method", "Server.constructor", 6),
            ("method", "Server.listen", 7),
            ("function", "helper", 9),
            ("constant", "LIMIT", 10),
        },
    ),
    "typescript": (
        "export default class Server<T> implements I {\n"
        "  private port: number;\n"
        "  listen(): void {}\n"
        "}\n"
        "interface Opts { host: string; go(): void }\n"
        "type Alias = string | number;\n"
        "export enum Color { Red, Green }\n"
        "namespace NS { export function inner() {} }\n"
        "abstract class Abs { abstract run(): void; }\n"
        "export const pick = <K,>(k: K): K => k;\n",
        {
            ("class", "Server", 1),
            ("method", "Server.listen", 3),
            ("interface", "Opts", 5),
            ("method", "Opts.go", 5),
            ("type", "Alias", 6),
            ("enum", "Color", 7),
            ("module", "NS", 8),
            ("function", "NS.inner", 8),
            ("class", "Abs", 9),
            ("method", "Abs.run", 9),
            ("function", "pick", 10),
        },
    ),
    "tsx": (
        "import React from 'react';\n"
        "export function Button(props: Props) {\n  return <button onClick={props.onClick}>{props.label}</button>;\n}\n"
        "export const Card = ({ title }: { title: string }) => <div>{title}</div>;\n"
        "interface Props { label: string }\n",
        {("function", "Button", 2), ("function", "Card", 5), ("interface", "Props", 6)},
    ),
    "go": (
        "package main\n\n"
        "const Max = 3\n"
        "type Conn struct { host string }\n"
        "type Dialer interface { Dial() error }\n"
        "type ID = int\n"
        "type Handler func(int)\n"
        "func (c *Conn) Dial() error { return nil }\n"
        "func (l List[T]) Len() int { return 0 }\n"
        "func resolveHost(h string) error { return nil }\n",
        {
            ("constant", "Max", 3),
            ("struct", "Conn", 4),
            ("interface", "Dialer", 5),
            ("method", "Dialer.Dial", 5),
            ("type", "ID", 6),
            ("type", "Handler", 7),
            ("method", "Conn.Dial", 8),
            ("method", "List.Len", 9),
            ("function", "resolveHost", 10),
        },
    ),
    "rust": (
        "mod inner {\n    pub fn f() {}\n}\n"
        "pub struct Conn { host: String }\n"
        "enum E { A, B }\n"
        "trait T {\n    fn go(&self);\n}\n"
        "impl<X> T for Conn<X> {\n    fn go(&self) {}\n}\n"
        "impl Conn {\n    pub fn new() -> Self { Conn { host: String::new() } }\n}\n"
        "const MAX: u32 = 3;\n"
        'static NAME: &str = "x";\n'
        "type Alias = u32;\n"
        "fn main() {}\n",
        {
            ("module", "inner", 1),
            ("function", "inner.f", 2),
            ("struct", "Conn", 4),
            ("enum", "E", 5),
            ("trait", "T", 6),
            ("method", "T.go", 7),
            ("method", "Conn.go", 10),
            ("method", "Conn.new", 13),
            ("constant", "MAX", 15),
            ("constant", "NAME", 16),
            ("type", "Alias", 17),
            ("function", "main", 18),
        },
    ),
    "java": (
        "package com.x;\n"
        "@Ann\n"
        "public class Server extends Base implements I {\n"
        "    private static final int MAX = 3;\n"
        "    public Server(int p) { super(p); }\n"
        "    @Override\n"
        "    void listen() {}\n"
        "    interface Inner { void go(); }\n"
        "    enum Color { RED; void f() {} }\n"
        "}\n"
        "record Pt(int x, int y) {}\n",
        {
            ("class", "Server", 3),
            ("constant", "Server.MAX", 4),
            ("method", "Server.Server", 5),
            ("method", "Server.listen", 7),
            ("interface", "Server.Inner", 8),
            ("method", "Server.Inner.go", 8),
            ("enum", "Server.Color", 9),
            ("method", "Server.Color.f", 9),
            ("class", "Pt", 11),
        },
    ),
    "c": (
        "#include <stdio.h>\n"
        "#define MAX 3\n"
        "typedef struct conn { int fd; } conn_t;\n"
        "struct point { int x; };\n"
        "enum color { RED };\n"
        "static int *resolve_host(const char *h) { return 0; }\n"
        "int (*getfp(void))(int) { return 0; }\n"
        "int declared(int x);\n",
        {
            ("constant", "MAX", 2),
            ("type", "conn_t", 3),
            ("struct", "conn", 3),
            ("struct", "point", 4),
            ("enum", "color", 5),
            ("function", "resolve_host", 6),
            ("function", "getfp", 7),
            ("function", "declared", 8),
        },
    ),
    "cpp": (
        "namespace net {\n"
        "class Conn : public Base {\n"
        " public:\n"
        "  Conn(int p);\n"
        "  void dial() { open(); }\n"
        "};\n"
        "template <typename T>\nstruct Box { T v; };\n"
        "}\n"
        "void net::Conn::redial() {}\n"
        "using Alias = int;\n"
        "enum class Color { Red };\n",
        {
            ("module", "net", 1),
            ("class", "net.Conn", 2),
            ("method", "net.Conn.Conn", 4),
            ("method", "net.Conn.dial", 5),
            ("struct", "net.Box", 8),
            ("method", "net.Conn.redial", 10),
            ("type", "Alias", 11),
            ("enum", "Color", 12),
        },
    ),
    "csharp": (
        "namespace App.Net {\n"
        "  public class Server : Base {\n"
        "    public const int Max = 3;\n"
        "    public Server(int p) { }\n"
        "    public async Task Listen() { }\n"
        "    public int Port { get; set; }\n"
        "  }\n"
        "  interface IServer { void Listen(); }\n"
        "  struct P { }\n"
        "  enum Color { Red }\n"
        "}\n",
        {
            ("module", "App.Net", 1),
            ("class", "App.Net.Server", 2),
            ("constant", "App.Net.Server.Max", 3),
            ("method", "App.Net.Server.Server", 4),
            ("method", "App.Net.Server.Listen", 5),
            ("variable", "App.Net.Server.Port", 6),
            ("interface", "App.Net.IServer", 8),
            ("method", "App.Net.IServer.Listen", 8),
            ("struct", "App.Net.P", 9),
            ("enum", "App.Net.Color", 10),
        },
    ),
    "ruby": (
        "require 'json'\n"
        "module Net\n"
        "  class Conn < Base\n"
        "    MAX = 3\n"
        "    def initialize(h)\n      @h = h\n    end\n"
        "    def self.open(x) = new(x)\n"
        "  end\n"
        "end\n"
        "def helper; end\n",
        {
            ("module", "Net", 2),
            ("class", "Net.Conn", 3),
            ("constant", "Net.Conn.MAX", 4),
            ("method", "Net.Conn.initialize", 5),
            ("method", "Net.Conn.open", 8),
            ("function", "helper", 11),
        },
    ),
    "php": (
        "<?php\n"
        "namespace App\\Net;\n"
        "function resolve_host($h) { return $h; }\n"
        "interface I { public function go(); }\n"
        "trait T { function t() {} }\n"
        "class Conn extends Base implements I {\n"
        "    const X = 1;\n"
        "    public function __construct($p) { }\n"
        "}\n",
        {
            ("module", "App\\Net", 2),
            ("function", "App\\Net.resolve_host", 3),
            ("interface", "App\\Net.I", 4),
            ("method", "App\\Net.I.go", 4),
            ("trait", "App\\Net.T", 5),
            ("class", "App\\Net.Conn", 6),
            ("constant", "App\\Net.Conn.X", 7),
            ("method", "App\\Net.Conn.__construct", 8),
        },
    ),
    "kotlin": (
        "package app\n"
        "const val MAX = 3\n"
        "fun resolveHost(h: String): String = h\n"
        "class Conn(val p: Int) : Base() {\n"
        "    constructor(s: String) : this(1)\n"
        "    fun dial() { }\n"
        "}\n"
        "object Single {\n    fun s() {}\n}\n"
        "enum class Color { RED }\n"
        "interface I { }\n"
        "typealias Alias = Int\n",
        {
            ("constant", "MAX", 2),
            ("function", "resolveHost", 3),
            ("class", "Conn", 4),
            ("method", "Conn.constructor", 5),
            ("method", "Conn.dial", 6),
            ("class", "Single", 8),
            ("method", "Single.s", 9),
            ("enum", "Color", 11),
            ("interface", "I", 12),
            ("type", "Alias", 13),
        },
    ),
    "scala": (
        "object Main {\n  def main(args: Array[String]): Unit = ()\n}\n"
        "class Conn(p: Int) extends Base {\n  def dial(): Unit = ()\n}\n"
        "trait I { def go(): Unit }\n"
        "case class P(x: Int)\n"
        "type Alias = Int\n",
        {
            ("class", "Main", 1),
            ("method", "Main.main", 2),
            ("class", "Conn", 4),
            ("method", "Conn.dial", 5),
            ("trait", "I", 7),
            ("method", "I.go", 7),
            ("class", "P", 8),
            ("type", "Alias", 9),
        },
    ),
    "swift": (
        "import Foundation\n"
        "func resolveHost(_ h: String) -> String { return h }\n"
        "class Conn: Base {\n"
        "    init(p: Int) { }\n"
        "    func dial() { }\n"
        "}\n"
        "struct S { func s() {} }\n"
        "enum Color { case red }\n"
        "protocol P { func go() }\n"
        "extension Conn { func extra() {} }\n",
        {
            ("function", "resolveHost", 2),
            ("class", "Conn", 3),
            ("method", "Conn.init", 4),
            ("method", "Conn.dial", 5),
            ("struct", "S", 7),
            ("method", "S.s", 7),
            ("enum", "Color", 8),
            ("interface", "P", 9),
            ("method", "P.go", 9),
            ("method", "Conn.extra", 10),
        },
    ),
    "bash": (
        "source ./lib.sh\nfunction deploy() {\n  build x\n}\nbuild () {\n  echo hi\n}\n",
        {("function", "deploy", 2), ("function", "build", 5)},
    ),
    "lua": (
        "local M = {}\n"
        "function M.resolve_host(h) return h end\n"
        "function M:dial() end\n"
        "local function helper() end\n"
        "local f = function() end\n",
        {
            ("function", "M.resolve_host", 2),
            ("method", "M.dial", 3),
            ("function", "helper", 4),
            ("function", "f", 5),
        },
    ),
    "elixir": (
        "defmodule App.Net do\n"
        "  def resolve_host(h), do: h\n"
        "  defp dial(x) when is_binary(x) do\n    x\n  end\n"
        "  defp dial(x), do: x\n"
        "end\n",
        {("module", "App.Net", 1), ("function", "App.Net.resolve_host", 2), ("function", "App.Net.dial", 3)},
    ),
    "haskell": (
        "module Net.Conn where\n"
        "data Conn = Conn { host :: String }\n"
        "class Dial a where\n  dial :: a -> IO ()\n"
        "resolveHost :: String -> IO ()\n"
        "resolveHost h = print h\n",
        {
            ("module", "Net.Conn", 1),
            ("type", "Conn", 2),
            ("class", "Dial", 3),
            ("method", "Dial.dial", 4),
            ("function", "resolveHost", 5),
        },
    ),
    "zig": (
        'const std = @import("std");\n'
        "pub const Conn = struct {\n"
        "    host: []const u8,\n"
        "    pub fn dial(self: *Conn) void { _ = self; }\n"
        "};\n"
        "const Color = enum { red };\n"
        "fn resolveHost(h: []const u8) void { _ = h; }\n",
        {
            ("struct", "Conn", 2),
            ("method", "Conn.dial", 4),
            ("enum", "Color", 6),
            ("function", "resolveHost", 7),
        },
    ),
}


def test_every_tree_sitter_language_has_a_case_and_rules() -> None:
    assert set(CASES) == set(TREE_SITTER_LANGUAGES)
    assert all(rules_for(language) is not None for language in TREE_SITTER_LANGUAGES)


@pytest.mark.parametrize("language", sorted(CASES))
def test_definitions_have_their_kind_container_and_name_line(language: str) -> None:
    source, expected = CASES[language]
    facts = extract_facts(source, language)
    assert facts.supported and not facts.partial, facts
    found = {(d.kind, qualified_name(d), d.line) for d in facts.definitions}
    assert expected <= found, sorted(expected - found)
    lines = source.split("\n")
    for d in facts.definitions:
        assert d.kind in DEFINITION_KINDS, d
        assert d.name in lines[d.line - 1], d
        assert d.start_line <= d.line <= d.end_line, d
        assert d.signature == lines[d.line - 1].strip()


def test_multi_clause_functions_are_one_definition_spanning_every_clause() -> None:
    source, _ = CASES["haskell"]
    (d,) = [d for d in extract_facts(source, "haskell").definitions if d.name == "resolveHost"]
    assert (d.line, d.end_line) == (5, 6)
    source, _ = CASES["elixir"]
    (d,) = [d for d in extract_facts(source, "elixir").definitions if d.name == "dial"]
    assert (d.line, d.end_line) == (3, 6)


@pytest.mark.parametrize("language", ["typescript", "tsx"])
def test_declared_values_and_namespace_exports_are_definitions(language: str) -> None:
    source = (
        "export declare const ZodType: ZodTypeConstructor;\n"
        "declare var process: NodeProcess;\n"
        "export namespace z {\n"
        "  export const version = '4';\n"
        "  export const parse = (s: string) => s;\n"
        "  const hidden = 1;\n"
        "}\n"
    )
    found = {(d.kind, qualified_name(d), d.line) for d in extract_facts(source, language).definitions}
    assert found == {
        ("variable", "ZodType", 1),
        ("variable", "process", 2),
        ("module", "z", 3),
        ("variable", "z.version", 4),
        ("function", "z.parse", 5),
    }


def test_exported_var_is_a_definition_in_javascript() -> None:
    found = {(d.kind, d.name) for d in extract_facts("export var legacy = 1;\n", "javascript").definitions}
    assert found == {("variable", "legacy")}


@pytest.mark.parametrize(
    ("language", "source", "name", "lines"),
    [
        ("python", "@dataclass\n@frozen(x=1)\nclass Point:\n    x: int\n", "Point", (1, 3, 4)),
        ("cpp", "template <typename T>\nstruct Box {\n  T v;\n};\n", "Box", (1, 2, 4)),
        ("cpp", "template <class T>\nT twice(T x) {\n  return x + x;\n}\n", "twice", (1, 2, 4)),
        ("java", '@Entity\n@Table(name = "t")\npublic class Row {\n}\n', "Row", (1, 3, 4)),
    ],
)
def test_decorators_and_templates_start_the_definition(
    language: str, source: str, name: str, lines: tuple[int, int, int]
) -> None:
    (d,) = [d for d in extract_facts(source, language).definitions if d.name == name]
    assert (d.start_line, d.line, d.end_line) == lines


def test_a_file_scoped_namespace_contains_the_rest_of_the_file() -> None:
    source = "namespace App;\n\npublic class Server {\n    void Run() { }\n}\n"
    defs = {qualified_name(d) for d in extract_facts(source, "csharp").definitions}
    assert {"App", "App.Server", "App.Server.Run"} <= defs


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        ("python", "import os.path\nfrom a.b import c\n", {("os.path", None), ("a.b", "c")}),
        (
            "javascript",
            "import x, { y as z } from './util';\nconst fs = require('fs');\nexport { q } from 'lib';\n",
            {("./util", "x"), ("./util", "y"), ("fs", None), ("lib", "q")},
        ),
        (
            "typescript",
            "import type { T } from '@scope/pkg';\nimport * as ns from 'mod';\n",
            {("@scope/pkg", "T"), ("mod", None)},
        ),
        ("go", 'import (\n\t"fmt"\n\tn "net/http"\n)\n', {("fmt", None), ("net/http", "n")}),
        (
            "rust",
            "use std::collections::{HashMap, hash_map::Entry};\n",
            {("std::collections", "HashMap"), ("std::collections::hash_map", "Entry")},
        ),
        ("java", "import java.util.List;\nimport java.io.*;\n", {("java.util", "List"), ("java.io", None)}),
        ("c", '#include <stdio.h>\n#include "util/x.h"\n', {("stdio.h", None), ("util/x.h", None)}),
        ("cpp", "#include <vector>\n", {("vector", None)}),
        ("csharp", "using System.IO;\n", {("System.IO", None)}),
        ("ruby", "require 'json'\nrequire_relative 'util'\n", {("json", None), ("util", None)}),
        ("php", "<?php\nuse Foo\\Bar;\nrequire_once 'x.php';\n", {("Foo", "Bar"), ("x.php", None)}),
        ("kotlin", "import kotlin.math.max\n", {("kotlin.math", "max")}),
        ("scala", "import scala.util.Try\n", {("scala.util", "Try")}),
        ("swift", "import Foundation\n", {("Foundation", None)}),
        ("bash", "source ./lib.sh\n", {("./lib.sh", None)}),
        ("lua", 'local json = require("json")\n', {("json", None)}),
        ("elixir", "defmodule A do\n  alias App.Util\nend\n", {("App.Util", None)}),
        (
            "haskell",
            "import qualified Data.Map as M\nimport Data.List (sort)\n",
            {("Data.Map", None), ("Data.List", "sort")},
        ),
        ("zig", 'const std = @import("std");\n', {("std", None)}),
    ],
)
def test_imports_name_their_module(language: str, source: str, expected: set[tuple[str, str | None]]) -> None:
    facts = extract_facts(source, language)
    found = {(i.module, i.name) for i in facts.imports}
    assert expected <= found, found
    lines = source.split("\n")
    for i in facts.imports:
        assert 1 <= i.line <= len(lines)


def test_out_of_line_members_have_the_container_of_their_in_class_declaration() -> None:
    header = (
        "namespace net::http { template<typename T> class Box { public: T get() const; };\n"
        "                      class Client { public: int send(int x); }; }\n"
    )
    source = (
        "template<typename T> T net::http::Box<T>::get() const { return T(); }\n"
        "int net::http::Client::send(int x) { return x; }\n"
    )
    declared = {(d.kind, qualified_name(d)) for d in extract_facts(header, "cpp").definitions}
    defined = {(d.kind, qualified_name(d)) for d in extract_facts(source, "cpp").definitions}
    assert defined == {("method", "net.http.Box.get"), ("method", "net.http.Client.send")}
    assert defined <= declared
    assert ("module", "net.http") in declared


def test_a_function_qualified_by_a_namespace_of_its_file_is_a_function() -> None:
    source = "namespace inner { void deep(); }\nvoid inner::deep() {}\nvoid Conn::dial() {}\n"
    found = {(d.kind, qualified_name(d), d.line) for d in extract_facts(source, "cpp").definitions}
    # Conn may be a class a header defines: a method, as before.
    assert {("function", "inner.deep", 2), ("method", "Conn.dial", 3)} <= found


# language -> (source, expected (kind, qualified name, line), names that must not be definitions)
VALUES: dict[str, tuple[str, set[tuple[str, str, int]], set[str]]] = {
    "c": (
        "const int LIMIT = 5;\n"
        "int g_count = 0, g_other;\n"
        "static const char *names[] = {0};\n"
        "int (*handler)(int) = 0;\n"
        "char *prototype(void);\n"
        "void f(void) {\n  int local = 1;\n#ifdef X\n  int hidden = 2;\n#endif\n}\n"
        "#ifdef Y\nint configured = 1;\n#endif\n",
        {
            ("constant", "LIMIT", 1),
            ("variable", "g_count", 2),
            ("variable", "g_other", 2),
            ("variable", "names", 3),  # a pointer to constants, itself not one
            ("variable", "handler", 4),
            ("variable", "configured", 13),
        },
        {"local", "hidden"},
    ),
    "cpp": (
        "constexpr int kMax = 10;\n"
        "namespace net { int retries = 3; }\n"
        "int Conn::count = 0;\n"
        "void f() { const int local = 1; }\n",
        {("constant", "kMax", 1), ("variable", "net.retries", 2), ("variable", "Conn.count", 3)},
        {"local"},
    ),
    "csharp": (
        "class Pool {\n"
        "  private static readonly int Limit = 3;\n"
        "  private int _count;\n"
        "  const int K = 1;\n"
        "  void Run() { int local = 1; }\n"
        "}\n"
        "public struct Pair { public int A; }\n",
        {
            ("constant", "Pool.Limit", 2),
            ("variable", "Pool._count", 3),
            ("constant", "Pool.K", 4),
            ("variable", "Pair.A", 7),
        },
        {"local"},
    ),
    "scala": (
        "object Config {\n  val Max = 3\n  def f() = { val Local = 1 }\n}\nval Top = 1\n",
        {("constant", "Config.Max", 2), ("constant", "Top", 5)},
        {"Local"},
    ),
    "lua": (
        "local MAX = 10\nCONFIG = {}\nlocal a, b = 1, 2\nlocal f = function() end\n"
        "function g()\n  local inner = 1\n  GLOBAL_IN_FUNCTION = 2\nend\n",
        {("constant", "MAX", 1), ("constant", "CONFIG", 2), ("variable", "a", 3), ("variable", "b", 3)},
        {"inner", "GLOBAL_IN_FUNCTION"},
    ),
    "bash": (
        "readonly LIMIT=10\nname=value\ndeclare -r RATE=1\nf() {\n  local inner=1\n  other=2\n}\n",
        {("constant", "LIMIT", 1), ("variable", "name", 2), ("constant", "RATE", 3)},
        {"inner", "other"},
    ),
    "elixir": (
        'defmodule App do\n  @moduledoc "docs"\n  @timeout 5000\n  def f, do: @timeout\nend\n',
        {("constant", "App.timeout", 3)},
        {"moduledoc"},
    ),
    "php": (
        '<?php\ndefine("MAX_SIZE", 1);\nclass Counter {\n  public static $count = 0;\n'
        "  function up() { $local = 1; }\n}\n",
        {("constant", "MAX_SIZE", 2), ("variable", "Counter.count", 4)},
        {"local"},
    ),
}


@pytest.mark.parametrize("language", sorted(VALUES))
def test_top_level_and_class_level_values_are_definitions_but_locals_are_not(language: str) -> None:
    source, expected, absent = VALUES[language]
    facts = extract_facts(source, language)
    found = {(d.kind, qualified_name(d), d.line) for d in facts.definitions}
    assert expected <= found, sorted(expected - found)
    assert not absent & {d.name for d in facts.definitions}
    assert {(kind, name) for kind, name, _ in found if kind in ("constant", "variable")} == {
        (kind, name) for kind, name, _ in expected
    }
    lines = source.split("\n")
    for d in facts.definitions:
        assert d.name in lines[d.line - 1], d
    for r in facts.references:
        assert r.name in lines[r.line - 1], r


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_function_valued_fields_properties_and_prototype_members_are_methods(language: str) -> None:
    source = (
        "class Button {\n"
        "  handle = (e) => {};\n"
        "  size = 3;\n"
        "}\n"
        "const api = {\n"
        "  get() {},\n"
        "  post: function () {},\n"
        "  put: () => {},\n"
        "  limit: 10,\n"
        "};\n"
        "function Legacy() {}\n"
        "Legacy.prototype.greet = function () {};\n"
    )
    found = {(d.kind, qualified_name(d), d.line) for d in extract_facts(source, language).definitions}
    assert {
        ("method", "Button.handle", 2),
        ("method", "api.get", 6),
        ("method", "api.post", 7),
        ("method", "api.put", 8),
        ("method", "Legacy.greet", 12),
    } <= found
    assert not {name for _, name, _ in found} & {"Button.size", "api.limit", "greet"}


def test_a_cpp_header_read_as_c_gives_no_made_up_variables() -> None:
    # A .h file is C to the grammar: a C++ template it cannot read leaves its body at file scope.
    text = "template <class T> void rotate(T first) {\n  int __m1 = 0;\n  return;\n}\nint kept_out = 1;\n"
    assert [d.name for d in extract_facts(text, "c").definitions if d.kind in ("variable", "constant")] == []


def test_functions_in_an_object_passed_to_a_call_are_no_methods() -> None:
    text = 'Object.defineProperty(exports, "X", { enumerable: true, get: function () { return 1; } });\n'
    assert [d.name for d in extract_facts(text, "javascript").definitions] == []


@pytest.mark.parametrize(
    ("language", "source", "functions", "others"),
    [
        (
            "c",
            "char **argv_of(int n);\nchar *name;\nint (*handler)(int);\n",
            {"argv_of"},
            {"name", "handler"},
        ),
        (
            "cpp",
            "class A {\n  Foo *get();\n  Foo &ref();\n  int (*cb)(int);\n};\nFoo &any();\n",
            {"get", "ref", "any"},
            set(),
        ),
        # glibc's prototypes: a pointer returned, attributes after the parameters.
        (
            "c",
            "extern void *memset (void *__s, int __c, size_t __n) __THROW __nonnull ((1));\n",
            {"memset"},
            set(),
        ),
        (
            "c",
            "BOOL WINAPI CreateThing(int a, int b);\nLPVOID WINAPI *Alloc(int n);\n",
            {"CreateThing", "Alloc"},
            set(),
        ),
    ],
)
def test_declarations_of_functions_returning_pointers_or_references_are_functions(
    language: str, source: str, functions: set[str], others: set[str]
) -> None:
    # `int f(void);` always was a function; `char *f(void);` was nothing, nor was a method `Foo *get();`.
    facts = extract_facts(source, language)
    kinds = {d.name: d.kind for d in facts.definitions}
    assert {name for name, kind in kinds.items() if kind in ("function", "method")} == functions
    assert all(kinds.get(name) == "variable" for name in others), kinds
    lines = source.split("\n")
    for item in (*facts.definitions, *facts.references):
        assert item.name in lines[item.line - 1], item
