"""A `.h` header written in C++ is parsed as C++; a C header stays C."""

from __future__ import annotations

from pathlib import Path

from ragraf import Index
from ragraf.languages import content_language

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
