"""Dates and durations: queries on seconds, answers in time (dpframe.queries.temporal)."""

from __future__ import annotations

import datetime
import pickle

import numpy as np
import pandas as pd
import pytest

import dpframe  # noqa: F401
from dpframe import DPFloat, Ledger
from dpframe.results import DPTimedelta, DPTimestamp
from dpframe.testing import seeded_noise

START, END = pd.Timestamp("2020-01-01"), pd.Timestamp("2023-01-01")


def visits(n: int = 4000, missing: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    days = pd.to_timedelta(rng.integers(0, (END - START).days, n), unit="D")
    dates = pd.Series(START + days)
    if missing:
        dates.iloc[:missing] = pd.NaT
    return pd.DataFrame({
        "date": dates,
        "wait": pd.to_timedelta(rng.exponential(30, n), unit="min"),
        "ward": rng.choice(["A", "B"], n),
    })


def protected(data: pd.DataFrame, epsilon: float = 1e6) -> dpframe.ProtectedFrame:
    return data.dp.protect(epsilon=epsilon, ledger=Ledger.in_memory())


def test_the_mean_of_dates_is_a_timestamp_whose_interval_covers_the_truth() -> None:
    data = visits()
    truth = data["date"].mean()
    p = protected(data)
    runs, covered = 200, 0
    for _ in range(runs):
        m = p["date"].dp.mean(bounds=("2019-06-01", "2023-06-01"), epsilon=0.5)
        covered += m.ci[0] <= truth <= m.ci[1]
    # Nominal 95%: with 200 runs, below 87% has probability < 1e-6 for a correct interval.
    assert covered / runs >= 0.87, covered
    assert isinstance(m, datetime.datetime) and isinstance(m, DPTimestamp)
    assert isinstance(m.ci[0], pd.Timestamp) and isinstance(m.std, pd.Timedelta)
    assert str(m) == str(pd.Timestamp(m)) and "95% CI" in repr(m) and "clipped to [2019-06-01" in repr(m)
    again = pickle.loads(pickle.dumps(m))
    assert again == m and again.ci == m.ci


def test_durations_sum_mean_std_and_median_are_timedeltas() -> None:
    data = visits()
    p = protected(data)
    bounds = ("0min", "5h")
    with seeded_noise(1):
        answers = {
            "sum": p["wait"].dp.sum(bounds=bounds, epsilon=1.0),
            "mean": p["wait"].dp.mean(bounds=bounds, epsilon=1.0),
            "std": p["wait"].dp.std(bounds=bounds, epsilon=1.0),
            "median": p["wait"].dp.median(bounds=bounds, epsilon=1.0),
        }
    truth = {"sum": data["wait"].sum(), "mean": data["wait"].mean(), "std": data["wait"].std(),
             "median": data["wait"].median()}
    for query, answer in answers.items():
        assert isinstance(answer, DPTimedelta) and isinstance(answer, pd.Timedelta), query
        assert abs(answer - truth[query]) < 0.05 * truth[query], (query, answer, truth[query])
        assert str(answer) == str(pd.Timedelta(answer.value, unit="ns"))
    assert answers["mean"].ci[0] < answers["mean"] < answers["mean"].ci[1]
    assert pickle.loads(pickle.dumps(answers["sum"])) == answers["sum"]
    # The std of dates is a duration too.
    with seeded_noise(2):
        spread = p["date"].dp.std(bounds=(START, END), epsilon=1.0)
    assert isinstance(spread, DPTimedelta) and abs(spread - data["date"].std()) < pd.Timedelta(days=10)


def test_time_zones_are_kept() -> None:
    data = visits()
    data["date"] = data["date"].dt.tz_localize("Europe/Oslo")
    p = protected(data)
    with seeded_noise(0):
        m = p["date"].dp.mean(bounds=("2019-06-01", "2023-06-01"), epsilon=1.0)
        q = p["date"].dp.quantile([0.25, 0.75], bounds=("2019-06-01", "2023-06-01"), epsilon=1.0)
    assert str(m.tzinfo) == "Europe/Oslo" and abs(pd.Timestamp(m) - data["date"].mean()) < pd.Timedelta(days=5)
    assert str(q.dtype.tz) == "Europe/Oslo"


def test_meaningless_or_malformed_questions_are_refused_before_any_charge() -> None:
    p = protected(visits(), epsilon=1.0)
    refused = [
        (lambda: p["date"].dp.sum(bounds=(START, END), epsilon=0.1), "sum of dates"),
        (lambda: p["wait"].dp.var(bounds=("0min", "5h"), epsilon=0.1), "squared"),
        (lambda: p["date"].dp.mean(bounds=(0, 10), epsilon=0.1), "must be a datetime"),
        (lambda: p["date"].dp.mean(bounds=("soon", END), epsilon=0.1), "could not be read"),
        (lambda: p["wait"].dp.mean(bounds=(START, END), epsilon=0.1), "could not be read"),
        (lambda: p["date"].dp.mean(bounds="2020", epsilon=0.1), "pair"),
    ]
    for ask, message in refused:
        with pytest.raises(TypeError, match=message):
            ask()
    with pytest.raises(ValueError, match="needs bounds"):
        p["date"].dp.histogram(bins="M", epsilon=0.1)
    with pytest.raises(ValueError, match="frequency"):
        p["date"].dp.histogram(bins="fortnightly-ish", bounds=(START, END), epsilon=0.1)
    with pytest.raises(ValueError, match="reversed|lower"):
        p["date"].dp.mean(bounds=(END, START), epsilon=0.1)
    assert p.dp.budget.spent.epsilon == 0


def test_histograms_by_period_by_edges_and_by_number_of_bins() -> None:
    data = visits()
    p = protected(data)
    with seeded_noise(4):
        monthly = p["date"].dp.histogram(bins="MS", bounds=(START, "2022-12-31"), epsilon=1.0)
        yearly = p["date"].dp.histogram(bins=pd.date_range(START, END, freq="YS"), epsilon=1.0)
        even = p["date"].dp.histogram(bins=6, bounds=(START, END), epsilon=1.0)
        hourly = p["wait"].dp.histogram(bins="1h", bounds=("0h", "4h"), epsilon=1.0)
    assert isinstance(monthly.index, pd.PeriodIndex) and len(monthly) == 36 and str(monthly.index[0]) == "2020-01"
    truth = data["date"].dt.to_period("M").value_counts().sort_index()
    assert np.abs(monthly.to_numpy() - truth.to_numpy()).max() < 30  # discrete Laplace, scale 1
    release = monthly.attrs["dp"]
    assert list(release.lower.index) == list(monthly.index)
    assert isinstance(yearly.index, pd.IntervalIndex) and yearly.index[0].left == START
    assert list(np.abs(yearly.to_numpy() - data["date"].dt.year.value_counts().sort_index().to_numpy()) < 30) == [
        True] * 3
    assert len(even) == 6 and even.index[-1].right == END
    assert len(hourly) == 4 and hourly.index[0].right == pd.Timedelta("1h")
    assert abs(hourly.sum() - (data["wait"] <= pd.Timedelta("4h")).sum()) < 40


def test_quantiles_of_dates_are_sorted_times_within_the_bounds() -> None:
    p = protected(visits())
    with seeded_noise(5):
        q = p["date"].dp.quantile([0.1, 0.5, 0.9], bounds=(START, END), epsilon=1.0)
    assert q.dtype.kind == "M" and list(q.index) == [0.1, 0.5, 0.9]
    assert q.is_monotonic_increasing and q.iloc[0] >= START and q.iloc[-1] <= END


def test_describe_shows_dates_and_durations_as_times() -> None:
    data = visits(missing=100)
    p = protected(data)
    with seeded_noise(6):
        d = p.dp.describe(epsilon=3.0, progress=False, bounds={"date": (START, END), "wait": ("0min", "5h")},
                          keys={"ward": ["A", "B"]})
    assert isinstance(d.loc["mean", "date"], pd.Timestamp) and isinstance(d.loc["std", "date"], pd.Timedelta)
    assert isinstance(d.loc["50%", "wait"], pd.Timedelta) and d.loc["upper bound", "date"] == END
    assert abs(d.loc["count", "date"] - 3900) < 60  # missing dates are not counted
    assert abs(d.loc["mean", "date"] - data["date"].mean()) < pd.Timedelta(days=10)
    assert d.loc["25%", "date"] <= d.loc["50%", "date"] <= d.loc["75%", "date"]
    assert "shown as times" in d.attrs["dp"].note
    assert p.dp.budget.spent.epsilon.exact == 3


def test_group_by_keys_derived_from_dates() -> None:
    data = visits()
    p = protected(data).assign(year=lambda f: f["date"].dt.year, month=lambda f: f["date"].dt.month)
    with seeded_noise(7):
        per_year = p.dp.groupby("year", keys=[2020, 2021, 2022]).count(epsilon=1.0)
        per_month = p["month"].dp.value_counts(keys=list(range(1, 13)), epsilon=1.0, sort=False)
        minutes = p.assign(minutes=p["wait"].dt.total_seconds() / 60).dp.groupby(
            "year", keys=[2020, 2021, 2022]).mean("minutes", bounds=(0, 300), epsilon=1.0)
    truth = data["date"].dt.year.value_counts().sort_index()
    assert np.abs(per_year.to_numpy() - truth.to_numpy()).max() < 30
    assert len(per_month) == 12 and isinstance(minutes.iloc[0], float)
    assert isinstance(p["date"].dp.mean(bounds=(START, END), epsilon=1.0), DPTimestamp)
    assert not isinstance(p["month"].dp.mean(bounds=(1, 12), epsilon=1.0), DPTimestamp)
    assert isinstance(p["month"].dp.mean(bounds=(1, 12), epsilon=1.0), DPFloat)


def test_dates_beyond_the_nanosecond_range_cannot_make_a_query_fail_before_it_is_charged() -> None:
    # Second-unit dates reach years pandas cannot subtract the epoch from in nanoseconds or microseconds.
    far = np.array(["300000-01-01", "2020-06-01", "NaT", "2021-01-01"], dtype="datetime64[s]")
    p = pd.DataFrame({"d": np.tile(far, 250)}).dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    p["d"].dp.preview("mean", bounds=("2020-01-01", "2022-01-01"), epsilon=0.5)
    with seeded_noise(0):
        mean = p["d"].dp.mean(bounds=("2020-01-01", "2022-01-01"), epsilon=0.5)
    assert isinstance(mean, DPTimestamp) and pd.Timestamp("2020-01-01") <= mean <= pd.Timestamp("2022-01-01")
