"""Timing in alternating rounds, and the peers' import, shared by the benchmark scripts (``from timing import ...``).

On a shared machine the load changes from second to second; timing each
entry once per round, in turn, spreads it over all entries alike, and the
median of the rounds is reported.
"""

from __future__ import annotations

import gc
import importlib
import statistics
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def peer(name: str) -> Any | None:
    """The peer library's module, or None (with a message) when it does not import."""
    try:
        return importlib.import_module(name)
    except Exception as error:  # any failure to import means: skip this peer
        print(f"  (skipping {name}: {type(error).__name__}: {error})")
        return None


def alternating_rounds(calls: Mapping[str, Callable[[], Any]], rounds: int,
                       clock: Callable[[], float] = time.perf_counter, *,
                       settle: bool = False) -> dict[str, list[float]]:
    """Each call once as a warm-up, then ``rounds`` rounds calling each in turn; the times per call.

    ``settle=True`` makes each entry, in its turn, run once untimed right before its timed call: the timed
    call then finds the caches and the allocator as its own previous call left them, not as the previous
    entry did (after an OpenDP call on 30,000 values, which frees its buffers to the system, the next
    library's sub-millisecond query took 2.5x as long, paying page faults for memory it had reused a moment
    before), and the garbage collector is off during the timed call, as :mod:`timeit` keeps it (a collection
    is triggered by whoever allocates next, and scans every library's objects). Warnings (e.g. the clipping
    warnings of automatic bounds) are silenced: the calls are timed, not read.
    """
    times: dict[str, list[float]] = {name: [] for name in calls}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in calls.values():
            call()
        for _ in range(rounds):
            for name, call in calls.items():
                if settle:
                    call()
                    gc.disable()  # as timeit does: a collection another library's objects provoke is not this call's
                start = clock()
                call()
                times[name].append(clock() - start)
                if settle:
                    gc.enable()
    return times


def print_ratios(times: Mapping[str, list[float]], reference: str, title: str, *, unit: str = "ms",
                 width: int = 52) -> None:
    """The median of each entry's times, and its ratio to the ``reference`` entry's median."""
    scale = {"ms": 1e3, "s": 1.0}[unit]
    base = statistics.median(times[reference])
    print(f"\n{title} (ratio: to {reference})")
    print(f"  {'':{width}} {unit:>9} {'ratio':>9}")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:{width}} {scale * t:9.3f} {t / base:9.2f}")
