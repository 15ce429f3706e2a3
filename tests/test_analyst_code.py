"""Sound against the analyst's own code (issue 27): neighbours look the same, whatever the code does.

dpframe runs functions the analyst hands it on private values and hands the
analyst's objects to pandas. Whether an error happens, which warning is shown,
which dtype a column gets, which line the ledger records -- none of it may
depend on the data, or it is an oracle that costs no budget. The acceptance
test of the issue: **with seeded noise, neighbouring data sets give identical
exceptions, dtypes, shapes and ledger lines for every operation of
``protection/rules.py``'s table fed adversarial user functions and returned
objects.**

Each pipeline below feeds an adversarial function (``tests/adversarial.py``:
it behaves one way on the target person's values and another elsewhere) or an
adversarial argument object into operations of one row of ``RULES``, follows
it with the structural operations that used to raise (explode, set_index,
reset_index, sort_values, merge, melt, stack, concat), and ends with ``.dp``
queries on public keys. It runs on two neighbours -- a small frame, and the
same frame plus the target's rows (row-level, and user-level with
``max_contributions=2``) -- and the two :class:`~adversarial.Observation` s must
be equal.

* ``test_neighbours_agree_whatever_the_function_does``: the acceptance test, per
  pipeline; Hypothesis draws what the function does on the target and elsewhere
  (and the level), after a few explicit examples (the review's attacks).
* ``test_neighbours_agree_whatever_the_arguments_are`` (and ``_dtype``,
  ``_time_zone``): the analyst's argument objects, same observation, plus the
  rows below.
* ``test_other_peoples_rows_do_not_depend_on_the_target``: a row-wise operation
  computes each row from that row alone, so everybody else's rows (values and
  their types) must be the same on both neighbours.
* direct tests: exceptions become missing values, result dtypes, nothing
  returned stays alive, the review's attacks, sample_and_aggregate, Ctrl-C.
* ``test_bug_*``: minimal reproductions of the library bugs this file found when
  it was written (each one a way for neighbours to differ), kept as regression tests.
"""

from __future__ import annotations

import datetime
import decimal
import pickle
import signal
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import dpframe
from dpframe import RefusedError
from dpframe.protection.rules import RULES
from dpframe.testing import seeded_noise

from adversarial import (
    ARGUMENTS,
    BY_NAME,
    CATALOGUE,
    CATEGORIES,
    DTYPES,
    E,
    EXCEPTIONS,
    PUBLIC_C,
    PUBLIC_Z,
    TARGET_N,
    TARGET_S,
    ZONES,
    Act,
    Arg,
    Boom,
    Context,
    Missing,
    Unhashable,
    Weakly,
    acts,
    arguments,
    compare,
    make_exception,
    neighbours,
    raising,
    returning,
    sneaky,
    user_function,
)

KEYS = [1, "a", 2.5]  # public keys for the analyst's object columns

# -- the pipelines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pipeline:
    key: str  # the row of RULES
    name: str
    run: Callable[..., Any]
    uses: str  # "function", "argument", "dtype" or "zone"
    levels: tuple[str, ...] = ("row", "user")
    compare_rows: bool = True  # False where rows are drawn at random (Poisson sampling)

    def __repr__(self) -> str:
        return f"{self.key}:{self.name}"


PIPELINES: list[Pipeline] = []


def pipeline(key: str, uses: str = "function", **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    assert key in {r.key for r in RULES}, key

    def register(run: Callable[..., Any]) -> Callable[..., Any]:
        PIPELINES.append(Pipeline(key, run.__name__, run, uses, **options))
        return run

    return register


def counts(q: Any) -> Any:
    return q.dp.groupby("c", keys=CATEGORIES).count(epsilon=E)


# filter ---------------------------------------------------------------------------------------------

@pipeline("filter")
def filter_on_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    mask = ctx.see(p["n"].map(f, dtype="boolean"), "map(dtype=boolean)")
    q = ctx.see(p[mask], "p[mask]")
    q = ctx.see(q.loc[q["s"].map(f).isna(), ["n", "s", "c", "l"]], "loc[isna]")
    e = ctx.see(q.explode("l"), "explode")
    return e.dp.count(epsilon=E), counts(q)


@pipeline("filter")
def query_on_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f), w=p["x"].map(f, dtype="Float64")), "assign")
    r = ctx.see(q.query("z == 1 or w > 0.5 or z != z"), "query")
    r = ctx.see(r.query("s in ['ann', 'zz-target'] or z in @keys", local_dict={"keys": KEYS}), "query in")
    return counts(r)


@pipeline("filter")
def missing_values_of_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f)), "assign")
    r = ctx.see(q.dropna(subset=["z"]), "dropna(subset)")
    ctx.see(q.dropna(how="all"), "dropna(how=all)")
    ctx.see(q["z"].dropna(), "series dropna")
    ctx.see(q["z"].isna(), "isna")
    ctx.see(q["z"].notna(), "notna")
    ctx.see(q["z"].fillna(0), "fillna")
    ctx.see(q.fillna({"z": "missing"}), "frame fillna")
    ctx.see(q["z"].add(1, fill_value=0), "add(fill_value=)")
    ctx.see(q.query("z != z"), "query(z != z)")
    return counts(r), r["c"].dp.value_counts(sort=False, epsilon=E), q["z"].dp.nunique(epsilon=E)


# columns --------------------------------------------------------------------------------------------

@pipeline("columns")
def columns_of_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["s"].map(f)), "assign")
    r = ctx.see(q[["z", "c", "n"]], "p[cols]")
    r = ctx.see(r.rename(columns={"z": "zed"}), "rename")
    r = ctx.see(r.drop(columns=["n"]), "drop")
    ctx.see(r.iloc[:, [0]], "iloc[:, cols]")
    ctx.see(r.zed, "attribute")
    ctx.see(r.select_dtypes("object"), "select_dtypes")
    ctx.see(r.add_prefix("p_"), "add_prefix")
    m = ctx.see(r.melt(id_vars=["c"]), "melt")
    return m.dp.value_counts(["variable"], keys={"variable": ["zed"]}, sort=False, epsilon=E)


@pipeline("columns")
def columns_named_by_a_function(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = p.copy()
    q[f] = p["x"]
    ctx.see(q, "p[f] = ...")
    r = p.copy()
    r.loc[:, f] = p["n"]
    ctx.see(r, "p.loc[:, f] = ...")
    return q.dp.count(epsilon=E)


# rowwise --------------------------------------------------------------------------------------------

@pipeline("rowwise")
def map_then_explode(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    z = ctx.see(p["n"].map(f), "map")
    e = ctx.see(z.explode(), "explode")
    ctx.see(p["l"].map(f).explode(), "map lists, explode")
    return e.dp.value_counts(keys=KEYS, sort=False, epsilon=E)


@pipeline("rowwise")
def apply_values(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    z = ctx.see(p["x"].apply(f), "apply")
    ctx.see(z.explode(), "explode")
    a = ctx.see(p["x"].apply(f, dtype="Float64"), "apply(dtype=Float64)")
    ctx.see(p["n"].apply(f, args=(1,)), "apply(args=)")
    clipped = ctx.see(a.clip(0, 1).to_frame("a").assign(c=p["c"]), "clip, to_frame")
    return (clipped["a"].dp.mean(bounds=(0, 1), epsilon=E),
            clipped.dp.describe(epsilon=E, bounds={"a": (0, 1)}, progress=False))


@pipeline("rowwise")
def map_with_dtypes(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    for dtype in ["Int64", "Float64", "boolean", "string", str, object, "float64", "datetime64[ns]"]:
        ctx.attempt(f"map(dtype={dtype})", lambda dtype=dtype: p["n"].map(f, dtype=dtype))
    ctx.attempt("map(na_action=ignore)", lambda: p["x"].map(f, na_action="ignore"))
    total = ctx.see(p["n"].map(f, dtype="Int64"), "map(dtype=Int64)")
    return total.dp.sum(bounds=(0, 10), epsilon=E)


@pipeline("rowwise")
def apply_rows(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    z = ctx.see(p.apply(f, axis=1), "apply(axis=1)")
    ctx.attempt("apply(axis=1, dtype=Float64)", lambda: p.apply(f, axis=1, dtype="Float64"))
    ctx.attempt("apply(axis=1, raw=True)", lambda: p[["n", "x"]].apply(f, axis=1, raw=True))
    q = ctx.see(p.assign(z=z), "assign")
    e = ctx.see(q.explode("z"), "explode")
    s = ctx.see(e.set_index("z"), "set_index")
    return counts(s), e.dp.groupby("z", keys=KEYS).count(epsilon=E)


@pipeline("rowwise")
def map_frame(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p[["n", "s", "l", "d"]].map(f), "frame map")
    ctx.attempt("frame map(na_action=ignore)", lambda: p[["x", "s"]].map(f, na_action="ignore"))
    ctx.attempt("frame map(dtype=Float64)", lambda: p[["n", "x"]].map(f, dtype="Float64"))
    stacked = ctx.see(q.stack(), "stack")
    return stacked.dp.value_counts(keys=KEYS, sort=False, epsilon=E)


@pipeline("rowwise")
def replace_with_a_function(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    z = ctx.see(p["s"].str.replace(r"\w+", f, regex=True), "str.replace(repl=)")
    ctx.see(z.str.len(), "str.len")
    ctx.attempt("object str.replace(repl=)", lambda: p["s"].astype(object).str.replace("a", f, regex=True))
    ctx.attempt("str.replace(repl=, case=False)", lambda: p["s"].str.replace("Z", f, regex=True, case=False))
    return z.dp.value_counts(keys=["a", "ann"], sort=False, epsilon=E)


@pipeline("rowwise")
def operations_on_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    z = ctx.see(p["n"].map(f), "map")
    operations: dict[str, Callable[[], Any]] = {
        "==": lambda: z == 1, "!=": lambda: z != "a", "<": lambda: z < 2, ">=": lambda: z >= 2.5,
        "+": lambda: z + 1, "radd": lambda: "a" + z, "*": lambda: z * 2, "/": lambda: z / 2, "//": lambda: z // 2,
        "%": lambda: z % 2, "**": lambda: z ** 2, "&": lambda: z & True, "|": lambda: z | False,
        "between": lambda: z.between(0, 5), "isin": lambda: z.isin([1, "a", (1, 2)]),
        "replace": lambda: z.replace({1: 2, "a": "b"}),
        "replace list": lambda: z.replace([1, "a"], None), "where": lambda: z.where(p["n"] > 30, 0),
        "mask": lambda: z.mask(p["n"] > 30, "m"), "clip": lambda: z.clip(0, 5),
        "astype Float64": lambda: z.astype("Float64"), "astype Int64": lambda: z.astype("Int64"),
        "astype string": lambda: z.astype("string"), "astype str": lambda: z.astype(str),
        "astype boolean": lambda: z.astype("boolean"), "astype object": lambda: z.astype(object),
        "astype category": lambda: z.astype(pd.CategoricalDtype([1, "a"])),
        "astype complex": lambda: z.astype("complex128"),
        "abs": lambda: z.abs(), "neg": lambda: -z,
        "invert": lambda: ~z, "round": lambda: z.round(1), "np.sqrt": lambda: np.sqrt(z), "np.add": lambda: np.add(z, 1),
        "np.isnan": lambda: np.isnan(z), "cut": lambda: z.astype("Float64").cut([0, 1, 10, 1000]),
        "eq": lambda: z.eq(1), "to_frame": lambda: z.to_frame(),
        "rename": lambda: z.rename("zz"), "map dict": lambda: z.map({1: "one", "a": "A"}), "map again": lambda: z.map(f),
        "apply len": lambda: z.apply(len), "map str": lambda: z.map(str), "map hash": lambda: z.map(hash),
        "map repr": lambda: z.map(repr, dtype="string"),
    }
    for name, operation in operations.items():
        ctx.attempt(name, operation)
    flag = ctx.see(z == 1, "flag")
    return p.assign(k=flag).dp.groupby("k", keys=[True, False]).count(epsilon=E)


@pipeline("rowwise")
def text_methods_on_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    z = ctx.see(p["n"].map(f), "map")
    operations: dict[str, Callable[[], Any]] = {
        "str.len": lambda: z.str.len(), "str.upper": lambda: z.str.upper(), "str.contains": lambda: z.str.contains("a"),
        "str.get": lambda: z.str.get(0), "str.join": lambda: z.str.join("-"), "str.slice": lambda: z.str.slice(0, 1),
        "str.startswith": lambda: z.str.startswith("a"), "str.decode": lambda: z.str.decode("utf-8"),
        "str.strip": lambda: z.str.strip(), "str.split": lambda: z.str.split("a"),
        "astype(string).str.len": lambda: z.astype("string").str.len(),
        "text str.replace": lambda: p["s"].map(f).str.replace("a", "b"),
    }
    for name, operation in operations.items():
        ctx.attempt(name, operation)
    return z.str.len().dp.sum(bounds=(0, 5), epsilon=E)


@pipeline("rowwise")
def row_reductions(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f), w=p["x"].map(f)), "assign")
    for name in ("sum", "any", "all", "min", "max", "mean", "count"):
        ctx.attempt(f"{name}(axis=1)", lambda name=name: getattr(q[["z", "w"]], name)(axis=1))
    ctx.attempt("frame ==", lambda: q[["z", "w"]] == [1, "a"])
    ctx.attempt("frame isna", lambda: q.isna())
    ctx.attempt("frame fillna", lambda: q.fillna({"z": 0, "w": "w"}))
    ctx.attempt("frame astype", lambda: q.astype({"z": "string", "w": "Float64"}))
    ctx.attempt("frame replace", lambda: q.replace({"z": {1: 2}}))
    ctx.attempt("frame where", lambda: q[["z", "w"]].where(q[["z", "w"]].isna(), 0))
    total = ctx.see(q[["n", "x"]].sum(axis=1), "sum(axis=1)")
    return total.dp.mean(bounds=(0, 100), epsilon=E)


@pipeline("rowwise")
def dates_and_categories(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    ctx.see(p["d"].map(f), "dates map")
    ctx.see(p["d"].dt.year.map(f), "dt.year map")
    ctx.attempt("dates map(dtype=datetime64[ns])", lambda: p["d"].map(f, dtype="datetime64[ns]"))
    mapped = ctx.attempt("categorical map", lambda: p["c"].map(f))
    ctx.attempt("categorical apply", lambda: p["c"].apply(f))
    ctx.attempt("categorical map(na_action=ignore)", lambda: p["c"].map(f, na_action="ignore"))
    ctx.attempt("cat.codes map", lambda: p["c"].cat.codes.map(f))
    ctx.attempt("categorical map value_counts", lambda: mapped.dp.value_counts(keys=KEYS, sort=False, epsilon=E))
    return p.dp.count(epsilon=E)


# order ----------------------------------------------------------------------------------------------

@pipeline("order")
def sorting_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f)), "assign")
    ctx.see(q.sort_values("z"), "sort_values")
    ctx.see(q.sort_values(["z", "n"], ascending=[False, True], na_position="first"), "sort_values(list)")
    ctx.see(q["z"].sort_values(), "series sort_values")
    ctx.see(q.set_index("z"), "set_index")
    ctx.see(q.set_index("z").sort_index(), "sort_index")
    ctx.see(q.set_index(["s", "z"]).sort_index(ascending=False), "set_index(list).sort_index")
    ctx.see(q.copy(), "copy")
    ctx.attempt("pickle", lambda: pickle.loads(pickle.dumps(q)))
    ctx.see(q.pipe(lambda d: d[["z"]]), "pipe")
    return q.dp.groupby("z", keys=KEYS).count(epsilon=E)


@pipeline("order")
def sorting_the_index_by_level(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f)), "assign")
    ctx.see(q.set_index("z").sort_index(level="z"), "sort_index(level=)")
    ctx.see(q.set_index(["z", "s"]).sort_index(level="z"), "set_index(list).sort_index(level=)")
    return q.dp.count(epsilon=E)


@pipeline("order")
def index_round_trip(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f)), "assign")
    i = ctx.see(q.set_index("z"), "set_index")
    r = ctx.see(i.reset_index(), "reset_index")
    ctx.see(q.set_index(["z", "s"]).reset_index(level="z"), "reset_index(level=)")
    return r.dp.groupby("z", keys=KEYS).count(epsilon=E)


@pipeline("order")
def sorting_with_a_key(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.sort_values("n", key=f), "sort_values(key=)")
    ctx.see(p.sort_values("s", key=f), "text sort_values(key=)")
    ctx.see(p.sort_values(["x", "d"], key=f, ascending=False), "sort_values(list, key=)")
    ctx.see(p["l"].sort_values(key=f), "series sort_values(key=)")
    return q.explode("l").dp.count(epsilon=E)


# merge_public -----------------------------------------------------------------------------------------

@pipeline("merge_public")
def merging_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["n"].map(f)), "assign")
    left = ctx.see(q.merge(PUBLIC_Z, on="z", how="left"), "merge left")
    inner = ctx.see(q.merge(PUBLIC_Z, on="z"), "merge inner")
    ctx.see(q.merge(PUBLIC_C, on="c"), "merge on categories")
    ctx.see(q.merge(PUBLIC_C.rename(columns={"c": "cc"}), how="cross"), "merge cross")
    ctx.see(q.merge(PUBLIC_Z.rename(columns={"z": "y"}), left_on="z", right_on="y", how="left"), "merge left_on")
    return left["w"].dp.sum(bounds=(0, 10), epsilon=E), inner.dp.count(epsilon=E)


# repeat ---------------------------------------------------------------------------------------------

@pipeline("repeat")
def repeating_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    q = ctx.see(p.assign(z=p["l"].map(f)), "assign")
    e = ctx.see(q.explode("z"), "explode")
    ctx.see(q.explode("z", ignore_index=True), "explode(ignore_index)")
    m = ctx.see(q.melt(id_vars=["c"], value_vars=["z", "n"]), "melt")
    s = ctx.see(q[["z", "s"]].stack(), "stack")
    both = ctx.see(dpframe.concat([q, q[q["n"] > 30]]), "concat")
    ctx.see(dpframe.concat([q, q], keys=["a", "b"]), "concat(keys=)")
    ctx.see(dpframe.concat([q[["z"]], q[["n"]]], axis=1), "concat(axis=1)")
    ctx.see(dpframe.concat([q["z"], q["z"]]), "concat series")
    return (e.dp.count(epsilon=E), m.dp.value_counts(["variable"], keys={"variable": ["z", "n"]}, sort=False, epsilon=E),
            s.dp.value_counts(keys=KEYS, sort=False, epsilon=E), counts(both))


# unit_join ------------------------------------------------------------------------------------------

@pipeline("unit_join", levels=("user",))
def joining_units(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    profiles = ctx.protect_profiles(p)
    j = ctx.see(p.merge(profiles, on="user"), "merge on the unit")
    z = ctx.see(j["tier"].map(f), "map")
    e = ctx.see(j.assign(z=z).explode("z"), "explode")
    left = ctx.see(p.merge(profiles.assign(t=profiles["score"].map(f)), on="user", how="left"), "merge left")
    return e.dp.count(epsilon=E), left["score"].dp.mean(bounds=(0, 10), epsilon=E)


# sample ---------------------------------------------------------------------------------------------

@pipeline("sample", compare_rows=False)
def sampling_results(ctx: Context, f: Any) -> Any:
    p = ctx.protect()
    s = ctx.see(p.dp.sample(0.5), "sample")
    z = ctx.see(s.assign(z=s["n"].map(f)), "assign")
    e = ctx.see(z.explode("z"), "explode")
    t = ctx.see(p.assign(z=p["n"].map(f)).dp.sample(0.5), "sample after map")
    return e.dp.count(epsilon=E), t["c"].dp.value_counts(sort=False, epsilon=E)


# refused rows: the refusal must not depend on the data -----------------------------------------------

REFUSED: dict[str, dict[str, Callable[[Any, Any], Any]]] = {
    "exact": {
        "value_counts": lambda q, o: q["z"].value_counts(), "unique": lambda q, o: q["z"].unique(),
        "len": lambda q, o: len(q), "shape": lambda q, o: q.shape, "to_numpy": lambda q, o: q["z"].to_numpy(),
        "list": lambda q, o: list(q["z"]), "max": lambda q, o: q["w"].max(), "mean": lambda q, o: q.mean(),
        "to_csv": lambda q, o: q.to_csv(), "np.asarray": lambda q, o: np.asarray(q["z"]), "index": lambda q, o: q.index,
        "nunique": lambda q, o: q["z"].nunique(), "describe": lambda q, o: q.describe(), "bool": lambda q, o: bool(q),
        "mode": lambda q, o: q["z"].mode(), "values": lambda q, o: q.values, "T": lambda q, o: q.T,
        "tolist": lambda q, o: q["z"].tolist(), "to_dict": lambda q, o: q.to_dict(),
        "k_anonymity": lambda q, o: q.dp.k_anonymity(quasi_identifiers=["z"]), "in": lambda q, o: 1 in q["z"],
        "iter": lambda q, o: iter(q["z"]), "np.sum": lambda q, o: np.sum(q["n"]), "sum": lambda q, o: q["n"].sum(),
        "equals": lambda q, o: q.equals(q), "agg": lambda q, o: q["z"].agg(o), "apply str": lambda q, o: q["z"].apply("sum"),
        "item": lambda q, o: q["z"].item(), "to_string": lambda q, o: q.to_string(), "np.unique": lambda q, o: np.unique(q["z"]),
    },
    "positional": {
        "head": lambda q, o: q.head(), "tail": lambda q, o: q.tail(2), "iloc": lambda q, o: q.iloc[:2],
        "slice": lambda q, o: q[1:3], "sample(n=)": lambda q, o: q.sample(n=2), "sample(frac=)": lambda q, o: q.sample(frac=0.5),
        "take": lambda q, o: q.take([0]), "nlargest": lambda q, o: q["n"].nlargest(2),
        "nsmallest": lambda q, o: q.nsmallest(2, "n"), "truncate": lambda q, o: q.truncate(0, 1),
        "loc[label]": lambda q, o: q.loc[0], "drop(index=)": lambda q, o: q.drop(index=[0]),
        "rename(index=)": lambda q, o: q.rename(index={0: 1}), "series [label]": lambda q, o: q["z"][0],
        "iloc cell": lambda q, o: q.iloc[0, 0],
    },
    "cross_row": {
        "shift": lambda q, o: q["z"].shift(), "diff": lambda q, o: q["n"].diff(), "rank": lambda q, o: q["z"].rank(),
        "cumsum": lambda q, o: q["n"].cumsum(), "rolling": lambda q, o: q["n"].rolling(2),
        "expanding": lambda q, o: q.expanding(), "groupby": lambda q, o: q.groupby("z"),
        "transform": lambda q, o: q["z"].transform(o), "fillna(method=)": lambda q, o: q.fillna(method="ffill"),
        "ffill": lambda q, o: q.ffill(), "bfill": lambda q, o: q["z"].bfill(), "interpolate": lambda q, o: q.interpolate(),
        "drop_duplicates": lambda q, o: q.drop_duplicates(), "duplicated": lambda q, o: q["z"].duplicated(),
        "apply(axis=0)": lambda q, o: q.apply(o, axis=0), "pivot_table": lambda q, o: q.pivot_table(index="z"),
        "self-merge": lambda q, o: q.merge(q, on="n"),
        "ambiguous=infer": lambda q, o: q["d"].dt.tz_localize("Europe/Oslo", ambiguous="infer"),
        "pct_change": lambda q, o: q["n"].pct_change(), "ewm": lambda q, o: q.ewm(1), "unstack": lambda q, o: q.unstack(),
        "combine_first": lambda q, o: q.combine_first(q), "reindex": lambda q, o: q.reindex([0]),
        "repeat": lambda q, o: q["z"].repeat(2), "extractall": lambda q, o: q["s"].str.extractall("(a)"),
    },
    "private_values": {
        "astype(category)": lambda q, o: q["z"].astype("category"), "cut(3)": lambda q, o: q["n"].cut(3),
        "isin(protected)": lambda q, o: q["z"].isin(q["z"]), "split(expand=True)": lambda q, o: q["s"].str.split(expand=True),
        "get_dummies": lambda q, o: q["s"].str.get_dummies(), "dropna(axis=1)": lambda q, o: q.dropna(axis=1),
        "remove_unused_categories": lambda q, o: q["c"].cat.remove_unused_categories(),
        "text to dates": lambda q, o: q["s"].astype("datetime64[ns]"), "to_period()": lambda q, o: q["d"].dt.to_period(),
        "partition": lambda q, o: q["s"].str.partition(), "rsplit(expand=True)": lambda q, o: q["s"].str.rsplit(expand=True),
        "object to dates": lambda q, o: q["z"].astype("datetime64[ns]"),
    },
    "mixing": {
        "assign other": lambda q, o: q.assign(h=o["n"]), "+ public Series": lambda q, o: q["n"] + pd.Series([1, 2]),
        "+ array": lambda q, o: q["n"] + np.arange(3), "+ filtered": lambda q, o: q["n"] + q[q["n"] > 30]["n"],
        "map(protected)": lambda q, o: q["z"].map(q["z"]), "fillna(other)": lambda q, o: q.fillna(o["x"]),
        "where(other)": lambda q, o: q["n"].where(o["n"] > 0), "filter by other": lambda q, o: q[o["n"] > 0],
        "apply(args=Series)": lambda q, o: q["n"].apply(np.add, args=(pd.Series([1]),)),
        "contains(Series)": lambda q, o: q["s"].str.contains(pd.Series(["a"])),
        "concat other": lambda q, o: dpframe.concat([q, o]), "isin(Series)": lambda q, o: q["z"].isin(o["n"]),
        "boolean list": lambda q, o: q[[True, False]], "merge other": lambda q, o: q.merge(o, on="n"),
    },
    "public_rows": {
        "merge right": lambda q, o: q.merge(PUBLIC_C, on="c", how="right"),
        "merge outer": lambda q, o: q.merge(PUBLIC_C, on="c", how="outer"),
        "pd.concat": lambda q, o: pd.concat([q, PUBLIC_C]), "dpframe.concat public": lambda q, o: dpframe.concat([q, PUBLIC_C]),
        "pd.cut": lambda q, o: pd.cut(q["n"], [0, 10]), "np.where": lambda q, o: np.where(q["n"] > 3, 1, 0),
        "pd.merge": lambda q, o: pd.merge(q, PUBLIC_C), "join": lambda q, o: q.join(PUBLIC_C),
        "pd.DataFrame": lambda q, o: pd.DataFrame(q),
    },
    "reprotect": {
        "protect(protected)": lambda q, o: dpframe.protect(q, epsilon=1.0, ledger=dpframe.Ledger.in_memory()),
        "dp.protect": lambda q, o: q.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory()),
        "protect(unprotected)": lambda q, o: q.dp.unprotected().dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory()),
        "merge unprotected": lambda q, o: q.merge(q.dp.unprotected()[["n"]], on="n"),
    },
    "inplace": {
        "fillna": lambda q, o: q.fillna(0, inplace=True), "sort_values": lambda q, o: q.sort_values("n", inplace=True),
        "dropna": lambda q, o: q.dropna(inplace=True), "rename": lambda q, o: q.rename(columns={"n": "m"}, inplace=True),
        "query": lambda q, o: q.query("n > 1", inplace=True), "set_index": lambda q, o: q.set_index("n", inplace=True),
        "where": lambda q, o: q.where(q["n"] > 0, inplace=True), "replace": lambda q, o: q.replace(1, 2, inplace=True),
        "clip": lambda q, o: q["x"].clip(0, 1, inplace=True), "mask": lambda q, o: q.mask(q["n"] > 0, inplace=True),
        "reset_index": lambda q, o: q.reset_index(inplace=True), "eval": lambda q, o: q.eval("k = n + 1", inplace=True),
        "drop": lambda q, o: q.drop(columns=["n"], inplace=True), "series rename": lambda q, o: q["z"].rename("y", inplace=True),
    },
    "unknown": {
        "infer_objects": lambda q, o: q.infer_objects(), "convert_dtypes": lambda q, o: q.convert_dtypes(),
        "swaplevel": lambda q, o: q.swaplevel(), "to_period": lambda q, o: q.to_period(),
        "factorize": lambda q, o: q["z"].factorize(), "explode two": lambda q, o: q.explode(["l", "z"]),
        "squeeze": lambda q, o: q.squeeze(), "set_flags": lambda q, o: q.set_flags(allows_duplicate_labels=False),
        "insert": lambda q, o: q.insert(0, "k", 1), "isetitem": lambda q, o: q.isetitem(0, 1),
        "map dict-subclass": lambda q, o: q["z"].map(Missing({1: 2})), "bogus": lambda q, o: q.bogus_method(),
        "filter(axis=0)": lambda q, o: q.filter(items=[0], axis=0), "first_valid_index": lambda q, o: q.first_valid_index(),
        "series bogus": lambda q, o: q["z"].bogus_method(), "dp bogus": lambda q, o: q.dp.bogus_method(),
    },
}
# What a refusal may raise: refused operations, and errors decided from the schema and the arguments alone.
REFUSALS = ("RefusedError", "AlreadyProtectedError", "TypeError", "AttributeError", "ValueError", "KeyError")


def _refused_pipeline(key: str) -> Callable[..., Any]:
    def refused(ctx: Context, f: Any) -> Any:
        p = ctx.protect()
        q = ctx.see(p.assign(z=p["n"].map(f), w=p.apply(f, axis=1)), "assign")
        other = ctx.protect() if key == "mixing" else f
        for name, operation in REFUSED[key].items():
            ctx.attempt(f"refused {name}", lambda operation=operation: operation(q, other))
        return p.dp.count(epsilon=E)

    refused.__name__ = f"refused_{key}"
    return refused


for _key in REFUSED:
    pipeline(_key)(_refused_pipeline(_key))


# the analyst's arguments ----------------------------------------------------------------------------


def _set(frame: Any, key: Any, value: Any) -> Any:
    frame = frame.copy()
    frame[key] = value
    return frame


def _loc_set(frame: Any, value: Any) -> Any:
    frame = frame.copy()
    frame.loc[frame["n"] > 30, "n"] = value
    return frame


def _attempt_all(ctx: Context, arg: Arg, operations: dict[str, Callable[[Any], Any]]) -> None:
    for name, operation in operations.items():
        ctx.attempt(name, lambda operation=operation: operation(arg.make()))


@pipeline("rowwise", uses="argument")
def arguments_in_comparisons(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    _attempt_all(ctx, arg, {
        "==": lambda o: p["n"] == o, "!=": lambda o: p["s"] != o, "<": lambda o: p["x"] < o,
        ">= text": lambda o: p["s"] >= o, "date <": lambda o: p["d"] < o, "categorical ==": lambda o: p["c"] == o,
        "list ==": lambda o: p["l"] == o, "between": lambda o: p["n"].between(o, 1000),
        "isin": lambda o: p["n"].isin([o, 1]), "isin text": lambda o: p["s"].isin([o, "bob"]), "isin o": lambda o: p["n"].isin(o),
        "isin dict": lambda o: p.isin({"n": [o]}), "list isin": lambda o: p["l"].isin([o, (1, 2)]),
        "query": lambda o: p.query("n == @o or s == @o", local_dict={"o": o}),
        "query in": lambda o: p.query("s in @objs", local_dict={"objs": [o, "bob"]}),
        "map dict": lambda o: p["s"].map({o: 1, "bob": 2}), "map o": lambda o: p["n"].map(o),
        "map Series": lambda o: p["s"].map(pd.Series([1], index=[o])), "contains": lambda o: p["s"].str.contains(o),
        "startswith": lambda o: p["s"].str.startswith(o), "str.replace": lambda o: p["s"].str.replace(o, "x"),
        "str.replace repl": lambda o: p["s"].str.replace("a", o), "per column": lambda o: p[["n", "x"]] == [o, 1],
        "frame ==": lambda o: p[["n", "s"]] == o,
    })
    return p.dp.count(epsilon=E)


@pipeline("rowwise", uses="argument")
def arguments_in_arithmetic(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    _attempt_all(ctx, arg, {
        "+": lambda o: p["n"] + o, "radd": lambda o: o + p["n"], "rmul": lambda o: o * p["x"], "ufunc": lambda o: np.add(p["n"], o),
        "round": lambda o: p["x"].round(o), "add(fill_value=)": lambda o: p["x"].add(1, fill_value=o),
        "eval": lambda o: p.eval("k = n + @o", local_dict={"o": o}), "frame +": lambda o: p[["n", "x"]] + o,
    })
    return p.dp.count(epsilon=E)


@pipeline("rowwise", uses="argument")
def arguments_as_fill_values(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    _attempt_all(ctx, arg, {
        "fillna": lambda o: p["x"].fillna(o), "fillna dict": lambda o: p.fillna({"x": o}), "frame fillna": lambda o: p.fillna(o),
        "date fillna": lambda o: p["d"].fillna(o), "categorical fillna": lambda o: p["c"].fillna(o),
        "replace": lambda o: p["n"].replace(o, 0), "replace dict": lambda o: p["s"].replace({o: "q"}),
        "replace value": lambda o: p["s"].replace("ann", o), "frame replace": lambda o: p.replace({"s": {o: "q"}}),
        "where": lambda o: p["n"].where(p["n"] > 30, o), "mask": lambda o: p["s"].mask(p["n"] > 30, o),
        "clip": lambda o: p["x"].clip(o, None), "loc set": lambda o: _loc_set(p, o), "assign": lambda o: p.assign(k=o),
        "where frame": lambda o: p[["n", "x"]].where(p[["n", "x"]] > 1, o),
    })
    return p.dp.count(epsilon=E)


@pipeline("rowwise", uses="argument")
def arguments_as_keys(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    queries: dict[str, Callable[[Any], Any]] = {
        "value_counts": lambda o: p["s"].dp.value_counts(keys=[o, "bob"], sort=False, epsilon=E),
        "value_counts(keys=o)": lambda o: p["n"].dp.value_counts(keys=o, sort=False, epsilon=E),
        "groupby": lambda o: p.dp.groupby("s", keys=[o, "bob"]).count(epsilon=E),
        "groupby sum": lambda o: p.dp.groupby("n", keys=[o, 20])["x"].sum(bounds=(0, 5), epsilon=E),
        "crosstab": lambda o: p.dp.crosstab("s", "c", keys={"s": [o, "bob"]}, epsilon=E),
        "frame value_counts": lambda o: p.dp.value_counts(["s"], keys={"s": [o, "bob"]}, sort=False, epsilon=E),
        "mode": lambda o: p["s"].dp.mode(keys=[o, "bob"], epsilon=E),
        "top_k": lambda o: p["s"].dp.top_k(1, keys=[o, "bob"], epsilon=E),
        "histogram": lambda o: p["n"].dp.histogram(bins=[0, o, 1000], epsilon=E),
        "mean bounds": lambda o: p["n"].dp.mean(bounds=(0, o), epsilon=E),
        "quantile": lambda o: p["x"].dp.quantile(o, bounds=(0, 5), epsilon=E),
        "dates value_counts": lambda o: p["d"].dp.value_counts(keys=[o], sort=False, epsilon=E),
    }
    for name, query in queries.items():
        ctx.attempt(name, lambda query=query: query(arg.make()))
    return p.dp.count(epsilon=E)


@pipeline("rowwise", uses="argument")
def arguments_as_categories(ctx: Context, arg: Arg) -> Any:
    p = ctx.attempt("protect(categories=)", lambda: ctx.protect(categories={"s": [arg.make(), "bob"]}))
    if p is None:
        p = ctx.protect()
    return p["s"].dp.value_counts(sort=False, epsilon=E) if isinstance(p.dtypes["s"], pd.CategoricalDtype) \
        else p.dp.count(epsilon=E)


@pipeline("rowwise", uses="argument")
def arguments_of_cut(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    ctx.attempt("cut(bins=)", lambda: p["n"].cut([0, arg.make(), 1000]))
    ctx.attempt("cut(bins=) floats", lambda: p["x"].cut([0.0, 1.0, arg.make()]))
    cut = ctx.attempt("cut(labels=)", lambda: p["n"].cut([0, 100, 1000], labels=[arg.make(), "hi"]))
    ctx.attempt("astype(CategoricalDtype)", lambda: p["s"].astype(pd.CategoricalDtype([arg.make(), "bob"])))
    if cut is None:
        return p.dp.count(epsilon=E)
    return cut.dp.value_counts(sort=False, epsilon=E)


@pipeline("columns", uses="argument")
def arguments_as_labels(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    renamed = ctx.attempt("rename", lambda: p.rename(columns={"n": arg.make()}))
    ctx.attempt("setitem", lambda: _set(p, arg.make(), p["x"]))
    ctx.attempt("set columns", lambda: _set_columns(p[["n", "x"]], [arg.make(), "xx"]))
    ctx.attempt("melt(var_name=)", lambda: p[["n", "c"]].melt(id_vars=["c"], var_name=arg.make()))
    ctx.attempt("melt(value_name=)", lambda: p[["n", "c"]].melt(id_vars=["c"], value_name=arg.make()))
    ctx.attempt("series rename", lambda: p["n"].rename(arg.make()))
    ctx.attempt("to_frame(name=)", lambda: p["n"].to_frame(arg.make()))
    ctx.attempt("add_suffix", lambda: p.add_suffix(arg.make()))
    if renamed is None:
        return p.dp.count(epsilon=E)
    melted = ctx.see(renamed[[c for c in renamed.columns if c not in ("l", "d")]].melt(id_vars=["c"]), "melt")
    stacked = ctx.see(renamed[["x", "s"]].stack(), "stack")
    return counts(melted), stacked.dp.count(epsilon=E)


def _set_columns(frame: Any, labels: list[Any]) -> Any:
    frame = frame.copy()
    frame.columns = labels
    return frame


@pipeline("merge_public", uses="argument")
def arguments_in_public_tables(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    tables: dict[str, Callable[[], Any]] = {
        "key": lambda: p.merge(pd.DataFrame({"s": pd.Series([arg.make(), "bob"], dtype=object), "w": [1.0, 2.0]}), on="s"),
        "key left": lambda: p.merge(pd.DataFrame({"s": pd.Series([arg.make(), "bob"], dtype=object), "w": [1.0, 2.0]}),
                                    on="s", how="left"),
        "numeric key": lambda: p.merge(pd.DataFrame({"n": pd.Series([arg.make(), 20], dtype=object), "w": [1.0, 2.0]}),
                                       on="n"),
        "value": lambda: p.merge(pd.DataFrame({"s": ["bob"], "w": pd.Series([arg.make()], dtype=object)}), on="s"),
        "cross": lambda: p.merge(pd.DataFrame({"k": pd.Series([arg.make()], dtype=object)}), how="cross"),
        "subclass": lambda: p.merge(FrameOf(arg.make()), on="s"),
        "on=": lambda: p.merge(PUBLIC_C, on=arg.make()),
        "suffixes": lambda: p.merge(PUBLIC_C.assign(n=1), on="c", suffixes=(arg.make(), "_r")),
        "Series": lambda: p.merge(pd.Series([arg.make()], name="s", dtype=object)),
    }
    merged = None
    for name, table in tables.items():
        result = ctx.attempt(name, table)
        merged = merged if result is None or name != "key left" else result
    if merged is None:
        return p.dp.count(epsilon=E)
    e = ctx.see(merged.explode("l").sort_values("w").set_index("s").reset_index(), "explode, sort, index")
    return counts(e), merged["w"].dp.sum(bounds=(0, 5), epsilon=E)


def FrameOf(value: Any) -> Any:
    from adversarial import FrameSub

    return FrameSub({"s": pd.Series([value, "bob"], dtype=object), "w": [1.0, 2.0]})


@pipeline("repeat", uses="argument")
def arguments_as_concat_keys(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    both = ctx.attempt("concat(keys=)", lambda: dpframe.concat([p, p[p["n"] > 30]], keys=[arg.make(), "k"]))
    ctx.attempt("concat(keys=o)", lambda: dpframe.concat([p, p], keys=arg.make()))
    ctx.attempt("concat(axis=1, keys=)", lambda: dpframe.concat([p[["n"]], p[["x"]]], axis=1, keys=[arg.make(), "k"]))
    if both is None:
        return p.dp.count(epsilon=E)
    return counts(ctx.see(both.explode("l"), "explode"))


@pipeline("rowwise", uses="dtype")
def dtypes_of_astype(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    for column in ("n", "x", "s", "c", "d", "l"):
        ctx.attempt(f"{column}.astype", lambda column=column: p[column].astype(arg.make()))
    ctx.attempt("frame astype dict", lambda: p.astype({"n": arg.make()}))
    ctx.attempt("map(dtype=)", lambda: p["n"].map(str, dtype=arg.make()))
    ctx.attempt("apply(axis=1, dtype=)", lambda: p.apply(lambda r: r["n"], axis=1, dtype=arg.make()))
    return p.dp.count(epsilon=E)


@pipeline("rowwise", uses="zone")
def time_zones(ctx: Context, arg: Arg) -> Any:
    p = ctx.protect()
    ctx.attempt("tz_localize", lambda: p["d"].dt.tz_localize(arg.make()))
    ctx.attempt("tz_convert", lambda: p["d"].dt.tz_localize("UTC").dt.tz_convert(arg.make()))
    ctx.attempt("astype DatetimeTZDtype", lambda: p["d"].astype(pd.DatetimeTZDtype(tz=arg.make())))
    ctx.attempt("Timestamp constant", lambda: p["d"] < pd.Timestamp("2020-01-01", tz=arg.make()))
    return p.dp.count(epsilon=E)


FUNCTION_PIPELINES = [p for p in PIPELINES if p.uses == "function"]
ARGUMENT_PIPELINES = [p for p in PIPELINES if p.uses == "argument"]
DTYPE_PIPELINE = next(p for p in PIPELINES if p.uses == "dtype")
ZONE_PIPELINE = next(p for p in PIPELINES if p.uses == "zone")

# Pipelines that fail today because of a library bug, by test ("public": what the analyst sees, "rows":
# everybody else's rows, "argument"/"dtype"/"zone": the argument tests); each bug has a minimal reproduction below.
def _params(pipes: list[Pipeline]) -> list[Any]:
    return [pytest.param(p, id=repr(p)) for p in pipes]


def _arg_params(args: list[Arg]) -> list[Any]:
    return [pytest.param(a, id=a.name) for a in args]


def explore(examples: int) -> Any:
    """Deterministic, no shrinking (the acts are named: the first failing example says what failed)."""
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example, HealthCheck.filter_too_much])


def assert_same(pipe: Pipeline, without: Any, with_target: Any, *, rows: bool = False) -> None:
    """The neighbours' observations are equal; refused operations are refused on both.

    ``rows``: also everybody else's rows (a separate property, checked by its own test for the functions).
    """
    a, b = without.public(), with_target.public()
    for part in ("outcome", "ledger", "warnings"):
        assert a[part] == b[part], f"{pipe!r}: the {part} differs between the neighbours"
    for (name, seen_a), (name_b, seen_b) in zip(a["steps"], b["steps"]):
        assert (name, seen_a) == (name_b, seen_b), f"{pipe!r}: step {name!r} differs between the neighbours"
    assert len(a["steps"]) == len(b["steps"]), f"{pipe!r}: the neighbours ran different numbers of steps"
    for name, seen in b["steps"]:
        if name.startswith("refused "):
            assert seen[0] == "raised" and seen[1] in REFUSALS, f"{pipe!r}: {name} was not refused: {seen}"
    if rows:
        assert_same_rows(pipe, without, with_target)


def assert_same_rows(pipe: Pipeline, without: Any, with_target: Any) -> None:
    for (name, rows_a), (_, rows_b) in zip(without.rows, with_target.rows):
        assert rows_a == rows_b, f"{pipe!r}: step {name!r} changed another person's row"


@pytest.mark.parametrize("pipe", _params(FUNCTION_PIPELINES))
@explore(examples=6)
@given(on_target=acts(), elsewhere=acts(), level=st.sampled_from(["row", "user"]))
@example(on_target=BY_NAME["generator"], elsewhere=returning([0]), level="row")
@example(on_target=returning(decimal.Decimal("sNaN")), elsewhere=returning(1), level="row")
@example(on_target=BY_NAME["sneaky str (raise)"], elsewhere=returning("a"), level="user")
@example(on_target=raising(KeyboardInterrupt), elsewhere=returning(1.5), level="row")
@example(on_target=returning({"k": 1}), elsewhere=returning("a"), level="user")
@example(on_target=returning(1), elsewhere=returning("a"), level="row")
@example(on_target=BY_NAME["echo the argument"], elsewhere=raising(SystemExit), level="user")
def test_neighbours_agree_whatever_the_function_does(pipe: Pipeline, on_target: Act, elsewhere: Act,
                                                     level: str) -> None:
    level = level if level in pipe.levels else pipe.levels[0]
    without, with_target = compare(pipe.run, level, user_function(on_target, elsewhere),
                                   compare_rows=pipe.compare_rows)
    assert_same(pipe, without, with_target)


@pytest.mark.parametrize("pipe", _params(ARGUMENT_PIPELINES))
@explore(examples=8)
@given(arg=arguments(), level=st.sampled_from(["row", "user"]))
@example(arg=next(a for a in ARGUMENTS if a.name == "str comparing with the target"), level="row")
@example(arg=next(a for a in ARGUMENTS if a.name == "int comparing with the target"), level="user")
@example(arg=next(a for a in ARGUMENTS if a.name == "Unhashable()"), level="row")
@example(arg=next(a for a in ARGUMENTS if a.name == "Liar()"), level="row")
@example(arg=next(a for a in ARGUMENTS if a.name == "plain Decimal('NaN')"), level="user")
@example(arg=next(a for a in ARGUMENTS if a.name == "plain Decimal('sNaN')"), level="row")
@example(arg=next(a for a in ARGUMENTS if a.name == "sneaky list raise on target"), level="row")
@example(arg=next(a for a in ARGUMENTS if a.name == "masked array"), level="row")
@example(arg=next(a for a in ARGUMENTS if a.name == "a function"), level="row")
def test_neighbours_agree_whatever_the_arguments_are(pipe: Pipeline, arg: Arg, level: str) -> None:
    level = level if level in pipe.levels else pipe.levels[0]
    without, with_target = compare(pipe.run, level, arg, compare_rows=pipe.compare_rows)
    assert_same(pipe, without, with_target, rows=True)


@pytest.mark.parametrize("arg", _arg_params(DTYPES))
def test_neighbours_agree_whatever_the_dtype(arg: Arg) -> None:
    assert_same(DTYPE_PIPELINE, *compare(DTYPE_PIPELINE.run, "row", arg), rows=True)


@pytest.mark.parametrize("arg", _arg_params(ZONES))
def test_neighbours_agree_whatever_the_time_zone(arg: Arg) -> None:
    assert_same(ZONE_PIPELINE, *compare(ZONE_PIPELINE.run, "user", arg), rows=True)


# Functions whose results mix types and missing values: what makes pandas re-infer a column from its values.
ROW_PAIRS = [(returning(None), returning(1)), (returning("x"), returning(1)), (returning(1.5), returning(1)),
             (BY_NAME["echo the argument"], raising(SystemExit)), (raising(ValueError), returning(pd.NaT)),
             (BY_NAME["generator"], returning([0]))]
ROW_PIPELINES = [p for p in FUNCTION_PIPELINES if p.compare_rows and p.key not in REFUSED]


@pytest.mark.parametrize("pipe", _params(ROW_PIPELINES))
def test_other_peoples_rows_do_not_depend_on_the_target(pipe: Pipeline) -> None:
    """A row-wise operation computes each row from that row alone: the target's value (a string, a float, a
    missing value) must not change another row's value or its type (1 -> 1.0, None -> nan), which a later
    function can see and a count can add up over everybody."""
    for on_target, elsewhere in ROW_PAIRS:
        without, with_target = compare(pipe.run, pipe.levels[0], user_function(on_target, elsewhere))
        assert_same_rows(pipe, without, with_target)


def test_every_row_of_the_rules_has_a_pipeline() -> None:
    assert {p.key for p in FUNCTION_PIPELINES} == {r.key for r in RULES}


# -- direct tests ---------------------------------------------------------------------------------------


def protected(level: str = "row", with_target: bool = True, **options: Any) -> Any:
    frame = neighbours(level)[1 if with_target else 0]
    if level == "user":
        options = {"privacy_unit": "user", "max_contributions": 2, **options}
    return frame.dp.protect(epsilon=1000.0, ledger=dpframe.Ledger.in_memory(), **options)


# Where the analyst's functions meet private values, one column each.
SITES: dict[str, Callable[[Any, Any], Any]] = {
    "map": lambda p, f: p["n"].map(f),
    "apply": lambda p, f: p["x"].apply(f),
    "apply(args=)": lambda p, f: p["n"].apply(f, args=(1,)),
    "apply(axis=1)": lambda p, f: p.apply(f, axis=1),
    "frame map": lambda p, f: p[["n", "s", "l"]].map(f)["l"],
    "map(na_action=ignore)": lambda p, f: p["d"].map(f, na_action="ignore"),
    "str.replace(repl=)": lambda p, f: p["s"].str.replace(r"\w+", f, regex=True),
    "categorical map": lambda p, f: p["c"].map(f),
}


@pytest.mark.parametrize("kind", EXCEPTIONS, ids=lambda k: k.__name__)
def test_every_exception_a_function_raises_becomes_a_missing_value(kind: type[BaseException]) -> None:
    p = protected("user")

    def fail(value: Any, *args: Any) -> Any:
        raise make_exception(kind)

    for name, site in SITES.items():
        exact = site(p, fail).dp.unprotected()
        if name == "str.replace(repl=)":  # a failed replacement is an empty one (re.sub reads None as "")
            assert exact.tolist()[:2] == ["", ""], name
            continue
        assert exact.isna().all(), name
    # A sort key that raises keeps the order; a block that raises counts as the bounds' midpoint.
    order = p.sort_values("n", key=fail).dp.unprotected()["n"].tolist()
    assert order == neighbours("user")[1]["n"].tolist()
    with seeded_noise(0):
        answer = p.dp.sample_and_aggregate(fail, bounds=(0, 1), epsilon=1.0, blocks=2)
    assert isinstance(answer, float)


@pytest.mark.parametrize("act", [returning(1), returning(1.5), returning(True), returning(None), returning("a"),
                                 returning(pd.Timestamp("2020-01-01")), returning((1, 2)), BY_NAME["echo the argument"]],
                         ids=repr)
def test_a_function_gives_an_object_column_or_the_dtype_asked(act: Act) -> None:
    p = protected()
    f = user_function(act, act)
    assert p["n"].map(f).dtype == object
    assert p["x"].apply(f).dtype == object
    assert p.apply(f, axis=1).dtype == object
    assert (p[["n", "s"]].map(f).dtypes == object).all()
    assert p["s"].map(f).dtype == object
    assert p["n"].map(f, dtype="Int64").dtype == "Int64"
    assert p["n"].apply(f, dtype="boolean").dtype == "boolean"
    assert p.apply(f, axis=1, dtype="Float64").dtype == "Float64"
    assert (p[["n", "s"]].map(f, dtype="string").dtypes == "string").all()


class _Kept(list):  # type: ignore[type-arg]
    """A list subclass (plain lists cannot be weakly referenced)."""


class _KeptDict(dict):  # type: ignore[type-arg]
    pass


# What a function may return, each an object that can be weakly referenced.
RETURNED: dict[str, Callable[[], Any]] = {
    "instance": Weakly, "list subclass": lambda: _Kept([1, 2]), "dict subclass": lambda: _KeptDict(k=1),
    "set": lambda: {1, 2}, "frozenset": lambda: frozenset({1}), "generator": lambda: (v for v in [0]),
    "numpy array": lambda: np.array([1.0, 2.0]), "object array": lambda: np.array([Weakly()], dtype=object),
    "Series": lambda: pd.Series([1, 2]), "DataFrame": lambda: pd.DataFrame({"a": [1]}), "function": lambda: (lambda: 0),
}


@pytest.mark.parametrize("name", list(RETURNED))
def test_nothing_a_function_returned_stays_alive(name: str) -> None:
    p = protected("user")
    refs: list[weakref.ref[Any]] = []

    def keep(value: Any) -> Any:
        refs.append(weakref.ref(value))
        return value

    def f(value: Any, *args: Any) -> Any:
        return keep(RETURNED[name]())

    def fail(value: Any, *args: Any) -> Any:
        raise keep(ValueError(value))

    results = []
    for site in SITES.values():
        for func in (f, fail):
            try:
                results.append(site(p, func))
            except TypeError:  # decided from the schema (a dict cannot be a category): not the point here
                pass
    results.append(p.sort_values("n", key=lambda column: keep(RETURNED[name]())))
    with seeded_noise(0):
        results.append(p.dp.sample_and_aggregate(f, bounds=(0, 1), epsilon=1.0, blocks=2))
    assert refs
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"{len(alive)} of {len(refs)} returned objects are still alive: {alive[:3]}"


def test_the_generator_explode_binary_search_learns_nothing() -> None:
    """The review's attack: a generator for rows at or above a threshold made explode raise; ~20 calls, ε = 0."""

    def attack(ctx: Context, threshold: int) -> Any:
        p = ctx.protect()
        rows = ctx.see(p.apply(lambda r: (v for v in [0]) if r["n"] >= threshold else [0], axis=1), "apply")
        values = ctx.see(p["n"].map(lambda v: (v for v in [0]) if v >= threshold else [0]), "map")
        e = ctx.see(rows.explode(), "explode")
        ctx.see(p.assign(z=values).explode("z"), "frame explode")
        return e.dp.count(epsilon=E)

    seen = []
    for threshold in (0, 30, 50, 500, 976, 977, 978, 10**6):
        without, with_target = compare(attack, "row", threshold)
        assert without.public() == with_target.public(), threshold
        assert with_target.outcome[0] == "released"
        seen.append(with_target.public())
    assert all(s == seen[0] for s in seen), "the threshold shows in what the analyst sees"


HASH_RAISING: dict[str, Callable[[], Any]] = {
    "str subclass": lambda: sneaky(str, ("__hash__", "__eq__"), "raise", ValueError),
    "int subclass": lambda: sneaky(int, ("__hash__",), "raise", KeyboardInterrupt),
    "tuple subclass": lambda: sneaky(tuple, ("__hash__", "__eq__", "__lt__"), "raise", SystemExit),
    "instance": Unhashable, "lying hash": lambda: sneaky(str, ("__hash__", "__eq__"), "lie"),
}


@pytest.mark.parametrize("name", list(HASH_RAISING))
def test_objects_whose_hash_raises_reach_no_operation(name: str) -> None:
    """The review's second attack: a returned object whose __hash__ raised escaped with its value in the message."""

    def run(ctx: Context, _: Any) -> Any:
        p = ctx.protect()
        q = ctx.see(p.assign(z=p["n"].map(lambda v: HASH_RAISING[name]() if v == TARGET_N else "a"),
                             w=p.apply(lambda r: HASH_RAISING[name]() if r["n"] == TARGET_N else 1, axis=1)), "assign")
        operations: dict[str, Callable[[], Any]] = {
            "value_counts": lambda: q["z"].dp.value_counts(keys=KEYS, sort=False, epsilon=E),
            "groupby": lambda: q.dp.groupby("z", keys=KEYS).count(epsilon=E),
            "groupby two": lambda: q.dp.groupby(["z", "w"], keys={"z": KEYS, "w": KEYS}).count(epsilon=E),
            "crosstab": lambda: q.dp.crosstab("z", "c", keys={"z": KEYS}, epsilon=E),
            "nunique": lambda: q["z"].dp.nunique(epsilon=E), "mode": lambda: q["z"].dp.mode(keys=KEYS, epsilon=E),
            "top_k": lambda: q["w"].dp.top_k(2, keys=KEYS, epsilon=E),
            "frame value_counts": lambda: q.dp.value_counts(["z", "c"], keys={"z": KEYS}, sort=False, epsilon=E),
            "set_index": lambda: q.set_index("z").dp.count(epsilon=E),
            "set_index two": lambda: q.set_index(["w", "z"]).reset_index().dp.count(epsilon=E),
            "sort_index": lambda: q.set_index("z").sort_index().dp.count(epsilon=E),
            "sort_values": lambda: q.sort_values(["z", "w"]).dp.count(epsilon=E),
            "merge": lambda: q.merge(PUBLIC_Z, on="z").dp.count(epsilon=E),
            "merge left": lambda: q.merge(PUBLIC_Z.rename(columns={"z": "w", "w": "v"}), on="w", how="left")
            .dp.count(epsilon=E),
            "explode": lambda: q.explode("z").dp.groupby("z", keys=KEYS).count(epsilon=E),
            "melt": lambda: q[["z", "w", "c"]].melt(id_vars=["c"]).dp.groupby("value", keys=KEYS).count(epsilon=E),
            "stack": lambda: q[["z", "w"]].stack().dp.value_counts(keys=KEYS, sort=False, epsilon=E),
            "concat": lambda: dpframe.concat([q, q]).dp.groupby("z", keys=KEYS).count(epsilon=E),
            "isin": lambda: q["z"].isin(["a"]).dp.value_counts(keys=[True, False], sort=False, epsilon=E),
            "astype str": lambda: q["z"].astype(str).dp.value_counts(keys=["a"], sort=False, epsilon=E),
        }
        for operation, run_it in operations.items():
            ctx.attempt(operation, run_it)
        return p.dp.count(epsilon=E)

    for level in ("row", "user"):
        without, with_target = compare(run, level, None)
        assert without.public() == with_target.public(), level
        assert not [s for s in with_target.steps if s[1][0] == "raised"], with_target.steps


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt, GeneratorExit, Boom], ids=lambda k: k.__name__)
def test_an_exit_raised_on_a_predicate_is_a_missing_value(kind: type[BaseException]) -> None:
    def run(ctx: Context, _: Any) -> Any:
        p = ctx.protect()

        def exit_on_target(value: Any, *args: Any) -> Any:
            if value is TARGET_N or (isinstance(value, pd.Series) and value["n"] == TARGET_N) or value == TARGET_S:
                raise make_exception(kind)
            return 1

        results = [ctx.see(site(p, exit_on_target), name) for name, site in SITES.items()]
        ctx.see(p.sort_values("n", key=lambda column: exit_on_target(TARGET_N) if (column == TARGET_N).any() else column),
                "sort key")
        ctx.attempt("sample_and_aggregate", lambda: p.dp.sample_and_aggregate(
            lambda block: exit_on_target(TARGET_N) if (block["n"] == TARGET_N).any() else 0.5,
            bounds=(0, 1), epsilon=E, blocks=2))
        return results[0].dp.value_counts(keys=[1], sort=False, epsilon=E)

    for level in ("row", "user"):
        without, with_target = compare(run, level, None)
        assert with_target.outcome[0] == "released", with_target.outcome
        assert without.public() == with_target.public(), level


@explore(examples=30)
@given(on_target=acts(), elsewhere=acts(), vector=st.booleans(), level=st.sampled_from(["row", "user"]))
@example(on_target=raising(SystemExit), elsewhere=returning(0.5), vector=False, level="row")
@example(on_target=BY_NAME["sneaky float (raise)"], elsewhere=returning(0.5), vector=False, level="user")
@example(on_target=BY_NAME["range(10**12)"], elsewhere=returning([0.5, 0.5]), vector=True, level="row")
@example(on_target=BY_NAME["sneaky list (lie)"], elsewhere=returning([0.5, 0.5]), vector=True, level="user")
def test_sample_and_aggregate_ignores_what_the_function_does(on_target: Act, elsewhere: Act, vector: bool,
                                                             level: str) -> None:
    def run(ctx: Context, f: Any) -> Any:
        p = ctx.protect()
        return p.dp.sample_and_aggregate(f, bounds=[(0, 1), (0, 1)] if vector else (0, 1), epsilon=E, blocks=2)

    without, with_target = compare(run, level, user_function(on_target, elsewhere), compare_rows=False)
    assert with_target.outcome[0] == "released" and without.outcome[0] == "released", with_target.outcome
    assert without.public() == with_target.public()


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="needs Python's own SIGINT handler")
def test_a_real_ctrl_c_still_stops_the_work() -> None:
    p = protected()

    def press_ctrl_c(value: Any) -> Any:
        signal.raise_signal(signal.SIGINT)
        return 1

    with pytest.raises(KeyboardInterrupt):
        p["n"].map(press_ctrl_c)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # Afterwards, a KeyboardInterrupt raised by code is data again.
    assert p["n"].map(lambda v: (_ for _ in ()).throw(KeyboardInterrupt())).dp.unprotected().isna().all()


def test_the_catalogue_is_varied() -> None:
    """The acts cover what the issue lists (a guard against trimming the catalogue by accident)."""
    names = " ".join(act.name for act in CATALOGUE)
    for word in ("generator", "iter", "zip", "map", "sneaky str", "sneaky list", "sneaky dict", "10**6", "nested",
                 "numpy", "Series", "DataFrame", "raise KeyboardInterrupt", "raise SystemExit", "raise Boom", "Liar"):
        assert word in names, word
    assert len(ARGUMENTS) > 40 and len(CATALOGUE) > 150


# -- minimal reproductions of the bugs this file found, as regression tests --------------------------------


def both(frame_of: Callable[[bool], pd.DataFrame], observe_one: Callable[[Any], Any], **options: Any) -> list[Any]:
    """``observe_one`` on the protected neighbours (without, with the target): a value, or the exception raised."""
    seen = []
    for with_target in (False, True):
        p = frame_of(with_target).dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory(), **options)
        try:
            seen.append(observe_one(p))
        except BaseException as error:  # noqa: BLE001
            seen.append((type(error).__name__, str(error)))
    return seen


def salaries(with_target: bool) -> pd.DataFrame:
    return pd.DataFrame({"n": [41, 52, 63] + ([TARGET_N] if with_target else [])})


def test_bug_1_a_signaling_nan_from_a_function_raises_only_where_it_exists() -> None:
    """protect() refuses Decimal('sNaN') (pandas cannot test it for missing); a function returning one, or a
    constant, used to reach dropna, fillna and nunique, which raised InvalidOperation exactly when the target was
    in the data. A Decimal NaN is now missing (None) as a result, and nan as a constant."""
    def snan(value: Any) -> Any:
        return decimal.Decimal("sNaN") if value == TARGET_N else 1

    for operation in (lambda p: p.assign(z=p["n"].map(snan)).dropna().dp.count(epsilon=1.0),
                      lambda p: p["n"].map(snan).fillna(0).dtype,
                      lambda p: type(p["n"].map(snan).dp.nunique(epsilon=1.0)).__name__,
                      lambda p: p["n"].map(lambda v: None if v == TARGET_N else 1.0)
                      .fillna(decimal.Decimal("sNaN")).dropna().dp.count(epsilon=1.0)):
        without, with_target = both(salaries, operation)
        assert type(without) is type(with_target) and not isinstance(with_target, tuple), (without, with_target)


def test_bug_2_sort_index_by_level_raises_on_mixed_values() -> None:
    """The probe of sort_index ran on data.iloc[:0], whose MultiIndex kept all its level values: sorting them
    raised TypeError ('decided from the column types; no data was read') when the target's value was text.
    Probes now drop unused level values."""
    without, with_target = both(salaries, lambda p: p.assign(z=p["n"].map(lambda v: "t" if v == TARGET_N else 1))
                                .set_index("z").sort_index(level="z").dtypes.tolist())
    assert without == with_target, with_target


def test_bug_3_set_index_then_reset_index_changes_other_peoples_values() -> None:
    """pandas' reset_index infers an object level's type from its values: with the target's 1.5 (or a missing
    value), everybody's 1 came back as 1.0 -- a type a later function sees, so one person changed every row (a
    count of float rows moved by n). Object levels are now Label objects, read back value by value."""
    def types(p: Any) -> Any:
        q = p.assign(z=p["n"].map(lambda v: 1.5 if v == TARGET_N else 1)).set_index("z").reset_index()
        return q.dp.unprotected()["z"].map(type).tolist()[:3]

    without, with_target = both(salaries, types)
    assert without == with_target, (without, with_target)


def test_bug_4_missing_values_of_others_change_with_the_target() -> None:
    """pandas writes a missing value of an object column as None or nan depending on the other values (explode,
    melt, .str methods), or NaT or nan (arithmetic): everybody else's marker changed with the target, and `v is
    None` in a later function, then a count, added that up. A missing object value is now always None."""
    def reprs(operation: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda p: [repr(v) for v in operation(p).dp.unprotected().tolist()[:3]]

    def text(v: Any) -> Any:
        return "t" if v == TARGET_N else None

    for operation in (lambda p: p.assign(z=p["n"].map(text)).explode("z")["z"],
                      lambda p: p.assign(z=p["n"].map(text))[["z"]].melt()["value"],
                      lambda p: p["n"].map(lambda v: "t" if v == TARGET_N else 1).str.upper(),
                      lambda p: p["n"].map(lambda v: None if v == TARGET_N else pd.NaT) + 1):
        without, with_target = both(salaries, reprs(operation))
        assert without == with_target[:len(without)], (without, with_target)


def test_bug_5_a_callable_column_key_is_called_with_the_protected_frame() -> None:
    """pandas' __setitem__ calls a callable key with the frame (com.apply_if_callable): the analyst's function got
    the exact rows, and what it returned became a column label -- the data, released at no cost. The key is now
    called with the protected frame, as a condition or assign's function is."""
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    q = p.copy()
    with pytest.raises(RefusedError, match="tolist"):
        q[lambda d: str(d["n"].tolist())] = p["n"]
    r = p.copy()
    with pytest.raises(RefusedError, match="len"):
        r.loc[:, lambda d: f"{len(d)} rows"] = p["n"]
    r.loc[:, lambda d: f"{len(d.columns)} columns"] = p["n"]  # what the protected frame offers is fine
    q[lambda d: "copy"] = p["n"]
    assert list(q.columns) == ["n", "copy"] and list(r.columns) == ["n", "1 columns"]


def test_bug_6_categorical_fillna_with_a_decimal_nan_raises_only_if_a_value_is_missing() -> None:
    """pd.isna(Decimal('NaN')) is true, so _where did not add it to the categories; pandas then refused to set it
    -- but only in rows it filled, so the TypeError said whether any category value was missing."""
    def categories(with_target: bool) -> pd.DataFrame:
        return pd.DataFrame({"c": pd.Categorical(["a", "b"] + ([None] if with_target else []), categories=["a", "b"])})

    without, with_target = both(categories, lambda p: str(p["c"].fillna(decimal.Decimal("NaN")).dtype))
    assert without == with_target, (without, with_target)


def test_bug_7_an_object_claiming_to_be_text_is_taken_for_a_constant() -> None:
    """is_constant() used isinstance, which believes a __class__ property; public_value then turned the list into
    a list, pandas lined it up with the rows, and its error message gave the exact number of rows."""
    class ClaimsText(list):  # type: ignore[type-arg]
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            return str

    for operation in (lambda p: p["n"].fillna(ClaimsText([1, 2])), lambda p: p.assign(k=ClaimsText([1, 2])),
                      lambda p: p["n"].add(1, fill_value=ClaimsText([1, 2]))):
        without, with_target = both(salaries, lambda p: str(operation(p).dtypes))
        assert without == with_target, (without, with_target)


def test_bug_8_numpy_masked_arrays_read_the_private_data() -> None:
    """numpy.ma reads an operand's `_data` attribute (np.ma.getdata): it returned the private frame itself, and
    `masked + p['n']` computed on the private Series (its broadcast error gave the number of rows). The rows
    are now held under a name no library probes."""
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(RefusedError):
        np.ma.getdata(p)
    without, with_target = both(salaries, lambda p: np.ma.masked_array([1, 2], mask=[0, 1]) + p["n"])
    assert without == with_target, (without, with_target)


def test_bug_9_reset_index_after_concat_with_keys() -> None:
    """Not data-dependent, found on the way: the key level has no name, and reset_index looked it up as None."""
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    assert "n" in dpframe.concat([p, p], keys=["a", "b"]).reset_index().columns


def test_bug_10_a_time_zone_with_an_offset_of_the_analysts() -> None:
    """public_zone accepted any datetime.timezone, whose offset may be a timedelta subclass of the analyst's: pandas
    kept it and ran its __eq__ when it met an equal zone in its cache, so a raising __eq__ made dt.strftime raise
    or map/astype(object)/dt.date make every value missing -- depending on pandas' cache, not on the arguments
    alone. Standard zones are now rebuilt from plain parts."""
    calls: list[Any] = []

    class CountingDelta(datetime.timedelta):
        def __eq__(self, other: Any) -> bool:
            calls.append(other)
            return datetime.timedelta.__eq__(self, other)

        __hash__ = datetime.timedelta.__hash__

    for _ in range(2):
        p = salaries(True).assign(d=pd.Timestamp("2020-01-01")).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
        zoned = p["d"].dt.tz_localize(datetime.timezone(CountingDelta(hours=1)))
        zoned.dt.strftime("%H"), zoned.dt.date
    assert not calls, f"the analyst's timedelta ran {len(calls)} times inside pandas"


def test_bug_11_a_complex_value_gives_other_rows_arbitrary_numbers() -> None:
    """_parse_numbers used pd.to_numeric(errors='coerce'); after a complex value, pandas leaves the entries it
    cannot parse uninitialised (observed: 0.0, denormals, or the values of another column), and the complex
    column was then cast to float: with the target's 1j first, everybody's 'a' became a number. Complex values
    are now taken out before pandas parses."""
    def first_target(with_target: bool) -> pd.DataFrame:
        return pd.DataFrame({"n": ([TARGET_N] if with_target else []) + [41, 52, 63, 74]})

    without, with_target = both(first_target, lambda p: p["n"].map(lambda v: 1j if v == TARGET_N else "a")
                                .astype("Float64").dp.unprotected().tolist()[-4:])
    assert [repr(v) for v in without] == [repr(v) for v in with_target], (without, with_target)


def test_bug_12_keys_made_of_tuples_of_one_length() -> None:
    """Found after the others, by the full suite on pandas 2.2 (a crosstab of a column of tuples raised after the
    charge): pandas builds a MultiIndex through a Categorical, which reads a level of tuples of one length as a
    second dimension and raises, and ``pd.Index`` of tuples makes a MultiIndex -- both depending on the tuples'
    lengths. Cells, keys and row labels are now built from factorised levels, never from tuples; here the
    target's 3-tuple among everybody's pairs must change neither an error nor the shape of the keys."""
    def frame_of(with_target: bool) -> pd.DataFrame:
        return pd.DataFrame({"n": [41, 52, 63] * 40 + ([TARGET_N] if with_target else []),
                             "s": ["a", "b", "c"] * 40 + (["a"] if with_target else [])})

    def shapes(p: Any) -> list[Any]:
        z = p.assign(t=p["n"].map(lambda v: (1, 2, 3) if v == TARGET_N else (v % 2, 0)))
        with seeded_noise(0):
            results = [z["t"].dp.value_counts(epsilon=5.0, delta=1e-4),
                       z.dp.crosstab("t", "s", epsilon=5.0, delta=1e-4),
                       z.dp.groupby(["t", "s"]).count(epsilon=5.0, delta=1e-4),
                       z.dp.value_counts(["s", "t"], epsilon=5.0, delta=1e-4)]
        return [(type(r.index).__name__, r.index.nlevels) for r in results]

    without, with_target = both(frame_of, shapes, delta=1e-3)
    assert without == with_target, (without, with_target)


# -- an independent adversarial review's findings (after the bugs above were fixed), as regression tests ------


def others(frame_of_rows: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Everybody else's values of the protected result (curator's view, type and value), in row order."""
    def observe(p: Any) -> Any:
        values = frame_of_rows(p).dp.unprotected()
        column = values if isinstance(values, pd.Series) else values.iloc[:, -1]
        return [(type(v).__name__, repr(v)) for v in column.tolist()[:3]]
    return observe


def test_review_a_fraction_subclass_is_no_epsilon() -> None:
    """A Fraction subclass as epsilon= ran its own arithmetic inside dpframe: the noise's scale (zero) and the
    amount charged (nothing). Privacy parameters are read by exact type."""
    from fractions import Fraction

    from dpframe.accounting.costs import Amount

    class Sly(Fraction):
        def __rtruediv__(self, other: Any) -> Any:
            return Fraction(0)

    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(TypeError, match="Sly"):
        p.dp.count(epsilon=Sly(1, 1000))
    forged = Amount(Fraction(1, 10))
    object.__setattr__(forged, "exact", Sly(1, 10))
    with pytest.raises(TypeError, match="Sly"):
        p.dp.count(epsilon=forged)
    assert p.dp.budget.spent.epsilon.exact == 0 and len(p.dp.budget.ledger) == 0


def test_review_agg_subclasses_inside_an_expression_are_refused() -> None:
    """An analyst's subclass of agg.Count inside 2 * ... or agg.maximum(...) set its own sensitivity."""
    from dpframe import agg

    class Whisper(type(agg.count())):  # type: ignore[misc]
        def _sensitivity(self, contributions: int) -> Any:
            from fractions import Fraction
            return Fraction(1, 10**9)

    whisper = Whisper(where="n > 50")
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    for make in (lambda: 2 * whisper, lambda: agg.maximum(whisper, 0), lambda: abs(whisper),
                 lambda: agg.clip(whisper, 0, 1)):
        with pytest.raises(TypeError):
            make()
    with pytest.raises(TypeError):
        p.dp.above_threshold([whisper], threshold=1, epsilon=0.1)
    assert len(p.dp.budget.ledger) == 0


def test_review_explode_and_melt_keep_each_rows_type() -> None:
    """pandas converts an object column whose values are all datetimes to Timestamps (explode, melt): one other
    value from the target kept everybody's datetime.datetime."""
    def marked(p: Any) -> Any:
        return p.assign(m=p["n"].map(lambda v: 0 if v == TARGET_N else datetime.datetime(2020, 1, 1)))

    for operation in (lambda p: marked(p).explode("m")["m"], lambda p: marked(p).melt(id_vars=["n"])["value"]):
        without, with_target = both(salaries, others(operation))
        assert without == with_target, (without, with_target)
    with pytest.raises(RefusedError, match="sparse"):
        marked(salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory()))["m"].astype(
            "Sparse[object]")


def test_review_row_reductions_over_objects_are_per_row() -> None:
    """mean(axis=1) over object columns gave all rows one type: one complex mean made every mean complex."""
    def means(p: Any) -> Any:
        v = p["n"].map(lambda s: complex(1, 1) if s == TARGET_N else (1 if s % 2 else 2.5))
        return p.assign(a=v, b=v)[["a", "b"]].mean(axis=1)

    without, with_target = both(salaries, others(means))
    assert without == with_target, (without, with_target)


def test_review_sorting_labels_and_merge_keys_of_mixed_types_never_raise() -> None:
    """A numpy scalar and a tuple among object labels made set_index raise (their comparison gives an array);
    merge(sort=True) raised on keys of mixed types -- both only when such values existed."""
    public = pd.DataFrame({"k": pd.Series([(1, 2), 3], dtype=object), "w": [1.0, 2.0]})

    def labels(p: Any) -> Any:
        z = p.assign(k=p["n"].map(lambda v: (1, 2) if v == TARGET_N else np.float64(v)))
        return [list(z.set_index("k").sort_index().reset_index().dtypes.astype(str)),
                list(z.merge(public, on="k", sort=True).dtypes.astype(str))]

    without, with_target = both(salaries, labels)
    assert without == with_target, (without, with_target)


def test_review_text_methods_of_bytes_and_text_parsing_are_per_row() -> None:
    """pandas refuses .str.upper on a column of bytes only, and (pandas 2) parses a column of integer texts
    exactly and any other one with a less exact parser: the target's value changed everybody else's."""
    def upper(p: Any) -> Any:
        return p["n"].map(lambda v: "a" if v == TARGET_N else b"x").str.upper()

    def parsed(p: Any) -> Any:
        return p["n"].map(lambda v: "x" if v == TARGET_N else "5258986265376043509").astype("float64")

    for operation in (upper, parsed):
        without, with_target = both(salaries, others(operation))
        assert without == with_target, (without, with_target)


def test_review_decimal_keys_and_canonical_labels() -> None:
    """A Decimal('1e1000000') made private key selection raise (normalize overflowed) only where it existed; and
    a group of equal values was released with its first row's label ((True,) or (1,), frozenset({-0.0})...)."""
    def frame_of(with_target: bool) -> pd.DataFrame:
        return pd.DataFrame({"n": ([TARGET_N] if with_target else []) + [41, 52, 63] * 100})

    def keys(p: Any) -> Any:
        released = []
        for make in (lambda v: (True,) if v == TARGET_N else (1,), lambda v: frozenset({-0.0 if v == TARGET_N else 0.0}),
                     lambda v: decimal.Decimal("1e1000000") if v == TARGET_N else decimal.Decimal("-0")):
            with seeded_noise(0):
                counts = p["n"].map(make).dp.value_counts(epsilon=2.0, delta=1e-3)
            released.append([repr(k) for k in counts.index])
        return released

    without, with_target = both(frame_of, keys, delta=1e-2)
    assert without == with_target, (without, with_target)


def test_review_categorical_mappings_and_ufuncs_of_functions_give_plain_values() -> None:
    """map(<a categorical Series of the analyst's objects>) put those objects in the rows (pandas 2), and a ufunc
    made by np.frompyfunc ran the analyst's function unguarded: its generators made explode raise."""
    class Sly(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            return str.__eq__(self, other)

    mapping = pd.Series(pd.Categorical([Sly("x"), Sly("y")]), index=[41, 52])
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    assert {type(v) for v in p["n"].map(mapping).dp.unprotected().dropna()} == {str}
    gen = np.frompyfunc(lambda v: (t for t in [v]) if v == TARGET_N else [v], 1, 1)
    without, with_target = both(salaries, lambda p: p["n"].apply(gen).explode().dtype)
    assert without == with_target


def test_review_values_cannot_be_written_through_a_function() -> None:
    """A dict value was the very object in the protected column: a function could write another row's facts into
    it. Dicts are FrozenDicts now; writing raises inside the function, whose result is then missing."""
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    d = p["n"].map(lambda v: {"seen": 0})
    written = d.map(lambda m: m.__setitem__("seen", 1) or "written")
    assert written.dp.unprotected().isna().all()
    assert [m["seen"] for m in d.dp.unprotected()] == [0, 0, 0, 0]


def test_text_stored_in_python_holds_no_subclass_of_str() -> None:
    """Found by CI, which runs without pyarrow: pandas' text stored in Python (``str`` then, ``string[python]``
    always) keeps a subclass of ``str`` as it is, with its own ``__eq__`` and ``__hash__`` -- in the data given
    to protect(), in a public Series given to ``map``, in categories, in a public table for ``merge``."""
    class Sly(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            return str.__eq__(self, other)

    text = pd.StringDtype("python")
    p = pd.DataFrame({"s": pd.array([Sly("a"), "b", None], dtype=text)}).dp.protect(
        epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    mapping = pd.Series(pd.array([Sly("x"), Sly("y")], dtype=text), index=["a", "b"])
    categories = pd.Series(pd.Categorical([Sly("x"), "y"], categories=pd.Index([Sly("x"), "y"], dtype=text)),
                           index=["a", "b"])
    table = pd.DataFrame({"s": pd.array([Sly("a")], dtype=text), "w": [1.0]})
    for made in (p["s"], p["s"].map(mapping), p["s"].map(categories), p.merge(table, on="s")["s"]):
        assert {type(v) for v in made.dp.unprotected().dropna()} <= {str}, made


# -- a second independent review's findings, as regression tests -------------------------------------------------


def test_second_review_equal_values_are_one_key_whoever_comes_first() -> None:
    """Grouping an object column kept whichever of a group of equal values came first (True or 1, 1.0 or 1) as
    its label, and pandas' look-up of an object column inferred one type from all of it: map({1: ...}) found True
    only beside a text value. Keys are canonical now, and each value is looked up on its own."""
    def keys(p: Any) -> Any:
        made = p["n"].map(lambda v: True if v == TARGET_N else 1)
        with seeded_noise(0):
            released = [repr(k) for k in made.dp.value_counts(epsilon=2.0, delta=1e-3).index]
        looked_up = made.map({1: "one"}).dp.unprotected().tolist()[:3]
        categorical = made.astype(pd.CategoricalDtype([1, 2])).dp.unprotected().tolist()[:3]
        return released, looked_up, categorical

    def frame_of(with_target: bool) -> pd.DataFrame:
        return pd.DataFrame({"n": ([TARGET_N] if with_target else []) + [41, 52, 63] * 100})

    without, with_target = both(frame_of, keys, delta=1e-2)
    assert without[0] == with_target[0] and list(without[1:]) == [["one"] * 3, [1] * 3]
    assert list(with_target[1:]) == [["one"] * 3, [1] * 3]
    mixed = pd.Series([True, "x", 2.0, None], dtype=object)
    p = pd.DataFrame({"m": mixed}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    found = p["m"].map({1: "one", 2: "two"}).dp.unprotected()
    assert found.tolist()[::2] == ["one", "two"] and found.isna().tolist() == [False, True, False, True]


def test_second_review_row_labels_keep_their_exact_values() -> None:
    """Row labels of equal values (1 and 1.0, -0.0 and 0.0) were merged: set_index then reset_index gave one
    row the other's value."""
    made = pd.DataFrame({"n": [1, 2], "k": pd.Series([1, 1.0], dtype=object)})
    p = made.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    back = p.set_index("k").reset_index()["k"].dp.unprotected().tolist()
    assert [type(v) for v in back] == [int, float]


def test_second_review_blocks_and_rows_carry_no_positions() -> None:
    """sample_and_aggregate handed func blocks labelled with each row's position among everyone's rows, in the
    data's order; apply(axis=1) handed each row under that position. Blocks are renumbered and shuffled, rows
    unnamed."""
    p = pd.DataFrame({"x": np.arange(400.0)}).dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory())
    seen: list[Any] = []
    p.dp.sample_and_aggregate(lambda b: seen.append(list(b.index)) or 0.0, bounds=(0, 1), epsilon=1.0, blocks=4)
    assert all(index == list(range(len(index))) for index in seen)
    names = p.apply(lambda row: repr(row.name), axis=1).dp.unprotected()
    assert set(names) == {"None"}


def test_second_review_query_strings_only_compute() -> None:
    """A query string could call .dp (a charge hidden in a string), pipe, to_pickle, and attributes of public
    values: it may only compute row by row now."""
    p = pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    for expr in ("x.dp.count(epsilon=1.0) > 0", "x.pipe(abs) > 0", "x.to_pickle('/tmp/x') is None", "x.copy() > 0"):
        with pytest.raises(RefusedError, match="refused in a query"):
            p.query(expr)
    limit = np.array([1.0])
    with pytest.raises(ValueError, match="public value"):
        p.query("x > @limit.sum()")
    assert p.dp.budget.spent.epsilon == 0
    assert p.query("s.str.startswith('a') and x.between(0, 5) and abs(x) >= 1").dp.unprotected()["x"].tolist() == [1.0]


def test_second_review_no_array_is_lined_up_with_the_rows() -> None:
    """dt.tz_localize(ambiguous=<array>) lined an array of the analyst's up with the rows by position."""
    p = pd.DataFrame({"t": pd.to_datetime(["2020-10-25 02:30", "2020-10-25 02:30"])}).dp.protect(
        epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    for ambiguous in (np.array([True, False]), [True, False]):
        with pytest.raises(RefusedError, match="line an array"):
            p["t"].dt.tz_localize("Europe/Paris", ambiguous=ambiguous)
    assert p["t"].dt.tz_localize("Europe/Paris", ambiguous="NaT").dp.unprotected().isna().all()


def test_second_review_one_division_by_zero_leaves_other_integers_exact() -> None:
    """int64 // 0 made pandas give the whole column as floats: 2**60 + 1 in another row became 2**60."""
    big = 2**60 + 1
    def quotients(p: Any) -> Any:
        return (p["n"] // p["d"]).dp.unprotected().tolist()[:1]

    def frame_of(with_target: bool) -> pd.DataFrame:
        return pd.DataFrame({"n": [big, 5] + ([TARGET_N] if with_target else []),
                             "d": [1, 2] + ([0] if with_target else [])})

    assert both(frame_of, quotients) == [[big], [big]]


def test_second_review_dates_of_two_units_never_raise_when_combined() -> None:
    """A date out of the nanosecond range (3000-01-01 in seconds) made concat, melt and a merge with a public
    table in nanoseconds raise, only where it existed; and a categorical key matched a public key by values."""
    def frame_of(with_target: bool) -> pd.DataFrame:
        dates = ["2020-01-01", "2021-01-01"] + (["3000-01-01"] if with_target else [])
        return pd.DataFrame({"t": pd.Series(np.array(dates, dtype="datetime64[s]")),
                             "u": pd.Series(pd.to_datetime(["2020-01-01"] * len(dates))).astype("datetime64[ns]")})

    table = pd.DataFrame({"t": pd.to_datetime(["2020-01-01"]).astype("datetime64[ns]"), "w": [1.0]})
    observations = (lambda p: dpframe.concat([p[["t"]], p[["u"]].rename(columns={"u": "t"})]).dtypes.tolist(),
                    lambda p: p.melt().dtypes.tolist(),
                    lambda p: p.merge(table, on="t").dtypes.tolist())
    for observe in observations:
        without, with_target = both(frame_of, observe)
        assert without == with_target and not isinstance(without, tuple), (without, with_target)
    p = pd.DataFrame({"c": pd.Categorical(["x", "y"])}).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(TypeError, match="same categories"):
        p.merge(pd.DataFrame({"c": ["x"], "w": [1]}), on="c")


def test_second_review_a_period_keeps_no_offset_of_the_analysts() -> None:
    """On pandas 2.2 a Period keeps the offset object it was made with, a subclass of the analyst's included."""
    from dpframe.protection.analyst import plain, public_value

    class Sly(pd.offsets.Day):  # type: ignore[misc]
        pass

    try:
        period = pd.Period("2020-01-01", freq=Sly(1))
    except (TypeError, ValueError):  # pandas 3 takes the frequency's name, not the object
        period = pd.Period("2020-01-01", freq="D")
    assert type(plain(period).freq) is pd.offsets.Day and type(public_value(period, "==").freq) is pd.offsets.Day


# -- a third independent review's findings, as regression tests --------------------------------------------------


@pytest.mark.parametrize("odd", [datetime.timedelta(days=999_999_999), np.timedelta64(1, "D"),
                                 np.datetime64(10**12, "D")], ids=["huge-timedelta", "timedelta64-days", "far-date"])
def test_third_review_a_value_pandas_cannot_hold_is_its_own_key(odd: Any) -> None:
    """Canonical forms went through pd.Timedelta and pd.Timestamp, which raise on values out of their range
    (and numpy's timedelta64 took the path of integers): grouping and look-ups raised only where one existed."""
    def observe(p: Any) -> Any:
        made = p["n"].map(lambda v: odd if v == TARGET_N else "low")
        with seeded_noise(0):
            counts = made.dp.value_counts(epsilon=1.0, keys=["low"])
        return made.astype(pd.CategoricalDtype(["low"])).dtype, list(counts.index), p.dp.budget.spent.epsilon

    without, with_target = both(salaries, observe)
    assert isinstance(without[0], pd.CategoricalDtype)
    assert without[0] == with_target[0] and without[1:] == with_target[1:], (without, with_target)


def test_third_review_text_with_a_lone_surrogate_is_no_text() -> None:
    """'\\ud800' is a Python str that pyarrow's str cannot store: stack and a public merge failed (pandas 3) only
    where one existed. It is not a plain value: missing when a function returns it, refused as an argument."""
    table = pd.DataFrame({"g": pd.Series(["x"], dtype=object), "v": [1]})

    def observe(p: Any) -> Any:
        q = p.assign(g=p["n"].map(lambda v: "\ud800" if v == TARGET_N else "x"), name="a")
        return (q[["g", "name"]].stack().dtype, q.merge(table, on="g", how="left").dtypes.tolist(),
                int(q["g"].isna().astype(int).dp.sum(bounds=(0, 1), epsilon=1.0) > -100))

    without, with_target = both(salaries, observe)
    assert without == with_target, (without, with_target)
    p = salaries(True).dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(RefusedError, match="lone surrogate"):
        p["n"].astype(str) == "\ud800"
    curated = pd.DataFrame({"s": pd.Series(["a", "\udc80"], dtype=object)}).dp.protect(
        epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    assert curated["s"].dp.unprotected().isna().tolist() == [False, True]
