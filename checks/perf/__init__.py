"""perf-layer checks."""
