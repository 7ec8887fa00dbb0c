"""load-layer checks."""
