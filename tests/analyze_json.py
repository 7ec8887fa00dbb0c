"""`llm-doctor analyze ... --format json` run in-process, for the tests that read a report's
findings and facts (a real CLI invocation through click, no subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from llm_doctor.cli import main


def analyze(*paths: str | Path) -> dict:
    res = CliRunner().invoke(main, ["analyze", *map(str, paths), "--format", "json", "--fail-on", "never"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def check(report: dict, check_id: str) -> dict:
    """The one check result of that id in the report."""
    (found,) = [c for c in report["checks"] if c["id"] == check_id]
    return found
