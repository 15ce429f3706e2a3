"""What the Dask tests compare with the pandas path: shared by tests/test_dask*.py."""

from __future__ import annotations

from typing import Any


def ledger_lines(p: Any) -> list[dict[str, Any]]:
    """The ledger lines of ``p``'s budget without their times, to compare a Dask budget's with a pandas one's."""
    return p.dp.budget.ledger.drop(columns="time").to_dict("records")  # type: ignore[no-any-return]
