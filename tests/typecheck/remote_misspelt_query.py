"""Remote use type-checks as local use (the notebook changes only the line that makes ``p``): a helper written for a
local frame takes the remote one, answers keep their types, and a misspelt query is caught as it is locally."""

import dpframe


def mean_age(p: dpframe.ProtectedFrame, low: int) -> float:
    answer: dpframe.DPFloat = p[p["age"] >= low]["age"].dp.mean(bounds=(0, 100), epsilon=0.1)
    lower, upper = answer.ci
    return float(answer) if upper - lower < 10 else float("nan")


def remote_analysis() -> tuple[float, int, list[str]]:
    with dpframe.connect("https://dp.example.org", token="t") as c:
        p = c.dataset("census")
        p["decade"] = p["age"] // 10
        rows: dpframe.DPInt = p.query("decade >= 4").dp.count(epsilon=0.1)
        p.dp.cuont(epsilon=0.1)  # error: attr-defined
        return mean_age(p, 40), int(rows), c.datasets()
