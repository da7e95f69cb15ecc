"""OmniSharp: `-lsp`, `--hostPID`, solution discovery and dynamic registrations."""

from __future__ import annotations

from pathlib import Path

from lensmux.adapters.base import Adapter


def find_solution(root: Path) -> Path:
    """The `.sln` in `root`, else its `.csproj`, else the directory itself."""
    for pattern in ("*.sln", "*.csproj"):
        found = sorted(root.glob(pattern))
        if found:
            return found[0]
    return root


class OmniSharpAdapter(Adapter):
    """OmniSharp wants the solution or project to load, and its host's pid."""

    def command(self, root: Path, daemon_pid: int) -> list[str]:
        """Base command plus `-s <solution>`; `-lsp` and `--hostPID` come from the config."""
        argv = super().command(root, daemon_pid)
        if "-lsp" not in argv:
            argv.insert(1, "-lsp")
        if "--hostPID" not in argv:
            argv[2:2] = ["--hostPID", str(daemon_pid)]
        if "-s" not in argv:
            argv += ["-s", str(find_solution(root))]
        return argv
