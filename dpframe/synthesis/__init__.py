"""Differentially private synthetic data: ``p.dp.synthesize()``.

* :mod:`~dpframe.synthesis.domain` -- columns to integer codes and back (bins, categories, missing values);
* :mod:`~dpframe.synthesis.measure` -- the budget plan and the noisy marginals, the only contact with the data;
* :mod:`~dpframe.synthesis.model` -- a junction-tree graphical model fitted to noisy marginals, sampled exactly;
* :mod:`~dpframe.synthesis.graphical` -- AIM and MST; :mod:`~dpframe.synthesis.marginals` -- the book's method;
* :mod:`~dpframe.synthesis.synthesize` -- the front: plan, charge, measure, fit, sample, decode.
"""

from dpframe.synthesis.synthesize import METHODS, SynthesisReport

__all__ = ["METHODS", "SynthesisReport"]
