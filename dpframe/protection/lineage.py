"""Which expression a protected column holds: its lineage, so that what was released about one expression is
remembered for that expression only.

Categories released by private partition selection are public from then on,
and a later query on the same expression uses them as declared keys, at no
cost. They are remembered by **lineage**, never by column name: after
``p["dep"].dt.day_name().dp.value_counts(...)``, ``p["dep"].dt.month`` (the
same name, another expression) must not be grouped by weekday names.

Every column of a protected object carries a :class:`Lineage` token. Steps
that pass a column's values through unchanged -- selecting columns, renaming
them, filtering, sorting or dropping rows, copying, assigning a protected
column to a frame -- keep its token; every other step makes a new one. A new
token only forgets (the categories are selected again, or declared): it is
never wrong.

>>> import pandas as pd, dpframe
>>> p = pd.DataFrame({"a": [1, 2], "b": [3, 4]}).dp.protect(epsilon=1.0)
>>> p["a"]._lineage == p[["a", "b"]][p["b"] > 3]["a"]._lineage, p["a"]._lineage == (p["a"] + 1)._lineage
(True, False)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import pandas as pd
from pandas.api.types import is_hashable


class Lineage:
    """The identity of one expression over protected rows (compared by identity; pickles keep it within one
    pickle)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Lineage {id(self):#x}>"


def labels_of(data: Any) -> list[Hashable]:
    """The column labels of a frame, or a series' name."""
    return list(data.columns) if isinstance(data, pd.DataFrame) else [data.name]


def carried(lineage: Mapping[Hashable, Lineage], labels: Iterable[Hashable],
            renames: Mapping[Hashable, Hashable] | None = None) -> dict[Hashable, Lineage]:
    """The lineage of ``labels`` after a step that passes values through: a column keeps its token (found under
    its old label, ``renames`` mapping new labels to old ones); a label with none gets a new one.

    >>> a = {"x": Lineage()}
    >>> carried(a, ["x"])["x"] is a["x"], carried(a, ["y"], {"y": "x"})["y"] is a["x"], "z" in carried(a, ["z"])
    (True, True, True)
    """
    renames = renames or {}
    out: dict[Hashable, Lineage] = {}
    for label in labels:
        before = renames.get(label, label)
        token = lineage.get(before) if is_hashable(before) else None
        out[label] = token if token is not None else Lineage()
    return out
