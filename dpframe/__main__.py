"""Command line (docs/command-line.md): ``python -m dpframe demo`` runs a short private analysis on generated
data; ``dpframe schema data.csv --out schema.json`` drafts a file's schema for review, NOT private
(:mod:`dpframe.schema`); ``dpframe describe data.csv --schema schema.json --epsilon 1`` privately summarises
a file (:mod:`dpframe.report.cli`); ``dpframe synthesize data.csv --schema schema.json --epsilon 1 --out
synthetic.csv`` writes a private synthetic copy (:mod:`dpframe.synthesis.cli`); ``dpframe budget list``
shows the ledger's budgets (:mod:`dpframe.accounting.cli`); ``dpframe serve service.toml`` runs the curator
service, ``dpframe token`` makes an analyst's token, ``dpframe example-service DIR`` writes an example service and
``dpframe remote-demo URL --token-file FILE`` runs the README's example on one and ``dpframe audit CONFIG --out
report.html`` writes the curator's page as a file (:mod:`dpframe.service.cli`); ``dpframe serve --check``,
``dpframe analyst ...`` and ``dpframe cap extend`` are the curator's operations on a service
(:mod:`dpframe.service.operations`) and ``dpframe mock`` makes the datasets' mocks (:mod:`dpframe.service.mock`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np
import pandas as pd


def census_like(n: int = 20_000, seed: int = 7) -> pd.DataFrame:
    """A synthetic census-like frame (generated, no download): age, sex, education, hours, income.

    >>> census_like(100).shape
    (100, 5)
    """
    rng = np.random.default_rng(seed)
    education = pd.Categorical(
        rng.choice(["HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate"], n, p=[0.4, 0.25, 0.22, 0.1, 0.03])
    )
    sex = pd.Categorical(rng.choice(["Female", "Male"], n, p=[0.48, 0.52]))
    age = np.clip(rng.normal(41, 13, n).round(), 17, 90).astype(int)
    hours = np.clip(rng.normal(40, 11, n).round(), 1, 99).astype(int)
    income = np.round(rng.lognormal(10.4, 0.7, n) * (1 + 0.15 * education.codes), 2)
    return pd.DataFrame({"age": age, "sex": sex, "education": education, "hours": hours, "income": income})


def readme_census(n: int = 20_000) -> pd.DataFrame:
    """The README example's data: :func:`census_like` with the two columns its example also asks about, a capital
    gain (zero for most people, heavy-tailed for the rest) and an occupation.

    >>> list(readme_census(100).columns)
    ['age', 'sex', 'education', 'hours', 'income', 'capital-gain', 'occupation']
    """
    df = census_like(n)
    rng = np.random.default_rng(1)
    df["capital-gain"] = np.where(rng.random(n) < 0.08, rng.lognormal(8.5, 1.2, n).round(), 0.0)
    df["occupation"] = rng.choice(["Craft-repair", "Exec-managerial", "Prof-specialty", "Sales", "Other-service"], n)
    return df


def demo() -> None:
    """Protect a generated frame, ask a few questions, and print answers, intervals and the ledger."""
    import dpframe

    df = census_like()
    # Throwaway work: an in-memory ledger, so the demo can run again (a real analysis keeps the default,
    # persistent ledger, where protecting the same data again reconnects to its budget).
    p = df.dp.protect(epsilon=1.5, delta=1e-6, ledger=dpframe.Ledger.in_memory())
    print(f"Protected a generated census-like frame of {len(df):,} rows with budget ε=1.5, δ=1e-6 "
          "(in an in-memory ledger).\n")
    n = p.dp.count(epsilon=0.1)
    print(f"rows:              {n!r}  (true {len(df)})")
    older = p[p["age"] >= 40].dp.count(epsilon=0.1)
    print(f"rows with age>=40: {older!r}  (true {(df['age'] >= 40).sum()})")
    mean_age = p["age"].dp.mean(bounds=(0, 125), epsilon=0.2)
    print(f"mean age:          {mean_age!r}  (true {df['age'].mean():.3f})")
    hist = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.2)
    print("\nage histogram (noisy, ±{} at 95%):".format(int(hist.attrs["dp"].upper.iloc[0] - hist.iloc[0])))
    print(hist.to_string())
    table = p.dp.crosstab("education", "sex", epsilon=0.2)
    print("\neducation × sex (noisy):")
    print(table.to_string())
    by_sex = p.dp.groupby("sex").mean("hours", bounds=(0, 100), epsilon=0.2)
    print("\nmean weekly hours by sex (noisy):")
    print(by_sex.round(2).to_string())
    bounds = {"age": (17, 90), "hours": (1, 99), "income": (0, 250_000)}
    syn = p.dp.synthesize(epsilon=0.5, bounds=bounds)
    print(f"\nsynthetic frame ({len(syn):,} rows, free to share; first rows):")
    print(syn.head().to_string())
    from dpframe.evaluate import marginal_error

    print(f"mean 2-way marginal error vs the real frame (evaluation only): {marginal_error(df, syn).mean():.3f}")
    print("\nbudget:", p.dp.budget)
    show_ledger(p.dp.budget.ledger)


def show_ledger(ledger: pd.DataFrame, out: TextIO | None = None) -> None:
    """Print a budget's ledger lines (or those of an analyst's view of it on a curator's server), without times.

    >>> show_ledger(pd.DataFrame({"time": ["2026-01-01"], "query": ["count"], "noise": ["count σ=" + "1" * 60]}))
    query                                    noise
    count count σ=111111111111111111111111111111...
    """
    print(ledger.drop(columns=["time"]).to_string(index=False, max_colwidth=40), file=out)


def version() -> str:
    """The installed distribution's version, or the package's own when it is not installed.

    >>> version() == __import__("dpframe").__version__
    True
    """
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("dpframe")
    except PackageNotFoundError:
        import dpframe

        return dpframe.__version__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpframe`` command."""
    parser = argparse.ArgumentParser(
        prog="dpframe", description="Differential privacy for pandas.",
        epilog="A file's analysis: draft its column types with `dpframe schema DATA --out schema.json` (not "
        "private: review it), then `dpframe describe DATA --schema schema.json --epsilon 1`. "
        "Documentation: docs/command-line.md.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run a short private analysis on generated data")
    from dpframe import schema
    from dpframe.accounting import cli as budget_cli
    from dpframe.report import cli
    from dpframe.service import cli as service_cli
    from dpframe.synthesis import cli as synthesis_cli

    schema.add_parser(sub)
    cli.add_parser(sub)
    synthesis_cli.add_parser(sub)
    budget_cli.add_parser(sub)
    service_cli.add_parsers(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            demo()
        elif args.command == "schema":
            return schema.run(args)
        elif args.command == "describe":
            return cli.run(args)
        elif args.command == "synthesize":
            return synthesis_cli.run(args)
        elif args.command == "budget":
            return budget_cli.run(args)
        elif args.command in ("serve", "token", "example-service", "remote-demo", "mock", "analyst", "cap", "audit"):
            return service_cli.run(args)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (keeps the interpreter's final flush silent)
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
