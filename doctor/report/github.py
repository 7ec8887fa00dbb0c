"""GitHub Actions: a workflow annotation per finding, and the Markdown report in the job summary.

When GITHUB_ACTIONS=true the findings become `::error`/`::warning`/`::notice` lines, which GitHub
shows on the run's page and its checks, and the Markdown report is appended to the file named by
GITHUB_STEP_SUMMARY. The annotations go to stderr so that `--format json` on stdout stays JSON;
the runner reads workflow commands from both streams.
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands)
"""

from __future__ import annotations

import sys

from llm_doctor.redact import Redactor
from llm_doctor.report import Report

LEVELS = {"error": "error", "warn": "warning", "info": "notice"}


def _data(text: str) -> str:
    """A command's message: %, CR and LF escaped, as the runner unescapes them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A command's property value: also `:` and `,`, which would end it."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(report: Report) -> str:
    lines = []
    for f in report.findings:
        body = [f.title, *f.evidence[:3]]
        body += [f"Fix: {x.summary}" + (f": {x.command}" if x.command else "") for x in f.fixes[:2]]
        lines.append(f"::{LEVELS[f.severity]} title={_property(f'llm-doctor {f.code}')}::{_data(chr(10).join(body))}")
    return "".join(line + "\n" for line in lines)


def publish(report: Report, redactor: Redactor, summary_path: str | None) -> None:
    from llm_doctor.report.render import render

    sys.stderr.write(redactor.text(annotations(report)))
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as fh:
            fh.write(render(report, "markdown", redactor) + "\n")
