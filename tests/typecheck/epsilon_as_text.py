"""epsilon is a number, not text."""

import pandas as pd

import dpframe

p = dpframe.protect(pd.DataFrame({"age": [31, 45, 67]}), epsilon=1.0)
p["age"].dp.mean(bounds=(0, 100), epsilon="0.1")  # error: arg-type
