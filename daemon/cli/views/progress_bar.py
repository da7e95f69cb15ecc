"""A one-line progress bar on a terminal (plain lines elsewhere)."""

from __future__ import annotations

import sys
from typing import TextIO


def _fmt_eta(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(seconds)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def _number(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


class ProgressBar:
    """Redraws one line on a TTY; prints a line per change of whole percent otherwise."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self._last_percent = -1

    def update(self, fraction: float, text: str) -> None:
        """Show `fraction` (0..1) done with a trailing description."""
        fraction = min(max(fraction, 0.0), 1.0)
        percent = int(fraction * 100)
        filled = int(fraction * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}% {text}"
        if self.tty:
            self.stream.write("\r" + line[:200] + "\033[K")
            self.stream.flush()
        elif percent // 10 != self._last_percent // 10:
            self.stream.write(line + "\n")
            self.stream.flush()
        self._last_percent = percent

    def index_update(self, progress: dict[str, object]) -> None:
        """Draw an index run's progress: files, chunks, chunks/s, ETA."""
        total = _number(progress.get("files_total"))
        done = _number(progress.get("files_done"))
        rate = progress.get("chunks_per_s")
        rate_text = f"{float(rate):.0f} chunks/s" if isinstance(rate, (int, float)) else "-- chunks/s"
        eta = progress.get("eta_s")
        text = (
            f"files {done}/{total}  chunks {progress.get('chunks_done', 0)}  {rate_text}  "
            f"ETA {_fmt_eta(float(eta) if isinstance(eta, (int, float)) else None)}"
        )
        self.update(done / total if total else 0.0, text)

    def close(self) -> None:
        """End the bar's line."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
