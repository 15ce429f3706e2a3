"""User code that must pass mypy --strict, revealing the type each comment names (and run, giving those types)."""

import pandas as pd

import dpframe

df = pd.DataFrame({"age": [31, 45, 67], "sex": pd.Categorical(["F", "M", "F"]), "smoker": [True, False, False]})
p = dpframe.protect(df, epsilon=3.0, ledger=dpframe.Ledger.in_memory())
reveal_type(p)  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(dpframe.protect(df["age"], epsilon=1.0))  # revealed: dpframe.protection.series.ProtectedSeries
annotated: dpframe.ProtectedFrame = df.dp.protect(epsilon=1.0)  # df.dp is a column to pandas-stubs: annotate

# Selecting and deriving keeps the protected types.
reveal_type(p["age"])  # revealed: dpframe.protection.series.ProtectedSeries
reveal_type(p.age)  # revealed: dpframe.protection.series.ProtectedSeries
reveal_type(p[["age", "sex"]])  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p[p["age"] >= 40])  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.assign(decade=p["age"] // 10))  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.query("age >= 40"))  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.dp.sample(0.5))  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.loc[p["age"] >= 40])  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.loc[p["age"] >= 40, ["age"]])  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.loc[p["age"] >= 40, "age"])  # revealed: dpframe.protection.series.ProtectedSeries
reveal_type(dpframe.concat([p, p[p["age"] >= 40]]))  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(dpframe.concat([p["age"], p["age"]]))  # revealed: dpframe.protection.series.ProtectedSeries
reveal_type(dpframe.concat([p["age"], p["sex"]], axis=1))  # revealed: dpframe.protection.frame.ProtectedFrame
reveal_type(p.dp)  # revealed: dpframe.accessor.DataFrameAccessor
reveal_type(p["age"].dp)  # revealed: dpframe.accessor.SeriesAccessor
reveal_type(p.dp.budget)  # revealed: dpframe.accounting.budget.Budget

# Answers.
reveal_type(p.dp.count(epsilon=0.1))  # revealed: dpframe.results.DPInt
reveal_type(p["age"].dp.mean(bounds=(0, 100), epsilon=0.1))  # revealed: dpframe.results.DPFloat
reveal_type(p["age"].dp.mean(bounds=(0, 100), epsilon=0.1).ci)  # revealed: tuple[float, float]
reveal_type(p["age"].dp.median(bounds=(0, 100), epsilon=0.1))  # revealed: dpframe.results.DPFloat
reveal_type(p["age"].dp.quantile(0.9, bounds=(0, 100), epsilon=0.1))  # revealed: dpframe.results.DPFloat
reveal_type(p["age"].dp.quantile([0.1, 0.9], bounds=(0, 100), epsilon=0.1))  # revealed: pandas.core.series.Series[Any]
reveal_type(p["age"].dp.histogram(bins=[0, 50, 100], epsilon=0.1))  # revealed: pandas.core.series.Series[Any]
reveal_type(p["sex"].dp.value_counts(epsilon=0.1))  # revealed: pandas.core.series.Series[Any]
reveal_type(p.dp.crosstab("sex", "smoker", epsilon=0.1))  # revealed: pandas.core.frame.DataFrame
gb = p.dp.groupby("sex")
reveal_type(gb.count(epsilon=0.1))  # revealed: pandas.core.series.Series[Any]
reveal_type(gb.mean("age", bounds=(0, 100), epsilon=0.1))  # revealed: pandas.core.series.Series[Any]
reveal_type(gb.mean(["age"], bounds=(0, 100), epsilon=0.1))  # revealed: pandas.core.frame.DataFrame
reveal_type(gb["age"].mean(bounds=(0, 100), epsilon=0.1))  # revealed: pandas.core.series.Series[Any]
reveal_type(gb[["age"]].std(bounds=(0, 100), epsilon=0.1))  # revealed: pandas.core.frame.DataFrame
reveal_type(gb.agg({"age": ["mean", "std"]}, bounds=(0, 100), epsilon=0.1))  # revealed: pandas.core.frame.DataFrame
reveal_type(p.dp.describe(epsilon=0.5))  # revealed: pandas.core.frame.DataFrame
