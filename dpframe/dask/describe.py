"""``describe`` of protected Dask frames and series: the pandas ``describe`` with Dask reads.

The pandas :func:`~dpframe.report.describe.describe` plans every column, splits ``epsilon`` and reserves it on
the client from the schema (Dask's ``_meta``); then it measures each column through its
:class:`~dpframe.report.describe.ColumnReads`, which here read the partitions after the charges:

* numeric, date and duration columns: the moments, automatic bounds and quantile reads of
  :mod:`dpframe.dask.moments`;
* categorical, text and boolean columns: the count of non-missing values (Dask's ``count``) and the category
  counts of :class:`~dpframe.dask.tables.DaskCells` (public categories, or private selection as in
  ``value_counts``).

So for the same seeded noise a mixed frame is described as on pandas, with the same ledger lines.

>>> import pandas as pd, dask.dataframe as dd, dpframe, dpframe.dask
>>> df = pd.DataFrame({"age": [23, 35, 47, 59] * 250, "smoker": [True, False] * 500})
>>> p = dd.from_pandas(df, npartitions=4).dp.protect(epsilon=1.0, name="describe doctest",
...                                                  ledger=dpframe.Ledger.in_memory())
>>> d = p.dp.describe(epsilon=1.0, bounds={"age": (0, 100)}, progress=False)
>>> list(d.columns), d.loc["unique", "smoker"]
(['age', 'smoker'], 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import pandas as pd

from dpframe.dask.moments import grid_sums, quantile_reads
from dpframe.dask.shield import computed
from dpframe.dask.tables import DaskCells, check_keys
from dpframe.queries.plan import Target
from dpframe.report.describe import ColumnReads, describe, describe_column


def _column_reads(frame: dd.DataFrame) -> Callable[[Any], ColumnReads]:
    def reads(name: Any) -> ColumnReads:
        column = frame[name]
        return ColumnReads(lambda moments: grid_sums(column, moments.kernel), quantile_reads(column),
                           lambda: int(computed(column.count())), lambda target: DaskCells(target, column))

    return reads


def _known_categories(meta: pd.DataFrame, target: Target, keys: Any) -> None:
    """Refuse, before any charge, categorical columns whose categories Dask does not know and ``keys`` do not
    declare (the counts would be of placeholder categories; finding the real ones would read the data)."""
    described = [c for c in meta.columns if c != target.protection.privacy_unit]
    check_keys(Target(meta, target.protection), described, keys)


def describe_frame(frame: dd.DataFrame, target: Target, include: Any, **arguments: Any) -> pd.DataFrame:
    """As the pandas ``p.dp.describe(...)``: every column's statistics, spending exactly ``epsilon``."""
    meta = target.obj
    assert isinstance(meta, pd.DataFrame)
    if include != "all":
        meta = meta.select_dtypes(include=include)
        frame = frame[list(meta.columns)]
    _known_categories(meta, target, arguments.get("keys"))
    return describe(Target(meta, target.protection), reads=_column_reads(frame), **arguments)


def describe_series(column: dd.Series, target: Target, **arguments: Any) -> pd.Series[Any]:
    """As the pandas ``p[column].dp.describe(...)``."""
    series = target.series
    frame = series.to_frame()
    _known_categories(frame, target, arguments.get("keys"))  # the column's keys: declared when given
    return describe_column(Target(frame, target.protection), series.name, reads=_column_reads(column.to_frame()),
                           **arguments)
