"""`def NAME` puts the definition a reader means first: source over stubs, examples and tests, the
newest version folder, types over variables, the file named after the symbol."""

from __future__ import annotations

from pathlib import Path

from support import write

from ragraf import Index
from ragraf.facts.lookup import named_after, path_role, superseded_paths


def ranked(root: Path, files: dict[str, str], name: str) -> list[tuple[str, str]]:
    write(root, files)
    idx = Index.open(root)
    try:
        idx.index(quiet=True, lexical_only=True)
        return [(r["path"], r["kind"]) for r in idx.find_symbol(name).results]
    finally:
        idx.close()


def notes(root: Path, name: str) -> list[str]:
    idx = Index.open(root)
    try:
        return idx.find_symbol(name).notes
    finally:
        idx.close()


def test_a_newer_version_folder_supersedes_an_older_one(tmp_path: Path) -> None:
    files = {
        "src/v3/types.ts": "export class ZodObject<T> {\n  shape!: T;\n}\n",
        "src/v4/classic/schemas.ts": (
            "export interface ZodObject<T> {\n  shape: T;\n}\n"
            "export const ZodObject: Ctor<ZodObject> = make('ZodObject');\n"
        ),
    }
    paths = [path for path, _ in ranked(tmp_path, files, "ZodObject")]
    # The v3 class is shallower and a class, yet v4 is what the name means today.
    assert paths == ["src/v4/classic/schemas.ts", "src/v4/classic/schemas.ts", "src/v3/types.ts"]


def test_version_folders_only_compete_under_the_same_parent() -> None:
    paths = {"api/v1/users.py", "api/v2/users.py", "legacy/v9/users.py", "web/users.py"}
    assert superseded_paths(paths) == {"api/v1/users.py"}
    assert superseded_paths({"src/v3/a.ts"}) == set()


def test_source_ranks_before_stubs_examples_and_tests(tmp_path: Path) -> None:
    files = {
        "tests/test_client.py": "class Client:\n    pass\n",
        "examples/client.py": "class Client:\n    pass\n",
        "typings/client.pyi": "class Client: ...\n",
        "pkg/deep/er/client.py": "class Client:\n    pass\n",
    }
    assert [path for path, _ in ranked(tmp_path, files, "Client")] == [
        "pkg/deep/er/client.py",
        "typings/client.pyi",
        "examples/client.py",
        "tests/test_client.py",
    ]


def test_a_declaration_file_still_answers_when_nothing_else_defines_the_name(tmp_path: Path) -> None:
    files = {"types/index.d.ts": "export declare function request(url: string): Promise<Response>;\n"}
    assert ranked(tmp_path, files, "request") == [("types/index.d.ts", "function")]


def test_docs_examples_legacy_and_stubs_are_set_aside_from_source() -> None:
    assert path_role("src/app/server.py") == 0
    assert path_role("lib/index.d.ts") == 1
    assert path_role("docs_src/tutorial/app.py") == 2
    assert path_role("src/deprecated/config.py") == 2
    assert path_role("src/app/server.test.ts") == 3


def test_a_class_or_interface_ranks_before_a_variable_of_the_same_name(tmp_path: Path) -> None:
    files = {
        "a/registry.ts": "export const Schema = createRegistry();\n",
        "b/deeper/schema_types.ts": "export interface Schema {\n  id: string;\n}\n",
    }
    assert ranked(tmp_path, files, "Schema")[0] == ("b/deeper/schema_types.ts", "interface")


def test_among_equals_the_file_named_after_the_symbol_ranks_first(tmp_path: Path) -> None:
    files = {
        "src/errors.py": "class TransportError(Exception):\n    pass\n",
        "src/net/transport_error.py": "class TransportError(Exception):\n    pass\n",
    }
    # Deeper, but named after it.
    assert ranked(tmp_path, files, "TransportError")[0] == ("src/net/transport_error.py", "class")


def test_an_entry_file_is_named_after_its_folder() -> None:
    assert named_after("src/TRPCError.ts", "TRPCError")
    assert named_after("src/router/index.ts", "Router")
    assert named_after("pkg/client_session/__init__.py", "ClientSession")
    assert named_after("src/ZodError.ts", "$ZodError")
    assert not named_after("src/errors.ts", "ZodError")


def test_a_name_finds_its_dollar_prefixed_definition_and_back(tmp_path: Path) -> None:
    files = {
        "core/schemas.ts": "export interface $ZodType {\n  _zod: unknown;\n}\n",
        "classic/checks.ts": "export function refine() {}\n",
    }
    assert ranked(tmp_path, files, "ZodType") == [("core/schemas.ts", "interface")]
    assert "matched as $ZodType" in notes(tmp_path, "ZodType")
    assert ranked(tmp_path, {}, "$refine") == [("classic/checks.ts", "function")]


def test_an_exact_name_is_not_diluted_by_its_dollar_variant(tmp_path: Path) -> None:
    files = {
        "core/schemas.ts": "export interface $ZodType {\n  _zod: unknown;\n}\n",
        # Even a definition that only extends the variant is what the name means (`z.ZodType`).
        "classic/schemas.ts": "export interface ZodType extends core.$ZodType {\n  parse(): unknown;\n}\n",
    }
    assert ranked(tmp_path, files, "ZodType") == [("classic/schemas.ts", "interface")]


def test_a_class_built_on_a_like_named_base_answers_for_its_name(tmp_path: Path) -> None:
    # aiohttp's RequestInfo(_RequestInfo), zod's ZodString extends _ZodString: the base is a helper,
    # the name asked for is the public class, so "the wrapped definition first" would be wrong here.
    files = {
        "pkg/client_reqrep.py": (
            "class _RequestInfo(NamedTuple):\n    url: str\n\nclass RequestInfo(_RequestInfo):\n    pass\n"
        ),
    }
    assert ranked(tmp_path, files, "RequestInfo") == [("pkg/client_reqrep.py", "class")]


def test_a_function_body_ranks_before_its_header_prototype(tmp_path: Path) -> None:
    files = {
        "include/uv.h": "struct loop;\nint uv_run(struct loop *l, int mode);\nstruct loop *uv_default_loop(void);\n",
        "src/unix/core.c": '#include "uv.h"\nint uv_run(struct loop *l, int mode) {\n  return mode;\n}\n',
        "src/uv-common.c": "struct loop *uv_default_loop(void) {\n  return 0;\n}\n",
        "include/inline.h": "static inline int uv_is_zero(int x) {\n  return x == 0;\n}\n",
    }
    assert ranked(tmp_path, files, "uv_run") == [
        ("src/unix/core.c", "function"),
        ("include/uv.h", "function"),
    ]
    # A prototype returning a pointer is a function too, behind its body.
    assert [path for path, _ in ranked(tmp_path, files, "uv_default_loop")] == [
        "src/uv-common.c",
        "include/uv.h",
    ]
    assert [path for path, _ in ranked(tmp_path, files, "uv_is_zero")] == ["include/inline.h"]
