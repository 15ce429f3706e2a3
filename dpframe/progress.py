"""A one-line progress bar on standard error for long runs (synthesis, large files).

Silent for the first second, so quick calls print nothing; works in terminals
and notebooks (both honour a carriage return) without any dependency.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

_WIDTH = 24


class Progress:
    """Report ``(message, fraction done)`` steps; draws ``label [#####.....] 40% message``.

    >>> import io
    >>> out = io.StringIO()
    >>> with Progress("synthesize", stream=out, delay=0.0) as progress:
    ...     progress("measuring", 0.5)
    >>> out.getvalue().strip()
    'synthesize [############............]  50% measuring'
    """

    def __init__(self, label: str, *, enabled: bool = True, delay: float = 1.0, stream: TextIO | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self.delay = delay
        self.stream = sys.stderr if stream is None else stream
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, message: str, fraction: float) -> None:
        if not self.enabled or time.monotonic() - self.start < self.delay:
            return
        done = int(round(_WIDTH * min(max(fraction, 0.0), 1.0)))
        line = f"{self.label} [{'#' * done}{'.' * (_WIDTH - done)}] {fraction:4.0%} {message}"
        self.stream.write("\r" + line.ljust(79))
        self.stream.flush()
        self.shown = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
