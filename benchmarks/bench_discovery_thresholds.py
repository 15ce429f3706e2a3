"""What a value must hold to survive ``synthesize``'s domain discovery, now and with one joint Gaussian release.

Usage::

    python benchmarks/bench_discovery_thresholds.py                      # the raw benchmark's large data sets
    python benchmarks/bench_discovery_thresholds.py --datasets weather randhie

Data-independent arithmetic on each data set's discovery *plan* (which columns need bounds, categories or
value selection: read from the schema, as ``synthesize`` plans it), at epsilon = 1, delta = 1e-6 and
``max_contributions = 1``. No noise is drawn and nothing is released.

* **now**: a fifth of the budget split in equal pure-epsilon shares (delta to the selections), as
  :meth:`dpframe.synthesis.domain.DomainPlan.shares` and ``_discover_bins`` do: a text column selects with
  its whole share, a float column its common values with a quarter of it, and ranges (octave histograms)
  take half of a numeric column's share. Thresholds: ``selection_threshold`` (discrete Laplace, exact) and
  ``b ln(cells / 0.002)`` for an octave.
* **joint**: the same first-stage epsilon (selections and ranges of all columns; resolution and bins keep
  their pure-epsilon shares) spent on ONE vector release with discrete Gaussian noise: a row is in one cell
  of each of the ``m`` histograms, so m coordinates move by at most 1 and ``Privacy.vector_noise(m, 1)``
  calibrates sigma exactly with half the discovery's delta; the other half bounds the selections (a unit's
  keys, one per selecting column, each released with probability <= delta / (2 s)). Gaussian tails
  approximated by the normal's (the discrete Gaussian's tail is within a few percent at these sigmas).
* **joint zCDP**: as joint, charged in rho together with the model (the whole budget converted once,
  CKS20), which is what a zCDP budget already allows.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from bench_synthesis_raw import DELTA, EPSILON, load_raw

from dpframe.noise.calibrate import zcdp_rho_for
from dpframe.noise.mechanism import NoiseSpec, Privacy
from dpframe.queries.partitioned import selection_threshold
from dpframe.synthesis.domain import (
    _OCTAVES,
    DEFAULT_BINS,
    SUPPORT_FALSE_ALARM,
    plan_domains,
)
from dpframe.synthesis.synthesize import DOMAIN_SHARE

OCTAVE_CELLS = 2 * _OCTAVES + 1


def tail(p: float) -> float:
    """The standard normal's upper p-quantile."""
    return NormalDist().inv_cdf(1 - p)


def thresholds(text: int, integer: int, floats: int, dates: int) -> dict[str, float]:
    """Records a category, a common float value and an octave need, now and jointly (module docstring)."""
    columns, selections = text + integer + floats + dates, text + floats
    epsilon, delta = EPSILON * float(DOMAIN_SHARE), DELTA * float(DOMAIN_SHARE)
    each, each_delta = epsilon / columns, delta / max(selections, 1)
    laplace = lambda e: NoiseSpec("laplace", Fraction(1 / e))
    out = {
        "text now": float(selection_threshold(laplace(each), 1, each_delta)) if text else math.nan,
        "value now": float(selection_threshold(laplace(each / 4), 1, each_delta)) if floats else math.nan,
        "octave now": 2 / each * math.log(OCTAVE_CELLS / (2 * SUPPORT_FALSE_ALARM)) if integer + floats else math.nan,
    }
    # First stage: text selections (whole share), float values and ranges (3/4), integer ranges (1/2).
    stage = each * (text + 0.75 * floats + 0.5 * integer)
    histograms = text + 2 * floats + integer
    sigma = Privacy("approx", "gaussian", Fraction(stage), Fraction(delta / 2), Fraction(0)).vector_noise(
        histograms, 1).std
    rho = zcdp_rho_for(EPSILON, DELTA - delta / 2) * float(DOMAIN_SHARE) * stage / epsilon
    sigma_zcdp = math.sqrt(histograms / (2 * rho))
    for name, s in (("joint", sigma), ("joint zCDP", sigma_zcdp)):
        out[f"select {name}"] = 1 + s * tail(delta / 2 / max(selections, 1)) if selections else math.nan
        out[f"octave {name}"] = s * tail(SUPPORT_FALSE_ALARM / OCTAVE_CELLS) if integer + floats else math.nan
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["weather", "bundesliga", "randhie", "baseball", "adult"])
    args = parser.parse_args()
    keys = ["text now", "value now", "select joint", "select joint zCDP",
            "octave now", "octave joint", "octave joint zCDP"]
    print("| data | text/int/float/date | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    with tempfile.TemporaryDirectory() as folder:
        for name in args.datasets:
            loaded = load_raw(name, Path(folder))
            if loaded is None:
                continue
            frame = loaded[0]
            plan = plan_domains(frame, list(frame.columns), bounds=None, categories=None, bins=DEFAULT_BINS)
            kinds = [("text" if e.need == "categories" else e.kind) for e in plan.entries if e.need is not None]
            counts = (kinds.count("text"), kinds.count("integer"), kinds.count("float"),
                      kinds.count("datetime") + kinds.count("timedelta"))
            row = thresholds(*counts)
            cells = " | ".join("-" if math.isnan(row[k]) else f"{row[k]:,.0f}" for k in keys)
            print(f"| {name} | {'/'.join(map(str, counts))} | {cells} |")


if __name__ == "__main__":
    main()
