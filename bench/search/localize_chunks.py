"""Perfect function chunks of one file, without a language server: the in-process baselines' documents.

The in-process rows of the localization benchmark (localize_offline.py) rank every
function of a parent's tree, read straight from git. Python functions are the
answers' own (localize_answers.python_functions: outermost functions and methods,
decorators included). C and C++ ones come from a brace scanner that, unlike
c_strip.c_functions (top level only, which is all C needs), also enters namespaces,
`extern "C"` blocks, classes, structs and unions, so C++ methods and functions in
namespaces are documents too (fmt keeps all its code in namespaces: top-level
scanning finds 13 of the 58 functions the first 15 mined fmt commits changed).

A block opens a function when its head (the code since the previous `;`, `{`, `}`
or preprocessor line) holds a parameter list and reads as no class, enum,
initialiser or control statement. A chunk spans its head's first line to the line of
its closing brace; its `def_line` is the line of its name, where clangd's range for
it starts even when a `template <...>` line comes first, so an in-process ranking
reports (path, name line) and is scored as the daemon's (an item lands in an answer).
"""

from __future__ import annotations

import re

from bench.search.localize_answers import Function, c_code, python_functions
from bench.search.localize_projects import answer_language

__all__ = ["c_like_functions", "file_functions"]

# String literals are blanked before heads are read: `extern "C"` reads `extern " "`.
_CONTAINER = re.compile(r'^(?:inline\s+)?namespace\b|^extern\s+"[^"]*"\s*$')
# Export and attribute macros before a declaration (`FMT_EXPORT template <...> class ...`).
_ACCESS = re.compile(r"\s*(?:(?:public|private|protected)\s*:(?!:)\s*)+")
_LEADING_MACROS = re.compile(r"^(?:[A-Z][A-Z0-9_]*\s+)+(?=[a-z_])")
_TEMPLATE_PREFIX = re.compile(r"^template\s*<")
_CLASS = re.compile(r"^(?:typedef\s+)?(?:class|struct|union)\b\s*(?:alignas\s*\([^)]*\)\s*)?(?:[\w:]+\s*)?")
_NOT_A_FUNCTION = re.compile(r"^(?:enum|typedef|using|static_assert|if|for|while|switch|do|else|return)\b|=\s*$|\]\s*$")


def _strip_template(head: str) -> str:
    """The head without a leading `template <...>` (nested angle brackets counted)."""
    while _TEMPLATE_PREFIX.match(head):
        depth, i = 0, head.index("<")
        for i in range(head.index("<"), len(head)):
            depth += {"<": 1, ">": -1}.get(head[i], 0)
            if depth == 0:
                break
        head = head[i + 1 :].lstrip()
    return head


def _kind(head: str) -> str:
    """ "container", "function" or "other" for the head of a block."""
    head = _strip_template(_LEADING_MACROS.sub("", _ACCESS.sub("", " ".join(head.split()), count=1)))
    if _CONTAINER.match(head):
        return "container"
    match = _CLASS.match(head)
    if match is not None:
        rest = head[match.end() :].lstrip()
        # `struct s {`, `class C final : public B<T> {`, `struct formatter<T, Char> {`; not `struct s *make(void) {`.
        if not rest or rest[0] in ":<" or rest.startswith("final"):
            return "container"
    if "(" in head and ")" in head and not _NOT_A_FUNCTION.search(head):
        return "function"
    return "other"


def c_like_functions(path: str, text: str) -> list[Function]:
    """The function and method definitions of a C or C++ file (0-based, inclusive lines)."""
    code = c_code(text, literals=True)
    line_of = [0] * (len(code) + 1)
    line = 0
    for i, c in enumerate(code):
        line_of[i] = line
        if c == "\n":
            line += 1
    line_of[len(code)] = line
    out: list[Function] = []
    # (kind, head start offset) of each open block; functions' bodies are skipped whole.
    stack: list[tuple[str, int]] = []
    head_start = 0
    i = 0
    while i < len(code):
        c = code[i]
        at_line_start = not code[code.rfind("\n", 0, i) + 1 : i].strip()
        if c == "#" and at_line_start:  # a preprocessor line, continuation lines included
            end = i
            while True:
                end = code.find("\n", end)
                if end < 0 or code[end - 1] != "\\":
                    break
                end += 1
            i = head_start = len(code) if end < 0 else end + 1
            continue
        if c == ";":
            head_start = i + 1
        elif c == "{":
            head = code[head_start:i]
            kind = _kind(head)
            if kind == "container":
                stack.append((kind, head_start))
                head_start = i + 1
            else:
                close = _matching_brace(code, i)
                if kind == "function":
                    access = _ACCESS.match(head)  # `public:` before a method is no part of it
                    first = head_start + (access.end() if access else 0)
                    first += len(code[first:i]) - len(code[first:i].lstrip())
                    name = re.search(r"([~\w:]+)\s*\(", head)
                    named = line_of[head_start + name.start()] if name else line_of[first]
                    qualname = name.group(1) if name else "?"
                    out.append(Function(path, qualname, line_of[first], named, line_of[close]))
                i = head_start = close + 1
                continue
        elif c == "}":
            if stack:
                stack.pop()
            head_start = i + 1
        i += 1
    return out


def _matching_brace(code: str, start: int) -> int:
    """The offset of the `}` closing the `{` at `start` (the text's end if none)."""
    depth = 0
    for j in range(start, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def file_functions(path: str, text: str) -> list[Function]:
    """The functions of one source file, by its language (none for other files)."""
    language = answer_language(path)
    if language == "python":
        return python_functions(path, text)
    if language == "c":
        return c_like_functions(path, text)
    return []
