"""Private machine learning on protected frames, with scikit-learn's conventions (docs/learning.md).

The issue asked for ``dpframe.ml``; the package follows the project's architecture and is ``dpframe.learning``.
"""

from dpframe.learning.linear import LinearRegression
from dpframe.learning.logistic import LogisticRegression

__all__ = ["LinearRegression", "LogisticRegression"]
