"""A count is a DPInt (an int), not text."""

import pandas as pd

import dpframe

p = dpframe.protect(pd.DataFrame({"age": [31, 45, 67]}), epsilon=1.0)
label: str = p.dp.count(epsilon=0.1)  # error: assignment
