"""Render a Report in one format, always through the redactor: nothing leaves unmasked."""

from __future__ import annotations

import json
from dataclasses import replace

from llm_doctor.findings import Finding
from llm_doctor.redact import Redactor
from llm_doctor.report import Report

FORMATS = ("text", "json", "markdown", "html", "junit", "codequality")


def render(report: Report, fmt: str, redactor: Redactor, color: bool = False, fail_on: str = "error",
           width: int | None = None, verbose: bool = False) -> str:
    """`fail_on` is the exit code's gate; JUnit marks failures by it too. `width` (a terminal's) and
    `verbose` shape the text report only."""
    if fmt == "json":
        return json.dumps(redactor.obj(report.to_json()), indent=2, ensure_ascii=False) + "\n"
    report = redacted(report, redactor)
    if fmt == "codequality":
        from llm_doctor.report import codequality

        return redactor.text(codequality.render(report))
    if fmt == "text":
        from llm_doctor.report import text

        return redactor.text(text.render(report, color=color, width=width, verbose=verbose))
    if fmt == "markdown":
        from llm_doctor.report import markdown

        return redactor.text(markdown.render(report))
    if fmt == "html":
        from llm_doctor.report import html

        return redactor.text(html.render(report))
    if fmt == "junit":
        from llm_doctor.report import junit

        return redactor.text(junit.render(report, fail_on))
    raise ValueError(f"unknown format {fmt!r}")


def redacted(report: Report, redactor: Redactor) -> Report:
    """The report with its text redacted before a renderer escapes it: HTML and JUnit turn
    `"api_key": "V"` into `&quot;api_key&quot;: &quot;V&quot;` and `&key=V` into `&amp;key=V`,
    which the patterns would no longer see. The rendered output is redacted again after."""
    r = redactor.text

    def finding(f: Finding) -> Finding:
        fixes = [replace(x, summary=r(x.summary), command=r(x.command) if x.command else x.command) for x in f.fixes]
        return replace(f, title=r(f.title), evidence=[r(e) for e in f.evidence], fixes=fixes)

    return replace(
        report,
        title=r(report.title),
        findings=[finding(f) for f in report.findings],
        checks=[replace(c, detail=r(c.detail), findings=[finding(f) for f in c.findings]) for c in report.checks],
        extra_sections=[(r(heading), r(body)) for heading, body in report.extra_sections],
    )
