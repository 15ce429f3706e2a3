"""File schemas for the command line: column types decided by a reviewed file, never by the private values.

A data file's **header** (column names, separator, encoding of the header
line) is public; its **values** are private. Letting pandas infer types from
the values makes the code path depend on them: one missing age turns an
integer column into floats (another quantile grid), one stray ``?`` turns it
into text (another error). So ``dpframe describe`` and ``dpframe synthesize``
read every column as a schema file declares (:func:`read_with_schema`), and
``dpframe schema data.csv`` drafts that file (:func:`infer_schema`) for the
curator to review. The draft reads the data exactly and is **not** private:
it says so, in its ``note`` and ``"private": false``.

The format (docs/command-line.md)::

    {"format": "dpframe-schema/1", "private": false, "note": "...",
     "separator": ";", "encoding": "utf-8",
     "columns": {"age": {"type": "integer"},
                 "sex": {"type": "category", "categories": ["Female", "Male"]},
                 "seen": {"type": "datetime", "format": "ISO8601"}}}

Types: ``integer`` (nullable ``Int64``), ``float``, ``boolean`` (``true``/``false``
in any case; nullable), ``category`` (the listed categories, as text),
``datetime`` (``format``: a strptime format or ``ISO8601``, the default;
time zones converted to UTC) and ``text`` (categories not public: selected
privately, which needs a delta). Values that do not parse as their column's
type become missing; nobody is told how many.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import io
import json
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

__all__ = [
    "FORMAT",
    "NOTE",
    "TYPES",
    "Dialect",
    "SchemaError",
    "check_columns",
    "convert",
    "header",
    "infer_schema",
    "load_schema",
    "read_with_schema",
]

FORMAT = "dpframe-schema/1"
TYPES = ("integer", "float", "boolean", "category", "datetime", "text")
NOTE = ("inferred from the data by `dpframe schema`: it states exact facts about the data (every category "
        "present, the types of the values). Review and edit it before use; it is NOT a private release. "
        "Replace inferred categories by public ones where you can.")
SEPARATORS = (",", ";", "\t", "|")
PARQUET = (".parquet", ".pq")
# Inference: a column is numeric if this share of its values parse, else a category if it has at most
# MAX_CATEGORIES distinct values, else text.
PARSE_SHARE = 0.95
MAX_CATEGORIES = 50
# An integer of at most 18 digits fits int64; "3.0" is the integer 3 (pandas writes integers with gaps so).
_INTEGER = r"[+-]?\d{1,18}(?:\.0*)?"
_BOOLEANS = {"true": True, "false": False}


class SchemaError(ValueError):
    """A schema file, or a header that does not match it: an argument error (nothing is spent)."""


@dataclass(frozen=True)
class Dialect:
    """How a CSV file is written: its field separator and text encoding."""

    sep: str
    encoding: str


def _encoding(first: bytes) -> str:
    """The encoding of a file from its header line's bytes: a BOM, else UTF-8 if they decode, else Latin-1.

    >>> _encoding(b"\\xef\\xbb\\xbfage;sex"), _encoding("âge".encode()), _encoding("âge".encode("latin-1"))
    ('utf-8-sig', 'utf-8', 'latin-1')
    """
    if first.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    try:
        first.decode("utf-8")
    except UnicodeDecodeError:
        return "latin-1"
    return "utf-8"


def _separator(line: str) -> str:
    """The separator of a header line: the candidate that occurs most often outside quotes (``,`` if none).

    >>> _separator("age;sex;edu"), _separator('"a,b"\\tc'), _separator("age")
    (';', '\\t', ',')
    """
    outside = "".join(part for i, part in enumerate(line.split('"')) if i % 2 == 0)
    counts = {sep: outside.count(sep) for sep in SEPARATORS}
    best = max(counts.values())
    tied = [sep for sep, count in counts.items() if count == best]
    if best == 0:
        return ","
    if len(tied) > 1:
        raise SchemaError(f"the header line has as many of {tied} as field separators: pass --sep")
    return tied[0]


def header(path: Path, sep: str | None = None, encoding: str | None = None) -> tuple[list[str], Dialect]:
    """The column names of a CSV or Parquet file and its dialect, from its header alone.

    The separator and encoding are decided from the header line (public), never from the data rows;
    ``sep``/``encoding`` override them.

    >>> import tempfile
    >>> file = Path(tempfile.mkdtemp()) / "people.csv"
    >>> _ = file.write_text("age;sex\\n41;F\\n", encoding="utf-8")
    >>> header(file)
    (['age', 'sex'], Dialect(sep=';', encoding='utf-8'))
    """
    if path.suffix.lower() in PARQUET:
        try:
            pq = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise SchemaError("reading Parquet needs pyarrow (pip install pyarrow); or convert the file to CSV") from None
        try:
            return [str(name) for name in pq.read_schema(path).names], Dialect(",", "utf-8")
        except (OSError, ValueError) as error:
            raise SchemaError(f"cannot read {path} as Parquet: {type(error).__name__}") from None
    with open(path, "rb") as handle:
        first = handle.readline()
    if not first.strip():
        raise SchemaError(f"{path} is empty: it has no header line")
    encoding = encoding or _encoding(first)
    try:
        if codecs.lookup(encoding).name == "utf-8" and first.startswith(codecs.BOM_UTF8):
            encoding = "utf-8-sig"  # else the data's first column name would keep the mark
        line = first.decode(encoding).rstrip("\r\n")
    except (LookupError, UnicodeDecodeError) as error:
        raise SchemaError(f"cannot decode the header of {path} as {encoding!r}: {type(error).__name__}") from None
    sep = sep or _separator(line)
    names = pd.read_csv(io.StringIO(line + "\n"), sep=sep, nrows=0, engine="python").columns
    return [str(name) for name in names], Dialect(sep, encoding)


def _spec(name: str, spec: Any) -> dict[str, Any]:
    if not isinstance(spec, Mapping) or spec.get("type") not in TYPES:
        raise SchemaError(f"column {name!r}: needs a \"type\", one of {list(TYPES)}")
    kind = spec["type"]
    if kind == "category":
        categories = spec.get("categories")
        if (not isinstance(categories, list) or not categories or not all(isinstance(c, str) for c in categories)
                or len(set(categories)) != len(categories)):
            raise SchemaError(f"column {name!r}: a category column needs \"categories\": a list of distinct texts")
    if kind == "datetime" and not isinstance(spec.get("format", "ISO8601"), str):
        raise SchemaError(f"column {name!r}: \"format\" must be a text such as \"ISO8601\" or \"%d/%m/%Y\"")
    return dict(spec)


def load_schema(path: Path) -> dict[str, Any]:
    """Read and check a schema file; every problem is a :class:`SchemaError` naming the file.

    >>> import tempfile
    >>> file = Path(tempfile.mkdtemp()) / "schema.json"
    >>> _ = file.write_text('{"format": "dpframe-schema/1", "columns": {"age": {"type": "integer"}}}')
    >>> load_schema(file)["columns"]
    {'age': {'type': 'integer'}}
    >>> _ = file.write_text('{"format": "dpframe-schema/1", "columns": {"age": {"type": "int"}}}')
    >>> load_schema(file)
    Traceback (most recent call last):
    ...
    dpframe.schema.SchemaError: schema ...schema.json: column 'age': needs a "type", one of ['integer', 'float', 'boolean', 'category', 'datetime', 'text']
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SchemaError(f"cannot read the schema {path}: {error.strerror or type(error).__name__}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SchemaError(f"the schema {path} is not valid JSON: {error}") from None
    try:
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise SchemaError(f"needs \"format\": \"{FORMAT}\" (write one with `dpframe schema DATA`)")
        columns = document.get("columns")
        if not isinstance(columns, dict) or not columns:
            raise SchemaError("needs \"columns\": an object of column name -> {\"type\": ...}")
        for key in ("separator", "encoding"):
            if not isinstance(document.get(key, ""), str):
                raise SchemaError(f"\"{key}\" must be a text")
        checked = {str(name): _spec(str(name), spec) for name, spec in columns.items()}
    except SchemaError as error:
        raise SchemaError(f"schema {path}: {error}") from None
    return {**document, "columns": checked}


def convert(values: pd.Series[Any], spec: Mapping[str, Any]) -> pd.Series[Any]:
    """Text values as the schema's type says; values that do not parse become missing.

    Element-wise and the same for every input, so neither the dtype nor the code path depends on the
    values. Category columns stay text: their categories are declared to ``protect(categories=...)``.

    >>> convert(pd.Series(["41", "?", None, "7.0"]), {"type": "integer"}).tolist()
    [41, <NA>, <NA>, 7]
    >>> convert(pd.Series(["True", "no"]), {"type": "boolean"}).tolist()
    [True, <NA>]
    """
    kind = spec["type"]
    if kind in ("category", "text"):
        return values
    text = values.astype("string").fillna("").str.strip()
    if kind == "integer":
        whole = text.where(text.str.fullmatch(_INTEGER).astype(bool))
        return whole.str.replace(r"\.0*$", "", regex=True).astype("Int64")
    if kind == "float":
        return pd.to_numeric(text.where(text != ""), errors="coerce").astype("float64")
    if kind == "boolean":
        return text.str.lower().map(_BOOLEANS).astype("boolean")
    # Time zones to UTC, then dropped: one dtype whatever offsets the values carry.
    parsed = pd.to_datetime(text.where(text != ""), errors="coerce", format=spec.get("format", "ISO8601"), utc=True)
    return parsed.dt.tz_convert(None).astype("datetime64[us]")  # one unit: pandas 3 picks it by the values


def _read(path: Path, dialect: Dialect, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Every value as text (missing: pandas' fixed list of markers, such as an empty field or ``NA``)."""
    if path.suffix.lower() in PARQUET:
        frame = pd.read_parquet(path, columns=list(columns) if columns is not None else None)
        return frame.astype("string")
    # No data row may decide an error, a warning or the frame's shape: undecodable bytes become U+FFFD,
    # short rows get missing values, and rows that do not parse (too many fields, an unterminated quote,
    # a field over the csv module's limit) are dropped. The python engine drops these where the C engine
    # raises; index_col=False keeps a long first row from becoming an index.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.ParserWarning)
        return pd.read_csv(path, sep=dialect.sep, encoding=dialect.encoding, encoding_errors="replace",
                           dtype=str, usecols=list(columns) if columns is not None else None,
                           on_bad_lines="skip", index_col=False, engine="python")


def read_with_schema(path: Path, schema: Mapping[str, Any], dialect: Dialect,
                     columns: Sequence[str]) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The file's ``columns`` typed as the schema says, and the declared categories (for ``protect``).

    >>> import tempfile
    >>> file = Path(tempfile.mkdtemp()) / "people.csv"
    >>> _ = file.write_text("age;sex\\n41;F\\n?;X\\n", encoding="utf-8")
    >>> schema = {"columns": {"age": {"type": "integer"}, "sex": {"type": "category", "categories": ["F", "M"]}}}
    >>> frame, categories = read_with_schema(file, schema, Dialect(";", "utf-8"), ["age", "sex"])
    >>> frame.dtypes["age"], categories
    (Int64Dtype(), {'sex': ['F', 'M']})
    """
    raw = _read(path, dialect, columns)
    specs = schema["columns"]
    frame = pd.DataFrame({name: convert(raw[name], specs[name]) for name in columns})
    categories = {name: list(specs[name]["categories"]) for name in columns if specs[name]["type"] == "category"}
    return frame, categories


def _infer(values: pd.Series[Any]) -> dict[str, Any]:
    """A column's type from its exact values (not private), with a note on values that would be lost."""
    present = values.dropna().astype(str)
    if present.empty:
        return {"type": "text", "note": "every value is missing"}
    kinds = ("boolean", "integer", "float", "datetime")
    parsed = {kind: convert(present, {"type": kind}).notna() for kind in kinds}
    # A kind that reads every value first: the tolerance is for stray marks ("?") that no kind reads, not
    # for reading 1.7% of a column of decimals (diamonds' table: 57.5) as missing integers.
    whole = [kind for kind in kinds if bool(parsed[kind].all())]
    near = [kind for kind in kinds[1:] if float(parsed[kind].mean()) >= PARSE_SHARE]
    if whole or near:
        kind = (whole or near)[0]
        spec: dict[str, Any] = {"type": kind}
        lost = present[~parsed[kind].to_numpy()]
        if len(lost):
            examples = ", ".join(map(repr, lost.unique()[:3]))
            spec["note"] = f"{len(lost)} value(s) do not parse as {kind} and will be read as missing, e.g. {examples}"
        return spec
    distinct = sorted(present.unique())
    if len(distinct) <= MAX_CATEGORIES:
        return {"type": "category", "categories": distinct}
    return {"type": "text"}


def infer_schema(path: Path, sep: str | None = None, encoding: str | None = None) -> dict[str, Any]:
    """A draft schema of a file, inferred from its exact values: NOT private, for the curator to review.

    >>> import tempfile
    >>> file = Path(tempfile.mkdtemp()) / "people.csv"
    >>> _ = file.write_text("age;sex;seen\\n41;F;2024-01-02\\n;M;2024-03-04\\n", encoding="utf-8")
    >>> draft = infer_schema(file)
    >>> draft["private"], draft["separator"], draft["columns"]
    (False, ';', {'age': {'type': 'integer'}, 'sex': {'type': 'category', 'categories': ['F', 'M']}, 'seen': {'type': 'datetime', 'format': 'ISO8601'}})
    """
    names, dialect = header(path, sep, encoding)
    if path.suffix.lower() not in PARQUET and encoding is None and dialect.encoding == "utf-8":
        # The whole file, not just the header (this draft is not private): Latin-1 data under an ASCII header.
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            dialect = Dialect(dialect.sep, "latin-1")
    frame = _read(path, dialect)
    columns: dict[str, Any] = {}
    for name in names:
        spec = _infer(frame[name])
        if spec["type"] == "datetime":
            spec["format"] = "ISO8601"
        columns[name] = spec
    return {"format": FORMAT, "private": False, "note": NOTE, "separator": dialect.sep,
            "encoding": dialect.encoding, "columns": columns}


def check_columns(schema: Mapping[str, Any], names: Sequence[str], path: Path) -> None:
    """The header must name exactly the schema's columns, each once (an argument error otherwise).

    >>> check_columns({"columns": {"a": {}, "b": {}}}, ["a", "c"], Path("x.csv"))
    Traceback (most recent call last):
    ...
    dpframe.schema.SchemaError: the header of x.csv does not match the schema: missing ['b'], not in the schema ['c']
    """
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise SchemaError(f"the header of {path} names the columns {repeated} more than once")
    declared = list(schema["columns"])
    missing = [c for c in declared if c not in names]
    extra = [c for c in names if c not in declared]
    if missing or extra:
        raise SchemaError(f"the header of {path} does not match the schema: missing {missing}, "
                          f"not in the schema {extra}")


def add_parser(sub: Any) -> None:
    """Add the ``schema`` subcommand (a draft schema, not private) to the ``dpframe`` command's subparsers.

    >>> sub = argparse.ArgumentParser(prog="dpframe").add_subparsers()
    >>> add_parser(sub)
    >>> sub.choices["schema"].parse_args(["data.csv", "--out", "schema.json"]).out
    'schema.json'
    """
    parser = sub.add_parser(
        "schema",
        help="draft a schema (column types) of a file for review: NOT private",
        description="Read a data file exactly and draft its schema: the separator, the encoding and every "
        "column's type, with the categories found. NOT private: review and edit the draft (replace inferred "
        "categories by public ones), then pass it to describe and synthesize with --schema.",
    )
    parser.add_argument("path", help="a CSV file (or Parquet, if pyarrow is installed)")
    parser.add_argument("--out", metavar="SCHEMA.json", help="write the draft here (default: standard output)")
    parser.add_argument("--sep", default=None, help="the CSV field separator (default: guessed from the header line)")
    parser.add_argument("--encoding", default=None,
                        help="the file's text encoding (default: guessed from the header line)")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``schema`` with parsed arguments; return the exit code (2 for a bad path or file).

    >>> import io, tempfile
    >>> file = Path(tempfile.mkdtemp()) / "people.csv"
    >>> _ = file.write_text("age;sex\\n41;F\\n", encoding="utf-8")
    >>> out, err = io.StringIO(), io.StringIO()
    >>> run(argparse.Namespace(path=str(file), out=None, sep=None, encoding=None), out, err)
    0
    >>> json.loads(out.getvalue())["columns"]["sex"], "NOT a private release" in err.getvalue()
    ({'type': 'category', 'categories': ['F']}, True)
    """
    from dpframe.report.cli import ArgumentProblem, check_output, problem, prepare_path

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        data = prepare_path(args.path, "file")
        target = check_output(args.out, (".json",), [data]) if args.out else None
        try:
            draft = infer_schema(data, args.sep, args.encoding)
        except SchemaError as error:
            raise ArgumentProblem(str(error)) from None
        except (OSError, ValueError) as error:
            raise ArgumentProblem(f"cannot read {args.path}: {error}") from None
    except ArgumentProblem as error:
        return problem("schema", error, err)
    text = json.dumps(draft, indent=2, ensure_ascii=False) + "\n"
    print(f"dpframe schema: NOTE: this draft was inferred from the exact data of {args.path}; it is NOT a "
          "private release. Review it (replace inferred categories by public ones) before use.", file=err)
    if target is None:
        out.write(text)
    else:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}", file=err)
    return 0
