"""clangd's cross-file answers as the client's own opens make them (adapters/clangd/clangd_index.py).

The shared answers below are what clangd 22 answered in /tmp experiments, reduced to
file and range: main.c asks references of `add`; util.c, intl.c are other clients' files.
"""

from __future__ import annotations

from typing import Any

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.clangd.clangd_index import incoming_calls_for, references_for
from lensmux.adapters.spec import ServerConfig

P = "file:///p/"
MAIN, UTIL, INTL, OTHER = (P + f"src/{name}.c" for name in ("main", "util", "intl", "other"))
UTIL_H = P + "include/util.h"


def loc(uri: str, line: int, start: int, end: int) -> dict[str, Any]:
    return {"uri": uri, "range": {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}}


def within(*uris: str) -> Any:
    return lambda uri: uri in uris


IN_MAIN = loc(MAIN, 3, 17, 20)
IN_INTL = loc(INTL, 2, 33, 36)
IN_UTIL = [loc(UTIL, 2, 4, 7), loc(UTIL, 9, 16, 19), loc(UTIL, 15, 31, 34)]


def test_without_a_background_index_other_clients_files_are_dropped_in_clangds_order() -> None:
    shared = [IN_MAIN, IN_INTL, *IN_UTIL]
    alone = references_for(shared, within(MAIN), within(MAIN), within(MAIN, UTIL, INTL), background=False)
    assert alone == [IN_MAIN]
    # util.c opened (and maybe closed again) by this client stays: clangd keeps it indexed.
    mine = references_for(shared, within(MAIN), within(MAIN, UTIL), within(MAIN, UTIL, INTL), background=False)
    assert mine == [IN_MAIN, *IN_UTIL]
    # Nothing of others': the answer is left as it came.
    everything = within(MAIN, UTIL, INTL)
    assert references_for(shared, within(MAIN), everything, everything, background=False) is None


def test_a_location_in_a_file_nobody_opened_is_kept() -> None:
    """It came from a preamble (a C++ override declared in a header) or a static index, not from an open."""
    override = loc(P + "include/derived.h", 3, 6, 7)
    shared = [loc(P + "src/main2.cpp", 2, 30, 31), override, loc(P + "src/leaf.cpp", 3, 6, 7)]
    mine = within(P + "src/main2.cpp")
    alone = references_for(shared, mine, mine, within(P + "src/main2.cpp", P + "src/leaf.cpp"), background=False)
    assert alone == shared[:2]


def test_with_a_background_index_the_order_is_the_one_of_this_clients_opens() -> None:
    """Measured: main.c alone, and main.c next to another client's util.c, with compile_commands.json."""
    alone_order = [IN_MAIN, loc(UTIL_H, 2, 4, 7), IN_INTL, loc(OTHER, 3, 28, 31), *IN_UTIL]
    shared_order = [IN_MAIN, *IN_UTIL, loc(UTIL_H, 2, 4, 7), IN_INTL, loc(OTHER, 3, 28, 31)]
    at_server = within(MAIN, UTIL)
    assert references_for(shared_order, within(MAIN), within(MAIN), at_server, background=True) == alone_order
    # The client that opened util.c itself gets clangd's answer as it came.
    assert references_for(shared_order, within(MAIN), within(MAIN, UTIL), at_server, background=True) is None


def test_an_answer_of_another_shape_is_left_alone() -> None:
    """Not the dynamic index's files then the background's, each sorted: a virtual method's overrides, say."""
    odd = [IN_MAIN, loc(UTIL_H, 2, 4, 7), *IN_UTIL, IN_INTL]
    assert references_for(odd, within(MAIN), within(MAIN), within(MAIN, UTIL), background=True) is None
    assert references_for(None, within(MAIN), within(MAIN), within(MAIN), background=False) is None


def test_incoming_calls_from_other_clients_files_are_dropped() -> None:
    def call(name: str, uri: str) -> dict[str, Any]:
        return {"from": {"name": name, "uri": uri, "range": IN_MAIN["range"]}, "fromRanges": [IN_MAIN["range"]]}

    shared = [call("compute", MAIN), call("documented", UTIL), call("other_fn", OTHER), call("twice", INTL)]
    at_server = within(MAIN, UTIL, INTL, OTHER)
    assert incoming_calls_for(shared, within(MAIN, OTHER), at_server, background=False) == [shared[0], shared[2]]
    assert incoming_calls_for(shared, within(MAIN), at_server, background=True) is None


def test_the_adapter_knows_a_background_index_from_its_progress_create() -> None:
    adapter = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
    shared = [IN_MAIN, *IN_UTIL, loc(UTIL_H, 2, 4, 7)]
    args = ("textDocument/references", shared, within(MAIN), within(MAIN), within(MAIN, UTIL))
    assert adapter.scopes_to_opened_files("textDocument/references")
    assert not adapter.scopes_to_opened_files("textDocument/definition")
    assert adapter.answer_for_opener(*args) == [IN_MAIN, loc(UTIL_H, 2, 4, 7)]
    adapter.observe_progress_created("backgroundIndexProgress")
    assert adapter.answer_for_opener(*args) == [IN_MAIN, loc(UTIL_H, 2, 4, 7), *IN_UTIL]
    adapter.reset()
    assert adapter.answer_for_opener(*args) == [IN_MAIN, loc(UTIL_H, 2, 4, 7)]
    static = ClangdAdapter(ServerConfig(name="clangd", command="clangd", args=["--index-file=/idx"]))
    assert static.answer_for_opener(*args) == [IN_MAIN, loc(UTIL_H, 2, 4, 7), *IN_UTIL]
