"""What each pandas operation does to one person, and what dpframe does about it.

:data:`RULES` is the single table behind three things: the table in
``docs/privacy-model.md`` (a test keeps them identical), the tests (one
example per row, in ``tests/test_soundness.py``), and the refusal messages
raised by protected frames (:func:`refusal`).

Neighbours differ by all the rows of one privacy unit (add/remove). The
*stability* of a transformation is how many rows of its output can change
when one unit is added or removed, per row of that unit:

* ``1``: a row-wise map or filter; the unit's rows change, nobody else's.
* ``bounded``: a unit's rows may be repeated (one-to-many); every query keeps
  at most ``max_contributions`` rows per unit, so the sensitivity it uses
  holds whatever the repetition.
* ``2``: positional selection (``head``): adding a person can push another
  person out of the selection.
* ``unbounded``: cross-row operations (``shift``, ``rank``, a self-join, a
  constant computed from everyone): one person can change every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpframe.errors import RefusedError

Action = Literal["kept", "bounded", "charged", "refused"]


@dataclass(frozen=True)
class Rule:
    """One row of the table: operations, their stability, what dpframe does, and why."""

    key: str
    operations: str
    stability: str
    action: Action
    reason: str
    instead: str = ""


RULES: tuple[Rule, ...] = (
    Rule("filter", "`p[cond]`, `p.loc[cond]`, `p.query(expr)` (pandas' grammar, dpframe's allow-listed evaluator), "
         "`dropna()` (rows)", "1", "kept",
         "whether a row stays depends on that row's values only"),
    Rule("columns", "`p[cols]`, `p.col`, `p.iloc[:, cols]`, `p.loc[:, 'a':'b']`, `drop(columns=)`, "
         "`rename(columns=)`, `p.columns = [...]`", "1", "kept",
         "only the schema changes, not the rows (a slice of labels is read from the schema)"),
    Rule("rowwise", "arithmetic, comparisons, `assign`, `map`/`apply` (per value or `axis=1`), `where`/`mask`, "
         "`p.loc[cond, col] = value` (and `*=`, `+=`: the filtered values go back to the rows they came from), "
         "`astype`, `fillna`/`replace`/`clip` with constants, `isin`, `between`, `.str`, `.dt`, `.cat`, numpy ufuncs, "
         "`all`/`any`/`sum`/`mean`/`min`/`max(axis=1)`, `cut(bins=[edges])`, `dpframe.to_datetime`/`to_numeric`",
         "1", "kept",
         "each output row is a function of the same input row and public constants; result dtypes follow from "
         "the schema, never from the values (to_datetime reads a row again on its own where pandas gave a batch "
         "the unit another row needed)"),
    Rule("order", "`sort_values`, `sort_index`, `set_index`, `reset_index`, `copy`, pickling, `pipe`", "1", "kept",
         "row order and row labels are never released"),
    Rule("merge_public", "`merge(public)` with `how='inner'`, `'left'` or `'cross'`", "bounded", "bounded",
         "a person's rows may be repeated, but only with public values; each query keeps at most "
         "max_contributions rows per person"),
    Rule("repeat", "`explode`, `melt`, `stack`, `dpframe.concat` of frames of one protection", "bounded", "bounded",
         "a person's rows are repeated; each query keeps at most max_contributions rows per person"),
    Rule("unit_join", "`merge` of two protections that share one `Budget` and a declared `privacy_unit`, "
         "on that unit", "bounded", "bounded",
         "a joined row holds one person's rows from both tables; each query keeps at most max_contributions "
         "rows per person"),
    Rule("sample", "`p.dp.sample(rate)`: Poisson sampling of privacy units", "1", "charged",
         "each person is kept independently with probability q, so queries on the sample are charged the "
         "amplified ε' = ln(1 + q(e^ε − 1)), δ' = qδ (zCDP: in full)"),
    Rule("exact", "exact reads: `mean`, `sum`, `median`, `quantile`, `describe`, `value_counts`, `unique`, `max`, "
         "`len`, `shape`, `index`, printing rows, `to_numpy`/`values`/iteration, `to_csv` and other exports, "
         "numpy functions, `k_anonymity`", "—", "refused",
         "it hands exact private values to the analyst, and anything computed from them voids the guarantee",
         "ask the private twin on the protected object, e.g. p['x'].dp.mean(bounds=(lo, hi), epsilon=0.1), "
         "p.dp.count(epsilon=0.1), p.dp.describe(epsilon=0.5)"),
    Rule("positional", "`head`, `tail`, `iloc[rows]`, `p[i:j]`, `sample(n=…)`/`sample(frac=…)`, `take`, "
         "`nlargest`, `nsmallest`", "2", "refused",
         "which rows are picked depends on the other people's rows, so adding one person can swap another "
         "in or out",
         "take a random subset with p.dp.sample(rate) (Poisson sampling, which also amplifies privacy), or "
         "filter on a column"),
    Rule("cross_row", "`shift`, `diff`, `rank`, cumulative and rolling windows, pandas `groupby`/`transform`, "
         "`fillna(method=…)`, `ffill`/`bfill`, `interpolate`, `drop_duplicates`, `apply(axis=0)`, `pivot_table`, "
         "`ambiguous='infer'` in `.dt` methods, self-merge", "unbounded", "refused",
         "a row's result depends on other people's rows, so one person can change many results",
         "aggregate privately with p.dp.groupby(...) and the .dp queries, or compute each row's value from "
         "that row alone"),
    Rule("private_values", "constants, categories or columns inferred from the data: `astype('category')`, "
         "`cut(bins=<int>)`, `isin(<protected column>)`, `astype` of text to dates, `dt.to_period()` without `freq`, "
         "`str.get_dummies`, `str.split`/`str.partition` with `expand=True`, `dropna(axis=1)`, "
         "`cat.remove_unused_categories`", "unbounded", "refused",
         "what is inferred from the data (a set of values, a bin edge, a column) is private, yet would be "
         "treated as public",
         "declare it: astype(pd.CategoricalDtype([...])), cut(bins=[edges]), isin([values]), or let "
         "value_counts select categories privately (with delta); a released .dp answer may be used as a constant"),
    Rule("mixing", "combining two protections (`p.assign(h=q['h'])`, `q['h'] + p['a']`), columns of different "
         "row sets, or a protected column with public arrays and Series", "unbounded", "refused",
         "positions and labels of different tables do not identify the same person, so one person's value "
         "could land in another person's row",
         "derive everything from one protected frame; join two private tables on a declared privacy unit "
         "sharing one Budget; bring public data in with merge(on=key)"),
    Rule("public_rows", "`merge(how='right')` or `how='outer'`, `dpframe.concat` with rows from outside the protection, "
         "pandas functions given protected data (`pd.concat`, `pd.merge`, `pd.cut`, `np.where`)", "unbounded",
         "refused",
         "rows that belong to nobody would be counted as people, or whether a public row appears would "
         "depend on who matches it",
         "use the protected object's own methods (p.merge, dpframe.concat, p['x'].cut, p['x'].where); add "
         "public rows to released results instead"),
    Rule("reprotect", "`protect()` of protected data or of `p.dp.unprotected()`, merging `unprotected()` output "
         "back in", "—", "refused",
         "it would open a second budget over the same people, or feed exact values back in",
         "query the protected object you already have (its budget is p.dp.budget)"),
    Rule("inplace", "`inplace=True`", "—", "refused",
         "an in-place change would move rows under frames already derived from them",
         "assign the result instead, e.g. p = p.dropna()"),
    Rule("unknown", "any other pandas method", "—", "refused",
         "dpframe does not know its effect on one person, so it fails closed",
         "if it is row-wise, express it with the kept operations above; the trusted curator can work on "
         "p.dp.unprotected(), whose results are not private"),
)

_BY_KEY = {rule.key: rule for rule in RULES}

# pandas attribute -> (rule, the private twin to suggest when there is one).
_EXACT_TWINS = {
    "mean": "p['x'].dp.mean(bounds=(lo, hi), epsilon=...)",
    "sum": "p['x'].dp.sum(bounds=(lo, hi), epsilon=...)",
    "var": "p['x'].dp.var(bounds=(lo, hi), epsilon=...)",
    "std": "p['x'].dp.std(bounds=(lo, hi), epsilon=...)",
    "median": "p['x'].dp.median(bounds=(lo, hi), epsilon=...)",
    "quantile": "p['x'].dp.quantile(q, bounds=(lo, hi), epsilon=...)",
    "count": "p.dp.count(epsilon=...)",
    "describe": "p.dp.describe(epsilon=...)",
    "value_counts": "p['x'].dp.value_counts(epsilon=...)",
    "mode": "p['x'].dp.mode(epsilon=...)",
    "unique": "p['x'].dp.value_counts(epsilon=..., delta=...), which releases privately selected categories",
    "nunique": "p['x'].dp.value_counts(epsilon=..., delta=...)",
    "hist": "p['x'].dp.histogram(bins=[...], epsilon=...)",
    "plot": "a .dp query, then .dp.plot() on its result",
    "max": "p['x'].dp.quantile(0.99, bounds=(lo, hi), epsilon=...) (an exact maximum has unbounded sensitivity)",
    "min": "p['x'].dp.quantile(0.01, bounds=(lo, hi), epsilon=...) (an exact minimum has unbounded sensitivity)",
    "size": "p.dp.count(epsilon=...)",
    "shape": "p.dp.count(epsilon=...) and p.columns",
    "empty": "p.dp.count(epsilon=...)",
    "groupby": "p.dp.groupby(...)",
    "sample": "p.dp.sample(rate)",
    "head": "p.dp.sample(rate)",
    "tail": "p.dp.sample(rate)",
}

_METHODS: dict[str, str] = {}
for _name in (
    "agg aggregate all any argmax argmin argsort array at autocorr axes boxplot corr corrwith count cov describe "
    "dot empty equals factorize first_valid_index get hasnans hist iat idxmax idxmin index info "
    "is_monotonic_decreasing is_monotonic_increasing is_unique item items iterrows itertuples kurt kurtosis "
    "last_valid_index list max mean median memory_usage min mode nbytes nunique plot prod product quantile "
    "searchsorted sem shape size skew std style sum to_clipboard to_csv to_dict to_excel to_feather to_hdf "
    "to_html to_iceberg to_json to_latex to_list to_markdown to_numpy to_orc to_parquet to_records to_sql "
    "to_stata to_string to_xarray to_xml tolist unique value_counts values var xs T transpose compare pop keys "
    "squeeze attrs flags"
).split():
    _METHODS[_name] = "exact"
for _name in "head tail take nlargest nsmallest truncate iat at_time between_time asof first last".split():
    _METHODS[_name] = "positional"
_METHODS["sample"] = "positional"
for _name in (
    "shift diff pct_change rank cumsum cumprod cummax cummin rolling expanding ewm groupby transform ffill bfill "
    "interpolate drop_duplicates duplicated pivot pivot_table resample asfreq unstack combine combine_first "
    "update align reindex reindex_like repeat"
).split():
    _METHODS[_name] = "cross_row"
_METHODS["join"] = "public_rows"


def rule(key: str) -> Rule:
    """The rule with this key.

    >>> rule("positional").stability
    '2'
    """
    return _BY_KEY[key]


def refusal(operation: str, key: str, detail: str = "", instead: str = "") -> RefusedError:
    """The error for a refused ``operation``: what, why (one sentence), and what to do instead.

    >>> print(refusal("p.head()", "positional"))
    p.head() is refused on protected data: which rows are picked depends on the other people's rows, so adding one person can swap another in or out. Instead: take a random subset with p.dp.sample(rate) (Poisson sampling, which also amplifies privacy), or filter on a column.
    """
    found = _BY_KEY[key]
    why = f"{detail}; {found.reason}" if detail else found.reason
    return RefusedError(f"{operation} is refused on protected data: {why}. Instead: {instead or found.instead}.")


def attribute_refusal(kind: str, name: str) -> RefusedError:
    """The error for ``p.<name>`` when ``name`` is a pandas attribute that a protected ``kind`` does not offer.

    >>> print(attribute_refusal("ProtectedFrame", "mean"))
    ProtectedFrame.mean is refused on protected data: it hands exact private values to the analyst, and anything computed from them voids the guarantee. Instead: p['x'].dp.mean(bounds=(lo, hi), epsilon=...).
    """
    key = _METHODS.get(name, "unknown")
    error = refusal(f"{kind}.{name}", key)
    twin = _EXACT_TWINS.get(name)
    if twin is not None:
        message = str(error).split(" Instead: ")[0]
        return RefusedError(f"{message} Instead: {twin}.")
    return error


def markdown_table() -> str:
    """The table of ``docs/privacy-model.md``, rendered from :data:`RULES`.

    >>> markdown_table().splitlines()[0]
    '| operation | stability | dpframe | why |'
    """
    lines = ["| operation | stability | dpframe | why |", "|---|---|---|---|"]
    for r in RULES:
        lines.append(f"| {r.operations} | {r.stability} | {r.action} | {r.reason} |")
    return "\n".join(lines)
