"""Journal versus terminal log lines, and forwarding of a real child's stderr."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator

import anyio
import pytest

from lensmux.daemon.service.errors import InvalidLogLevel
from lensmux.daemon.service.logsetup import TRUNCATION_MARK, configure_logging, pump_stderr_task

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """configure_logging changes the root logger; give every test a clean one back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def _log_through_pipe(level: str, journal_stream: str | None) -> list[str]:
    """Configure logging onto a pipe, optionally announced as the journal; return its lines."""
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, encoding="utf-8") as reader:
        with os.fdopen(write_fd, "w", encoding="utf-8") as writer:
            st = os.fstat(write_fd)
            env_value = journal_stream or f"{st.st_dev}:{st.st_ino}"
            previous = os.environ.get("JOURNAL_STREAM")
            os.environ["JOURNAL_STREAM"] = env_value
            try:
                handler = configure_logging(level, stream=writer)
            finally:
                if previous is None:
                    del os.environ["JOURNAL_STREAM"]
                else:
                    os.environ["JOURNAL_STREAM"] = previous
            log = logging.getLogger("lensmux.test")
            log.debug("checking")
            log.info("serving")
            log.warning("slow")
            log.error("failed")
            log.critical("dying")
            empty: dict[str, int] = {}
            try:
                _ = empty["boom"]
            except KeyError:
                log.exception("crashed")
            handler.flush()
            logging.getLogger().removeHandler(handler)
        return reader.read().splitlines()


def test_journal_lines_carry_priority_prefixes_and_no_timestamps() -> None:
    lines = _log_through_pipe("debug", journal_stream=None)

    assert lines[:5] == [
        "<7>lensmux.test: checking",
        "<6>lensmux.test: serving",
        "<4>lensmux.test: slow",
        "<3>lensmux.test: failed",
        "<2>lensmux.test: dying",
    ]
    # journald splits on newlines: each traceback line keeps the error priority.
    traceback = lines[5:]
    assert traceback[0] == "<3>lensmux.test: crashed"
    assert any("KeyError: 'boom'" in line for line in traceback)
    assert all(line.startswith("<3>") for line in traceback)
    assert not any(TIMESTAMP.search(line) for line in lines)


def test_terminal_lines_carry_timestamps_and_level_names() -> None:
    lines = _log_through_pipe("info", journal_stream="1:1")

    assert not any(line.startswith("<") for line in lines)
    assert TIMESTAMP.match(lines[0])
    assert lines[0].endswith("INFO     lensmux.test: serving")
    assert "checking" not in "\n".join(lines)  # below the configured level


def test_reconfiguring_replaces_the_handler() -> None:
    configure_logging("info")
    configure_logging("warning")
    installed = [h for h in logging.getLogger().handlers if type(h).__name__ == "_LensmuxHandler"]
    assert len(installed) == 1


def test_unknown_level_is_refused() -> None:
    with pytest.raises(InvalidLogLevel):
        configure_logging("verbose")


class RecordingHandler(logging.Handler):
    """Keeps every record it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class FakeStuckHandler(RecordingHandler):
    """Fault injection: a log sink (a full journal pipe) that stops accepting until released."""

    def __init__(self) -> None:
        super().__init__()
        self.unblock = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.unblock.wait(timeout=120)
        super().emit(record)


@pytest.fixture
def server_logger() -> Iterator[logging.Logger]:
    log = logging.getLogger("lensmux.server")
    level, propagate = log.level, log.propagate
    log.setLevel(logging.INFO)
    log.propagate = False  # keep thousands of records out of pytest's capture
    yield log
    log.setLevel(level)
    log.propagate = propagate
    for handler in log.handlers[:]:
        log.removeHandler(handler)


@pytest.mark.anyio
async def test_child_stderr_lines_are_logged_under_the_server_name(
    server_logger: logging.Logger,
) -> None:
    recorder = RecordingHandler()
    server_logger.addHandler(recorder)
    script = (
        "import sys\n"
        "sys.stderr.write('I[12:00] indexing\\n')\n"
        "sys.stderr.write('windows line\\r\\n')\n"
        "sys.stderr.write('x' * 5000 + '\\n')\n"
        "sys.stderr.write('after the long one\\n')\n"
        "sys.stderr.write('no newline at exit')\n"
    )
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [sys.executable, "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        ) as process:
            assert process.stderr is not None
            await pump_stderr_task(process.stderr, "clangd", max_line=100)

    assert {r.name for r in recorder.records} == {"lensmux.server.clangd"}
    assert [r.getMessage() for r in recorder.records] == [
        "I[12:00] indexing",
        "windows line",
        "x" * 100 + TRUNCATION_MARK,
        "after the long one",
        "no newline at exit",
    ]


@pytest.mark.anyio
async def test_stuck_log_sink_drops_lines_instead_of_blocking_the_child(
    server_logger: logging.Logger,
) -> None:
    sink = FakeStuckHandler()
    server_logger.addHandler(sink)
    lines = 20_000  # 2 MB: thirty times what a pipe buffers
    script = f"import sys\nfor i in range({lines}): sys.stderr.write(f'{{i:>99}}\\n')\n"
    with anyio.fail_after(120):
        async with (
            await anyio.open_process(
                [sys.executable, "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            ) as process,
            anyio.create_task_group() as tg,
        ):
            assert process.stderr is not None
            await tg.start(pump_stderr_task, process.stderr, "pyright")
            # The child finishes writing everything while the sink accepts nothing.
            assert await process.wait() == 0
            assert sink.records == []
            sink.unblock.set()

    forwarded = [r for r in sink.records if r.levelno == logging.INFO]
    drop_notes = [r for r in sink.records if r.levelno == logging.WARNING]
    dropped = sum(int(r.getMessage().split()[0]) for r in drop_notes)
    assert drop_notes
    assert len(forwarded) < lines
    # Every line is either logged or counted as dropped.
    assert len(forwarded) + dropped == lines
