"""A `.h` header written in C++ is parsed as C++; a C header stays C."""

from __future__ import annotations

from pathlib import Path

from ragraf import Index
from ragraf.header_language import content_language

CPP_HEADER = """\
#pragma once
#include <string>

namespace fmt {
template <typename Context> class basic_format_args {
 public:
  basic_format_args() = default;
  int max_size() const { return 0; }
};

template <typename T> struct formatter {
  formatter() = delete;
};
}  // namespace fmt
"""

C_HEADER = """\
#ifndef MATH_H
#define MATH_H
#ifdef __cplusplus
extern "C" {
template <typename T> T twice(T x);
#endif

double hypot(double x, double y);

#ifdef __cplusplus
}
#endif
#endif
"""


C_LOOKALIKES = {
    "comment": "/* Usage from C++:\n   class MyPanel : public Panel { };\n*/\nint del_panel(PANEL *);\n",
    "if 0": "#if 0\nnamespace curses {\n#endif\nint new_panel(void);\n",
    "elif": "#if defined(X)\nint a;\n#elif defined(__cplusplus)\n#include <cstddef>\n#endif\nint b;\n",
    "continued": "#if defined(X) && \\\n    defined(__cplusplus)\ntemplate <typename T> T f(T);\n#endif\n",
    "macro": "#define DECL(T) \\\n  template <typename T> int g;\nint h(void);\n",
    "glibc": '#ifdef __CORRECT_ISO_CPP_STRING_H_PROTO\nextern "C++" {\n#endif\nchar *strchr(const char *, int);\n',
}
CPP_LOOKALIKES = {
    "nested namespace": "namespace a::b {\nint f();\n}\n",
    "namespace on its own line": "namespace foo\n{\nstruct Widget { int x; };\n}\n",
    "anonymous namespace": "namespace {\nstruct ForceLinking { ForceLinking(); };\n}\n",
    "enum class": "enum class Color { Red, Green };\n",
    "class without a base": "class Box {\n  int x;\n};\n",
    "else of an ifdef": '#ifdef __cplusplus\nextern "C" {\n#else\n#include <cstdint>\n#endif\n',
    "standard header": "#include <optional>\nstruct S;\n",
}


def test_c_headers_that_mention_cpp_where_c_does_not_read_it_stay_c() -> None:
    for name, text in C_LOOKALIKES.items():
        assert content_language("c", "x.h", text) == "c", name


def test_cpp_headers_in_their_other_forms_are_cpp() -> None:
    for name, text in CPP_LOOKALIKES.items():
        assert content_language("c", "x.h", text) == "cpp", name
    assert content_language("c", "LEGACY.H", CPP_HEADER) == "cpp"


def test_a_header_is_cpp_only_when_cpp_is_said_outside_cplusplus_blocks() -> None:
    assert content_language("c", "include/fmt/core.h", CPP_HEADER) == "cpp"
    assert content_language("c", "include/math.h", C_HEADER) == "c"
    assert content_language("c", "src/core.c", CPP_HEADER) == "c"  # a .c file is C whatever it holds
    assert content_language("cpp", "include/json.hpp", C_HEADER) == "cpp"
    assert content_language("python", "x.py", CPP_HEADER) == "python"


def test_definitions_of_a_cpp_header_come_out_as_cpp(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "include" / "fmt").mkdir(parents=True)
    (root / "include" / "fmt" / "core.h").write_text(CPP_HEADER)
    (root / "include" / "math.h").write_text(C_HEADER)
    with Index.open(root, home=tmp_path / "home", embedder="none") as idx:
        idx.index(quiet=True)
        args = idx.find_symbol("basic_format_args").results
        assert [(r["kind"], r["line"], r["container"]) for r in args] == [
            ("class", 5, "fmt"),
            ("method", 7, "fmt.basic_format_args"),  # its constructor
        ]
        assert [(r["name"], r["container"]) for r in idx.find_symbol("max_size").results] == [
            ("max_size", "fmt.basic_format_args")
        ]
        (hypot,) = idx.find_symbol("hypot").results
        assert (hypot["path"], hypot["kind"]) == ("include/math.h", "function")
