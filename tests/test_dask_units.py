"""Privacy units on Dask (a shuffle by unit, then pandas' per-unit bound) and protected reads from disk."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import dpframe
import dpframe.dask
from dpframe.noise.random import current_source
from dask_compare import ledger_lines
from dpframe.testing import seeded_noise

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.testing.NotPrivateWarning")


def _frame(users: int = 400, rows: int = 3000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # the data, not the noise
    return pd.DataFrame({"user": rng.integers(0, users, rows), "x": rng.uniform(0, 10, rows),
                         "g": rng.choice(["a", "b"], rows)})


def _protect_both(df: pd.DataFrame, k: int, npartitions: int = 5) -> tuple[Any, Any]:
    pandas = df.dp.protect(epsilon=50.0, delta=1e-5, privacy_unit="user", max_contributions=k, ledger=dpframe.Ledger.in_memory())
    # Rows of a unit are scattered over the partitions (from_pandas keeps the row order).
    on_dask = dd.from_pandas(df, npartitions=npartitions).dp.protect(
        epsilon=50.0, delta=1e-5, name="units", privacy_unit="user", max_contributions=k, ledger=dpframe.Ledger.in_memory())
    return pandas, on_dask


QUERIES = [
    lambda p: p.dp.count(epsilon=0.5),
    lambda p: p["x"].dp.count(epsilon=0.5),
    lambda p: p["x"].dp.sum(bounds=(0, 10), epsilon=0.5),
    lambda p: p["x"].dp.mean(bounds=(0, 10), epsilon=0.5),
    lambda p: p[p["g"] == "a"]["x"].dp.mean(bounds=(0, 10), epsilon=0.5, mechanism="gaussian", delta=1e-6),
]


@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_units_within_the_bound_give_the_pandas_answer(query: int) -> None:
    """No unit above k: nothing to choose, so the answer is pandas' once pandas skips the selection key's words."""
    df = _frame()
    k = int(df.groupby("user").size().max())
    pandas, on_dask = _protect_both(df, k)
    with seeded_noise(query):
        current_source().words(4)  # the words Dask's selection key takes from the stream
        expected = QUERIES[query](pandas)
    with seeded_noise(query):
        answer = QUERIES[query](on_dask)
    assert answer == expected
    assert dataclasses.astuple(answer.release) == dataclasses.astuple(expected.release)
    assert ledger_lines(pandas) == ledger_lines(on_dask)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_bounded_units_charge_and_scale_noise_as_pandas(k: int, query: int) -> None:
    """Units above k: the chosen rows differ, the contribution bound, noise scale and ledger line do not."""
    pandas, on_dask = _protect_both(_frame(), k)
    with seeded_noise(1):
        answers = [QUERIES[query](p) for p in (pandas, on_dask)]
    releases = [a.release for a in answers]
    assert releases[0].cost == releases[1].cost
    if query < 3:  # a count's or sum's noise is its std; a mean's std is estimated from its noisy count
        assert releases[0].std == releases[1].std
    assert ledger_lines(pandas) == ledger_lines(on_dask)  # the noise scales of every measurement, mean's included
    assert abs(float(answers[0]) - float(answers[1])) < 6 * releases[0].std + 0.1 * abs(float(answers[0]))


@pytest.mark.parametrize("k", [1, 2, 5])
def test_no_unit_contributes_more_than_k_rows_across_partitions(k: int) -> None:
    df = _frame(users=50, rows=2000)
    _, on_dask = _protect_both(df, k, npartitions=7)
    for obj in (on_dask, on_dask[on_dask["g"] == "a"]):
        used = obj._rows_in_use.compute()  # internal: the rows one read may use
        kept = used.groupby("user").size()
        available = obj._rows.compute().groupby("user").size()
        # Every unit keeps min(its rows, k): bounded, and nothing dropped that the bound allows.
        assert kept.reindex(available.index, fill_value=0).equals(available.clip(upper=k))
        assert (used.index == used["user"]).all()


def test_the_choice_is_uniform_within_a_unit_and_keyed_by_the_library_source() -> None:
    """Each unit keeps a uniform row; the choice is a function of the library's (here seeded) source."""
    units = 3000
    df = pd.DataFrame({"user": np.repeat(np.arange(units), 5), "x": np.tile(np.arange(5.0), units)})
    p = dd.from_pandas(df, npartitions=6).dp.protect(epsilon=1.0, name="uniform", privacy_unit="user",
                                                     ledger=dpframe.Ledger.in_memory())
    with seeded_noise(11):
        chosen = p._rows_in_use.compute()
    with seeded_noise(11):
        again = p._rows_in_use.compute()
    with seeded_noise(12):
        other = p._rows_in_use.compute()
    assert chosen.sort_index()["x"].equals(again.sort_index()["x"])
    assert not chosen.sort_index()["x"].equals(other.sort_index()["x"])
    # 3000 draws of a uniform choice among 5: each value about 600 times (sd 22); 7 sd fails < 1e-6.
    counts = chosen["x"].value_counts().reindex(np.arange(5.0), fill_value=0)
    assert len(chosen) == units and ((counts - 600).abs() < 155).all()


def test_unit_arguments_are_refused_as_on_pandas() -> None:
    df = _frame()
    cases = [{"privacy_unit": "nobody"}, {"max_contributions": 2}, {"privacy_unit": "user", "max_contributions": 0},
             {"privacy_unit": "user", "max_contributions": True}]
    for arguments in cases:
        errors = []
        for protect in (lambda **a: df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory(), **a),
                        lambda **a: dd.from_pandas(df, npartitions=2).dp.protect(
                            epsilon=1.0, name="refused", ledger=dpframe.Ledger.in_memory(), **a)):
            with pytest.raises((KeyError, ValueError)) as error:
                protect(**arguments)
            errors.append((type(error.value), str(error.value)))
        assert errors[0] == errors[1]
    with pytest.raises(ValueError, match="reserved"):
        dd.from_pandas(df.rename(columns={"g": "_dp_unit"}), npartitions=2).dp.protect(
            epsilon=1.0, name="reserved", ledger=dpframe.Ledger.in_memory())


def test_read_parquet_gives_the_pandas_answer(tmp_path: Path) -> None:
    df = _frame()
    for i, start in enumerate(range(0, len(df), 1000)):
        df.iloc[start:start + 1000].to_parquet(tmp_path / f"part-{i}.parquet")
    pandas = df.dp.protect(epsilon=5.0, ledger=dpframe.Ledger.in_memory())
    on_disk = dpframe.dask.read_parquet(tmp_path, columns=["x", "g"], epsilon=5.0, name="disk",
                                        ledger=dpframe.Ledger.in_memory())
    assert list(on_disk.columns) == ["x", "g"]
    with seeded_noise(4):
        expected = pandas["x"].dp.mean(bounds=(0, 10), epsilon=1.0)
    with seeded_noise(4):
        assert on_disk["x"].dp.mean(bounds=(0, 10), epsilon=1.0) == expected
    units = dpframe.dask.read_parquet(str(tmp_path / "*.parquet"), epsilon=5.0, name="disk units",
                                      privacy_unit="user", max_contributions=2, ledger=dpframe.Ledger.in_memory())
    assert units._rows_in_use.compute().groupby("user").size().max() <= 2


def test_read_csv_needs_every_dtype_and_reads_in_blocks(tmp_path: Path) -> None:
    df = _frame()
    df.to_csv(tmp_path / "data.csv", index=False)
    ledger = dpframe.Ledger.in_memory()
    with pytest.raises(ValueError, match=r"missing: \['g'\]"):
        dpframe.dask.read_csv(tmp_path / "data.csv", dtype={"user": "int64", "x": "float64"}, epsilon=1.0,
                              name="csv", ledger=ledger)
    p = dpframe.dask.read_csv(str(tmp_path / "data.csv"), dtype={"user": "int64", "x": "float64", "g": "string"},
                              epsilon=1.0, name="csv", ledger=ledger, blocksize=20_000)
    assert p._rows.npartitions > 1  # internal: the blocks read
    with seeded_noise(2):
        expected = df.dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory()).dp.count(epsilon=0.5)
    with seeded_noise(2):
        assert p.dp.count(epsilon=0.5) == expected


def test_missing_or_unreadable_files_cost_nothing(tmp_path: Path) -> None:
    ledger = dpframe.Ledger.in_memory()
    with pytest.raises(FileNotFoundError, match="nothing was charged"):
        dpframe.dask.read_parquet(tmp_path / "absent.parquet", epsilon=1.0, name="absent", ledger=ledger)
    with pytest.raises(FileNotFoundError, match="nothing was charged"):
        dpframe.dask.read_parquet(str(tmp_path / "*.parquet"), epsilon=1.0, name="absent", ledger=ledger)
    with pytest.raises(FileNotFoundError, match="nothing was charged"):
        dpframe.dask.read_csv(tmp_path / "absent.csv", dtype={"x": "float64"}, epsilon=1.0, name="absent",
                              ledger=ledger)
    (tmp_path / "broken.parquet").write_bytes(b"not a parquet file at all")
    with pytest.raises(ValueError, match="could not read .* as Parquet"):
        dpframe.dask.read_parquet(tmp_path / "broken.parquet", epsilon=1.0, name="broken", ledger=ledger)
    assert ledger.budgets().empty
    assert os.listdir(tmp_path) == ["broken.parquet"]
