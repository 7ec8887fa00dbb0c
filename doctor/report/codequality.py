"""GitLab Code Quality report (`--format codequality`): a JSON array of issues, one per finding,
which GitLab shows in the merge request widget when a job uploads it as
`artifacts:reports:codequality`. Required fields: description, check_name, fingerprint, severity,
location.path and location.lines.begin
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format).

A finding is about the service, not a line of code, so its location is the file that set the gate
(llm-doctor.toml), else the log it was read from."""

from __future__ import annotations

import hashlib
import json

from llm_doctor.findings import Finding
from llm_doctor.report import Report

SEVERITY = {"error": "critical", "warn": "major", "info": "info"}


def _path(report: Report) -> str:
    gate = report.facts.gate
    if gate is not None and gate.config_file:
        return gate.config_file.split(" [")[0]  # "pyproject.toml [tool.llm-doctor]" -> the file
    logs = report.facts.logs
    return logs.sources[0] if logs is not None and logs.sources else "llm-doctor.toml"


def _issue(f: Finding, path: str) -> dict[str, object]:
    fix = next((x for x in f.fixes), None)
    description = f"{f.code}: {f.title}" + (f" — fix: {fix.summary}" + (f" ({fix.command})" if fix.command else "") if fix else "")
    return {
        "type": "issue",
        "description": description,
        "check_name": f.code,
        "fingerprint": hashlib.sha256(f"{f.check}|{f.code}|{f.title}".encode()).hexdigest(),
        "severity": SEVERITY[f.severity],
        "categories": ["Performance"] if f.layer == "perf" else ["Bug Risk"],
        "location": {"path": path, "lines": {"begin": 1}},
    }


def render(report: Report) -> str:
    path = _path(report)
    return json.dumps([_issue(f, path) for f in report.findings], indent=2, ensure_ascii=False) + "\n"
