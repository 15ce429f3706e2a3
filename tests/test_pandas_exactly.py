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
