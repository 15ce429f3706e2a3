"""A misspelt argument: mean() has no bonds=."""

import pandas as pd

import dpframe

p = dpframe.protect(pd.DataFrame({"age": [31, 45, 67]}), epsilon=1.0)
p["age"].dp.mean(bonds=(0, 100), epsilon=0.1)  # error: call-arg
