"""An exact read is refused at run time and missing to the type checker: use p["age"].dp.mean(...)."""

import pandas as pd

import dpframe

p = dpframe.protect(pd.DataFrame({"age": [31, 45, 67]}), epsilon=1.0)
p["age"].mean()  # error: attr-defined
