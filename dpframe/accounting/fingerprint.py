"""A content fingerprint of a frame as given to ``protect()``: the same data, in any process, finds its budget.

The fingerprint (``"fp2:"`` and 64 hexadecimal digits) is a SHA-256 digest
over the frame's type, shape, column names, index names and dtypes, then a
digest of every column and index level:

- numbers, booleans, datetimes and timedeltas with numpy dtypes: their raw bytes;
- categoricals: their codes' raw bytes and, recursively, the categories;
- Arrow-backed strings (pandas' ``str`` dtype with pyarrow) with no value
  missing: the Arrow buffers themselves (offsets from 0 and the characters),
  whatever the chunks (with missing values: pandas' per-row hash, below, as a
  missing slot may hold characters);
- object and Python-stored string columns: each distinct value's position of
  first appearance (its code, per row) and the distinct values themselves. The
  codes are found by grouping the rows' object pointers first, so a column read
  from a file (where equal strings share objects) costs about one pass over
  integers; equal values held in different objects get the same code, so the
  digest depends on the content only;
- anything else (nullable and other Arrow-backed columns, time-zone aware
  datetimes): pandas' vectorised per-row hash (:func:`pandas.util.hash_pandas_object`).

Raw bytes are cut in pieces of :data:`_PIECE_BYTES`, each checksummed with
CRC-32 (zlib: several GB/s, on all cores for large frames); the pieces'
checksums, in order, enter the SHA-256 digest. The fingerprint finds the same
data again; it is not a security boundary. Two different data sets share a
fingerprint only if some piece that differs keeps its CRC-32 (about 2⁻³² for
a change that is not a short burst, which CRC-32 always detects), and
fingerprints that collide only make two data sets share one budget, which
under-spends each: never more budget (docs/ledger.md).

:func:`legacy_fingerprint` is the fingerprint of dpframe before this one
(SHA-256 of each piece, pandas' per-row hash for Arrow strings), kept so that a
ledger written then still finds its budgets (:meth:`~dpframe.accounting.ledger.Ledger.open_budget`).

What it does and does not protect against (docs/ledger.md): protecting the
same data again reconnects to its budget; data that differ in one cell, in a
dtype or in row order get a new fingerprint, and so a new budget. It guards
against accidental re-protection, not a curator who edits the data.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import zlib
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
# What starts a fingerprint of this scheme (a legacy one is 64 hexadecimal digits and nothing else).
PREFIX = "fp2:"

Blobs = list[tuple[bytes, memoryview]]


def fingerprint(data: pd.DataFrame | pd.Series[Any]) -> str:
    """The content fingerprint of ``data`` (module docstring).

    >>> df = pd.DataFrame({"age": [23, 35], "city": ["Oslo", "Rome"]})
    >>> fingerprint(df) == fingerprint(df.copy()), fingerprint(df) == fingerprint(df.iloc[::-1])
    (True, False)
    >>> fingerprint(df)[:4]
    'fp2:'
    """
    return PREFIX + _fingerprint(data, legacy=False)


def legacy_fingerprint(data: pd.DataFrame | pd.Series[Any]) -> str:
    """The fingerprint dpframe gave ``data`` before :func:`fingerprint` (module docstring): SHA-256 throughout.

    >>> len(legacy_fingerprint(pd.DataFrame({"age": [23, 35]})))
    64
    """
    return _fingerprint(data, legacy=True)


def _fingerprint(data: pd.DataFrame | pd.Series[Any], *, legacy: bool) -> str:
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
    parts = [column for _, column in frame.items()] + levels
    checksum = _sha256 if legacy else _crc32
    # Jobs: digesting a column that is not bytes (grouping objects), or checksumming one piece of bytes. The
    # slow grouping jobs go first so the work spreads evenly over the threads; the digests then combine in
    # column order.
    blobs = [_raw_blobs(part) if legacy else _blobs(part) for part in parts]
    pieces = [None if found is None else [_pieces(raw) for _, raw in found] for found in blobs]
    jobs: list[tuple[Callable[[Any], bytes], Any]] = [
        (_legacy_digest if legacy else _digest, part) for part, found in zip(parts, blobs) if found is None]
    jobs += [(checksum, piece) for column in pieces if column is not None for blob in column for piece in blob]
    # Checksumming and grouping integers release the GIL: large frames use the machine's cores.
    if frame.size >= _PARALLEL_CELLS and len(jobs) > 1:
        with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
            results = list(pool.map(lambda job: job[0](job[1]), jobs))
    else:
        results = [job(argument) for job, argument in jobs]
    grouped = iter(results[: sum(found is None for found in blobs)])
    hashed = iter(results[sum(found is None for found in blobs):])
    for part, found, column in zip(parts, blobs, pieces):
        if found is None or column is None:
            digest.update(next(grouped))
            continue
        for (tag, _), blob in zip(found, column):
            digest.update(_combine(tag, [next(hashed) for _ in blob]))
    return digest.hexdigest()


def _crc32(data: memoryview) -> bytes:
    return zlib.crc32(data).to_bytes(4, "little")


def _sha256(data: memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def _raw_bytes(values: pd.Series[Any] | pd.Index[Any]) -> memoryview | None:
    """The values' bytes if they are the values themselves (numpy numbers, booleans, times), else None."""
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in _RAW_KINDS:
        return _bytes(values.to_numpy())
    return None


def _raw_blobs(values: pd.Series[Any] | pd.Index[Any]) -> Blobs | None:
    """The legacy scheme's bytes of a column: its raw bytes, tagged with its dtype; None for any other column."""
    raw = _raw_bytes(values)
    return None if raw is None else [(str(values.dtype).encode(), raw)]


def _blobs(values: pd.Series[Any] | pd.Index[Any]) -> Blobs | None:
    """The bytes that stand for a column, each with a tag saying what they are; None for a column of objects (or
    of a dtype without such bytes), which :func:`_digest` digests instead.

    A categorical's codes are checksummed like numbers, its categories digested (they are few); Arrow strings
    are their buffers.
    """
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = pd.Categorical(values).codes
        tag = f"category ordered={dtype.ordered} of {dtype.categories.dtype}".encode() + _digest(dtype.categories)
        return [(tag, _bytes(codes))]
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return _arrow_string_blobs(values)
    return _raw_blobs(values)


def _arrow_string_blobs(values: pd.Series[Any] | pd.Index[Any]) -> Blobs | None:
    """An Arrow string column's offsets (from 0) and characters: its content, whatever its chunks.

    None for another layout (string views), or when values are missing (Arrow lets a missing slot hold
    characters, e.g. after ``pyarrow.compute.if_else``, which equal columns need not share), which
    :func:`_digest` digests instead.
    """
    import pyarrow as pa

    strings = pa.array(values.array)
    if isinstance(strings, pa.ChunkedArray):  # one array: chunks combined (a copy only if there are several)
        strings = strings.chunk(0) if strings.num_chunks == 1 else strings.combine_chunks()
    if strings.null_count or not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        return None
    offsets_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    _, offsets_buffer, characters = strings.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=offsets_type)[strings.offset:strings.offset + len(strings) + 1]
    first, last = int(offsets[0]), int(offsets[-1])
    blobs = [(f"{values.dtype!r} arrow {strings.type} offsets".encode(), _bytes(offsets - first if first else offsets)),
             (b"characters", memoryview(characters)[first:last] if characters is not None else memoryview(b""))]
    return blobs


def _pieces(raw: memoryview) -> list[memoryview]:
    return [raw[start:start + _PIECE_BYTES] for start in range(0, len(raw), _PIECE_BYTES)] or [raw]


def _combine(tag: bytes, piece_digests: list[bytes]) -> bytes:
    """The digest of one blob of bytes from its pieces' checksums (or digests)."""
    return hashlib.sha256(tag + b"".join(piece_digests)).digest()


def _digest(values: pd.Series[Any] | pd.Index[Any]) -> bytes:
    """The digest of one column or index level (of objects, or small: a categorical's categories)."""
    found = _blobs(values)
    if found is not None:
        return hashlib.sha256(b"".join(_combine(tag, [_crc32(piece) for piece in _pieces(raw)])
                                       for tag, raw in found)).digest()
    return _object_digest(values, _digest)


def _legacy_digest(values: pd.Series[Any] | pd.Index[Any]) -> bytes:
    """The legacy scheme's digest of one column or index level."""
    raw = _raw_bytes(values)
    if raw is not None:
        return _combine(str(values.dtype).encode(), [_sha256(piece) for piece in _pieces(raw)])
    return _object_digest(values, _legacy_digest)


def _object_digest(values: pd.Series[Any] | pd.Index[Any],
                   digest_of: Callable[[pd.Series[Any] | pd.Index[Any]], bytes]) -> bytes:
    """The digest of a column that is not raw bytes: a categorical (its codes and, by ``digest_of``, its
    categories), objects (codes by first appearance and the distinct values), or pandas' per-row hash."""
    dtype = values.dtype
    digest = hashlib.sha256(str(dtype).encode())
    if isinstance(dtype, pd.CategoricalDtype):
        digest.update(_bytes(pd.Categorical(values).codes))
        digest.update(digest_of(dtype.categories))
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
