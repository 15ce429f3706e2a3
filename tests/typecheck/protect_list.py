"""protect() takes a DataFrame or a Series."""

import dpframe

dpframe.protect([31, 45, 67], epsilon=1.0)  # error: call-overload
