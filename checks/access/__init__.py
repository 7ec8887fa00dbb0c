"""access-layer checks."""
