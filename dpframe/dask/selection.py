"""Selection (``mode``, ``top_k``) and chi-squared tests on protected Dask frames.

Each is the pandas query (:mod:`dpframe.queries.select`,
:mod:`dpframe.queries.hypothesis`), planned and charged on the client from the
schema and the arguments; after the charge it reads its exact counts per
category (or cell) through the tables' :class:`~dpframe.dask.tables.DaskCells`
(one Dask pass, integer counts added over partitions), and the pandas code
selects, adds noise and tests on the client.

>>> import pandas as pd, dask.dataframe as dd, dpframe, dpframe.dask
>>> ddf = dd.from_pandas(pd.DataFrame({"c": ["a"] * 600 + ["b"] * 300}), npartitions=3)
>>> p = ddf.dp.protect(epsilon=2.0, name="selection doctest", ledger=dpframe.Ledger.in_memory())
>>> p["c"].dp.mode(keys=["a", "b", "z"], epsilon=1.0).tolist()
['a']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from dpframe.dask import tables
from dpframe.noise.mechanism import Privacy
from dpframe.queries import hypothesis, select
from dpframe.queries.hypothesis import ChiSquareResult
from dpframe.queries.partitioned import KeySpec
from dpframe.queries.plan import Target


def categories(query: str, target: Target, data: Any, k: int | None, keys: KeySpec, epsilon: float | None,
               delta: float | None, rho: float | None, mechanism: str | None) -> pd.Series[Any]:
    """``mode`` (k=None) or ``top_k`` of a Dask series: the pandas query with per-partition counts."""
    if isinstance(target.obj, pd.Series):  # otherwise the pandas query refuses a frame
        tables.partitioning(target, [target.obj.name], keys)
    read = tables.DaskCells(target, data)
    if k is None:
        return select.mode(target, epsilon=epsilon, keys=keys, delta=delta, rho=rho, mechanism=mechanism, read=read)
    return select.top_k(target, k, epsilon=epsilon, keys=keys, delta=delta, rho=rho, mechanism=mechanism, read=read)


def chisquare(target: Target, data: Any, column: Any, expected: Any, keys: KeySpec,
              privacy_of: Callable[[Target], Privacy], simulations: int) -> ChiSquareResult:
    """``p.dp.chisquare`` on Dask: :func:`hypothesis.chisquare` with per-partition counts."""
    hypothesis.check_simulations(simulations)
    declared = list(pd.Series(expected).index) if keys is None and isinstance(expected, (Mapping, pd.Series)) \
        else keys
    tables.partitioning(target, [column], declared)
    return hypothesis.chisquare(target, column, expected, keys, privacy_of, simulations,
                                read=tables.DaskCells(target, data))


def chi2_contingency(target: Target, data: Any, index: Any, columns: Any, keys: KeySpec,
                     privacy_of: Callable[[Target], Privacy], simulations: int) -> ChiSquareResult:
    """``p.dp.chi2_contingency`` on Dask: :func:`hypothesis.chi2_contingency` with per-partition counts."""
    hypothesis.check_simulations(simulations)
    tables.partitioning(target, [index, columns], keys)
    return hypothesis.chi2_contingency(target, index, columns, keys, privacy_of, simulations,
                                       read=tables.DaskCells(target, data))
