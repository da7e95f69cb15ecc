"""Run a Python script counting every function call of its main thread between SIGUSR1 and SIGUSR2.

    python bench/mux/count_shim.py OUT.json SCRIPT [ARGS...]

A counter, not a clock: `sys.setprofile` sees each Python call, each resumption
of a coroutine or generator (kept apart: an `await` that suspends is not a
call), and each call of a C function from Python. The counts do not depend on
the machine's load, so two versions of the code can be compared exactly.
SIGUSR2 writes OUT.json: {"function label": [calls, resumptions, c_calls]}.
"""

from __future__ import annotations

import dis
import inspect
import json
import os
import runpy
import signal
import sys
from types import CodeType, FrameType
from typing import Any

_SUSPENDABLE = inspect.CO_COROUTINE | inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_calls: dict[CodeType, int] = {}
_resumes: dict[CodeType, int] = {}
_c_calls: dict[str, int] = {}
_first_resume: dict[CodeType, int] = {}
_output: list[str] = []


def _entry_offset(code: CodeType) -> int:
    """Where a fresh frame of a coroutine or generator stands at its call event: its first RESUME."""
    offset = _first_resume.get(code)
    if offset is None:
        offset = next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), 0)
        _first_resume[code] = offset
    return offset


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if event == "call":
        code = frame.f_code
        if code.co_flags & _SUSPENDABLE and frame.f_lasti > _entry_offset(code):
            _resumes[code] = _resumes.get(code, 0) + 1
        else:
            _calls[code] = _calls.get(code, 0) + 1
    elif event == "c_call":
        name = f"{getattr(arg, '__module__', None) or '~'}.{getattr(arg, '__qualname__', repr(arg))}"
        _c_calls[name] = _c_calls.get(name, 0) + 1


def _label(code: CodeType) -> str:
    return f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"


def _start(signum: int, frame: FrameType | None) -> None:
    _calls.clear()
    _resumes.clear()
    _c_calls.clear()
    sys.setprofile(_profile)


def _stop(signum: int, frame: FrameType | None) -> None:
    sys.setprofile(None)
    table: dict[str, list[int]] = {}
    for code, n in _calls.items():
        table.setdefault(_label(code), [0, 0, 0])[0] += n
    for code, n in _resumes.items():
        table.setdefault(_label(code), [0, 0, 0])[1] += n
    for name, n in _c_calls.items():
        table.setdefault(f"{name} (~)", [0, 0, 0])[2] += n
    tmp = _output[0] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(table, out)
    os.replace(tmp, _output[0])


if __name__ == "__main__":
    _output.append(sys.argv[1])
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
