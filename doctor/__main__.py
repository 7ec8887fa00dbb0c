"""`python -m doctor` runs the CLI (what the tests use, so they need no console script)."""

from doctor.cli import main

main()
