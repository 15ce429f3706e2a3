"""Queries: plans decided before reading the data, the data kernels, and the aggregates.

Internal: users reach these through the ``.dp`` accessor; the modules are
documented for maintainers and reviewers of the privacy argument.
"""
