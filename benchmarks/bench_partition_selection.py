"""How many partitions each private partition selection keeps, on a synthetic long-tailed data set.

Users hold a long-tailed number of distinct partitions (1 to 60, most hold one or two), drawn from a
Zipf-like popularity over the partitions, so most partitions have a handful of users. For each
L0 (``max_partitions``) every user is bounded to L0 of its partitions at random, then each strategy
runs at the same (epsilon, delta). Truncated geometric and the two thresholdings report the expected
number kept (the sum of their exact keep probabilities); the set union, which has no closed form,
reports the mean over ``--runs`` runs. Times are one run each, for orientation only.
With ``--peers``, the expectations of PipelineDP's (pydp's) truncated geometric, Laplace and Gaussian
strategies on the same counts are shown beside ours (run with an environment that has python-dp).

    python benchmarks/bench_partition_selection.py [--users 200000] [--epsilon 1] [--delta 1e-5] [--runs 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpframe.selection import partitions as ps


def long_tailed(users: int, partitions: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(user, partition) pairs: per-user set sizes ~ Zipf(2) capped at 60, partitions ~ Zipf(1.2)."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(2.0, users), 60)
    user_codes = np.repeat(np.arange(users), sizes)
    part_codes = (rng.zipf(1.2, user_codes.size) - 1) % partitions
    return user_codes, part_codes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peers", action="store_true", help="also pydp's strategies' expectations")
    args = parser.parse_args()

    user_codes, part_codes = long_tailed(args.users, args.partitions, seed=0)
    distinct = np.unique(np.stack([user_codes, part_codes]), axis=1)
    touched = np.bincount(distinct[1], minlength=args.partitions)
    print(f"{args.users} users, {distinct.shape[1]} distinct (user, partition) pairs, "
          f"{int((touched > 0).sum())} partitions with a user, {int((touched >= 10).sum())} with >= 10 users; "
          f"epsilon={args.epsilon}, delta={args.delta}")
    budget = {"epsilon": args.epsilon, "delta": args.delta}
    print(f"{'L0':>3} {'truncated geometric':>20} {'Laplace threshold':>18} {'Gaussian threshold':>19} "
          f"{'weighted set union':>19}" + ("  pydp: trunc. geom. / Laplace / Gaussian" if args.peers else ""))
    for l0 in (1, 2, 4, 8, 16):
        _, parts = ps.bound_user_partitions(user_codes, part_codes, max_partitions=l0)
        counts = np.bincount(parts, minlength=args.partitions)
        counts = counts[counts > 0]
        row = [f"{l0:>3}"]
        for name, probability in (
            ("truncated geometric", ps.truncated_geometric_keep_probability),
            ("Laplace threshold", ps.laplace_thresholding_keep_probability),
            ("Gaussian threshold", ps.gaussian_thresholding_keep_probability),
        ):
            start = time.perf_counter()
            expected = float(probability(counts, max_partitions=l0, **budget).sum())
            row.append(f"{expected:>{len(name) - 8}.0f} ({time.perf_counter() - start:4.2f}s)")
        kept = []
        start = time.perf_counter()
        for _ in range(args.runs):
            kept.append(int(ps.weighted_gaussian_set_union(
                user_codes, part_codes, n_partitions=args.partitions, max_partitions=l0, **budget).sum()))
        row.append(f"{np.mean(kept):>11.0f} ({(time.perf_counter() - start) / args.runs:4.2f}s)")
        if args.peers:
            import pydp.algorithms.partition_selection as pydp_selection

            values, multiplicity = np.unique(counts, return_counts=True)
            peers = []
            for create in (pydp_selection.create_truncated_geometric_partition_strategy,
                           pydp_selection.create_laplace_partition_strategy,
                           pydp_selection.create_gaussian_partition_strategy):
                strategy = create(args.epsilon, args.delta, l0)
                peers.append(sum(strategy.probability_of_keep(int(v)) * int(m)
                                 for v, m in zip(values, multiplicity, strict=True)))
            row.append("  " + " / ".join(f"{peer:.0f}" for peer in peers))
        print(" ".join(row))


if __name__ == "__main__":
    main()
