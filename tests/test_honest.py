"""Honest answers (issue 12): released numbers behave like numbers and never look more certain than they are."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe  # noqa: F401
from dpframe import BudgetExceededError, ClippingWarning, Ledger
from dpframe.results import DPFloat, DPInt, justified
from dpframe.testing import seeded_noise


def people(n: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(12)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.lognormal(10, 1, n),
                         "smoker": rng.random(n) < 0.2})


def test_released_numbers_print_and_serialise_as_plain_numbers() -> None:
    p = people().dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    with seeded_noise(1):
        m = p["income"].dp.mean(bounds=(0, 1e6), epsilon=1.0)
        n = p.dp.count(epsilon=1.0)
    assert str(m) == repr(float(m)) and f"{m}" == str(float(m)) and f"{m:.1f}" == f"{float(m):.1f}"
    assert str(n) == str(int(n)) and json.loads(json.dumps({"m": m, "n": n})) == {"m": float(m), "n": int(n)}
    csv = pd.DataFrame({"m": [m], "n": [n]}).to_csv(index=False)
    assert "CI" not in csv and csv.splitlines()[1] == f"{float(m)!r},{int(n)}"
    # The rich text is the repr, rounded to the digits the noise justifies.
    assert repr(m).startswith(justified(float(m), m.std) + " (95% CI ") and "CI" in repr(n)


def test_justified_digits_follow_the_noise() -> None:
    assert justified(0.4946313830662, 0.0124) == "0.495"
    assert justified(-1234.5678, 3.0) == "-1234.6"
    assert justified(987654.0, 25_000.0) == "988000"
    assert justified(5.0, 0.0) == "5.0"


def test_sums_of_integer_and_boolean_columns_are_integers_whose_intervals_cover() -> None:
    data = people()
    truth = {"age": int(data["age"].sum()), "smoker": int(data["smoker"].sum())}
    covered = {"age": 0, "smoker": 0}
    runs = 300
    for _ in range(runs):
        p = data.dp.protect(epsilon=2.0, ledger=Ledger.in_memory())
        for column, bounds in (("age", (0, 100)), ("smoker", (0, 1))):
            s = p[column].dp.sum(bounds=bounds, epsilon=1.0)
            assert isinstance(s, DPInt) and "." not in str(s)
            covered[column] += s.ci[0] <= truth[column] <= s.ci[1]
    # Nominal 95%: with 300 runs, below 88% has probability < 1e-6 for a correct interval.
    assert all(c / runs >= 0.88 for c in covered.values()), covered
    p = data.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    assert isinstance(p["income"].dp.sum(bounds=(0, 1e6), epsilon=0.5), DPFloat)


def test_clipping_is_counted_shown_and_warned_about() -> None:
    data = pd.DataFrame({"x": np.r_[np.full(1000, 1.0), np.full(1000, 50.0)]})
    p = data.dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    with pytest.warns(ClippingWarning, match=r"about \d+ values above 10 .* declared"):
        m = p["x"].dp.mean(bounds=(0, 10), epsilon=1.0, clipping=True)
    clipping = m.release.clipping
    assert clipping is not None and not clipping.chosen_privately and clipping.noticeable
    assert abs(clipping.above - 1000) < 60 and abs(clipping.total - 2000) < 100  # ±30 each at 95%
    assert "of the values clipped to [0, 10]" in repr(m) and "values above 10" in repr(m)
    lines = p.dp.budget.ledger
    assert lines["query"].tolist() == ["clipped values for mean", "mean"]
    assert lines["epsilon"].tolist() == pytest.approx([0.1, 0.9]) and m.cost.epsilon == 1
    # Declared bounds that clip nothing: counted on request, no warning (seeded: noise alone warns in about 1 run
    # in 200); not counted by default.
    with warnings.catch_warnings(), seeded_noise(3):
        warnings.simplefilter("error", ClippingWarning)
        quiet = p["x"].dp.mean(bounds=(0, 100), epsilon=1.0, clipping=True)
        assert quiet.release.clipping is not None and not quiet.release.clipping.noticeable
        assert p["x"].dp.sum(bounds=(0, 100), epsilon=1.0).release.clipping is None
    # Automatic bounds always count what they clip.
    auto = p["x"].dp.mean(epsilon=1.0)
    assert auto.release.clipping is not None and auto.release.clipping.chosen_privately


def test_arguments_are_checked_before_the_clipping_is_charged() -> None:
    p = people().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    for bad in ((10, 0), (0, float("inf"))):
        with pytest.raises(ValueError):
            p["age"].dp.mean(bounds=bad, epsilon=0.5, clipping=True)
    with pytest.raises(BudgetExceededError):
        p["age"].dp.mean(bounds=(0, 100), epsilon=2.0, clipping=True)
    assert p.dp.budget.spent.epsilon.exact == 0


def awkward_frames() -> dict[str, pd.DataFrame]:
    """Small, all-missing, constant, skewed and zero-inflated data, as users load it."""
    import statsmodels.api as sm

    fair = sm.datasets.fair.load_pandas().data
    rng = np.random.default_rng(3)
    return {
        "fair, 219 rows": fair.sample(219, random_state=0)[["rate_marriage", "age", "affairs"]],
        "tiny": pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0]}),
        "all missing and constant": pd.DataFrame({"gone": [np.nan] * 300, "same": [7.0] * 300}),
        "zero-inflated": pd.DataFrame({"claims": np.where(rng.random(2000) < 0.9, 0.0, rng.lognormal(8, 2, 2000))}),
    }


def _within(value: float, values: pd.Series) -> bool:
    """Whether ``value`` lies within the data's range, give or take its span (as a statistic of the data must)."""
    span = float(values.max() - values.min()) if len(values) else 0.0
    return len(values) > 0 and float(values.min()) - span - 1 <= value <= float(values.max()) + span + 1


@pytest.mark.filterwarnings("ignore::dpframe.ClippingWarning")
def test_describe_never_shows_absurd_values_without_the_unreliable_mark() -> None:
    # On 219 rows, too few for describe's automatic bounds (their SVT noise is 60 counts), a bound may lie past the
    # data and the mean with it, its interval narrow; before the rule on the noisy count (bounds.weak_bounds) about
    # 3 describes in 40 showed such a mean unmarked (issue 29).
    weak = 0
    for name, frame in awkward_frames().items():
        for seed in range(40):
            p = frame.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
            with seeded_noise(seed):
                d = p.dp.describe(epsilon=1.0, progress=False)
            release = d.attrs["dp"]
            for column in frame.columns:
                marked = str(d.loc["unreliable", column]).split(", ")
                assert d.loc["count", column] >= 0, (name, column)
                percentiles = d.loc[["25%", "50%", "75%"], column].astype(float).to_numpy()
                assert (np.diff(percentiles) >= 0).all(), (name, column, percentiles)
                for row in ("count", "mean", "std"):
                    value, lower, upper = (float(x.loc[row, column]) for x in (d, release.lower, release.upper))
                    if max(value - lower, upper - value) >= abs(value) > 0:
                        assert row in marked, (name, column, row, value, lower, upper)
                values = frame[column].dropna()
                for row in ("mean", "25%", "50%", "75%"):  # unmarked: a statistic of this data, within its range
                    assert row in marked or _within(float(d.loc[row, column]), values), (name, column, row, seed)
                span = float(values.max() - values.min()) if len(values) else 0.0
                assert "std" in marked or float(d.loc["std", column]) <= 2 * span + 1, (name, column, seed)
                if release.weak_bounds.loc["mean", column] == 1:
                    weak += 1
                    assert {"mean", "std", "50%"} <= set(marked), (name, column, seed)
                    named = release.note.split("UNRELIABLE for ")[1].split(":")[0].split(", ")
                    assert column in named and "give bounds=" in release.note, (name, column, seed)
            if name == "all missing and constant":
                assert "count" in str(d.loc["unreliable", "gone"])  # no values: it says so
            if name.startswith("fair"):  # 219 rows: always too few for the noise (60 counts, 15 x 60 = 900 rows)
                assert (release.weak_bounds.loc["mean"] == 1).all(), seed
                assert "? UNRELIABLE, automatic bounds from too few rows" in repr(d)
    assert weak >= 3 * 40  # fair's three columns, every time


@pytest.mark.filterwarnings("ignore::dpframe.ClippingWarning")
def test_a_mean_on_automatic_bounds_from_200_rows_is_marked_whenever_absurd() -> None:
    ages = people(200)["age"]
    truth, absurd = float(ages.mean()), 0
    for seed in range(60):
        p = ages.to_frame().dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
        with seeded_noise(seed):
            m = p["age"].dp.mean(epsilon=1.0)  # 200 rows: under 15 x 20 (the SVT's noise scale at epsilon 1/4)
        assert m.weak_bounds and m.unreliable and "automatic bounds from too few rows" in repr(m), seed
        assert "UNRELIABLE, automatic bounds" in repr(m.release)
        absurd += not (_within(float(m), ages) and m.ci[0] <= truth <= m.ci[1])
    assert absurd > 0  # the case exists on these seeds: every such mean was marked


@pytest.mark.filterwarnings("ignore::dpframe.ClippingWarning")
def test_the_mark_of_too_few_rows_does_not_fire_on_30000_rows() -> None:
    data = people(30_000)
    fired = 0
    for seed in range(20):
        p = data.dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
        with seeded_noise(seed):
            answers = [p["age"].dp.mean(epsilon=1.0), p["income"].dp.sum(epsilon=1.0), p["age"].dp.std(epsilon=1.0)]
            means = p.dp.groupby("smoker").mean("age", epsilon=1.0)
            d = p.dp.describe(epsilon=1.0, progress=False)
        fired += sum(a.weak_bounds for a in answers) + bool(means.attrs["dp"].weak_bounds)
        fired += int(np.nansum(d.attrs["dp"].weak_bounds.to_numpy()))
        assert "too few rows" not in repr(means) + repr(d) + "".join(map(repr, answers))
    assert fired == 0


@pytest.mark.filterwarnings("ignore::dpframe.ClippingWarning")
def test_a_group_mean_on_automatic_bounds_from_few_rows_is_marked_in_every_cell() -> None:
    p = people(200).dp.protect(epsilon=10.0, ledger=Ledger.in_memory())
    with seeded_noise(0):
        means = p.dp.groupby("smoker").mean("age", epsilon=1.0)
        table = p.dp.groupby("smoker").agg({"age": "mean", "income": "count"}, epsilon=1.0)
    assert means.attrs["dp"].weak_bounds is True
    shown = repr(means)
    assert all(line.rstrip().endswith("?") for line in shown.splitlines()[1:3]), shown
    assert "? UNRELIABLE, automatic bounds from too few rows" in shown and "UNRELIABLE: the noise" not in shown
    assert "automatic bounds from too few rows" in means._repr_html_() and "too few rows" in repr(means.attrs["dp"])
    weak = table.attrs["dp"].weak_bounds  # per column: the mean rests on the bounds, the count does not
    assert (weak["age"] == 1).all() and (weak["income"] == 0).all()
    assert "automatic bounds from too few rows" in repr(table)


def test_an_answer_drowned_in_noise_is_marked() -> None:
    p = pd.DataFrame({"x": range(5)}).dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    with seeded_noise(4):
        n = p.dp.count(epsilon=0.1)
    assert n.unreliable and "UNRELIABLE" in repr(n)
    big = people().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    m = big["age"].dp.mean(bounds=(0, 100), epsilon=0.5)
    assert not m.unreliable and "UNRELIABLE" not in repr(m)


def test_an_exhausted_delta_is_reported_as_such_and_charges_nothing() -> None:
    data = pd.DataFrame({"city": np.array(["Oslo", "Rome", "Lima"], dtype=object)[np.arange(3000) % 3]})
    p = data.dp.protect(epsilon=10.0, delta=1e-5, ledger=Ledger.in_memory())
    expressions = [p["city"].str.lower() for _ in range(10)]  # each computed anew: a new expression
    for expression in expressions:  # each selection takes a tenth of the budget's delta, shown in its cost
        counts = expression.dp.value_counts(epsilon=0.1)
        assert counts.attrs["dp"].cost.delta == pytest.approx(1e-6)
    assert p.dp.budget.remaining.delta.exact == 0
    spent = p.dp.budget.spent.epsilon.exact
    with pytest.raises(BudgetExceededError, match="delta .* is spent"):
        p["city"].dp.value_counts(epsilon=0.1)
    with pytest.raises(BudgetExceededError, match="delta .* is spent"):
        p.dp.describe(epsilon=0.1, progress=False)
    assert p.dp.budget.spent.epsilon.exact == spent
    again = p.assign(city0=expressions[0])["city0"].dp.value_counts(epsilon=0.1)  # released before: no delta
    assert len(again) == 4 and again.attrs["dp"].cost.delta == 0
    # Declared categories need no delta.
    assert len(p["city"].dp.value_counts(epsilon=0.1, keys=["Oslo", "Rome", "Lima"])) == 3


def test_changed_values_lose_their_release_instead_of_carrying_stale_intervals() -> None:
    import matplotlib

    matplotlib.use("Agg")
    p = people().dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    h = p["age"].dp.histogram(bins=range(10, 100, 10), epsilon=0.5)
    assert h.dp.release is h.attrs["dp"] and h.copy().dp.release is not None
    assert len(h.dp.plot().patches) == len(h)
    shares = h / h.sum()
    assert "dp" in shares.attrs and shares.dp.release is None  # pandas carried it; dpframe does not use it
    with pytest.raises(TypeError, match="changed after they were released"):
        shares.dp.plot()
    assert (h + 0).dp.release is not None  # the same values: still described


def test_previews_give_the_accuracy_without_charging_or_reading() -> None:
    p = people().dp.protect(epsilon=2.0, delta=1e-6, ledger=Ledger.in_memory())
    count = p.dp.preview("count", epsilon=0.5)
    real_count = p.dp.count(epsilon=0.5)
    assert count.measurements.loc["count", "95% half-width"] == (real_count.ci[1] - real_count.ci[0]) / 2
    spent = p.dp.budget.spent.epsilon.exact
    mean = p["age"].dp.preview("mean", bounds=(0, 100), epsilon=0.4)
    real = p["age"].dp.mean(bounds=(0, 100), epsilon=0.4)
    # The previewed half-width at the real count is the real interval's (the count term aside).
    assert mean.mean_halfwidth(len(people())) == pytest.approx((real.ci[1] - real.ci[0]) / 2, rel=0.05)
    assert p.dp.budget.spent.epsilon.exact == spent + Fraction(2, 5)  # only the real query was charged
    hist = p["age"].dp.preview("histogram", bins=[0, 50, 100], epsilon=0.3)
    assert hist.measurements.index.tolist() == ["count"] and "nothing charged" in repr(hist)
    auto = p["income"].dp.preview("mean", epsilon=0.3)  # automatic bounds: known cost, accuracy unknown
    assert auto.cost.epsilon == Fraction(3, 10) and "bounds=" in auto.note and auto.measurements.empty
    with pytest.raises(ValueError, match="bounds"):  # argument errors as the query would raise them
        p["age"].dp.preview("mean", bounds=(10, 0), epsilon=0.3)
    with pytest.raises(ValueError, match="cannot preview"):
        p.dp.preview("unprotected")
    assert p.dp.budget.spent.epsilon.exact == spent + Fraction(2, 5)


def skewed_categories() -> pd.Series:
    """Race-like: three large groups, two of ~250 people, one of 40 and 30 people alone in theirs."""
    sizes = {"white": 5000, "black": 800, "asian": 300, "amer-indian": 250, "other": 250, "pacific": 40}
    values = [name for name, size in sizes.items() for _ in range(size)] + [f"solo-{i}" for i in range(30)]
    return pd.Series(values, name="race")


def test_categories_not_released_are_counted_together_and_covered() -> None:
    race = skewed_categories()
    truth = race.value_counts()
    runs, covered = 300, 0
    for _ in range(runs):  # a protection each: a second query would reuse the categories the first released
        p = race.to_frame().dp.protect(epsilon=1e6, delta=1e-3, ledger=Ledger.in_memory())
        vc = p["race"].dp.value_counts(epsilon=0.1, delta=1e-6)
        assert vc.index[-1] == dpframe.OTHER and dpframe.OTHER not in vc.index[:-1]
        released = vc.index[:-1]
        # The large categories are always released (a category of 250 misses the threshold of ~150 with
        # probability ~1e-4 per run, so only those far above it are checked every run).
        assert set(truth[truth >= 0.1 * len(race)].index) <= set(released)
        remainder = len(race) - int(truth[released].sum())
        release = vc.attrs["dp"]
        covered += release.lower[dpframe.OTHER] <= remainder <= release.upper[dpframe.OTHER]
    # Nominal 95%: with 300 runs, below 88% has probability < 1e-6 for a correct interval.
    assert covered / runs >= 0.88, covered
    ledger = p.dp.budget.ledger.tail(2)
    assert ledger["query"].tolist() == ["value_counts", "rows in categories not released by value_counts"]
    assert ledger["epsilon"].tolist() == pytest.approx([0.09, 0.01]) and ledger["delta"].tolist() == [1e-6, 0]
    assert "'other (not released)' counts the rows of all the others" in release.note


def test_remainder_with_proportions_sorting_and_group_by() -> None:
    race = skewed_categories()
    frame = race.to_frame().assign(smoker=np.arange(len(race)) % 3 == 0)
    p = frame.dp.protect(epsilon=1e6, delta=1e-3, ledger=Ledger.in_memory())
    with seeded_noise(5):
        shares = p["race"].dp.value_counts(normalize=True, epsilon=1.0, delta=1e-6)
        unsorted = p["race"].dp.value_counts(sort=False, epsilon=1.0, delta=1e-6)
        groups = p.dp.groupby(["race", "smoker"]).count(epsilon=1.0, delta=1e-6)
        declared = p["race"].dp.value_counts(keys=["white", "black"], epsilon=1.0)
    assert shares.sum() == pytest.approx(1.0) and shares.index[-1] == dpframe.OTHER
    assert list(shares.iloc[:-1]) == sorted(shares.iloc[:-1], reverse=True)
    assert list(unsorted.index[:-1]) == sorted(unsorted.index[:-1])  # released in an order of their own
    assert groups.index[-1] == (dpframe.OTHER, dpframe.OTHER) and groups.index.names == ["race", "smoker"]
    assert dpframe.OTHER not in declared.index  # declared categories: no selection, nothing left over


def test_crosstab_says_how_many_cells_were_not_released() -> None:
    race = skewed_categories()
    frame = race.to_frame().assign(smoker=np.where(np.arange(len(race)) % 50 == 0, "yes", "no"))
    p = frame.dp.protect(epsilon=1e6, delta=1e-3, ledger=Ledger.in_memory())
    with seeded_noise(2):
        table = p.dp.crosstab("race", "smoker", epsilon=1.0, delta=1e-6)
    missing = int(table.isna().to_numpy().sum())
    assert missing > 0  # e.g. smokers among the 250 'other': about 5 people
    assert f"{missing} of the table's {table.size} cells were not released" in table.attrs["dp"].note


def test_released_categories_are_remembered_and_reused_at_no_cost() -> None:
    race = skewed_categories()
    p = race.to_frame().dp.protect(epsilon=100.0, delta=1e-3, ledger=Ledger.in_memory())
    with seeded_noise(4):
        first = p["race"].dp.value_counts(epsilon=1.0)
        again = p["race"].dp.value_counts(epsilon=1.0)
        subset = p[p["race"] != "white"]["race"].dp.value_counts(epsilon=1.0)
        top = p["race"].dp.top_k(2, epsilon=1.0)
    assert first.attrs["dp"].cost.delta == pytest.approx(1e-4)  # a tenth of the budget's delta, to select
    assert set(again.index) == set(first.index) and again.attrs["dp"].cost.delta == 0
    assert "released by an earlier private selection" in again.attrs["dp"].note
    assert set(subset.index) == set(first.index) and abs(subset["white"]) < 60  # the keys, not the data's
    assert list(top) == ["white", "black"] and top.attrs["dp"].cost.delta == 0
    assert p.dp.budget.spent.delta.exact == Fraction(1, 10**4)
    # The same expression under another name is remembered (its lineage); another expression selects its own.
    with seeded_noise(5):
        renamed = p.assign(group=p["race"])["group"].dp.value_counts(epsilon=1.0)
        upper = p["race"].str.upper().dp.value_counts(epsilon=1.0)
    assert renamed.attrs["dp"].cost.delta == 0 and set(renamed.index) == set(first.index)
    assert upper.attrs["dp"].cost.delta == pytest.approx(1e-4) and "WHITE" in upper.index


@pytest.mark.parametrize("column", ["age", "yrs_married", "rate_marriage"])
def test_automatic_bounds_cover_the_true_mean_on_real_columns_whose_tails_the_noise_can_see(column: str) -> None:
    """statsmodels' Fair survey (6,366 rows): columns with a visible maximum. Where no ClippingWarning was
    raised, the 95% interval covers the exact mean (not only the clipped one). On long tails no private
    warning can promise this (docs/reading-answers.md: a group-privacy argument); see the next test."""
    sm = pytest.importorskip("statsmodels.api")
    values = sm.datasets.fair.load_pandas().data[[column]]
    truth = float(values[column].mean())
    runs = quiet = covered = 0
    while runs < 300:
        runs += 1
        p = values.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = p[column].dp.mean(epsilon=1.0)
        if not any(issubclass(w.category, ClippingWarning) for w in caught):
            quiet += 1
            covered += m.ci[0] <= truth <= m.ci[1]
    # Nominal 95%: below 88% of (at least 250) quiet runs has probability < 1e-6 for a correct interval.
    assert quiet >= 250 and covered / quiet >= 0.88, (quiet, covered)


def test_on_a_long_tail_the_answer_says_its_interval_is_for_the_clipped_values() -> None:
    sm = pytest.importorskip("statsmodels.api")
    affairs = sm.datasets.fair.load_pandas().data[["affairs"]]
    p = affairs.dp.protect(epsilon=1.0, ledger=Ledger.in_memory())
    with seeded_noise(8), warnings.catch_warnings():  # a 95% interval: one seeded run in 20 misses (seed 7 did)
        warnings.simplefilter("ignore", ClippingWarning)
        m = p["affairs"].dp.mean(epsilon=1.0)
    lo, hi = m.release.bounds
    clipped_mean = float(affairs["affairs"].clip(lo, hi).mean())
    assert hi < affairs["affairs"].max() and m.ci[0] <= clipped_mean <= m.ci[1]
    assert f"of the values clipped to [{lo:g}, {hi:g}]" in repr(m) and "values above" in repr(m)


def test_group_statistics_whose_private_bounds_did_not_stand_out_are_missing_with_the_reason() -> None:
    """Issue 28: on 244 rows at ε = 0.1 the privately chosen bounds land anywhere up to ±1e15, and a group-by table
    answered means of 1e14 without a word. A cell whose interval is as wide as the bounds' range is missing, and
    the note says why; with enough rows for the ε, the means are there."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"day": rng.choice(["Thur", "Fri", "Sat", "Sun"], 244), "tip": rng.gamma(2.0, 1.5, 244)})
    p = df.dp.protect(epsilon=100.0, ledger=Ledger.in_memory())
    days = ["Thur", "Fri", "Sat", "Sun"]
    with seeded_noise(1):
        table = p.dp.groupby("day", keys=days).agg({"tip": "mean"}, epsilon=0.1)
        means = p.dp.groupby("day", keys=days).mean("tip", epsilon=20.0)
    assert table["tip"].isna().all() and "did not stand out of the noise" in table.attrs["dp"].note
    assert means.notna().all() and bool((means - df.groupby("day")["tip"].mean()).abs().max() < 1.0)
