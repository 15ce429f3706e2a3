"""The ``.dp`` accessor on Dask DataFrames (the ``dask`` extra): protect, then charged queries on partitions.

Importing this module registers ``.dp`` on ``dask.dataframe`` frames and series
with Dask's own accessor registration. A query is planned and charged on the
client from the schema (Dask's ``_meta``, an empty pandas frame) and the
arguments, exactly as on pandas; only then does Dask compute exact per-partition
integer aggregates with the pandas kernels, which add up exactly, and the
noise is added once, on the client (docs/dask.md).

>>> import pandas as pd, dask.dataframe as dd, dpframe, dpframe.dask
>>> from dpframe.testing import seeded_noise
>>> ddf = dd.from_pandas(pd.DataFrame({"x": [1.0, 3.0] * 500}), npartitions=4)
>>> p = ddf.dp.protect(epsilon=1.0, name="doctest", ledger=dpframe.Ledger.in_memory())
>>> with seeded_noise(0):
...     m = p["x"].dp.mean(bounds=(0, 4), epsilon=0.5)
>>> bool(abs(m - 2) < 0.1), p.dp.budget.ledger["query"].tolist()
(True, ['mean'])
"""

from __future__ import annotations

from dpframe.dask.frame import ProtectedDaskFrame, ProtectedDaskSeries, register
from dpframe.dask.io import read_csv, read_parquet

register()

__all__ = ["ProtectedDaskFrame", "ProtectedDaskSeries", "read_csv", "read_parquet"]
