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


def first_finding(tmp_path: Path, text: str, name: str = "engine.log") -> dict:
    """The rank-1 finding of the report on `text` written as one log file (there must be one)."""
    path = tmp_path / name
    path.write_text(text)
    findings = analyze(path)["findings"]
    assert findings, text
    return findings[0]


def fix_commands(finding: dict) -> list[str]:
    """The commands of a finding's fixes, in their order (fixes without one left out)."""
    return [fix["command"] for fix in finding["fixes"] if fix.get("command")]
