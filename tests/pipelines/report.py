"""Print each pipeline's steps and their categories, and the counts (``PYTHONPATH=.:tests python -m pipelines.report``)."""

from __future__ import annotations

import sys

from pipelines.harness import BLOCKED, CATEGORIES, Tally, run
from pipelines.registry import PIPELINES


def main(names: list[str]) -> None:
    total = Tally()
    for pipeline in PIPELINES:
        if names and pipeline.name not in names:
            continue
        tally = Tally()
        for step, (name, outcome) in zip(pipeline.steps, run(pipeline).items(), strict=True):
            tally.add(outcome)
            total.add(outcome)
            flag = "" if outcome.category == step.kind else "  <-- " + outcome.category.upper()
            print(f"{pipeline.name:>18} {name:<32} {outcome.category:<16}{flag} {outcome.detail[:300]}")
        print(pipeline.name, len(pipeline.steps), "steps", {k: v for k, v in tally.counts.items() if v})
    print("TOTAL", sum(total.counts.values()), "steps", {k: total.counts[k] for k in (*CATEGORIES, BLOCKED)})


if __name__ == "__main__":
    main(sys.argv[1:])
