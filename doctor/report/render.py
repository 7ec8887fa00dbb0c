"""Render a Report in one format, always through the redactor: nothing leaves unmasked."""

from __future__ import annotations

import json

from doctor.redact import Redactor
from doctor.report import Report

FORMATS = ("text", "json", "markdown", "html", "junit")


def render(report: Report, fmt: str, redactor: Redactor, color: bool = False, fail_on: str = "error") -> str:
    """`fail_on` is the exit code's gate; JUnit marks failures by it too."""
    if fmt == "json":
        return json.dumps(redactor.obj(report.to_json()), indent=2, ensure_ascii=False) + "\n"
    if fmt == "text":
        from doctor.report import text

        return redactor.text(text.render(report, color=color))
    if fmt == "markdown":
        from doctor.report import markdown

        return redactor.text(markdown.render(report))
    if fmt == "html":
        from doctor.report import html

        return redactor.text(html.render(report))
    if fmt == "junit":
        from doctor.report import junit

        return redactor.text(junit.render(report, fail_on))
    raise ValueError(f"unknown format {fmt!r}")
