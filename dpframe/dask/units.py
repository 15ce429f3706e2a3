"""Privacy units on Dask: each unit's rows brought into one partition, then bounded to ``max_contributions``.

On pandas every query bounds the rows it uses so that no privacy unit
contributes more than ``max_contributions`` of them
(:func:`dpframe.protection.units.contribution_mask`, a fresh random choice per
query). On Dask one unit's rows may sit in several partitions, so
``protect(privacy_unit=...)`` hash-partitions the rows by the unit column
(:func:`by_unit`: Dask's ``shuffle(on=...)``, every row of a unit in the same
partition, the unit as the ``_dp_unit`` index as on pandas). Kept
transformations (columns, filters, ``assign``) stay within partitions. Each
read a query makes after its charge goes through :func:`in_use` (the
protected object's ``_data``), which applies pandas' own
``contribution_mask`` to every partition. Both steps are lazy, part of the
graph of the query's one pass: nothing is computed or kept in memory between
queries, and no user-visible object ever holds the unbounded rows.

The random choice comes from a secret key drawn per read from the library's
random source (:func:`dpframe.noise.random.current_source`): it keys a
SHAKE-256 stream per partition whose 64-bit words are the random priorities
of ``contribution_mask`` (workers do not share the client's source; numpy's
generator is never used). Each unit keeps a uniformly random subset of
``max_contributions`` of its rows, chosen independently of every other unit,
as on pandas, so the queries charge the same sensitivity and noise.

>>> import pandas as pd, dask.dataframe as dd, dpframe, dpframe.dask
>>> ddf = dd.from_pandas(pd.DataFrame({"user": [1, 1, 1, 2, 3, 3], "x": range(6)}), npartitions=3)
>>> p = ddf.dp.protect(epsilon=1.0, name="units", privacy_unit="user", max_contributions=2,
...                    ledger=dpframe.Ledger.in_memory())
>>> int(p._rows_in_use.compute().groupby("user").size().max())  # internal: the rows one read may use
2
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpframe.noise.random import current_source
from dpframe.protection.units import UNIT_LEVEL, Protection, contribution_mask

KEY_BYTES = 32


def draw_key() -> bytes:
    """A fresh secret key for one protected frame's selection, from the library's random source."""
    return current_source().words(KEY_BYTES // 8).tobytes()


def keyed_words(key: bytes, stream: int) -> Any:
    """``words(n)``: uniform 64-bit words of the SHAKE-256 stream of ``key`` and ``stream`` (a partition number).

    >>> w = keyed_words(bytes(32), 0)
    >>> w(3).tolist() == keyed_words(bytes(32), 0)(3).tolist() != keyed_words(bytes(32), 1)(3).tolist()
    True
    """
    seed = key + stream.to_bytes(8, "little")

    def words(n: int) -> NDArray[np.uint64]:
        return np.frombuffer(hashlib.shake_256(seed).digest(8 * n), dtype=np.uint64) if n else np.empty(0, np.uint64)

    return words


def with_unit_index(part: pd.DataFrame, unit: str) -> pd.DataFrame:
    """``part`` indexed by its unit column, as the ``_dp_unit`` record of pandas' protected rows."""
    return part.set_axis(pd.Index(part[unit].to_numpy(), name=UNIT_LEVEL), axis=0)


def check_unit_dtype(meta: pd.DataFrame, unit: str) -> None:
    """Refuse, from the schema, a unit column of Python objects: values that pandas counts as one unit
    (``1``, ``1.0`` and ``True``) hash apart in Dask's shuffle, so one unit could keep its rows in several
    partitions and contribute ``max_contributions`` rows in each."""
    if meta[unit].dtype == object:
        raise TypeError(f"privacy_unit {unit!r} has dtype object: on Dask the unit column must have one type "
                        f"(convert it before protect(), e.g. ddf[{unit!r}].astype('string') or a numeric dtype)")


def by_unit(data: Any, unit: str) -> Any:
    """The Dask frame ``data`` hash-partitioned by ``unit`` and indexed by it (lazy: part of the graph).

    Every row of a unit lands in one partition, so each partition can bound its units on its own. Rows whose
    unit is missing hash alike and are one unit together (at most ``max_contributions`` rows in all):
    conservative, where pandas' ``protect()`` refuses such data.
    """
    # The task-based shuffle keeps the rows' order (the disk and p2p ones follow task completion), so a seeded
    # selection key chooses the same rows again: tests are reproducible under dpframe.testing.seeded_noise.
    shuffled = data.shuffle(on=unit, npartitions=data.npartitions, shuffle_method="tasks")
    return shuffled.map_partitions(with_unit_index, unit, meta=with_unit_index(data._meta, unit))


def _bounded(part: Any, max_contributions: int, key: bytes, partition_info: dict[str, Any] | None = None) -> Any:
    """One partition's rows, at most ``max_contributions`` per unit (all of a unit's rows are in it)."""
    stream = 0 if partition_info is None else int(partition_info["number"])
    mask = contribution_mask(part, max_contributions, keyed_words(key, stream))
    return part if mask is None else part[mask]


def in_use(rows: Any, protection: Protection) -> Any:
    """The rows (of :func:`by_unit`, after any kept transformation) that one read may use (lazy).

    Row-level protection: all. With a privacy unit: at most ``max_contributions`` rows per unit, chosen with a
    fresh key (:func:`draw_key`), as pandas draws a fresh choice per query.
    """
    if protection.privacy_unit is None:
        return rows
    return rows.map_partitions(_bounded, protection.max_contributions, draw_key(), meta=rows._meta)
