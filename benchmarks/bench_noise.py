"""Throughput of dpframe's exact noise samplers.

Run:  python benchmarks/bench_noise.py [--repeats N] [--quick] [--sizes N ...] [--json FILE]

For each sampler and parameter it prints samples per second (the median of
several runs, wall clock and CPU time) at a few batch sizes, and the number of
secure random words consumed per sample.  Everything uses the default secure
source (os.urandom), as production calls do.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpframe.noise.discrete import (
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from dpframe.noise.random import RandomSource, SystemRandomSource

Sampler = Callable[[Fraction, int, RandomSource | None], NDArray[np.int64]]

REFERENCES = [
    ("OpenDP (Rust), discrete Laplace", "~140,000 samples per CPU-second"),
    ("OpenDP (Rust), discrete Gaussian", "~85,000 samples per CPU-second"),
    ("reference pure-Python CKS20, discrete Laplace", "~23,000 samples per second"),
    ("reference pure-Python CKS20, discrete Gaussian", "~10,000 samples per second"),
]


def forty_bits(x: Fraction) -> Fraction:
    """Round up to 40 significant bits with a power-of-two denominator,
    the shape calibrated noise parameters have."""
    exponent = 40 - (x.numerator.bit_length() - x.denominator.bit_length())
    return Fraction(math.ceil(x * Fraction(2) ** exponent)) / Fraction(2) ** exponent


class CountingSource:
    def __init__(self) -> None:
        self.inner = SystemRandomSource()
        self.words_drawn = 0

    def words(self, n: int) -> NDArray[np.uint64]:
        self.words_drawn += n
        return self.inner.words(n)


def measure(fn: Callable[[], object], size: int, repeats: int) -> tuple[float, float]:
    """Median samples/s over ``repeats`` runs (at least 0.2 s in total): (wall, cpu)."""
    fn()  # warm-up
    walls: list[float] = []
    cpus: list[float] = []
    start = time.perf_counter()
    while len(walls) < repeats or (time.perf_counter() - start < 0.2 and len(walls) < 1000):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    wall = statistics.median(walls)
    cpu = statistics.median(cpus)
    return size / wall, (size / cpu if cpu > 0 else float("inf"))


def fmt_rate(rate: float) -> str:
    if rate >= 1e6:
        return f"{rate / 1e6:6.2f}M"
    if rate >= 1e3:
        return f"{rate / 1e3:6.1f}k"
    return f"{rate:7.0f}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per measurement (median)")
    parser.add_argument("--quick", action="store_true", help="skip the 1M-sample column")
    parser.add_argument("--sizes", type=int, nargs="+", help="batch sizes (default 1000 100000 1000000)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)

    sizes = args.sizes or ([1_000, 100_000] if args.quick else [1_000, 100_000, 1_000_000])
    cases: list[tuple[str, str, Sampler, Fraction]] = [
        ("discrete Laplace", "scale 1", sample_discrete_laplace, Fraction(1)),
        ("discrete Laplace", "scale 3.7", sample_discrete_laplace, Fraction(37, 10)),
        ("discrete Laplace", "scale 10/3 (40-bit)", sample_discrete_laplace, forty_bits(Fraction(10, 3))),
        ("discrete Laplace", "scale 1000", sample_discrete_laplace, Fraction(1000)),
        ("discrete Laplace", "scale 2**20", sample_discrete_laplace, Fraction(2**20)),
        ("discrete Gaussian", "sigma 1", sample_discrete_gaussian, Fraction(1)),
        ("discrete Gaussian", "sigma 3.7", sample_discrete_gaussian, Fraction(1369, 100)),
        ("discrete Gaussian", "sigma2 1/3 (40-bit)", sample_discrete_gaussian, forty_bits(Fraction(1, 3))),
        ("discrete Gaussian", "sigma2 1000/3 (40-bit)", sample_discrete_gaussian, forty_bits(Fraction(1000, 3))),
        ("discrete Gaussian", "sigma 1000", sample_discrete_gaussian, Fraction(10**6)),
        ("discrete Gaussian", "sigma 2**20", sample_discrete_gaussian, Fraction(2**40)),
    ]
    machine = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cores": os.cpu_count(),
        "source": "os.urandom",
    }
    results: list[dict[str, Any]] = []

    print(f"dpframe noise benchmark -- {platform.python_implementation()} {machine['python']}, "
          f"numpy {machine['numpy']}, {machine['cores']} CPUs, source: os.urandom")
    print(f"samples per second, median of >= {args.repeats} runs (wall clock; CPU time in brackets)\n")
    header = f"{'sampler':18} {'parameter':24}" + "".join(f"{f'n={n:,}':>22}" for n in sizes)
    print(header + f"{'words/sample':>14}")
    print("-" * (len(header) + 14))
    for name, label, sampler, param in cases:
        counter = CountingSource()
        sampler(param, 200_000, counter)
        words = counter.words_drawn / 200_000
        cells = []
        for n in sizes:
            wall, cpu = measure(lambda: sampler(param, n, None), n, args.repeats)
            cells.append(f"{fmt_rate(wall)} [{fmt_rate(cpu)}]".rjust(22))
            results.append({"sampler": name, "parameter": label, "value": str(param), "size": n,
                            "samples_per_second": wall, "samples_per_cpu_second": cpu,
                            "words_per_sample": words})
        print(f"{name:18} {label:24}" + "".join(cells) + f"{words:14.2f}")

    # Building block and the exact slow path, for context.
    n = max(sizes)
    num = np.full(n, 3, dtype=np.int64)
    wall, cpu = measure(lambda: sample_bernoulli_exp(num, 7), n, args.repeats)
    results.append({"sampler": "Bernoulli(exp(-gamma))", "parameter": "gamma 3/7", "value": "3/7", "size": n,
                    "samples_per_second": wall, "samples_per_cpu_second": cpu})
    print(f"\n{'Bernoulli(exp(-3/7))':48} n={n:,}: {fmt_rate(wall)} [{fmt_rate(cpu)}] per second")
    huge = Fraction(2**70 + 1, 2**68)  # numerator beyond int64: every sample on the Python-int path
    wall, cpu = measure(lambda: sample_discrete_laplace(huge, 2_000), 2_000, 3)
    results.append({"sampler": "discrete Laplace", "parameter": "exact slow path", "value": str(huge),
                    "size": 2_000, "samples_per_second": wall, "samples_per_cpu_second": cpu})
    print(f"{'discrete Laplace, exact slow path (scale ~4)':48} n=2,000: {fmt_rate(wall)} [{fmt_rate(cpu)}] per second")

    print("\nReference figures (from their authors / earlier measurements, not re-run here):")
    for ref_name, figure in REFERENCES:
        print(f"  {ref_name:48} {figure}")

    report = {"machine": machine, "repeats": args.repeats, "results": results,
              "references": dict(REFERENCES)}
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
