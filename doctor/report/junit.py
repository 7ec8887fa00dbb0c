"""JUnit XML: one testcase per check, so a CI system shows the doctor's verdict natively.
`fail`/`error` become failures carrying the check's findings; `skip`/`blocked` are skipped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from doctor.report import Report


def render(report: Report) -> str:
    failures = sum(c.status in ("fail", "error") for c in report.checks)
    skipped = sum(c.status in ("skip", "blocked") for c in report.checks)
    suite = ET.Element(
        "testsuite", name="llm-doctor", tests=str(len(report.checks)), failures=str(failures), skipped=str(skipped)
    )
    for c in report.checks:
        case = ET.SubElement(suite, "testcase", classname=f"llm-doctor.{c.layer}", name=c.id, time=f"{c.duration_ms / 1000:.3f}")
        if c.status in ("fail", "error"):
            body = "\n\n".join(
                "\n".join([f"{f.code}: {f.title}", *f.evidence, *(f"fix: {x.summary} {x.command or ''}" for x in f.fixes)])
                for f in c.findings
            )
            ET.SubElement(case, "failure", message=c.detail, type=c.status).text = body
        elif c.status in ("skip", "blocked"):
            ET.SubElement(case, "skipped", message=c.detail)
        elif c.findings:
            ET.SubElement(case, "system-out").text = "\n".join(f"{f.code}: {f.title}" for f in c.findings)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
