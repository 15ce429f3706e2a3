"""Benchmark the curator service: what a query costs over loopback HTTP against the same query in process.

Usage::

    python benchmarks/bench_service.py                       # 1,000,000 rows, 20 rounds
    python benchmarks/bench_service.py --rows 30000 --rounds 10

Starts ``dpframe serve`` on a generated CSV (an integer ``age``, a float ``income``, a category ``sex``)
in a temporary folder, and times, in alternating rounds (:mod:`timing`):

- ``count`` and ``mean`` of ``income`` in the curator's process, on the same rows protected with a
  ledger file on the same disk (one durable commit per release);
- the same two queries as plans posted over HTTP by one keep-alive httpx client (what
  ``dpframe.connect`` sends): authentication, the plan's checks, its replay, the charge with its audit
  row (one commit), the answer kept for retries (a second commit) and its encoding.

The server's dataset is loaded and the analyst's frame protected at the first request, before timing.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parents[1])
for path in (_REPO, str(Path(__file__).resolve().parent)):
    if path not in sys.path:
        sys.path.insert(0, path)

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from timing import alternating_rounds, print_ratios  # noqa: E402

import dpframe  # noqa: E402
from dpframe.schema import header, load_schema, read_with_schema  # noqa: E402
from dpframe.service.tokens import hash_token, new_token  # noqa: E402


def write_dataset(folder: Path, rows: int) -> tuple[Path, str]:
    """The CSV, its schema and a config with one analyst; returns the config and the analyst's token."""
    rng = np.random.default_rng(1)
    pd.DataFrame({"age": rng.integers(18, 90, rows), "income": np.round(rng.lognormal(10, 0.7, rows), 2),
                  "sex": rng.choice(["F", "M"], rows)}).to_csv(folder / "people.csv", index=False)
    (folder / "people.schema.json").write_text(
        '{"format": "dpframe-schema/1", "separator": ",", "columns": {"age": {"type": "integer"}, '
        '"income": {"type": "float"}, "sex": {"type": "category", "categories": ["F", "M"]}}}')
    token = new_token()
    config = folder / "service.toml"
    config.write_text(f"""ledger = "server-ledger.sqlite"
[datasets.people]
path = "people.csv"
schema = "people.schema.json"
total = {{ epsilon = 100000.0 }}
[analysts.bench]
token_sha256 = "{hash_token(token)}"
budgets = {{ people = {{ epsilon = 100000.0 }} }}
[limits]
requests_per_second = 100000.0
burst = 100000
""")
    return config, token


def start(config: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "dpframe", "serve", str(config), "--port", str(port),
                                "--log-level", "warning"], env={**os.environ, "PYTHONPATH": _REPO})
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/v1/datasets")
            return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"request_id": uuid.uuid4().hex, "steps": list(steps), "result": len(steps)}


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        config, token = write_dataset(Path(folder), args.rows)
        schema = load_schema(Path(folder) / "people.schema.json")
        names, dialect = header(Path(folder) / "people.csv", ",", None)
        frame, categories = read_with_schema(Path(folder) / "people.csv", schema, dialect, names)
        local = frame.dp.protect(epsilon=100000.0, categories=categories,
                                 ledger=dpframe.Ledger.at(Path(folder) / "local-ledger.sqlite"))
        process, url = start(config)
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
                def remote(*steps: dict[str, Any]) -> Any:
                    response = client.post("/v1/datasets/people/run", json=plan(*steps))
                    assert response.status_code == 200, response.text
                    return response.json()

                count = ({"op": "getattr", "target": 0, "name": "dp"},
                         {"op": "call", "target": 1, "name": "count", "kwargs": {"epsilon": 0.001}})
                mean = ({"op": "getitem", "target": 0, "key": "income"}, {"op": "getattr", "target": 1, "name": "dp"},
                        {"op": "call", "target": 2, "name": "mean",
                         "kwargs": {"bounds": [0, 500000], "epsilon": 0.001}})
                remote(*count)  # loads the dataset and protects the analyst's frame in the server
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    times = alternating_rounds({
                        "count, in process": lambda: local.dp.count(epsilon=0.001),
                        "count, over HTTP": lambda: remote(*count),
                        "mean, in process": lambda: local["income"].dp.mean(bounds=(0, 500000), epsilon=0.001),
                        "mean, over HTTP": lambda: remote(*mean),
                    }, args.rounds)
        finally:
            process.terminate()
            process.wait()
    print(f"{args.rows:,} rows, {args.rounds} rounds, loopback")
    print_ratios({k: v for k, v in times.items() if k.startswith("count")}, "count, in process", "count")
    print_ratios({k: v for k, v in times.items() if k.startswith("mean")}, "mean, in process", "mean")
    for query in ("count", "mean"):
        added = statistics.median(times[f"{query}, over HTTP"]) - statistics.median(times[f"{query}, in process"])
        print(f"{query}: {added * 1e3:.2f} ms added at the median")
    return times


if __name__ == "__main__":
    main()
