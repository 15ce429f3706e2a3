"""A misspelt query: the accessor has no such method."""

import pandas as pd

import dpframe

p = dpframe.protect(pd.DataFrame({"age": [31, 45, 67]}), epsilon=1.0)
p.dp.cuont(epsilon=0.1)  # error: attr-defined
