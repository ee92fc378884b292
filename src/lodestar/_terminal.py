"""What the ``lodestar`` program shows on stderr: the progress line, and notes.

A note (``lodestar: error: ...``) ends a progress line that is drawn, so that
it starts on a line of its own.
"""

from __future__ import annotations

import sys
import threading
import time

# Progress is shown on a terminal once a stage has taken this long, and then
# redrawn this often, so that a long stage with no steps to count (reading and
# parsing a file, loading JAX) shows its time going up.
PROGRESS_AFTER_SECONDS = 1.0
PROGRESS_REDRAW_SECONDS = 0.25


class Progress:
    """A one-line progress report on stderr, drawn only when it is wanted.

    ``mode`` "auto" draws on a terminal once a stage has run for
    ``PROGRESS_AFTER_SECONDS``; "always" draws from the start, terminal or
    not; "never" stays silent. A stage is a message (``reading run.txt``),
    with a bar when it counts steps. While it draws, a thread redraws the
    line every ``PROGRESS_REDRAW_SECONDS``, so that a stage with no steps to
    count shows its elapsed time growing.
    """

    def __init__(self, *, mode: str, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = mode == "always" or (
            mode == "auto" and self.stream is not None and self.stream.isatty()
        )
        self.delay = 0.0 if mode == "always" else PROGRESS_AFTER_SECONDS
        self.started = time.monotonic()
        self.stage, self.total, self.done, self.drawn = "", 0, 0, False
        self.unit = "batches"
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._redrawing: threading.Thread | None = None

    def begin(self, stage: str, total: int = 0, *, unit: str = "batches") -> None:
        """Start a stage of ``total`` steps (none: only its time is shown), in batches or bytes."""
        with self._lock:
            self.stage, self.total, self.done, self.unit = stage, total, 0, unit
            self.started = time.monotonic()
            self._draw()
        if self.enabled and self._redrawing is None and not self._closed.is_set():
            self._redrawing = threading.Thread(
                target=self._redraw, name="lodestar-progress", daemon=True
            )
            self._redrawing.start()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self.done, self.total = done, total
            self._draw()

    def _redraw(self) -> None:
        while not self._closed.wait(PROGRESS_REDRAW_SECONDS):
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self.started
        if not self.enabled or elapsed < self.delay:
            return
        line = f"{self.stage} {elapsed:.1f} s"
        if self.total:
            filled = round(30 * self.done / max(self.total, 1))
            count = f"{self.done}/{self.total} batches"
            if self.unit == "bytes":
                count = _byte_counts(self.done, self.total)
            line = f"{self.stage} [{'#' * filled}{'.' * (30 - filled)}] {count}, {elapsed:.1f} s"
        self.stream.write(f"\r{line}\033[K")
        self.stream.flush()
        self.drawn = True
        global _drawn_progress
        _drawn_progress = self

    def end_line(self) -> None:
        """End the drawn line, so that a note printed next starts on its own line."""
        with self._lock:
            if self.drawn:
                self.stream.write("\n")
                self.stream.flush()
                self.drawn = False

    def close(self) -> None:
        self._closed.set()
        self.end_line()


def _byte_counts(done: int, total: int) -> str:
    """``done/total`` in the unit of ``total``: ``120.3/376.7 MB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if total >= scale:
            return f"{done / scale:.1f}/{total / scale:.1f} {unit}"
    return f"{done}/{total} B"


# The progress line last drawn, which _note ends before it prints.
_drawn_progress: Progress | None = None


def note(message: str) -> None:
    """Print ``lodestar: message`` on stderr, on a line of its own."""
    if _drawn_progress is not None:
        _drawn_progress.end_line()
    if sys.stderr is not None:
        print(f"lodestar: {message}", file=sys.stderr)
