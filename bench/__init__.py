"""Benchmarks: each prints a table with ratios measured side by side in one run."""
