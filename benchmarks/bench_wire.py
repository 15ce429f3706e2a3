"""Benchmark the curator service's wire format: a public table near the decoder's default cap (100,000 cells) there
and back, against ``json`` alone on the same text and against ``df.to_json()`` (which does not round-trip it).

Usage::

    python benchmarks/bench_wire.py              # 5 rounds
    python benchmarks/bench_wire.py --rounds 3

The table has 19,000 rows of five columns: floats (some NaN), integers, text (pandas' ``str``), a categorical and
zoned times. Each entry is timed once per round, in turn (``timing.alternating_rounds``); medians are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from timing import alternating_rounds, print_ratios

from dpframe.service.wire import decode, encode


def table(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    floats = rng.random(rows)
    floats[::50] = np.nan
    return pd.DataFrame({
        "float": floats, "int": rng.integers(0, 1000, rows), "text": pd.Series(rng.choice(["a", "bb", "ccc"], rows)),
        "category": pd.Categorical(rng.choice(["x", "y", "z"], rows)),
        "time": pd.Timestamp("2024-01-01", tz="Europe/Oslo") + pd.to_timedelta(rng.integers(0, 10**7, rows), unit="s"),
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    frame = table(19_000)
    text = json.dumps(encode(frame), allow_nan=False)
    assert decode(json.loads(text), allow_results=False).equals(frame)
    times = alternating_rounds({
        "encode + json.dumps": lambda: json.dumps(encode(frame), allow_nan=False),
        "json.loads + decode": lambda: decode(json.loads(text), allow_results=False),
        "json.dumps alone (of the encoded data)": lambda: json.dumps(json.loads(text)),
        "df.to_json() (pandas; not exact)": lambda: frame.to_json(),
    }, rounds)
    print(f"{frame.size:,} cells, {len(text) / 1e6:.2f} MB of JSON")
    print_ratios(times, "encode + json.dumps", f"the wire format, one table of {frame.size:,} cells")


if __name__ == "__main__":
    main()
