"""Privacy parameters are keyword-only: a bare number would be ambiguous."""

import pandas as pd

import dpframe

p = dpframe.protect(pd.DataFrame({"age": [31, 45, 67]}), epsilon=1.0)
p.dp.count(0.1)  # error: call-arg
