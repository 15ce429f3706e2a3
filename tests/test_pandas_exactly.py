"""Issue 28: published pandas steps run unchanged on a protected frame, with pandas' own types and answers."""

from __future__ import annotations

import pandas as pd

import dpframe


def test_equality_of_an_object_column_is_plain_bool_as_in_pandas() -> None:
    """``(p["survived"] == "yes").astype(int)`` was refused: object == was widened to nullable booleans. ==
    and != give a truth value for any two plain values (a missing one is unequal), so pandas' bool holds."""
    df = pd.DataFrame({"survived": pd.Series(["yes", "no", None, 1, (1, 2)], dtype=object)})
    p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    for made, expected in (((p["survived"] == "yes"), df["survived"] == "yes"),
                           ((p["survived"] != "yes"), df["survived"] != "yes"),
                           (("yes" == p["survived"]), "yes" == df["survived"])):
        assert made.dtype == expected.dtype == bool
        assert made.dp.unprotected().tolist() == expected.tolist()
    assert (p["survived"] == "yes").astype(int).dtype == "int64"
    assert (p["survived"] < "z").dtype == "boolean"  # an order between text and a number has no answer: missing


def test_a_slice_of_column_labels_selects_columns_as_in_pandas() -> None:
    df = pd.DataFrame({"year": [2013], "month": [1], "day": [1], "dep_time": [517.0]})
    p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    for key in (slice("year", "day"), slice("month", None), slice(None, None, 2), slice("day", "year", -1)):
        assert list(p.loc[:, key].columns) == list(df.loc[:, key].columns)
    assert list(p.loc[p["year"] > 2000, "month":"day"].columns) == ["month", "day"]


def test_augmented_assignment_through_loc_puts_values_back_in_their_rows() -> None:
    """``t.loc[t["tip"] < 2, "tip"] *= 2`` was refused ("the two objects hold different rows"): Python reads the
    filtered values, doubles them and sets them back. They go back to the rows they came from; the type stays
    when the same condition chose them, and holds missing values when another one did (pandas' alignment)."""
    df = pd.DataFrame({"tip": [1.0, 3.0, 1.5, None], "size": [1, 2, 3, 4]})
    p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    p.loc[p["tip"] < 2, "tip"] *= 2
    p.loc[p["size"] > 2, "size"] += 10
    df.loc[df["tip"] < 2, "tip"] *= 2
    df.loc[df["size"] > 2, "size"] += 10
    assert p.dp.unprotected().equals(df)
    chosen_elsewhere = p.loc[p["size"] > 12, "size"]
    p.loc[p["size"] > 1, "size"] = chosen_elsewhere
    assert p["size"].dtype == "Int64" and p.dp.unprotected()["size"].isna().tolist() == [False, True, False, False]


def test_dates_are_parsed_after_protect_with_a_format_or_from_parts() -> None:
    """pd.to_datetime(p[...], format="ISO8601"), .astype("datetime64[ns]") and the refusal's own suggestion were
    all refused. dpframe.to_datetime takes pandas' arguments and runs it row by row; a value that does not parse
    is NaT; text without a format is refused (pandas infers the format from the first value)."""
    import pytest

    df = pd.DataFrame({"time_hour": ["2013-01-01T05:00:00Z", "2013-01-01T06:30:00+01:00", "soon", None],
                       "year": [2013, 2013, 2013, 2013], "month": [1, 2, 13, 1], "day": [1, 28, 1, 31],
                       "epoch": [0, 60, 3600, 86400]})
    p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    parsed = dpframe.to_datetime(p["time_hour"], format="ISO8601", utc=True).dp.unprotected()
    expected = pd.to_datetime(df["time_hour"], format="ISO8601", utc=True, errors="coerce")
    assert parsed.tolist() == expected.tolist() and str(parsed.dtype).endswith("UTC]")
    parts = dpframe.to_datetime(p[["year", "month", "day"]]).dp.unprotected()
    assert parts.tolist() == pd.to_datetime(df[["year", "month", "day"]], errors="coerce").tolist()
    epochs = dpframe.to_datetime(p["epoch"], unit="s").dp.unprotected()
    assert epochs.tolist() == pd.to_datetime(df["epoch"], unit="s").tolist()
    with pytest.raises(dpframe.RefusedError, match="format="):
        dpframe.to_datetime(p["time_hour"])
    with pytest.raises(dpframe.RefusedError, match="dpframe.to_datetime"):
        pd.to_datetime(p["time_hour"], format="ISO8601")
    with pytest.raises(dpframe.RefusedError, match="dpframe.to_datetime"):
        p["time_hour"].astype("datetime64[ns]")
    assert dpframe.to_datetime(df["epoch"], unit="s").equals(pd.to_datetime(df["epoch"], unit="s"))  # plain data
    assert p.dp.budget.spent.epsilon == 0


def test_to_numeric_of_a_protected_column_gives_floats() -> None:
    df = pd.DataFrame({"x": ["1", "2.5", "n/a", None]})
    p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    made = dpframe.to_numeric(p["x"], errors="coerce")
    assert made.dtype == "float64"
    assert made.dp.unprotected().tolist()[:2] == [1.0, 2.5] and made.dp.unprotected().isna().tolist()[2:] == [True, True]


def test_group_by_spellings_of_pandas() -> None:
    """Named aggregation raised "unexpected keyword argument"; 'median' inside agg was an unknown statistic;
    gb["x"].min() raised AttributeError with no pointer to the private quantile."""
    import numpy as np
    import pytest

    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"species": pd.Categorical(rng.choice(["Adelie", "Gentoo"], 4000)),
                       "mass": rng.normal(4000.0, 500.0, 4000)})
    p = df.dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory())
    gb = p.dp.groupby("species")
    exact = df.groupby("species", observed=True)["mass"].agg(["mean", "median", "std"])
    with seeded_noise(0):
        named = gb.agg(mean_mass=("mass", "mean"), n=pd.NamedAgg("mass", "count"), bounds=(2000, 7000), epsilon=3.0)
        listed = gb["mass"].agg(["mean", "median", "std"], bounds=(2000, 7000), epsilon=3.0)
        by_name = gb["mass"].agg(average="mean", middle="median", bounds=(2000, 7000), epsilon=1.0)
    assert list(named.columns) == ["mean_mass", "n"] and list(by_name.columns) == ["average", "middle"]
    assert list(listed.columns) == ["mean", "median", "std"]  # as pandas' gb["mass"].agg([...])
    assert ((listed - exact).abs() < 60).all().all()
    assert float(p.dp.budget.spent.epsilon) == pytest.approx(7.0)
    with pytest.raises(dpframe.RefusedError, match="quantile"):
        gb["mass"].min()
    with pytest.raises(ValueError, match="quantile"):
        gb["mass"].agg(["max"])
    with pytest.raises(ValueError, match="epsilon or rho"):
        gb["mass"].agg(["median"], bounds=(0, 1), epsilon=1.0, delta=1e-6)
    assert float(p.dp.budget.spent.epsilon) == pytest.approx(7.0)


def test_agg_of_several_parts_selects_private_groups_once() -> None:
    """agg on undeclared text groups was refused ("needs public groups"): the first part that measures a count
    selects them (its share of delta), the others answer for the groups it released."""
    import numpy as np
    import pytest

    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"species": rng.choice(["Adelie", "Gentoo", "Chinstrap"], 6000, p=[0.5, 0.3, 0.2]),
                       "mass": rng.normal(4000.0, 500.0, 6000)})
    p = df.dp.protect(epsilon=10.0, delta=1e-5, ledger=dpframe.Ledger.in_memory())
    exact = df.groupby("species")["mass"].agg(["median", "mean"])
    with seeded_noise(2):
        table = p.dp.groupby("species").agg(middle=("mass", "median"), average=("mass", "mean"),
                                             bounds=(2000, 7000), epsilon=4.0, delta=1e-6)
    assert list(table.columns) == ["middle", "average"]
    assert list(table.index) == ["Adelie", "Chinstrap", "Gentoo"]
    assert (table["average"] - exact["mean"]).abs().max() < 30
    assert (table["middle"] - exact["median"]).abs().max() < 60
    ledger = p.dp.budget.ledger
    assert list(ledger["query"]) == ["groupby mean", "groupby median"]  # the mean selected, so it ran first
    assert list(ledger["delta"]) == pytest.approx([1e-6, 0.0])
    assert float(p.dp.budget.spent.epsilon) == pytest.approx(4.0)


def test_pivot_table_spellings_of_pandas() -> None:
    """pivot_table("survived", ["sex", "class"], ...) raised "unhashable type: 'list'"; margins=True and
    aggfunc={...} were not accepted."""
    import numpy as np
    import pytest

    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(1)
    n = 6000
    df = pd.DataFrame({"sex": pd.Categorical(rng.choice(["female", "male"], n)),
                       "class": pd.Categorical(rng.choice(["First", "Second", "Third"], n)),
                       "embark": pd.Categorical(rng.choice(["C", "Q", "S"], n)),
                       "survived": (rng.random(n) < 0.4).astype(float), "fare": rng.gamma(2.0, 15.0, n)})
    p = df.dp.protect(epsilon=20.0, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(0):
        two_rows = p.dp.pivot_table("survived", ["sex", "class"], "embark", bounds=(0, 1), epsilon=5.0)
        bordered = p.dp.pivot_table("survived", "sex", "class", aggfunc="sum", bounds=(0, 1), margins=True,
                                    epsilon=5.0)
        by_value = p.dp.pivot_table(index="sex", columns="class", aggfunc={"fare": "mean", "survived": "mean"},
                                    bounds={"fare": (0, 200), "survived": (0, 1)}, epsilon=5.0)
    exact = df.pivot_table("survived", ["sex", "class"], "embark", observed=True)
    assert list(two_rows.index) == list(exact.index) and list(two_rows.columns) == list(exact.columns)
    assert (two_rows - exact).abs().max().max() < 0.1
    plain = df.pivot_table("survived", "sex", "class", aggfunc="sum", margins=True, observed=True)
    assert list(bordered.index) == list(plain.index) and list(bordered.columns) == list(plain.columns)
    assert abs(bordered.loc["All", "All"] - bordered.iloc[:-1, :-1].sum().sum()) < 1e-6
    assert abs(bordered.loc["All", "All"] - plain.loc["All", "All"]) < 60
    assert list(by_value.columns.get_level_values(0).unique()) == ["fare", "survived"]
    with pytest.raises(ValueError, match="margin"):
        p.dp.pivot_table("fare", "sex", "class", aggfunc="mean", margins=True, bounds=(0, 200), epsilon=1.0)


def test_a_boolean_column_has_the_public_bounds_its_type_gives() -> None:
    """Issue 28: a mean or sum of a boolean column spent a quarter of its ε finding bounds, and more counting
    clipped values, although True and False lie in (0, 1) by type."""
    import numpy as np

    df = pd.DataFrame({"survived": np.arange(3000) % 3 == 0, "k": pd.Categorical(["a", "b"] * 1500)})
    p = df.dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory())
    mean = p["survived"].dp.mean(epsilon=1.0)
    total = p["survived"].dp.sum(epsilon=1.0)
    by_group = p.dp.groupby("k").mean("survived", epsilon=1.0)
    assert mean.release.bounds == (0.0, 1.0) and "sparse vector" not in mean.release.note
    assert "sparse vector" not in by_group.attrs["dp"].note and by_group.notna().all()
    assert abs(total - 1000) < 60 and abs(mean - 1 / 3) < 0.05
    assert p.dp.budget.ledger["query"].tolist() == ["mean", "sum", "groupby mean"]


def test_review_of_the_new_steps_numbers_as_dates_margins_names_and_functions_as_conditions() -> None:
    """An independent review of this issue's new steps: numbers without unit= became dates in whole seconds
    (pandas: nanoseconds); a group called "All" was overwritten by margins=True (pandas refuses); a function
    given as the condition of loc chose other rows when run again, and the put-back kept the integer type."""
    import pytest

    df = pd.DataFrame({"i": [1_600_000_000_123_456_789, 5], "x": [1, 2], "f": [True, False]})
    p = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    assert dpframe.to_datetime(p["i"]).dp.unprotected().tolist() == pd.to_datetime(df["i"]).tolist()

    groups = pd.DataFrame({"k": pd.Categorical(["a", "b"] * 50), "c": pd.Categorical(["All", "y"] * 50),
                           "v": [1.0] * 100}).dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(ValueError, match="Conflicting name"):
        groups.dp.pivot_table("v", "k", "c", aggfunc="count", margins=True, epsilon=1.0)
    assert groups.dp.budget.spent.epsilon == 0

    def chosen(t: dpframe.ProtectedFrame) -> dpframe.ProtectedSeries:
        return t["f"]

    values = p.loc[chosen, "x"]
    p["f"] = p["x"] > 1
    p.loc[chosen, "x"] = values * 10
    assert str(p["x"].dtype) == "Int64" and p.dp.unprotected()["x"].isna().tolist() == [False, True]
    with pytest.raises(ValueError, match=r"\*\*arguments"):
        p.query("x.between(**{'left': 0, 'right': 1})")


def test_released_categories_belong_to_the_expression_released_not_to_its_name() -> None:
    """After p["dep"].dt.day_name().dp.value_counts(...), the value counts of p["dep"].dt.day_of_week and of
    p["dep"].dt.month came back as weekday names (remembered by the column's name) with a large "other"."""
    import numpy as np
    import pytest

    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(3)
    dep = pd.Timestamp("2013-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24 * 60, 20_000), unit="min")
    df = pd.DataFrame({"dep": dep, "carrier": rng.choice(["UA", "B6", "EV"], 20_000)})
    p = df.dp.protect(epsilon=100.0, delta=1e-4, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(6):
        day = p["dep"].dt.day_name()
        names = day.dp.value_counts(epsilon=1.0)
        numbers = p["dep"].dt.day_of_week.dp.value_counts(epsilon=1.0)
        months = p["dep"].dt.month.dp.value_counts(epsilon=1.0)
        # The same expression through a frame, a filter and a rename: the released names, at no delta.
        q = p.assign(day=day)
        named = q.assign(weekday=q["day"])[q["carrier"] != "EV"].dp.groupby("weekday").count(epsilon=1.0)
    other = {"other (not released)"}
    assert set(names.index) - other == set(df["dep"].dt.day_name())
    assert set(numbers.index) - other == set(range(7)) and set(months.index) - other == set(range(1, 13))
    for answer in (numbers, months):
        assert answer.attrs["dp"].cost.delta > 0  # selected for itself
        assert "earlier" not in answer.attrs["dp"].note
    assert months.drop("other (not released)", errors="ignore").sub(df["dep"].dt.month.value_counts()).abs().max() < 60
    assert set(named.index) - other == set(names.index) - other
    assert named.attrs["dp"].cost.delta == 0 and "earlier private selection" in named.attrs["dp"].note
    # Pickling keeps what the expression's releases made public.
    import pickle

    again = pickle.loads(pickle.dumps(q))
    with seeded_noise(7):
        counted = again["day"].dp.value_counts(epsilon=1.0)
    assert counted.attrs["dp"].cost.delta == 0
    assert float(p.dp.budget.spent.delta) == pytest.approx(3 * float(names.attrs["dp"].cost.delta))


def test_count_in_agg_counts_values_present_and_size_counts_rows_as_in_pandas() -> None:
    """agg({"x": "count"}) counted rows (pandas counts the values present); gb[["x", "y"]].count() was refused;
    an agg of a selected count and a mean put the "other" entry first (the union of the parts' groups sorted)."""
    import numpy as np

    from dpframe.testing import seeded_noise

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"k": pd.Categorical(rng.choice(["a", "b"], 4000)), "s": rng.choice(["u", "v"], 4000),
                       "x": rng.normal(5.0, 1.0, 4000), "y": rng.normal(1.0, 1.0, 4000)})
    df.loc[::7, "x"] = np.nan
    p = df.dp.protect(epsilon=1e6, delta=1e-4, ledger=dpframe.Ledger.in_memory())
    gb = p.dp.groupby("k")
    exact = df.groupby("k", observed=True)
    with seeded_noise(8):
        both = gb[["x", "y"]].count(epsilon=1e4)
        one = gb["x"].count(epsilon=1e4)
        parts = gb.agg({"x": ["count", "size"]}, epsilon=1e4)
        selected = p.dp.groupby("s").agg(n=("x", "count"), m=("x", "mean"), bounds=(0, 10), epsilon=1e4, delta=1e-6)
    assert list(both.columns) == ["x", "y"]
    assert ((both - exact[["x", "y"]].count().to_numpy()).abs() <= 2).all().all()
    assert one.name == "x" and (one - exact["x"].count()).abs().max() <= 2
    assert ((parts[("x", "count")] - exact["x"].count()).abs() <= 2).all()
    assert ((parts[("x", "size")] - exact.size()).abs() <= 2).all()
    assert list(selected.index) == ["u", "v", "other (not released)"]
    assert ((selected["n"].iloc[:2] - df.groupby("s")["x"].count()).abs() <= 2).all()
