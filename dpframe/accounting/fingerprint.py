"""A content fingerprint of a frame as given to ``protect()``: the same data, in any process, finds its budget.

The digest is SHA-256 over the frame's type, shape, column names, index
names and dtypes, then every column and index level:

- numbers, booleans, datetimes and timedeltas with numpy dtypes: their raw bytes
  (in pieces of :data:`_PIECE_BYTES`, hashed separately and then together, so
  that large columns are hashed on all cores);
- categoricals: the codes and, recursively, the categories;
- object and Python-stored string columns: each distinct value's position of
  first appearance (its code, per row) and the distinct values themselves. The
  codes are found by grouping the rows' object pointers first, so a column read
  from a file (where equal strings share objects) costs about one pass over
  integers; equal values held in different objects get the same code, so the
  digest depends on the content only;
- anything else (nullable and Arrow-backed columns, time-zone aware datetimes):
  pandas' vectorised per-row hash (:func:`pandas.util.hash_pandas_object`).

What it does and does not protect against (docs/ledger.md): protecting the
same data again reconnects to its budget; data that differ in one cell, in a
dtype or in row order get a new fingerprint, and so a new budget. It guards
against accidental re-protection, not a curator who edits the data.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

# Kinds of numpy dtypes whose bytes are the values themselves.
_RAW_KINDS = "biufcmM"
# From this many cells on, columns are hashed on several threads.
_PARALLEL_CELLS = 1_000_000
# Raw column bytes are hashed in pieces of this size (part of the digest's definition: never change it).
_PIECE_BYTES = 1 << 23


def fingerprint(data: pd.DataFrame | pd.Series[Any]) -> str:
    """The hexadecimal SHA-256 content fingerprint of ``data`` (module docstring).

    >>> df = pd.DataFrame({"age": [23, 35], "city": ["Oslo", "Rome"]})
    >>> fingerprint(df) == fingerprint(df.copy()), fingerprint(df) == fingerprint(df.iloc[::-1])
    (True, False)
    """
    digest = hashlib.sha256()
    frame = data if isinstance(data, pd.DataFrame) else data.to_frame()
    header = (type(data).__name__, frame.shape, [repr(c) for c in frame.columns], [repr(n) for n in frame.index.names])
    digest.update(repr(header).encode())
    index = frame.index
    if isinstance(index, pd.RangeIndex):
        digest.update(repr((index.start, index.stop, index.step)).encode())
        levels = []
    else:
        levels = [index.get_level_values(level) for level in range(index.nlevels)]
    parts = [frame.iloc[:, i] for i in range(frame.shape[1])] + levels
    # Jobs: grouping a non-raw column, or hashing one piece of raw bytes. The slow grouping jobs go
    # first so the work spreads evenly over the threads; the digests then combine in column order.
    raws = [_raw_bytes(part) for part in parts]
    pieces = [None if raw is None else _pieces(raw) for raw in raws]
    jobs: list[tuple[Callable[[Any], bytes], Any]] = [(_digest, part) for part, raw in zip(parts, raws) if raw is None]
    jobs += [(_sha256, piece) for column in pieces if column is not None for piece in column]
    # Hashing and grouping integers release the GIL: large frames use the machine's cores.
    if frame.size >= _PARALLEL_CELLS and len(jobs) > 1:
        with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
            results = list(pool.map(lambda job: job[0](job[1]), jobs))
    else:
        results = [job(argument) for job, argument in jobs]
    grouped = iter(results[: sum(raw is None for raw in raws)])
    hashed = iter(results[sum(raw is None for raw in raws):])
    for part, column in zip(parts, pieces):
        digest.update(next(grouped) if column is None else _combine(part.dtype, [next(hashed) for _ in column]))
    return digest.hexdigest()


def _sha256(data: memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def _raw_bytes(values: pd.Series[Any] | pd.Index[Any]) -> memoryview | None:
    """The values' bytes if they are the values themselves (numpy numbers, booleans, times), else None."""
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in _RAW_KINDS:
        return _bytes(values.to_numpy())
    return None


def _pieces(raw: memoryview) -> list[memoryview]:
    return [raw[start:start + _PIECE_BYTES] for start in range(0, len(raw), _PIECE_BYTES)] or [raw]


def _combine(dtype: Any, piece_digests: list[bytes]) -> bytes:
    """The digest of a raw column from its pieces' digests."""
    return hashlib.sha256(str(dtype).encode() + b"".join(piece_digests)).digest()


def _digest(values: pd.Series[Any] | pd.Index[Any]) -> bytes:
    """The digest of one column or index level."""
    dtype = values.dtype
    raw = _raw_bytes(values)
    if raw is not None:
        return _combine(dtype, [_sha256(piece) for piece in _pieces(raw)])
    digest = hashlib.sha256(str(dtype).encode())
    if isinstance(dtype, pd.CategoricalDtype):
        digest.update(_bytes(pd.Categorical(values).codes))
        digest.update(_digest(dtype.categories))
    elif dtype == object or (isinstance(dtype, pd.StringDtype) and dtype.storage == "python"):
        codes, distinct = _value_codes(values.to_numpy(dtype=object))
        digest.update(_bytes(codes))
        digest.update(_joined(distinct))
    else:
        digest.update(_bytes(pd.util.hash_pandas_object(values, index=False).to_numpy()))
    return digest.digest()


def _bytes(array: np.ndarray[Any, Any]) -> memoryview:
    """The array's bytes, without a copy when it is contiguous."""
    return np.ascontiguousarray(array).view(np.uint8).data


def _value_codes(objects: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Per row, the code of its value by first appearance (-1 for missing); and the distinct values in that order."""
    objects = np.ascontiguousarray(objects)
    # The array holds object pointers: group rows by pointer (fast integer hashing, no string touched)...
    pointers = np.ctypeslib.as_array((ctypes.c_size_t * len(objects)).from_address(objects.ctypes.data))
    by_object, _ = pd.factorize(pointers)
    del pointers  # a view into ``objects``' buffer: not kept beyond this point
    representatives = objects[_first_positions(by_object)]
    # ...then group the distinct objects by value, in the same order of first appearance.
    try:
        by_value, distinct = pd.factorize(representatives)
    except TypeError:  # unhashable values (lists, dicts): grouped by their type and repr
        by_value, distinct = pd.factorize(np.array([
            _canonical(v) if isinstance(v, _CONTAINERS) else f"{type(v).__qualname__}:{v!r}" for v in representatives
        ], dtype=object))
    # The narrowest integer type that holds the codes: fewer bytes to gather and to hash.
    narrow = np.min_scalar_type(-max(len(distinct), 1))
    return by_value.astype(narrow)[by_object], np.asarray(distinct, dtype=object)


def _first_positions(codes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The first row of each code (codes are numbered 0, 1, ... by first appearance, none missing)."""
    if len(codes) == 0:
        return np.zeros(0, dtype=np.intp)
    seen = np.maximum.accumulate(codes)  # a code appears first exactly where the running maximum grows
    return np.concatenate([[0], np.flatnonzero(seen[1:] > seen[:-1]) + 1])


def _joined(distinct: np.ndarray[Any, Any]) -> bytes:
    """The distinct values' contents, each tagged with its type (so 1 and "1" differ)."""
    if pd.api.types.infer_dtype(distinct, skipna=False) == "string":
        return b"str\x00" + "\x00".join(distinct).encode("utf-8", "surrogatepass")
    return "\x00".join(_canonical(v) if isinstance(v, _CONTAINERS) else f"{type(v).__qualname__}:{v}"
                        for v in distinct).encode("utf-8", "surrogatepass")


_CONTAINERS = (set, frozenset, dict, list, tuple)


def _canonical(value: Any) -> str:
    """A value's type and content as text that does not depend on the process (sets in sorted order).

    >>> _canonical(frozenset({"b", "a"})), _canonical({2: {"y", "x"}})
    ("frozenset:{str:'a',str:'b'}", "dict:{int:2=set:{str:'x',str:'y'}}")
    """
    kind = type(value).__qualname__
    if isinstance(value, (set, frozenset)):  # iteration order follows the process's hash seed
        return f"{kind}:{{{','.join(sorted(map(_canonical, value)))}}}"
    if isinstance(value, dict):
        items = sorted(f"{_canonical(k)}={_canonical(v)}" for k, v in value.items())
        return f"{kind}:{{{','.join(items)}}}"
    if isinstance(value, (list, tuple)):
        return f"{kind}:[{','.join(map(_canonical, value))}]"
    return f"{kind}:{value!r}" if isinstance(value, str) else f"{kind}:{value}"
