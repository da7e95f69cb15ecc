"""Indexing progress, readable at any moment (for `lensmux status`)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Literal

IndexState = Literal["idle", "indexing", "ready", "error"]


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    """A consistent copy of the progress; rates and ETA are None until measurable."""

    state: IndexState
    files_total: int
    files_done: int
    chunks_done: int
    chunks_per_s: float | None
    eta_s: float | None
    last_error: str | None
    started_at: float | None
    finished_at: float | None
    # The share of the root's indexable files whose current content is indexed (see Progress.coverage).
    coverage: float = 1.0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What `lensmux status` shows for one root; sizes are None while the index is closed."""

    root: str
    store_dir: str
    model_id: str
    progress: ProgressSnapshot
    files: int | None = None
    symbols: int | None = None
    chunks: int | None = None
    vectors: int | None = None
    pending_vectors: int | None = None
    # Files of the current run's focus (open in editors, under a searched directory) not yet written.
    focus_left: int | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form, progress fields flattened in."""
        out = asdict(self)
        out.update(out.pop("progress"))
        return out


class Progress:
    """Mutable progress owned by the indexer; everyone else reads snapshot()."""

    def __init__(self) -> None:
        self.state: IndexState = "idle"
        self.files_total = 0
        self.files_done = 0
        self.chunks_done = 0
        self.last_error: str | None = None
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._clock_start = 0.0
        # Files the run's walk found, and whether the walk is still going.
        self.files_present = 0
        self._walking = False
        # What coverage() says while a walk goes on: what the last run left, nothing before any.
        self._coverage_known = 0.0

    def walk(self) -> None:
        """A full run starts walking the tree: until begin(), how many files it covers is not known."""
        self._walking = True

    def begin(self, files_total: int, files_present: int | None = None) -> None:
        """A full run starts on files_total files to index, of files_present indexable ones (default: the same)."""
        self._walking = False
        self.files_present = files_total if files_present is None else files_present
        self.state = "indexing"
        self.files_total = files_total
        self.files_done = 0
        self.chunks_done = 0
        self.started_at = time.time()
        self.finished_at = None
        self._clock_start = time.monotonic()

    def add_total(self, files: int) -> None:
        """More files turned out to need work."""
        self.files_total += files

    def advance(self, files: int, chunks: int) -> None:
        """Some files (and their chunks) are committed."""
        self.files_done += files
        self.chunks_done += chunks

    def finish(self) -> None:
        """The run ended without error."""
        self.state = "ready"
        self.finished_at = time.time()
        self._walking, self._coverage_known = False, 1.0

    def stop(self) -> None:
        """The run ended early (an error or a cancel): coverage stays what it reached."""
        self._coverage_known, self._walking = self.coverage(), False

    def coverage(self) -> float:
        """Indexed files over indexable files: 1.0 once a run finished, what is known so far during one.

        Files, not chunks: how many chunks a file gives is known only once it is read and
        its server answered, so a share of chunks would divide by a guess, while the walk
        counts the files exactly. The files the run does not need to index (unchanged
        since the last run) count as covered; during the walk nothing is counted yet, so
        the share is the last run's (0.0 in a new daemon: not claimed before it is known).
        """
        if self._walking or self.state != "indexing":
            return self._coverage_known
        if self.files_present <= 0:
            return 1.0
        left = max(0, self.files_total - self.files_done)
        return max(0.0, min(1.0, (self.files_present - left) / self.files_present))

    def fail(self, message: str) -> None:
        """The run ended with an error."""
        self.stop()
        self.state = "error"
        self.last_error = message
        self.finished_at = time.time()

    def note_error(self, message: str) -> None:
        """Something went wrong but indexing goes on (e.g. one file, a recovered index)."""
        self.last_error = message

    def snapshot(self) -> ProgressSnapshot:
        """A copy with derived rate and ETA."""
        rate: float | None = None
        eta: float | None = None
        if self.state == "indexing":
            elapsed = time.monotonic() - self._clock_start
            if elapsed > 0 and self.chunks_done:
                rate = self.chunks_done / elapsed
            if elapsed > 0 and self.files_done:
                eta = (self.files_total - self.files_done) * elapsed / self.files_done
        return ProgressSnapshot(
            state=self.state,
            files_total=self.files_total,
            files_done=self.files_done,
            chunks_done=self.chunks_done,
            chunks_per_s=rate,
            eta_s=eta,
            last_error=self.last_error,
            started_at=self.started_at,
            finished_at=self.finished_at,
            coverage=round(self.coverage(), 4),
        )
