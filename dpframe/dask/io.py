"""Reading protected data from disk with bounded memory: Parquet and CSV straight into a protected Dask frame.

``dpframe.dask.read_parquet(path, epsilon=..., name=...)`` is
``dd.read_parquet(path).dp.protect(...)`` with the checks a protected read
needs: a missing path or a file that is not Parquet is a clear error raised
before any budget exists (it costs nothing), and the raw Dask frame is never
handed to the caller. Dask reads the files lazily, one partition (row group
or block) at a time per worker thread, so a query's peak memory is bounded by
the partition size, not by the data's size (docs/dask.md).

Only the schema is read up front: Parquet keeps it in the files' footers.
CSV has none, and Dask would infer the column types from a sample of the
rows, so :func:`read_csv` needs ``dtype=`` for every column.

>>> import tempfile, os, pandas as pd, dpframe, dpframe.dask
>>> folder = tempfile.mkdtemp()
>>> pd.DataFrame({"x": [1.0, 3.0] * 50}).to_parquet(os.path.join(folder, "part.parquet"))
>>> p = dpframe.dask.read_parquet(folder, epsilon=1.0, name="from disk", ledger=dpframe.Ledger.in_memory())
>>> type(p).__name__, list(p.columns)
('ProtectedDaskFrame', ['x'])
>>> dpframe.dask.read_parquet(os.path.join(folder, "nothing.parquet"), epsilon=1.0, name="x")
Traceback (most recent call last):
...
FileNotFoundError: no file at ...nothing.parquet; nothing was charged
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dask.dataframe as dd
import fsspec  # type: ignore[import-untyped]  # no type information; ships with dask

from dpframe.dask.frame import protect


def _existing(path: Any) -> None:
    """Refuse a path (or glob, or list of them) that names no file, before anything is read or charged."""
    for one in path if isinstance(path, (list, tuple)) else [path]:
        fs, _, found = fsspec.core.get_fs_token_paths(one)
        if not found or not all(fs.exists(f) for f in found):
            raise FileNotFoundError(f"no file at {one}; nothing was charged")


def read_parquet(path: Any, *, columns: list[str] | None = None, epsilon: float | None = None,
                 delta: float = 0.0, rho: float | None = None, name: str | None = None, ledger: Any = None,
                 accounting: str | None = None, privacy_unit: str | None = None, max_contributions: int = 1,
                 **read_options: Any) -> Any:
    """A protected Dask frame of Parquet files (a file, a folder, a glob or a list), read lazily by row group.

    ``columns=`` reads only those columns (Parquet reads columns separately, so the others are never
    loaded); ``read_options`` go to :func:`dask.dataframe.read_parquet` (e.g. ``split_row_groups``,
    ``filesystem``); the rest are :func:`dpframe.dask.frame.protect`'s arguments.
    """
    _existing(path)
    try:
        data = dd.read_parquet(path, columns=columns, **read_options)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"could not read {path} as Parquet ({type(error).__name__}; the reader's own message "
                         "is withheld, it can quote values); check that it is a Parquet file, folder or glob of them; "
                         "nothing was charged") from None
    return protect(data, epsilon=epsilon, delta=delta, rho=rho, name=name, ledger=ledger, accounting=accounting,
                   privacy_unit=privacy_unit, max_contributions=max_contributions)


def read_csv(path: Any, *, dtype: Mapping[str, Any], epsilon: float | None = None, delta: float = 0.0,
             rho: float | None = None, name: str | None = None, ledger: Any = None, accounting: str | None = None,
             privacy_unit: str | None = None, max_contributions: int = 1, blocksize: str | int = "64MB",
             **read_options: Any) -> Any:
    """A protected Dask frame of CSV files, read lazily in blocks of ``blocksize`` bytes.

    ``dtype={column: dtype}`` must cover every column: CSV keeps no types and inferring them would read rows
    (the dtypes are part of the public schema, like a Parquet footer's). A value that does not parse as its
    declared type fails the query that reads it, after its charge (nothing is released).
    """
    if not isinstance(dtype, Mapping):
        raise TypeError("dtype must be a dict {column: dtype} covering every column of the CSV files")
    _existing(path)
    try:
        data = dd.read_csv(path, dtype=dict(dtype), blocksize=blocksize, **read_options)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"could not read {path} as CSV ({type(error).__name__}; the reader's own message is "
                         "withheld, it can quote values); nothing was charged") from None
    undeclared = [c for c in data.columns if c not in dtype]
    if undeclared:
        raise ValueError(f"declare the dtype of every column with dtype={{column: dtype}}; missing: {undeclared} "
                         "(nothing was charged)")
    return protect(data, epsilon=epsilon, delta=delta, rho=rho, name=name, ledger=ledger, accounting=accounting,
                   privacy_unit=privacy_unit, max_contributions=max_contributions)
