"""Adversarial review of the Dask front: attacks that once worked, each refused or made harmless."""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import dask  # noqa: E402

import dpframe  # noqa: E402
import dpframe.dask  # noqa: E402
from dpframe.errors import DPFrameError, LedgerError, RefusedError  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")


def _protect(df: pd.DataFrame, npartitions: int = 2, **kwargs: Any) -> Any:
    return dd.from_pandas(df, npartitions=npartitions).dp.protect(
        epsilon=10.0, name="review", ledger=dpframe.Ledger.in_memory(), **kwargs)


def test_public_series_operand_is_refused_as_on_pandas() -> None:
    """A public series with one label repeated would be lined up with row 7: one person counted 1000 times."""
    p = _protect(pd.DataFrame({"x": np.arange(1000.0)}))
    crafted = pd.Series(0.0, index=[7] * 1000)
    for operand in (crafted, dd.from_pandas(crafted, npartitions=1), np.zeros(3)):
        with pytest.raises(RefusedError, match="not a constant or a column of the same protected rows"):
            p["x"] + operand
    assert p.dp.budget.spent.epsilon == 0


def test_columns_of_different_rows_do_not_combine() -> None:
    """Filtered and unfiltered columns under a repeated row label joined as a cartesian product (50 000 rows of
    1000); pandas refuses them, and so does Dask now, in arithmetic, filters and assign."""
    df = pd.DataFrame({"g": np.repeat(np.arange(10), 100), "x": np.arange(1000) % 2 * 1.0}).set_index("g")
    p = _protect(df)
    kept = p[p["x"] > 0]
    with pytest.raises(RefusedError, match="hold different rows"):
        kept["x"] + p["x"]
    with pytest.raises(RefusedError, match="hold different rows"):
        kept[p["x"] >= 0]
    with pytest.raises(RefusedError, match="hold different rows"):
        kept.assign(y=p["x"])
    # Column selection, row-wise expressions and assign keep the rows: they still combine.
    same = kept.assign(y=kept["x"] * 2)
    with seeded_noise(1):
        assert abs(same[same["y"] > 1]["y"].dp.count(epsilon=5.0) - 500) < 20


def test_non_boolean_condition_is_refused_before_the_charge() -> None:
    """Dask took a float condition as row labels, and its KeyError printed the values."""
    p = _protect(pd.DataFrame({"x": np.arange(100.0)}))
    with pytest.raises(TypeError, match="needs a boolean condition, got dtype float64"):
        p[p["x"] + 1]
    assert p.dp.budget.spent.epsilon == 0


def test_nullable_condition_keeps_the_frame() -> None:
    """A condition with missing values (pyarrow strings) filters as pandas: missing is False."""
    p = _protect(pd.DataFrame({"s": ["a", "b"] * 49 + ["a", None], "x": 1.0}))
    condition = p["s"] == "a"
    rows = p[condition]._rows.compute()
    assert list(rows.columns) == ["s", "x"] and len(rows) == 50


def test_a_value_that_fails_becomes_missing_not_an_error() -> None:
    """``'b' < 2`` raised after the charge only if the row's value was text: whether the query failed told it."""
    df = pd.DataFrame({"id": np.arange(100), "v": pd.Series([1] * 99 + ["secret"], dtype=object)})
    with dask.config.set({"dataframe.convert-string": False}):
        p = _protect(df)
    answers = []
    for target in (7, 99):
        with seeded_noise(0):
            answers.append((p[p["id"] == target]["v"] < 2).dp.count(epsilon=1.0))
    pandas = df.dp.protect(epsilon=10.0, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(0):
        assert (pandas[pandas["id"] == 99]["v"] < 2).dp.count(epsilon=1.0) == answers[1]


def test_failing_read_withholds_the_value() -> None:
    """A CSV field that does not parse as its declared type: Dask's message printed the field."""
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "a.csv")
    with open(path, "w") as file:
        file.write("x\n" + "1\n" * 50 + "alice-secret\n")
    p = dpframe.dask.read_csv(path, dtype={"x": "int64"}, epsilon=1.0, name="csv",
                              ledger=dpframe.Ledger.in_memory())
    for query in (lambda: p["x"].dp.sum(bounds=(0, 10), epsilon=0.25), lambda: p.dp.count(epsilon=0.25),
                  lambda: p["x"].dp.histogram(bins=[0, 5, 10], epsilon=0.25)):
        with pytest.raises(DPFrameError) as raised:
            query()
        assert "alice" not in str(raised.value) and "message is withheld" in str(raised.value)


def test_same_data_cannot_get_a_second_budget_by_another_name() -> None:
    """pandas refuses the same data under a second name (its content fingerprint); Dask uses its graph token."""
    ledger = dpframe.Ledger.in_memory()
    ddf = dd.from_pandas(pd.DataFrame({"x": np.arange(100.0)}), npartitions=2)
    first = ddf.dp.protect(epsilon=1.0, name="one", ledger=ledger)
    with pytest.raises(LedgerError, match="already protected under budget 'one'"):
        ddf.dp.protect(epsilon=1.0, name="two", ledger=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = ddf.dp.protect(epsilon=1.0, name="one", ledger=ledger)
    assert again.dp.budget.id == first.dp.budget.id


def test_mixing_dask_and_pandas_protections_is_refused() -> None:
    df = pd.DataFrame({"x": np.arange(10.0)})
    on_dask, on_pandas = _protect(df), df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with pytest.raises(RefusedError):
        on_dask["x"] + on_pandas["x"]
    with pytest.raises(RefusedError):
        on_pandas["x"] + on_dask["x"]
    with pytest.raises(RefusedError):
        on_dask[on_pandas["x"] > 0]
    other = dd.from_pandas(df.assign(y=1), npartitions=2).dp.protect(epsilon=1.0, name="other",
                                                                     ledger=dpframe.Ledger.in_memory())
    with pytest.raises(RefusedError, match="different protect"):
        on_dask["x"] + other["x"]


def test_unit_column_of_objects_is_refused_before_a_budget_exists() -> None:
    """``1``, ``1.0`` and ``True`` are one unit to pandas, but Dask's shuffle hashed them to different partitions:
    that unit kept 3 rows with ``max_contributions=1`` (pandas keeps 1)."""
    df = pd.DataFrame({"user": pd.Series([1, True, 1.0] * 33, dtype=object), "x": 1.0})
    ledger = dpframe.Ledger.in_memory()
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(df, npartitions=4)
    with pytest.raises(TypeError, match="privacy_unit 'user' has dtype object"):
        ddf.dp.protect(epsilon=1.0, name="objects", privacy_unit="user", ledger=ledger)
    assert ledger.budgets().empty
    p = ddf.assign(user=ddf["user"].astype("float64")).dp.protect(
        epsilon=1.0, name="numbers", privacy_unit="user", ledger=ledger)
    assert len(p._rows_in_use.compute()) == 1  # internal: the rows one read may use


def test_the_number_of_partitions_is_not_shown() -> None:
    """``from_pandas(chunksize=1)`` (or read_csv's blocks) made ``p.npartitions`` the number of rows."""
    df = pd.DataFrame({"x": np.arange(37.0)})
    p = dd.from_pandas(df, chunksize=1).dp.protect(epsilon=1.0, name="chunks", ledger=dpframe.Ledger.in_memory())
    with pytest.raises(RefusedError, match="npartitions"):
        p.npartitions
    with pytest.raises(RefusedError, match="npartitions"):
        p["x"].npartitions
    assert "37" not in repr(p) + repr(p["x"])


def test_value_counts_of_keys_equal_as_labels_is_released_on_both() -> None:
    """1.0 and 1 are equal, so one key (its canonical form, 1) of an object column: as two keys, sorting them by
    label failed after the charge (pandas and Dask), only for such data."""
    df = pd.DataFrame({"k": pd.Series([1.0] * 300 + [1] * 200 + ["a"] * 100, dtype=object)})
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(df, npartitions=3)
    answers = []
    for p in (df.dp.protect(epsilon=10.0, delta=1e-5, ledger=dpframe.Ledger.in_memory()),
              ddf.dp.protect(epsilon=10.0, delta=1e-5, name="keys", ledger=dpframe.Ledger.in_memory())):
        with seeded_noise(4):
            answers.append(p["k"].dp.value_counts(epsilon=2.0))
    assert [repr(k) for k in answers[0].index[:2]] == ["1", "'a'"]
    assert answers[0].tolist() == answers[1].tolist()
    assert [repr(k) for k in answers[0].index] == [repr(k) for k in answers[1].index]


@pytest.mark.parametrize("types", [("int64", "float64"), ("float32", "float64"), ("bool", "int64")])
def test_a_unit_typed_differently_in_two_partitions_is_still_bounded_as_one(types: tuple[str, str]) -> None:
    """Files of one data set may type the unit differently: Dask's shuffle hashes the unit as the frame's
    declared dtype, so all of a unit's rows meet in one partition and keep at most max_contributions."""
    from dask import delayed

    first = pd.DataFrame({"user": np.array([1, 1, 0], dtype=types[0]), "x": [1.0, 2.0, 3.0]})
    second = pd.DataFrame({"user": np.array([1, 1, 0], dtype=types[1]), "x": [4.0, 5.0, 6.0]})
    empty = first.iloc[:0]
    ddf = dd.from_delayed([delayed(first), delayed(second)] + [delayed(empty)] * 6, meta=empty, verify_meta=False)
    p = ddf.dp.protect(epsilon=1.0, name=f"unit typed {types}", privacy_unit="user", max_contributions=1,
                       ledger=dpframe.Ledger.in_memory())
    kept = p._rows_in_use.compute()  # internal: the rows one read may use
    assert len(kept) == 2 and kept.groupby(level=0).size().max() == 1
