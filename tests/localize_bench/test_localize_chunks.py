"""The in-process baselines' C/C++ function scanner (bench/search/localize_chunks.py)."""

from __future__ import annotations

import textwrap

from bench.search.localize_chunks import c_like_functions

CPP = textwrap.dedent(
    """\
    #include <cstdio>
    #define EXPORT
    namespace outer {
    namespace detail {
    enum class kind { a, b };
    const char* names[] = {"{", "}"};
    template <typename T, typename U = int>
    auto convert(T value) -> U {
      if (value) { return U(); }
      return U(1);
    }
    }  // namespace detail

    EXPORT template <typename Char> class buffer final : public base<Char> {
     public:
      void push_back(Char c) { data_[size_++] = c; }
      struct inner { int x; };
    };

    extern "C" {
    struct point *make_point(int x, int y) {
      return nullptr;
    }
    }
    }  // namespace outer
    """
)


def test_cpp_functions_inside_namespaces_classes_and_extern_c() -> None:
    found = [(f.qualname, f.first_line, f.def_line, f.end_line) for f in c_like_functions("a.cc", CPP)]
    assert found == [
        ("convert", 6, 7, 10),
        ("push_back", 15, 15, 15),
        ("make_point", 20, 20, 22),
    ]


def test_c_function_after_a_multiline_preprocessor_line() -> None:
    text = "#define TWICE(x) \\\n  ((x) * 2)\nstatic int twice(int x)\n{\n  return TWICE(x);\n}\n"
    assert [(f.qualname, f.first_line, f.end_line) for f in c_like_functions("a.c", text)] == [("twice", 2, 5)]
