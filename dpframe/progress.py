"""A progress bar for long runs (describe, synthesis), drawn by tqdm.

``tqdm.auto`` picks the bar: a widget in Jupyter (with ipywidgets), a text
line on standard error in a terminal. tqdm's ``disable=None`` keeps it silent
where nobody watches (a log file, a pipe, CI), and ``delay`` keeps quick calls
silent everywhere.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TextIO

from tqdm.auto import tqdm


class _Bar(tqdm):  # type: ignore[type-arg]
    # No monitor thread: our bars redraw on every step (mininterval=0, miniters=0), and a thread left running would
    # make a later os.fork() in the user's program warn about forking a multi-threaded process.
    monitor_interval = 0


class Progress:
    """Report ``(message, fraction done)`` steps: ``label:  40%|████      | [00:02<00:03, message]``.

    The bar shows the elapsed time and an estimate of the time left. It is
    drawn only on a terminal or in a notebook (silent in logs and pipes), only
    after ``delay`` seconds, and never when ``enabled`` is False; it is cleared
    when the run ends.

    >>> import io
    >>> class Terminal(io.StringIO):
    ...     def isatty(self) -> bool:
    ...         return True
    >>> out = Terminal()
    >>> with Progress("synthesize", stream=out, delay=0.0) as progress:
    ...     progress("measuring", 0.5)
    >>> "synthesize:  50%" in out.getvalue() and "measuring" in out.getvalue()
    True
    >>> quiet = io.StringIO()  # not a terminal: nothing is written
    >>> with Progress("synthesize", stream=quiet, delay=0.0) as progress:
    ...     progress("measuring", 0.5)
    >>> quiet.getvalue()
    ''
    """

    def __init__(self, label: str, *, enabled: bool = True, delay: float = 1.0, stream: TextIO | None = None) -> None:
        self.label = label
        self.bar: Any = _Bar(
            total=1.0, desc=label, disable=None if enabled else True, delay=delay, file=stream, leave=False,
            mininterval=0.0, miniters=0,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]",
        )

    def __call__(self, message: str, fraction: float) -> None:
        self.bar.set_postfix_str(message, refresh=False)
        self.bar.update(min(max(fraction, 0.0), 1.0) - self.bar.n)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.bar.close()
