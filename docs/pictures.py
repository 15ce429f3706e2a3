"""Render the pictures of the docs: ``python docs/pictures.py [out_dir]`` (default ``docs/img``).

docs/reading-answers.md's are drawn from real data (statsmodels' datasets), docs/plots.md's from the
examples on that page, on the generated frame of ``python -m dpframe demo``, and the report's
screenshot in docs/describe.md in headless Chromium.

Needs the ``examples`` extra (statsmodels, matplotlib), and for the report the ``report`` extra
and headless Chromium. The noise of the reading-answers pictures is seeded
(:func:`dpframe.testing.seeded_noise`, a test-only switch) so that the pictures
do not change from one build to the next; everything else is what a user runs.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import statsmodels.api as sm  # noqa: E402

import dpframe  # noqa: E402
from dpframe.__main__ import census_like  # noqa: E402
from dpframe.testing import seeded_noise  # noqa: E402

OCCUPATIONS = {1: "student", 2: "farming, semi- or unskilled", 3: "white collar", 4: "teacher, nurse, skilled",
               5: "managerial", 6: "professional"}


def fair() -> pd.DataFrame:
    """statsmodels' Fair (1978) affairs survey: 6,366 women."""
    data = sm.datasets.fair.load_pandas().data
    return data.assign(occupation=data["occupation"].map(OCCUPATIONS))


def clipping(out: Path) -> None:
    """Automatic bounds on a long tail: the intervals cover the clipped mean, not the mean."""
    affairs = fair()["affairs"]
    runs = []
    with seeded_noise(7), warnings.catch_warnings():
        warnings.simplefilter("ignore", dpframe.ClippingWarning)
        for _ in range(40):
            p = affairs.to_frame().dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
            m = p["affairs"].dp.mean(epsilon=1.0)
            lo, hi = m.release.bounds or (0.0, 0.0)
            runs.append((float(m), *m.ci, float(affairs.clip(lo, hi).mean())))
    values = np.array(runs)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x = np.arange(len(values))
    ax.errorbar(x, values[:, 0], yerr=[values[:, 0] - values[:, 1], values[:, 2] - values[:, 0]], fmt="o", ms=3,
                capsize=2, label="released mean, 95% interval")
    ax.scatter(x, values[:, 3], marker="_", s=60, color="tab:green", label="exact mean of the clipped values")
    ax.axhline(affairs.mean(), color="tab:red", lw=1, label=f"exact mean {affairs.mean():.3f}")
    ax.set_xlabel("run (bounds chosen privately each time)")
    ax.set_ylabel("mean of affairs")
    ax.set_title("Automatic bounds on a long tail, ε = 1: the interval is for the clipped values")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "reading-clipping.png", dpi=110)
    plt.close(fig)


def histogram(out: Path) -> None:
    """A histogram whose edges the data chose: open-ended outer bins, intervals as error bars."""
    p = fair().dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(3):
        h = p["yrs_married"].dp.histogram(bins=8, epsilon=0.5)
    _, ax = plt.subplots(figsize=(7, 3.2))
    h.dp.plot(ax=ax)
    ax.set_title("histogram(bins=8), bounds chosen privately: nobody is left out")
    ax.figure.tight_layout()
    ax.figure.savefig(out / "reading-histogram.png", dpi=110)
    plt.close(ax.figure)


def other(out: Path) -> None:
    """Categories selected privately, and the rows of those not released, counted together."""
    p = fair().dp.protect(epsilon=1.0, delta=1e-6, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(1):
        vc = p["occupation"].dp.value_counts(epsilon=0.2)
    _, ax = plt.subplots(figsize=(7, 3.4))
    vc.dp.plot(ax=ax)
    ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    ax.set_title("value_counts(), categories selected privately (ε = 0.2)")
    ax.figure.tight_layout()
    ax.figure.savefig(out / "reading-other.png", dpi=110)
    plt.close(ax.figure)


def preview(out: Path) -> None:
    """Accuracy before spending: a mean's 95% half-width against its count, for three epsilons."""
    p = fair().dp.protect(epsilon=1.0, ledger=dpframe.Ledger.in_memory())
    counts = np.geomspace(50, 10_000, 60)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for epsilon in (0.1, 0.5, 1.0):
        plan = p["age"].dp.preview("mean", bounds=(17, 42), epsilon=epsilon)
        ax.loglog(counts, [plan.mean_halfwidth(n) for n in counts], label=f"ε = {epsilon}")
    ax.set_xlabel("rows in the mean")
    ax.set_ylabel("95% half-width (years)")
    ax.set_title("p['age'].dp.preview('mean', bounds=(17, 42), epsilon=...): nothing spent")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(out / "reading-preview.png", dpi=110)
    plt.close(fig)
    assert p.dp.budget.spent.epsilon == 0


def plots(out: Path) -> None:
    """docs/plots.md's three examples: a histogram, value counts with declared keys, a crosstab."""
    p = census_like().dp.protect(epsilon=1.0, delta=1e-6, ledger=dpframe.Ledger.in_memory())
    with seeded_noise(5):
        h = p["age"].dp.histogram(bins=range(0, 130, 10), epsilon=0.2)
        vc = p["education"].dp.value_counts(keys=["HS-grad", "Bachelors", "Masters"], epsilon=0.1)
        t = p.dp.crosstab("education", "sex", keys={"sex": ["Female", "Male"]}, epsilon=0.2, delta=1e-7)
    for name, result, style in (("histogram", h, {}), ("value-counts", vc, {"color": "tab:green"}),
                                ("crosstab", t, {})):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        result.dp.plot(ax=ax, **style)
        ax.tick_params(axis="x", labelsize=7)
        fig.tight_layout()
        fig.savefig(out / f"plots-{name}.png", dpi=110)
        plt.close(fig)


def report(out: Path) -> None:
    """The HTML report of `dpframe describe --out` on the demo's census-like frame, as headless Chromium shows it."""
    from dpframe.__main__ import census_like, main as command

    browser = next((path for name in ("chromium", "chromium-browser", "google-chrome")
                    if (path := shutil.which(name))), None)
    if browser is None:
        print("report.png not drawn: no headless Chromium (apt-get install chromium)", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as folder:
        data, page = Path(folder) / "census.csv", Path(folder) / "report.html"
        census_like().to_csv(data, index=False)
        # Not seeded: the ledger would (rightly) show the releases as not private.
        schema = Path(folder) / "schema.json"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            command(["schema", str(data), "--out", str(schema)])
            command(["describe", str(data), "--schema", str(schema), "--epsilon", "1", "--delta", "1e-6",
                     "--out", str(page), "--ledger", str(Path(folder) / "ledger.sqlite")])
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={out / 'report.png'}", "--window-size=1280,2300", page.as_uri()],
                       check=True, capture_output=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for draw in (clipping, histogram, other, preview, plots, report):
        draw(out)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "img")
