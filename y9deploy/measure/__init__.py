"""Measuring a deployment: benchmarks and their stage timer, environment checks (doctor)."""
