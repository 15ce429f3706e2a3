"""Noise: a secure random source, exact discrete samplers and their calibration."""
