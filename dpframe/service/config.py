"""The curator's configuration of ``dpframe serve``: a TOML file of the ledger, the datasets and the analysts.

::

    ledger = "ledger.sqlite"                  # the persistent ledger (relative paths: to this file's folder)

    [datasets.census]
    path = "census.csv"                       # CSV or Parquet
    schema = "census.schema.json"             # from `dpframe schema`, reviewed by the curator
    total = { epsilon = 4.0, delta = 1e-6 }   # the cap over ALL analysts of this dataset (they may collude)
    privacy_unit = "person_id"                # optional, with max_contributions, as protect() takes them
    rows_public = false                       # true: analysts are told the number of rows (it is published)
    mock = { epsilon = 0.4, delta = 1e-7, rows = 2000 }   # synthetic data for analysts (`dpframe mock`); false: none

    [datasets.visits]                         # about the same people as census: one shared cap
    path = "visits.parquet"
    schema = "visits.schema.json"
    cap = "people"
    [caps.people]
    total = { epsilon = 2.0, delta = 1e-6 }

    [analysts.alice]
    token_sha256 = "..."                      # from `dpframe token` (dpframe.service.tokens); never the token
    budgets = { census = { epsilon = 1.0, delta = 1e-7 } }

    [curator]                                 # optional: opens the curator's page, /curator (`dpframe token`)
    token_sha256 = "..."

    [limits]                                  # optional; these are the defaults
    max_body_bytes = 1048576
    requests_per_second = 5.0
    burst = 20
    answer_after_seconds = 0.0                # > 0: every answer to a plan leaves this long after its request
    # max_memory_bytes = 4294967296           # set: each worker process's address space (Unix), see below

Every table is checked strictly (pydantic, unknown keys refused) and a problem is a
:class:`ConfigError` naming the file and the field. The analysts (their tokens and budgets) are read
again when the file changes, so a token is revoked by deleting or editing its analyst; the ledger, the
datasets, the caps and the limits are read at start only (a restart applies them).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dpframe.accounting.budget import totals
from dpframe.accounting.costs import BudgetKind, Cost, Reading
from dpframe.schema import SchemaError, check_columns, header, load_schema

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover  (Python 3.10: the server extra installs tomli, tomllib's origin)
    import tomli as tomllib

__all__ = ["Analyst", "Cap", "Config", "ConfigError", "Curator", "Dataset", "Limits", "Mock", "Total", "check_dataset",
           "check_datasets", "load_config", "lowered", "oversubscribed", "validation_problems"]

# Names become URL path segments and ledger budget names: plain ones only.
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
KINDS = {"approx": "an (epsilon, delta)", "zcdp": "a zCDP (rho)"}


class ConfigError(ValueError):
    """The configuration file cannot be used: the message names the file and the field.

    ``problems``: each problem on its own line (pydantic finds every field's at once), for ``dpframe serve --check``.
    """

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = [message] if problems is None else problems


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Total(_Strict):
    """A privacy total: ``epsilon`` (with an optional ``delta``) or ``rho`` (zCDP), as :class:`~dpframe.Budget` takes.

    >>> Total(epsilon=1.0, delta=1e-6).cost.delta
    Fraction(1, 1000000)
    """

    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None

    @model_validator(mode="after")
    def _valid(self) -> Total:
        totals(self.epsilon, self.delta, self.rho)  # the library's own check (ValueError: a field error)
        return self

    @property
    def kind(self) -> BudgetKind:
        """``"approx"`` for epsilon/delta, ``"zcdp"`` for rho."""
        return totals(self.epsilon, self.delta, self.rho)[0]

    @property
    def cost(self) -> Cost:
        """The exact amounts."""
        return totals(self.epsilon, self.delta, self.rho)[1]

    def covers(self, kind: BudgetKind, cost: Cost) -> bool:
        """Whether this total is of ``kind`` and at least ``cost`` in every part (a budget raised to it, not lowered).

        >>> Total(epsilon=2.0).covers("approx", Total(epsilon=1.0).cost), Total(rho=2.0).covers("approx", Cost())
        (True, False)
        """
        return kind == self.kind and cost.fits_in(self.cost)


class Cap(_Strict):
    """A cap shared by datasets about the same people (``[caps.NAME]``)."""

    total: Total


class Mock(_Strict):
    """A dataset's mock (``mock = { epsilon = 0.4, delta = 1e-7 }`` in its table, or ``mock = false``): synthetic data
    the curator makes once (``dpframe mock``) with :meth:`~dpframe.accessor.DataFrameAccessor.synthesize`, charged to
    the dataset's cap, and every analyst of the dataset may download free (``p.mock()``).

    Without a ``mock`` key a dataset offers one at a tenth of its cap (:meth:`Config.mock_total`). ``rows``: how many
    rows (default: a noisy count of the data's); ``bounds``: numeric columns' ranges (``{ age = [0, 125] }``), where
    the synthesis would otherwise spend on finding them.

    >>> Mock(epsilon=0.5, rows=1000).total.cost.epsilon
    Fraction(1, 2)
    """

    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None
    rows: int | None = Field(default=None, ge=1, le=1_000_000)
    bounds: dict[str, list[float]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _valid(self) -> Mock:
        if self.epsilon is not None or self.rho is not None:
            totals(self.epsilon, self.delta, self.rho)
        for column, pair in self.bounds.items():
            if len(pair) != 2 or not all(map(math.isfinite, pair)) or pair[0] >= pair[1]:
                raise ValueError(f"bounds.{column}: give [low, high], finite, low < high; got {pair}")
        return self

    @property
    def total(self) -> Total:
        """What making the mock costs (``epsilon``/``delta`` or ``rho``; a ValueError if neither is given)."""
        if self.epsilon is None and self.rho is None:
            raise ValueError("a mock's cost needs epsilon (with delta) or rho")
        return Total(epsilon=self.epsilon, delta=self.delta, rho=self.rho)


def _token_hash(value: Any) -> Any:
    """A ``token_sha256`` in lower case; a clear error for what is not one (a pasted token, most likely)."""
    if isinstance(value, str) and not re.fullmatch(r"[0-9a-fA-F]{64}", value):
        raise ValueError(f"not a SHA-256 ({len(value)} characters, not 64 hexadecimal digits): paste the "
                         "token_sha256 line that `dpframe token` prints, never the token itself")
    return value.lower() if isinstance(value, str) else value


class Curator(_Strict):
    """The curator (``[curator]``): the SHA-256 of the token that opens the curator's page (``/curator``)."""

    token_sha256: str

    _hash = field_validator("token_sha256")(_token_hash)


class Dataset(_Strict):
    """A dataset (``[datasets.NAME]``): its file, its reviewed schema, its cap, and its privacy unit."""

    path: str
    schema_path: str = Field(alias="schema")
    total: Total | None = None
    cap: str | None = None
    privacy_unit: str | None = None
    max_contributions: int = Field(default=1, ge=1)
    # The curator's decision that the number of rows is public (published elsewhere): then analysts are told it.
    rows_public: bool = False
    # The mock analysts may download (Mock); false: this dataset offers none. Absent: a tenth of the cap.
    mock: Mock | bool = True

    @model_validator(mode="after")
    def _one_cap(self) -> Dataset:
        if (self.total is None) == (self.cap is None):
            raise ValueError("give either total = { epsilon = ..., delta = ... } (this dataset's own cap) or "
                             "cap = \"NAME\" (a [caps.NAME] shared with other datasets about the same people)")
        if self.privacy_unit is None and self.max_contributions != 1:
            raise ValueError("max_contributions needs privacy_unit (the column naming each person)")
        return self


class Analyst(_Strict):
    """An analyst (``[analysts.NAME]``): the SHA-256 of its token and its budget for each dataset it may query."""

    token_sha256: str
    budgets: dict[str, Total]

    _hash = field_validator("token_sha256")(_token_hash)


class Limits(_Strict):
    """Limits on each request (``[limits]``): body size, and a token bucket of requests per analyst."""

    max_body_bytes: int = Field(default=1 << 20, ge=1024)
    requests_per_second: float = Field(default=5.0, gt=0)
    burst: int = Field(default=20, ge=1)
    # Padding against the timing channel: answers to plans leave no earlier than this after the request arrived
    # (0: as soon as they are ready). Choose it above the slowest run, so that no run's time shows.
    answer_after_seconds: float = Field(default=0.0, ge=0, le=600)
    # The address space of each worker process (RLIMIT_AS; None: unlimited). One request can ask for values of any
    # size (p["s"].str.repeat(10**9)): with a limit, that allocation fails with a MemoryError, which dpframe's
    # row-wise steps turn into missing values, instead of the kernel killing the process (or another one).
    max_memory_bytes: int | None = Field(default=None, ge=1 << 29)
    # The largest answer sent (its JSON): a release of more cells (a synthetic frame of n rows, a histogram of many
    # bins) is refused after it ran -- charged, since it ran -- with what to ask instead.
    max_answer_bytes: int = Field(default=64 << 20, ge=1 << 16)


class Config(_Strict):
    """The whole configuration, with paths made absolute (relative ones are relative to the file's folder)."""

    ledger: str
    datasets: dict[str, Dataset] = Field(min_length=1)
    caps: dict[str, Cap] = Field(default_factory=dict)
    analysts: dict[str, Analyst] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    curator: Curator | None = None

    @field_validator("datasets", "caps", "analysts")
    @classmethod
    def _names(cls, tables: dict[str, Any]) -> dict[str, Any]:
        bad = [name for name in tables if not re.fullmatch(NAME, name)]
        if bad:
            raise ValueError(f"names must be letters, digits, '_', '.' or '-' (at most 64, not starting with a "
                             f"sign): {bad}")
        return tables

    @model_validator(mode="after")
    def _references(self) -> Config:
        for name, dataset in self.datasets.items():
            if dataset.cap is not None and dataset.cap not in self.caps:
                raise ValueError(f"datasets.{name}.cap: no [caps.{dataset.cap}] table; caps: {sorted(self.caps)}")
        seen: dict[str, str] = {}
        for name, analyst in self.analysts.items():
            for dataset_name, budget in analyst.budgets.items():
                if dataset_name not in self.datasets:
                    raise ValueError(f"analysts.{name}.budgets.{dataset_name}: no such dataset; datasets: "
                                     f"{sorted(self.datasets)}")
                cap_kind = self.cap_total(dataset_name).kind
                if budget.kind != cap_kind:
                    raise ValueError(f"analysts.{name}.budgets.{dataset_name}: {KINDS[budget.kind]} budget under "
                                     f"{KINDS[cap_kind]} cap; give the same kind")
            if analyst.token_sha256 in seen:
                raise ValueError(f"analysts.{name}.token_sha256: the same as analysts.{seen[analyst.token_sha256]}'s "
                                 "(give each analyst its own token: `dpframe token`)")
            seen[analyst.token_sha256] = name
        if self.curator is not None and self.curator.token_sha256 in seen:
            raise ValueError(f"curator.token_sha256: the same as analysts.{seen[self.curator.token_sha256]}'s (the "
                             "curator's token opens every analyst's plans: give it its own, `dpframe token`)")
        for name in self.datasets:
            mock, cap = self.mock_total(name), self.cap_total(name)
            if mock is not None and mock.kind != cap.kind:
                raise ValueError(f"datasets.{name}.mock: {KINDS[mock.kind]} cost under {KINDS[cap.kind]} cap; give "
                                 "the same kind")
        return self

    def cap_name(self, dataset: str) -> str:
        """The ledger name of a dataset's cap: its own (``dataset:NAME``) or the shared one (``cap:NAME``)."""
        shared = self.datasets[dataset].cap
        return f"dataset:{dataset}" if shared is None else f"cap:{shared}"

    @staticmethod
    def allotment_name(analyst: str, dataset: str) -> str:
        """The ledger name of an analyst's budget on a dataset: its allotment of the dataset's cap."""
        return f"analyst:{analyst}/dataset:{dataset}"

    def mock_total(self, dataset: str) -> Total | None:
        """What making the dataset's mock costs: its ``mock`` table's amounts, a tenth of its cap when it gives none,
        or None when the dataset offers no mock (``mock = false``)."""
        spec = self.datasets[dataset].mock
        if spec is False:
            return None
        if isinstance(spec, Mock) and (spec.epsilon is not None or spec.rho is not None):
            return spec.total
        cap = self.cap_total(dataset)
        tenth = {key: None if value is None else value / 10 for key, value in
                 (("epsilon", cap.epsilon), ("delta", cap.delta), ("rho", cap.rho))}
        return Total(epsilon=tenth["epsilon"], delta=tenth["delta"] or 0.0, rho=tenth["rho"])

    def cap_total(self, dataset: str) -> Total:
        """A dataset's cap total."""
        spec = self.datasets[dataset]
        total = spec.total if spec.cap is None else self.caps[spec.cap].total
        assert total is not None  # one of the two, checked by Dataset
        return total


def _at(folder: Path, path: str) -> str:
    return str((folder / Path(path).expanduser()).resolve())


def validation_problems(error: ValidationError) -> list[str]:
    """A pydantic error as one line per problem: the field's dotted path and what is wrong."""
    lines = []
    for problem in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return lines


def load_config(path: str | Path) -> Config:
    """Read and check a configuration file (every problem: :class:`ConfigError` naming the file and field).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "service.toml").write_text('ledger = "ledger.sqlite"\\n[datasets.census]\\npath = "census.csv"\\n'
    ...                                          'schema = "census.schema.json"\\ntotal = { epsilon = 4.0 }\\n')
    >>> config = load_config(folder / "service.toml")
    >>> config.ledger == str((folder / "ledger.sqlite").resolve()), config.cap_name("census")
    (True, 'dataset:census')
    >>> _ = (folder / "service.toml").write_text('ledger = "ledger.sqlite"\\n[datasets.census]\\npath = "census.csv"\\n'
    ...                                          'schema = "census.schema.json"\\ntotal = { epsilon = "4" }\\n')
    >>> load_config(folder / "service.toml")
    Traceback (most recent call last):
    ...
    dpframe.service.config.ConfigError: config ...service.toml: datasets.census.total.epsilon: Input should be a valid number
    """
    file = Path(path)
    try:
        document = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read the config {file}: {error.strerror or type(error).__name__}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"config {file} is not valid TOML: {error}") from None
    try:
        config = Config.model_validate(document)
    except ValidationError as error:
        problems = [f"config {file}: {line}" for line in validation_problems(error)]
        raise ConfigError(f"config {file}: {'; '.join(validation_problems(error))}", problems) from None
    folder = file.resolve().parent
    datasets = {name: spec.model_copy(update={"path": _at(folder, spec.path),
                                              "schema_path": _at(folder, spec.schema_path)})
                for name, spec in config.datasets.items()}
    return config.model_copy(update={"ledger": _at(folder, config.ledger), "datasets": datasets})


def check_datasets(config: Config) -> dict[str, dict[str, Any]]:
    """Every dataset's schema, checked against its file's header (:func:`check_dataset`; the first problem raises)."""
    return {name: check_dataset(name, spec) for name, spec in config.datasets.items()}


def check_dataset(name: str, spec: Dataset) -> dict[str, Any]:
    """A dataset's schema, checked against its file's header (nothing of the values is read).

    Raises :class:`ConfigError` for an unreadable schema or file, a header that does not match the schema,
    or a ``privacy_unit`` that is not one of the columns.
    """
    path = Path(spec.path)
    try:
        schema = load_schema(Path(spec.schema_path))
        names, _ = header(path, schema.get("separator") or None, schema.get("encoding") or None)
        check_columns(schema, names, path)
    except SchemaError as error:
        raise ConfigError(f"datasets.{name}: {error}") from None
    except OSError as error:
        raise ConfigError(f"datasets.{name}: cannot read {path}: {error.strerror or type(error).__name__}") from None
    if spec.privacy_unit is not None and spec.privacy_unit not in schema["columns"]:
        raise ConfigError(f"datasets.{name}.privacy_unit: {spec.privacy_unit!r} is not a column of its schema")
    return schema


def lowered(what: str, kept: Reading, total: Total) -> str | None:
    """Why the config's ``total`` for a budget the ledger keeps at ``kept`` cannot be used (it would lower it, or is
    another kind: a cap or an allotment is only ever raised), or None when it is the ledger's or above it.

    >>> kept = Reading.of(Total(epsilon=2.0).cost, "approx")
    >>> lowered("cap dataset:census", kept, Total(epsilon=3.0)) is None
    True
    >>> lowered("cap dataset:census", kept, Total(epsilon=1.0))
    "the ledger's cap dataset:census has total ε=2, δ=0, which the config's ε=1, δ=0 would lower: a budget is ..."
    """
    if total.covers(kept.kind, kept.cost):
        return None
    return (f"the ledger's {what} has total {kept}, which the config's {total.cost.describe(total.kind)} would "
            "lower: a budget is only ever raised")


def oversubscribed(config: Config) -> list[str]:
    """Warnings for caps that the analysts' budgets under them, with the mocks' costs (a mock is charged to its
    dataset's cap when it is made), add up to more than (one analyst can then exhaust it).

    >>> config = Config.model_validate({"ledger": "l", "datasets": {"d": {"path": "d.csv", "schema": "s.json",
    ...     "total": {"epsilon": 1.0}}}, "analysts": {name: {"token_sha256": digit * 64,
    ...     "budgets": {"d": {"epsilon": 0.5}}} for name, digit in (("a", "1"), ("b", "2"))}})
    >>> print(*oversubscribed(config))  # doctest: +NORMALIZE_WHITESPACE
    the analysts' budgets (ε=1, δ=0) and the mock's cost (ε=0.1, δ=0) under the cap of dataset d add up to ε=1.1,
    δ=0, more than its total ε=1, δ=0: one analyst's spending can then refuse another's queries
    """
    found = []
    for cap in dict.fromkeys(config.cap_name(name) for name in config.datasets):
        members = [name for name in config.datasets if config.cap_name(name) == cap]
        total = config.cap_total(members[0])
        allotted = mocks = Cost()
        for analyst in config.analysts.values():
            for name in members:
                if name in analyst.budgets:
                    allotted = allotted + analyst.budgets[name].cost
        for name in members:
            mock = config.mock_total(name)
            if mock is not None:
                mocks = mocks + mock.cost
        if not (allotted + mocks).fits_in(total.cost):
            which = f"dataset {members[0]}" if cap.startswith("dataset:") else f"{cap} (datasets {', '.join(members)})"
            mock_costs = "mocks' costs" if len(members) > 1 else "mock's cost"
            found.append(f"the analysts' budgets ({allotted.describe(total.kind)}) and the {mock_costs} "
                         f"({mocks.describe(total.kind)}) under the cap of "
                         f"{which} add up to {(allotted + mocks).describe(total.kind)}, more than its total "
                         f"{total.cost.describe(total.kind)}: one analyst's spending can then refuse another's queries")
    return found
