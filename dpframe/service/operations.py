"""The curator's operations on a service (docs/server.md, "Operating the service"), all from the command line:

- ``dpframe serve --check CONFIG``: :func:`check_service`, every problem that keeps the config from being served
  (``dpframe serve`` runs the same checks before it starts), warnings, and a summary of what would be served.
- ``dpframe analyst add|rotate|remove|budget CONFIG NAME ...``: :func:`add_analyst`, :func:`rotate_token`,
  :func:`remove_analyst`, :func:`raise_budget`.
- ``dpframe cap extend CONFIG (--dataset NAME | --cap NAME) ...``: :func:`extend_cap`.

Each edit of the config keeps its comments and layout (tomlkit), is validated as a whole (:func:`load_config` on the
new text, in a file beside the config) and then replaces the config in one step (``os.replace``, with the file's
permissions), so a running server, which reads its analysts again when the file changes, never sees a half-written
or invalid config; two edits at once (two commands) run one after the other. Each operation is recorded in the ledger
(:meth:`Ledger.service_event`) before the config is replaced; an analyst's token is never recorded or kept anywhere,
only its SHA-256 in the config.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError

from dpframe.accounting.budget import Budget
from dpframe.accounting.ledger import Ledger
from dpframe.errors import LedgerError
from dpframe.service.cli import write_new
from dpframe.service.config import (Config, ConfigError, Total, check_dataset, load_config, lowered, oversubscribed,
                                    validation_problems)
from dpframe.service.tokens import hash_token, new_token

if sys.platform != "win32":
    import fcntl

__all__ = ["Check", "OperationError", "add_analyst", "check_service", "extend_cap", "parse_budget", "raise_budget",
           "remove_analyst", "rotate_token"]

BUDGET_SYNTAX = "DATASET=EPSILON[,DELTA] or DATASET=rho:RHO"


class OperationError(ValueError):
    """An operation the curator asked for that is refused (the config and the ledger are left as they were)."""


# -- dpframe serve --check ---------------------------------------------------------------------------------------
@dataclass
class Check:
    """What :func:`check_service` found: the config (None if it does not validate), the problems that keep it from
    being served (one line each), warnings, and a summary of what would be served."""

    config: Config | None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def _kept(ledger: Ledger | None, name: str) -> Budget | None:
    """The budget ``name`` in the ledger, or None (no ledger yet, or no such budget yet)."""
    if ledger is None:
        return None
    try:
        return Budget.open(name, ledger=ledger)
    except LedgerError:
        return None


def _existing_ledger(config: Config) -> Ledger | None:
    """The config's ledger if its file exists (never created here), else None."""
    return Ledger.at(config.ledger) if Path(config.ledger).exists() else None


def _allotment_problem(ledger: Ledger | None, config: Config, who: str, dataset: str, total: Total) -> str | None:
    """Why ``total`` cannot be the analyst's budget on ``dataset``: the ledger keeps its allotment higher (a budget is
    never lowered; removing an analyst keeps its allotment), or None."""
    name = config.allotment_name(who, dataset)
    budget = _kept(ledger, name)
    return None if budget is None else lowered(f"allotment {name}", budget.total, total)


def check_service(path: str | os.PathLike[str]) -> Check:
    """Check a service's config without serving it: the config validates (token hashes well-formed and distinct,
    references, kinds), each dataset's schema and file are readable and agree, and the ledger (read only if it
    exists: never created here) holds no cap or allotment above the config's totals, which the server would refuse
    to lower. Warns when the analysts' budgets and the mocks' costs oversubscribe a cap.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "service.toml").write_text('ledger = "ledger.sqlite"\\n[datasets.census]\\npath = "census.csv"\\n'
    ...                                          'schema = "census.schema.json"\\ntotal = { epsilon = 4.0 }\\n')
    >>> check_service(folder / "service.toml").problems
    ['datasets.census: cannot read the schema ...census.schema.json: No such file or directory']
    >>> (folder / "ledger.sqlite").exists()
    False
    """
    try:
        config = load_config(Path(path))
    except ConfigError as error:
        return Check(None, error.problems)
    check = Check(config, warnings=oversubscribed(config))
    for name, spec in config.datasets.items():
        try:
            check_dataset(name, spec)
        except ConfigError as error:
            check.problems.append(str(error))
    ledger = _existing_ledger(config)
    summary = check.summary
    note = "" if ledger is not None else " (not made yet: `dpframe serve` makes it)"
    summary.append(f"ledger: {config.ledger}{note}")
    for dataset, spec in config.datasets.items():
        mock = config.mock_total(dataset)
        made = None if ledger is None else ledger.kept_mock(dataset)
        offer = ("no mock (mock = false)" if mock is None else f"mock at {mock.cost.describe(mock.kind)}, "
                 + (f"made {made[0]:%Y-%m-%d %H:%M} UTC" if made is not None else "not made yet (`dpframe mock`)"))
        unit = "" if spec.privacy_unit is None else f", privacy unit {spec.privacy_unit}"
        summary.append(f"dataset {dataset}: {spec.path}, under cap {config.cap_name(dataset)}{unit}; {offer}")
    for cap in dict.fromkeys(config.cap_name(dataset) for dataset in config.datasets):
        total = config.cap_total(next(d for d in config.datasets if config.cap_name(d) == cap))
        budget = _kept(ledger, cap)
        line = f"cap {cap}: {total.cost.describe(total.kind)}"
        if budget is not None:
            problem = lowered(f"cap {cap}", budget.total, total)
            if problem is not None:
                check.problems.append(f"{problem} (raise it with `dpframe cap extend`, or give the config the "
                                      "ledger's total)")
            line += f"; in the ledger: spent {budget.spent}, remaining {budget.remaining}"
        summary.append(line)
    for who, analyst in config.analysts.items():
        parts = []
        for dataset, spec_total in analyst.budgets.items():
            budget = _kept(ledger, config.allotment_name(who, dataset))
            spent = "" if budget is None else f" (spent {budget.spent})"
            parts.append(f"{dataset} {spec_total.cost.describe(spec_total.kind)}{spent}")
            problem = _allotment_problem(ledger, config, who, dataset, spec_total)
            if problem is not None:
                check.problems.append(f"analysts.{who}.budgets.{dataset}: {problem}; the server would answer {who} "
                                      f"on {dataset} with 503: give at least the ledger's total")
        summary.append(f"analyst {who}: {'; '.join(parts) or 'no budgets'}")
    summary.append("curator page: " + ("on ([curator] token)" if config.curator is not None else
                                       "off (no [curator] table)"))
    return check


# -- editing the config ------------------------------------------------------------------------------------------
def edit_config(path: str | os.PathLike[str], change: Callable[[Any, Config], None],
                record: Callable[[Config], None]) -> Config:
    """Edit the config at ``path``: ``change(document, config)`` edits its TOML document (comments and layout kept),
    the new text is validated as a whole, ``record(new_config)`` writes the operation to the ledger, and the new file
    replaces the old one in one step, with its permissions. Nothing is replaced if any step fails (ConfigError for
    a config that would not validate, with the temporary file removed; OperationError if the file changed meanwhile:
    another edit's, which this one must not undo).
    """
    file = Path(path).resolve()
    with _one_edit_at_a_time(file.parent):
        return _edit(file, change, record)


@contextmanager
def _one_edit_at_a_time(folder: Path) -> Iterator[None]:
    """An exclusive lock on the config's folder (a lock on the file would not do: the edit replaces it) while an edit
    runs, so that two at once run one after the other: both reading the old file, the second replace would undo
    the first (a removed analyst back). Windows has no flock: there the check before the replace remains."""
    if sys.platform == "win32":  # pragma: no cover
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # and with it the lock


def _edit(file: Path, change: Callable[[Any, Config], None], record: Callable[[Config], None]) -> Config:
    """:func:`edit_config`'s steps, under its lock."""
    text = file.read_text(encoding="utf-8")  # read first: a change after this is found before the replace
    config = load_config(file)  # the current config must validate: an edit never builds on a broken one
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as error:
        raise ConfigError(f"config {file} cannot be edited: {error}") from None
    change(document, config)
    descriptor, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".new")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(tomlkit.dumps(document))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, stat.S_IMODE(file.stat().st_mode))
        try:
            edited = load_config(temporary)
        except ConfigError as error:  # named by the config's own path, not the temporary file's
            raise ConfigError(str(error).replace(temporary, str(file)),
                              [problem.replace(temporary, str(file)) for problem in error.problems]) from None
        if file.read_text(encoding="utf-8") != text:
            raise OperationError(f"{file} changed while it was being edited (by another edit?): nothing was done; "
                                 "run the command again")
        record(edited)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return edited


def parse_budget(text: str) -> tuple[str, Total]:
    """A ``--budget``: ``DATASET=EPSILON[,DELTA]`` (an (ε, δ) budget; δ 0 if not given) or ``DATASET=rho:RHO`` (zCDP).

    >>> parse_budget("census=1.0,1e-7")
    ('census', Total(epsilon=1.0, delta=1e-07, rho=None))
    >>> parse_budget("visits=rho:0.25")
    ('visits', Total(epsilon=None, delta=0.0, rho=0.25))
    >>> parse_budget("census")
    Traceback (most recent call last):
    ...
    dpframe.service.operations.OperationError: budget 'census': give DATASET=EPSILON[,DELTA] or DATASET=rho:RHO
    """
    dataset, _, amounts = text.partition("=")
    zcdp = amounts.startswith("rho:")
    parts = [amounts.removeprefix("rho:")] if zcdp else amounts.split(",")
    try:
        if not dataset or len(parts) > (1 if zcdp else 2):
            raise ValueError
        numbers = [float(part) for part in parts]
    except ValueError:
        raise OperationError(f"budget {text!r}: give {BUDGET_SYNTAX}") from None
    what = f"budget {text!r}"
    if zcdp:
        return dataset, _total(what, rho=numbers[0])
    return dataset, _total(what, epsilon=numbers[0], delta=numbers[1] if len(numbers) == 2 else 0.0)


def _total(what: str, epsilon: float | None = None, delta: float = 0.0, rho: float | None = None) -> Total:
    """A :class:`Total`, or an OperationError saying what is wrong with ``what``."""
    try:
        return Total(epsilon=epsilon, delta=delta, rho=rho)
    except ValidationError as error:
        raise OperationError(f"{what}: {'; '.join(validation_problems(error))}") from None


def _budgets(specs: list[str]) -> dict[str, Total]:
    budgets: dict[str, Total] = {}
    for spec in specs:
        dataset, total = parse_budget(spec)
        if dataset in budgets:
            raise OperationError(f"two budgets for dataset {dataset!r}: give one")
        budgets[dataset] = total
    return budgets


def _inline(total: Total) -> Any:
    table = tomlkit.inline_table()
    table.update({"rho": total.rho} if total.kind == "zcdp" else
                 {"epsilon": total.epsilon, **({"delta": total.delta} if total.delta else {})})
    return table


def _budgets_text(budgets: dict[str, Total]) -> str:
    return "; ".join(f"{dataset} {total.cost.describe(total.kind)}" for dataset, total in budgets.items())


def _deliver(secret: str, who: str, token_file: str | None, out: TextIO) -> None:
    """Give the curator a new token: in a new file readable by its owner only, or printed once."""
    if token_file is None:
        print(f"# Give this token to {who} over a private channel (it is shown once and stored nowhere):", file=out)
        print(secret, file=out)
    else:
        print(f"wrote {who}'s new token to {token_file} (readable by you only): give it to {who} privately", file=out)


def _with_token(token_file: str | None, secret: str, edit: Callable[[], Config]) -> Config:
    """Run ``edit()``, writing the token first to ``token_file`` (a new file, readable by its owner only), and removing
    it again if the edit fails."""
    if token_file is not None:
        try:
            write_new(Path(token_file), secret + "\n", 0o600)
        except OSError as error:
            raise OperationError(f"cannot create the token file {token_file}: {error.strerror} (it must be "
                                 "new)") from None
    try:
        config = edit()
    except BaseException:
        if token_file is not None:
            Path(token_file).unlink(missing_ok=True)
        raise
    return config


def _check_ledger_budgets(config: Config, who: str, budgets: dict[str, Total]) -> None:
    """Refuse budgets below what the ledger keeps for the analyst (the server would answer it with 503 there)."""
    ledger = _existing_ledger(config)
    for dataset, total in budgets.items():
        problem = _allotment_problem(ledger, config, who, dataset, total)
        if problem is not None:
            raise OperationError(f"{problem}: give at least that")


def _warn(config: Config, err: TextIO) -> None:
    for warning in oversubscribed(config):
        print(f"warning: {warning}", file=err)


# -- dpframe analyst ...
def add_analyst(path: str, name: str, specs: list[str], token_file: str | None, out: TextIO, err: TextIO) -> Config:
    """``dpframe analyst add CONFIG NAME --budget ...``: a new analyst with a new token and its budgets."""
    budgets, secret = _budgets(specs), new_token()

    def change(document: Any, config: Config) -> None:
        if name in config.analysts:
            raise OperationError(f"analyst {name!r} already exists: `dpframe analyst rotate` gives it a new token, "
                                 "`dpframe analyst budget` raises its budgets")
        _check_ledger_budgets(config, name, budgets)  # an analyst removed earlier keeps its allotments
        if "analysts" not in document:
            document["analysts"] = tomlkit.table(is_super_table=True)
        table = tomlkit.table()
        table["token_sha256"] = hash_token(secret)
        table["budgets"] = tomlkit.inline_table()
        for dataset, total in budgets.items():
            table["budgets"][dataset] = _inline(total)
        document["analysts"][name] = table

    def record(config: Config) -> None:
        Ledger.at(config.ledger).service_event("analyst added", f"analyst:{name}", f"budgets: {_budgets_text(budgets)}")

    config = _with_token(token_file, secret, lambda: edit_config(path, change, record))
    print(f"added analyst {name} to {path} (budgets: {_budgets_text(budgets)}); a running server accepts its token at "
          "its next request", file=out)
    _deliver(secret, name, token_file, out)
    _warn(config, err)
    return config


def _existing(name: str, config: Config) -> None:
    if name not in config.analysts:
        raise OperationError(f"no analyst {name!r} in the config; analysts: {', '.join(config.analysts) or 'none'}")


def rotate_token(path: str, name: str, token_file: str | None, out: TextIO) -> Config:
    """``dpframe analyst rotate CONFIG NAME``: a new token for the analyst; its old one stops working."""
    secret = new_token()

    def change(document: Any, config: Config) -> None:
        _existing(name, config)
        document["analysts"][name]["token_sha256"] = hash_token(secret)

    def record(config: Config) -> None:
        Ledger.at(config.ledger).service_event("token rotated", f"analyst:{name}",
                                               "a new token; the old one is refused")

    config = _with_token(token_file, secret, lambda: edit_config(path, change, record))
    print(f"gave analyst {name} a new token in {path}: a running server refuses the old one from its next request",
          file=out)
    _deliver(secret, name, token_file, out)
    return config


def remove_analyst(path: str, name: str, out: TextIO) -> Config:
    """``dpframe analyst remove CONFIG NAME``: revoke the analyst (its spending stays in the ledger)."""
    budgets: dict[str, Total] = {}

    def change(document: Any, config: Config) -> None:
        _existing(name, config)
        budgets.update(config.analysts[name].budgets)
        del document["analysts"][name]

    def record(config: Config) -> None:
        Ledger.at(config.ledger).service_event("analyst removed", f"analyst:{name}",
                                      f"budgets were: {_budgets_text(budgets)}; its spending stays in the ledger")

    config = edit_config(path, change, record)
    print(f"removed analyst {name} from {path}: a running server refuses its token from its next request; its "
          "spending stays in the ledger (added again under the same name, it finds its budgets as it left them)",
          file=out)
    return config


def raise_budget(path: str, name: str, specs: list[str], out: TextIO, err: TextIO) -> Config:
    """``dpframe analyst budget CONFIG NAME DATASET=...``: raise an analyst's budgets (never lower), or give it one on
    another dataset. A running server raises the allotment in the ledger at the analyst's next request."""
    budgets = _budgets(specs)
    changes: list[str] = []

    def change(document: Any, config: Config) -> None:
        _existing(name, config)
        _check_ledger_budgets(config, name, budgets)
        current = config.analysts[name].budgets
        table = document["analysts"][name]["budgets"]
        for dataset, total in budgets.items():
            old = current.get(dataset)
            if old is not None:
                if not total.covers(old.kind, old.cost):
                    raise OperationError(f"analyst {name}'s budget on {dataset} is {old.cost.describe(old.kind)}: "
                                         f"{total.cost.describe(total.kind)} would lower it in some part (a budget "
                                         "is only raised)")
                if old == total:
                    continue
            changes.append(f"{dataset} {'new' if old is None else old.cost.describe(old.kind) + ' ->'} "
                           f"{total.cost.describe(total.kind)}")
            table[dataset] = _inline(total)
        if not changes:
            raise OperationError(f"analyst {name} already has these budgets: nothing to raise")

    def record(config: Config) -> None:
        Ledger.at(config.ledger).service_event("budget raised", f"analyst:{name}", "; ".join(changes))

    config = edit_config(path, change, record)
    print(f"raised analyst {name}'s budgets in {path}: {'; '.join(changes)} (a running server raises them in the "
          "ledger at its next request)", file=out)
    _warn(config, err)
    return config


def _change(before: Total, after: Total) -> str:
    return f"{before.cost.describe(before.kind)} -> {after.cost.describe(after.kind)}"


# -- dpframe cap extend --------------------------------------------------------------------------------------------
def extend_cap(path: str, dataset: str | None, cap: str | None, epsilon: float | None, delta: float | None,
               rho: float | None, out: TextIO, err: TextIO) -> Config:
    """``dpframe cap extend CONFIG (--dataset NAME | --cap NAME) (--epsilon E [--delta D] | --rho R)``: raise a cap's
    total in the config and in the ledger at once (never lower it, never change its kind). A running server's charges
    read the cap's total from the ledger, so the new total holds from the next charge, without a restart.

    ``--delta`` not given keeps the cap's delta.
    """
    extended: list[tuple[str, Total, Total]] = []  # the cap's ledger name, its total before and after

    def where(config: Config) -> tuple[list[str], str, Total]:
        """The config's keys of the cap's total, its ledger name, and its total now."""
        if dataset is not None:
            if dataset not in config.datasets:
                raise OperationError(f"no dataset {dataset!r}; datasets: {', '.join(config.datasets)}")
            shared = config.datasets[dataset].cap
            if shared is not None:
                raise OperationError(f"dataset {dataset} is under the shared cap {shared!r}: extend it with "
                                     f"--cap {shared} (it covers every dataset under it)")
            return ["datasets", dataset, "total"], config.cap_name(dataset), config.cap_total(dataset)
        assert cap is not None  # one of the two (the command line's mutually exclusive group)
        if cap not in config.caps:
            raise OperationError(f"no [caps.{cap}]; caps: {', '.join(config.caps) or 'none'}")
        return ["caps", cap, "total"], f"cap:{cap}", config.caps[cap].total

    def change(document: Any, config: Config) -> None:
        keys, name, old = where(config)
        new = (_total(f"cap {name}", rho=rho) if rho is not None else
               _total(f"cap {name}", epsilon=epsilon, delta=old.delta if delta is None else delta))
        if new.kind != old.kind:
            raise OperationError(f"cap {name} is {'a zCDP (rho)' if old.kind == 'zcdp' else 'an (epsilon, delta)'} "
                                 "cap: extend it with the same kind")
        if not new.covers(old.kind, old.cost):
            raise OperationError(f"cap {name} has total {old.cost.describe(old.kind)}: "
                                 f"{new.cost.describe(new.kind)} would lower it in some part (a cap is only raised)")
        budget = _kept(_existing_ledger(config), name)
        problem = None if budget is None else lowered(f"cap {name}", budget.total, new)
        if problem is not None:
            raise OperationError(problem)
        if new == old and (budget is None or budget.total.cost == new.cost):
            raise OperationError(f"cap {name} is already {old.cost.describe(old.kind)}: nothing to extend")
        table = document
        for key in keys:
            table = table[key]
        for key in ("epsilon", "delta", "rho"):
            if getattr(new, key) != getattr(old, key):  # the parts that stay keep their text
                table[key] = getattr(new, key)
        extended.append((name, old, new))

    def record(config: Config) -> None:
        ledger, (name, before, after) = Ledger.at(config.ledger), extended[0]
        budget = _kept(ledger, name)
        if budget is not None:  # else the server makes the cap at the config's total when it starts
            budget.extend(epsilon=after.epsilon, delta=after.delta, rho=after.rho)
        ledger.service_event("cap extended", name, f"total {_change(before, after)}")

    config = edit_config(path, change, record)
    name, before, after = extended[0]
    print(f"extended cap {name}: {_change(before, after)}, in {path} and in its ledger (a running server's charges see "
          "it at once)", file=out)
    _warn(config, err)
    return config
