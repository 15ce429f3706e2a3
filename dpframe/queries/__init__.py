"""Queries: plans decided before reading the data, the data kernels, and the aggregates."""
