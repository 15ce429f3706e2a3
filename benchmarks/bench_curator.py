"""Benchmark the curator's side of the service: making a mock (``dpframe mock``) and building the curator's page
(``/curator``, ``dpframe audit``) from a ledger with many audit rows.

Usage::

    python benchmarks/bench_curator.py                   # 20,000 audit rows, 5 rounds
    python benchmarks/bench_curator.py --rows 100000 --rounds 3

The service is ``dpframe example-service``'s (20,000 generated census rows, two analysts). The audit rows are
real ones: each written by the ledger inside a request's audited block, with a plan as the server writes it (a
filtered mean, alternating analysts). Printed: the mock's wall time (one run: it is charged), and the medians of
building the page's view (the ledger read, every plan written as code) and of rendering it, for the first page
(200 rows) and for the whole log on one page.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from dpframe.service import curator  # noqa: E402
from dpframe.service.cli import example_service  # noqa: E402
from dpframe.service.mock import make_mock  # noqa: E402
from dpframe.service.server import Service  # noqa: E402


def plan_text(number: int) -> str:
    steps = [{"target": 0, "op": "getitem", "key": "age"},
             {"target": 1, "op": "call", "name": "__ge__", "args": [20 + number % 40], "kwargs": {}},
             {"target": 0, "op": "getitem", "key": {"$ref": 2}}, {"target": 3, "op": "getitem", "key": "income"},
             {"target": 4, "op": "getattr", "name": "dp"},
             {"target": 5, "op": "call", "name": "mean", "args": [],
              "kwargs": {"bounds": {"$tuple": [0, 250000]}, "epsilon": 0.001}}]
    return "census: " + json.dumps({"request_id": f"{number:032x}", "steps": steps, "result": 6},
                                   separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000, help="audit rows in the ledger (default 20,000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the page's timings (default 5)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp()) / "example"
    example_service(folder, io.StringIO())
    service = Service(folder / "service.toml")
    started = time.perf_counter()
    made = make_mock(service, "census")
    print(f"dpframe mock on {folder / 'census.csv'} (20,000 rows): {time.perf_counter() - started:.2f} s, "
          f"{made.rows:,} synthetic rows")
    started = time.perf_counter()
    for number in range(args.rows):
        who = ("alice", "bob")[number % 2]
        with service.ledger.audited(who, f"{number:032x}", plan_text(number)):
            service.ledger.store_result(who, f"{number:032x}", "{}")
    print(f"wrote {args.rows:,} audit rows in {time.perf_counter() - started:.1f} s")
    for label, filters in (("first page (200 rows)", curator.Filters()),
                           (f"whole log ({args.rows:,} rows)", curator.Filters(limit=min(args.rows, curator.MAX_ROWS)))):
        views, renders = [], []
        for _ in range(args.rounds):
            started = time.perf_counter()
            view = curator.curator_view(service.config, service.ledger, filters)
            built = time.perf_counter()
            page = curator.render(view, served=True)
            views.append(built - started)
            renders.append(time.perf_counter() - built)
        print(f"{label}: view {statistics.median(views) * 1000:.0f} ms, render {statistics.median(renders) * 1000:.0f} "
              f"ms, {len(page) / 1e6:.2f} MB of HTML (medians of {args.rounds})")


if __name__ == "__main__":
    main()
