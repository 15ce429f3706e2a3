"""Benchmark the curator service's timing channel: does a release's latency tell its noise, or which rows a step
dropped? Measured over loopback against a real server, with answers padded to a deadline and without.

Usage::

    python benchmarks/bench_service_timing.py                          # 100,000 rows, 150 releases a query
    python benchmarks/bench_service_timing.py --rows 20000 --releases 60 --pad 0.05

Generates a dataset (``x`` uniform in [0, 1), ``v`` integers 0..100), starts ``dpframe serve`` on it twice --
``answer_after_seconds = 0`` (no padding) and ``= --pad`` -- and, for each server, in one shuffled schedule
(so drift cannot line up with a condition), one keep-alive client sends:

- **noise**: ``count()``, ``v.sum(bounds=(0, 100))`` and ``v.mean(bounds=(0, 100))`` of all rows at a small
  epsilon; the script knows the exact answers (it made the data), so each release's drawn noise is
  ``|answer - exact|``. Reported: Spearman's r between latency and |noise| per query, with a two-sided
  permutation p-value (the latencies shuffled 2,000 times).
- **selectivity**: ``p[p.x < 0.01]`` and ``p[p.x < 0.99]`` (1% and 99% of the rows kept; the plans differ
  only in the constant), then ``count()`` or ``v.mean(...)``. Reported: the median latency and its
  interquartile range per selectivity, the difference of medians, and a permutation p-value of that
  difference (the labels shuffled 2,000 times).

Latency is the client's wall time of the whole request (``time.perf_counter``), as an analyst sees it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from bench_service import start  # noqa: E402
from scipy.stats import rankdata  # noqa: E402

from dpframe.service import wire  # noqa: E402
from dpframe.service.tokens import hash_token, new_token  # noqa: E402

EPSILON = 0.01
PERMUTATIONS = 2000


def write_dataset(folder: Path, rows: int) -> pd.DataFrame:
    """The CSV and its schema; the data, for the exact answers."""
    rng = np.random.default_rng(7)
    data = pd.DataFrame({"x": rng.random(rows), "v": rng.integers(0, 101, rows)})
    data.to_csv(folder / "data.csv", index=False)
    (folder / "data.schema.json").write_text(
        '{"format": "dpframe-schema/1", "separator": ",", "columns": {"x": {"type": "float"}, '
        '"v": {"type": "integer"}}}')
    return pd.read_csv(folder / "data.csv")


def write_config(folder: Path, pad: float) -> tuple[Path, str]:
    token = new_token()
    config = folder / f"service-{pad:g}.toml"
    config.write_text(f"""ledger = "ledger-{pad:g}.sqlite"
[datasets.data]
path = "data.csv"
schema = "data.schema.json"
total = {{ epsilon = 1000000.0 }}
[analysts.timer]
token_sha256 = "{hash_token(token)}"
budgets = {{ data = {{ epsilon = 1000000.0 }} }}
[limits]
requests_per_second = 100000.0
burst = 100000
answer_after_seconds = {pad}
""")
    return config, token


def query(target: int, name: str, **kwargs: Any) -> list[dict[str, Any]]:
    """``v[target].dp.name(**kwargs)`` as the plan's two last steps (``v[target]`` the frame or a column)."""
    return [{"op": "getattr", "target": target, "name": "dp"},
            {"op": "call", "target": target + 1, "name": name, "kwargs": kwargs}]


def noise_plans() -> dict[str, list[dict[str, Any]]]:
    column = [{"op": "getitem", "target": 0, "key": "v"}]
    bounded = {"bounds": [0, 100], "epsilon": EPSILON}
    return {"count": query(0, "count", epsilon=EPSILON),
            "sum": column + query(1, "sum", **bounded),
            "mean": column + query(1, "mean", **bounded)}


def selectivity_plans() -> dict[tuple[str, str], list[dict[str, Any]]]:
    plans = {}
    for kept, limit in (("1%", 0.01), ("99%", 0.99)):
        rows = [{"op": "getitem", "target": 0, "key": "x"},
                {"op": "call", "target": 1, "name": "__lt__", "args": [limit]},
                {"op": "getitem", "target": 0, "key": {"$ref": 2}}]
        plans[("count", kept)] = rows + query(3, "count", epsilon=EPSILON)
        plans[("mean", kept)] = rows + [{"op": "getitem", "target": 3, "key": "v"}] + query(
            4, "mean", bounds=[0, 100], epsilon=EPSILON)
    return plans


def spearman_with_p(latency: np.ndarray[Any, Any], noise: np.ndarray[Any, Any],
                    rng: np.random.Generator) -> tuple[float, float]:
    """Spearman's r and its two-sided permutation p-value (latencies shuffled)."""
    a, b = rankdata(latency), rankdata(noise)
    a, b = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    r = float(np.mean(a * b))
    shuffled = np.array([np.mean(rng.permutation(a) * b) for _ in range(PERMUTATIONS)])
    return r, float((np.sum(np.abs(shuffled) >= abs(r)) + 1) / (PERMUTATIONS + 1))


def median_difference_p(first: np.ndarray[Any, Any], second: np.ndarray[Any, Any],
                        rng: np.random.Generator) -> tuple[float, float]:
    """The difference of medians (second - first) and its two-sided permutation p-value (labels shuffled)."""
    observed = float(np.median(second) - np.median(first))
    pooled, split = np.concatenate([first, second]), len(first)
    differences = []
    for _ in range(PERMUTATIONS):
        shuffled = rng.permutation(pooled)
        differences.append(np.median(shuffled[split:]) - np.median(shuffled[:split]))
    return observed, float((np.sum(np.abs(differences) >= abs(observed)) + 1) / (PERMUTATIONS + 1))


def measure(url: str, token: str, releases: int, exact: dict[str, float],
            rng: np.random.Generator) -> tuple[dict[str, list[tuple[float, float]]], dict[tuple[str, str], list[float]]]:
    """Latencies of the noise queries (with |noise|) and of the selectivity queries, in one shuffled schedule."""
    noisy, selective = noise_plans(), selectivity_plans()
    schedule: list[Any] = [name for name in noisy for _ in range(releases)]
    schedule += [key for key in selective for _ in range(releases)]
    rng.shuffle(schedule)
    by_noise: dict[str, list[tuple[float, float]]] = {name: [] for name in noisy}
    by_rows: dict[tuple[str, str], list[float]] = {key: [] for key in selective}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
        def send(steps: list[dict[str, Any]]) -> tuple[float, Any]:
            body = {"request_id": uuid.uuid4().hex, "steps": steps, "result": len(steps)}
            sent = time.perf_counter()
            response = client.post("/v1/datasets/data/run", json=body)
            latency = time.perf_counter() - sent
            assert response.status_code == 200, response.text
            return latency, wire.decode(response.json()["value"], allow_results=True)

        for steps in [*noisy.values(), *selective.values()]:  # warm up: the dataset loads, each path runs once
            send(steps)
        for item in schedule:
            if isinstance(item, str):
                latency, answer = send(noisy[item])
                by_noise[item].append((latency, abs(float(answer) - exact[item])))
            else:
                by_rows[item].append(send(selective[item])[0])
    return by_noise, by_rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--releases", type=int, default=150, help="releases per query and condition")
    parser.add_argument("--pad", type=float, default=0.1, help="answer_after_seconds of the padded server")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(11)
    print(f"{args.rows:,} rows, {args.releases} releases per query and condition, epsilon {EPSILON} each, loopback")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        data = write_dataset(folder, args.rows)
        exact = {"count": float(len(data)), "sum": float(data["v"].sum()), "mean": float(data["v"].mean())}
        for pad in (0.0, args.pad):
            config, token = write_config(folder, pad)
            process, url = start(config, log_level="error")
            try:
                by_noise, by_rows = measure(url, token, args.releases, exact, rng)
            finally:
                process.terminate()
                process.wait()
            print(f"\nanswer_after_seconds = {pad:g}" + (" (no padding)" if not pad else ""))
            for query_name, pairs in by_noise.items():
                latency, noise = (np.array(column) for column in zip(*pairs))
                r, p = spearman_with_p(latency, noise, rng)
                print(f"  noise  {query_name:5s}: Spearman r(latency, |noise|) = {r:+.3f} (permutation p = {p:.2g}); "
                      f"median latency {np.median(latency) * 1e3:.2f} ms, median |noise| {np.median(noise):.3g}")
            for query_name in ("count", "mean"):
                few, most = (np.array(by_rows[(query_name, kept)]) for kept in ("1%", "99%"))
                difference, p = median_difference_p(few, most, rng)
                shown = [f"{kept} kept {np.median(values) * 1e3:.2f} ms "
                         f"(IQR {np.percentile(values, 25) * 1e3:.2f}-{np.percentile(values, 75) * 1e3:.2f})"
                         for kept, values in (("1%", few), ("99%", most))]
                print(f"  rows   {query_name:5s}: {'; '.join(shown)}; 99% - 1%: {difference * 1e3:+.2f} ms at the "
                      f"median (permutation p = {p:.2g})")


if __name__ == "__main__":
    main()
