"""Palmer penguins exploratory analysis (allisonhorst.github.io/palmerpenguins/articles/intro.html), in pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipelines import data
from pipelines.harness import DP, REFUSED, SPEND, UNCHANGED, Env, Known, Pipeline, Step

SPECIES = ["Adelie", "Chinstrap", "Gentoo"]
MASS = (2000.0, 7000.0)
FLIPPER = (150.0, 250.0)
BILL = {"bill_length_mm": (30.0, 60.0), "bill_depth_mm": (13.0, 22.0)}


def load() -> Env:
    return {"penguins": data.penguins()}


def _crosstab_zeros(want: pd.DataFrame, got: pd.DataFrame) -> str | None:
    """A cell that was not released is <NA> (unknown; docs/reading-answers.md); pandas' zero cells are those."""
    from pipelines.harness import compare_answers

    got = got.reindex(index=want.index, columns=want.columns)
    unknown = got.isna()
    if (want.where(unknown, 0) != 0).any().any():
        return "a non-zero cell was not released"
    return compare_answers(want.where(~unknown, 0), got.fillna(0).astype(float), 0.5, 0.0)


STEPS = (
    Step("missing-sex", 'penguins["sex"].isna().sum()', DP, lambda e: int(e["penguins"]["sex"].isna().sum()),
         dp=lambda e: e["penguins"]["sex"].isna().dp.sum(epsilon=SPEND), tol=0.5),
    Step("dropna", "penguins = penguins.dropna()", UNCHANGED, lambda e: e["penguins"].dropna(), store="penguins"),
    Step("count-species", 'penguins["species"].value_counts()', DP, lambda e: e["penguins"]["species"].value_counts(),
         dp=lambda e: e["penguins"]["species"].dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("mean-mass-by-species", 'penguins.groupby("species")["body_mass_g"].mean()', DP,
         lambda e: e["penguins"].groupby("species")["body_mass_g"].mean(),
         dp=lambda e: e["penguins"].dp.groupby("species")["body_mass_g"].mean(bounds=MASS, epsilon=SPEND), tol=0.5),
    Step("named-agg", 'penguins.groupby("species").agg(mean_mass=("body_mass_g", "mean"))', DP,
         lambda e: e["penguins"].groupby("species").agg(mean_mass=("body_mass_g", "mean")),
         dp=lambda e: e["penguins"].dp.groupby("species", keys=SPECIES).agg(
             mean_mass=("body_mass_g", "mean"), bounds=MASS, epsilon=SPEND), tol=0.5),
    Step("agg-list", 'penguins.groupby("species")["flipper_length_mm"].agg(["mean", "median", "std"])', DP,
         lambda e: e["penguins"].groupby("species")["flipper_length_mm"].agg(["mean", "median", "std"]),
         dp=lambda e: e["penguins"].dp.groupby("species", keys=SPECIES)["flipper_length_mm"].agg(
             ["mean", "median", "std"], bounds=FLIPPER, epsilon=SPEND), tol=1.0),
    Step("groupby-describe", 'penguins.groupby("species")["body_mass_g"].describe()', REFUSED,
         lambda e: e["penguins"].groupby("species")["body_mass_g"].describe(),
         dp=lambda e: e["penguins"].dp.groupby("species", keys=SPECIES)["body_mass_g"].describe(), match="quantile"),
    Step("groupby-describe-private", 'the same: count, mean and std, then the quartiles', DP,
         lambda e: e["penguins"].groupby("species")["body_mass_g"].agg(["count", "mean", "std"]),
         dp=lambda e: e["penguins"].dp.groupby("species", keys=SPECIES)["body_mass_g"].agg(
             ["count", "mean", "std"], bounds=MASS, epsilon=SPEND), tol=1.0),
    Step("groupby-min", 'penguins.groupby("species")["body_mass_g"].min()', REFUSED,
         lambda e: e["penguins"].groupby("species")["body_mass_g"].min(),
         dp=lambda e: e["penguins"].dp.groupby("species")["body_mass_g"].min(), match="quantile"),
    Step("size-species-sex", 'penguins.groupby(["species", "sex"]).size()', DP,
         lambda e: e["penguins"].groupby(["species", "sex"]).size(),
         dp=lambda e: e["penguins"].dp.groupby(["species", "sex"]).size(epsilon=SPEND), tol=0.5),
    Step("crosstab-island", 'pd.crosstab(penguins["species"], penguins["island"])', DP,
         lambda e: pd.crosstab(e["penguins"]["species"], e["penguins"]["island"]),
         dp=lambda e: e["penguins"].dp.crosstab("species", "island", epsilon=SPEND), compare=_crosstab_zeros),
    Step("mean-of-columns", 'penguins.groupby("species")[["bill_length_mm", "bill_depth_mm"]].mean()', DP,
         lambda e: e["penguins"].groupby("species")[["bill_length_mm", "bill_depth_mm"]].mean(),
         dp=lambda e: e["penguins"].dp.groupby("species", keys=SPECIES)[["bill_length_mm", "bill_depth_mm"]].mean(
             bounds=BILL, epsilon=SPEND), tol=0.05),
    Step("corr", 'penguins[["bill_length_mm", "bill_depth_mm"]].corr()', DP,
         lambda e: e["penguins"][["bill_length_mm", "bill_depth_mm"]].corr(),
         dp=lambda e: e["penguins"].dp.corr(["bill_length_mm", "bill_depth_mm"], bounds=BILL, epsilon=SPEND),
         tol=0.01),
    Step("plain-corr", 'penguins[["bill_length_mm", "bill_depth_mm"]].corr()', REFUSED,
         lambda e: e["penguins"][["bill_length_mm", "bill_depth_mm"]].corr()),
    Step("describe-column", 'penguins["body_mass_g"].describe()', DP,
         lambda e: e["penguins"]["body_mass_g"].describe()[["count", "mean", "std"]],
         dp=lambda e: e["penguins"]["body_mass_g"].dp.describe(bounds=MASS, epsilon=SPEND)[["count", "mean", "std"]]
         .astype(float), tol=1.0),
    Step("ratio", 'penguins.assign(bill_ratio=penguins["bill_length_mm"] / penguins["bill_depth_mm"])', UNCHANGED,
         lambda e: e["penguins"].assign(bill_ratio=e["penguins"]["bill_length_mm"] / e["penguins"]["bill_depth_mm"])),
    Step("query", 'penguins.query("island == \'Biscoe\' and body_mass_g > 4000") (counted)', DP,
         lambda e: len(e["penguins"].query("island == 'Biscoe' and body_mass_g > 4000")),
         dp=lambda e: e["penguins"].query("island == 'Biscoe' and body_mass_g > 4000").dp.count(epsilon=SPEND),
         tol=0.5),
    Step("histogram", 'penguins["flipper_length_mm"].hist(bins=range(170, 240, 10)) (numpy\'s bins: the last is closed)',
         DP,
         lambda e: pd.Series(np.histogram(e["penguins"]["flipper_length_mm"].dropna(), range(170, 240, 10))[0],
                             [f"[{a:.1f}, {a + 10:.1f})" for a in range(170, 230, 10)]),
         dp=lambda e: e["penguins"]["flipper_length_mm"].dp.histogram(bins=range(170, 240, 10), epsilon=SPEND)
         .rename(index=str), tol=0.5),
    Step("astype-category", 'penguins["species"].astype("category")', REFUSED,
         lambda e: e["penguins"]["species"].astype("category")),
    Step("declared-category", 'penguins["species"].astype(pd.CategoricalDtype(["Adelie", "Chinstrap", "Gentoo"]))',
         UNCHANGED, lambda e: e["penguins"]["species"].astype(pd.CategoricalDtype(SPECIES))),
    Step("year-counts", 'penguins["year"].value_counts().sort_index()', DP,
         lambda e: e["penguins"]["year"].value_counts().sort_index(),
         dp=lambda e: e["penguins"]["year"].dp.value_counts(epsilon=SPEND), tol=0.5),
)

PIPELINE = Pipeline("penguins", "Palmer penguins, the package's introduction (EDA by species, island and sex)",
                    "https://allisonhorst.github.io/palmerpenguins/articles/intro.html (palmerpenguins)", load,
                    ("penguins",), STEPS)
