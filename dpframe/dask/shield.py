"""Dask's computation of a query's exact aggregates, with any failure's message withheld.

A task that fails on a value (a CSV field that does not parse as its declared type, a damaged Parquet page, a
kernel meeting an unforeseen value) raises an exception whose message may print the value; the query has been
charged, but the message would reach the analyst unaccounted for. As pandas' structural operations do
(:func:`dpframe.protection.rowwise.shielded`), the error is replaced by one that names only its type.

>>> import pandas as pd, dask.dataframe as dd
>>> computed(dd.from_pandas(pd.Series([1, 2]), npartitions=1).sum())
np.int64(3)
>>> computed(dd.from_pandas(pd.Series(["secret"]), npartitions=1).map_partitions(
...     lambda s: s.astype(int), meta=(None, int)).sum())
Traceback (most recent call last):
...
dpframe.errors.DPFrameError: a query's pass over the Dask partitions failed on the protected data (ValueError); the message is withheld ...
"""

from __future__ import annotations

from typing import Any

from dpframe.protection.rowwise import shielded


def computed(collection: Any) -> Any:
    """``collection.compute()`` (a Dask collection or delayed object), its errors shielded."""
    with shielded("a query's pass over the Dask partitions"):
        return collection.compute()
