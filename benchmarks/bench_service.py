"""Benchmark the curator service: what a query costs over loopback HTTP against the same query in process.

Usage::

    python benchmarks/bench_service.py                       # 1,000,000 rows, 20 rounds
    python benchmarks/bench_service.py --rows 30000 --rounds 10
    python benchmarks/bench_service.py --rows 30000 --clients 20 --workers 2   # and requests per second

Starts ``dpframe serve`` on a generated CSV (an integer ``age``, a float ``income``, a category ``sex``)
in a temporary folder, and times, in alternating rounds (:mod:`timing`):

- ``count`` and ``mean`` of ``income`` in the curator's process, on the same rows protected with a
  ledger file on the same disk (one durable commit per release);
- the same two queries as plans posted over HTTP by one keep-alive httpx client (what
  ``dpframe.connect`` sends): authentication, the plan's checks, its replay, the charge with its audit
  row (one commit), the answer kept for retries (a second commit) and its encoding.

The server's dataset is loaded and the analyst's frame protected at the first request, before timing.

With ``--clients N``, then: N analysts (each with its own token and budget, one thread each, dpframe's own
client) send small queries (a count) at once for ``--seconds``; it prints the requests answered per second.
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
from dpframe.service.client import connect  # noqa: E402
from dpframe.service.tokens import hash_token, new_token  # noqa: E402


def write_dataset(folder: Path, rows: int, analysts: int = 1) -> tuple[Path, list[str]]:
    """The CSV, its schema and a config with ``analysts`` analysts; returns the config and their tokens."""
    rng = np.random.default_rng(1)
    pd.DataFrame({"age": rng.integers(18, 90, rows), "income": np.round(rng.lognormal(10, 0.7, rows), 2),
                  "sex": rng.choice(["F", "M"], rows)}).to_csv(folder / "people.csv", index=False)
    (folder / "people.schema.json").write_text(
        '{"format": "dpframe-schema/1", "separator": ",", "columns": {"age": {"type": "integer"}, '
        '"income": {"type": "float"}, "sex": {"type": "category", "categories": ["F", "M"]}}}')
    tokens = [new_token() for _ in range(analysts)]
    config = folder / "service.toml"
    config.write_text("""ledger = "server-ledger.sqlite"
[datasets.people]
path = "people.csv"
schema = "people.schema.json"
total = { epsilon = 100000.0 }
[limits]
requests_per_second = 100000.0
burst = 100000
""" + "".join(f"""[analysts.bench{i}]
token_sha256 = "{hash_token(token)}"
budgets = {{ people = {{ epsilon = 1000.0 }} }}
""" for i, token in enumerate(tokens)))
    return config, tokens


def start(config: Path, workers: int = 1, log_level: str = "warning") -> tuple[subprocess.Popen[bytes], str]:
    """``dpframe serve config`` on a free port, once it answers; the process and its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "dpframe", "serve", str(config), "--port", str(port),
                                "--log-level", log_level, "--workers", str(workers)],
                               env={**os.environ, "PYTHONPATH": _REPO}, cwd=config.parent)
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


def throughput(url: str, tokens: list[str], seconds: float) -> tuple[int, float]:
    """Requests answered, and per second, when each token's analyst sends counts one after another at once."""
    from concurrent.futures import ThreadPoolExecutor

    def analyst(token: str) -> int:
        answered = 0
        with connect(url, token=token) as connection:
            people = connection.dataset("people")
            people.dp.count(epsilon=0.001)  # each worker loads the data and protects this analyst's frame first
            barrier.wait()
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                people.dp.count(epsilon=0.001)
                answered += 1
        return answered

    import threading

    barrier = threading.Barrier(len(tokens) + 1)
    with ThreadPoolExecutor(len(tokens)) as pool:
        futures = [pool.submit(analyst, token) for token in tokens]
        barrier.wait()
        start_time = time.perf_counter()
        answered = sum(future.result() for future in futures)
        elapsed = time.perf_counter() - start_time
    return answered, answered / elapsed


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--clients", type=int, default=0, help="then measure requests per second with N analysts")
    parser.add_argument("--workers", type=int, default=1, help="the server's worker processes")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the throughput run lasts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        config, tokens = write_dataset(Path(folder), args.rows, max(args.clients, 1))
        token = tokens[0]
        schema = load_schema(Path(folder) / "people.schema.json")
        names, dialect = header(Path(folder) / "people.csv", ",", None)
        frame, categories = read_with_schema(Path(folder) / "people.csv", schema, dialect, names)
        local = frame.dp.protect(epsilon=100000.0, categories=categories,
                                 ledger=dpframe.Ledger.at(Path(folder) / "local-ledger.sqlite"))
        process, url = start(config, args.workers)
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
            if args.clients:
                answered, rate = throughput(url, tokens, args.seconds)
                print(f"{args.clients} analysts at once, {args.workers} worker(s): {answered} counts in "
                      f"{args.seconds:g} s, {rate:.0f} requests per second")
        finally:
            process.terminate()
            process.wait()
    print(f"{args.rows:,} rows, {args.rounds} rounds, loopback, {args.workers} worker(s)")
    print_ratios({k: v for k, v in times.items() if k.startswith("count")}, "count, in process", "count")
    print_ratios({k: v for k, v in times.items() if k.startswith("mean")}, "mean, in process", "mean")
    for query in ("count", "mean"):
        added = statistics.median(times[f"{query}, over HTTP"]) - statistics.median(times[f"{query}, in process"])
        print(f"{query}: {added * 1e3:.2f} ms added at the median")
    return times


if __name__ == "__main__":
    main()
