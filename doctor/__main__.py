"""`python -m llm_doctor` runs the CLI (what the tests use, so they need no console script)."""

from llm_doctor.cli import main

main()
