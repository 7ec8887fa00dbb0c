"""JUnit XML: one testcase per check, so a CI system shows the doctor's verdict natively.

Shaped for the Jenkins/Ant schema (junit-10.xsd): the testsuite carries the required `name`,
`tests`, `failures` and `errors`. The gate is the same as the exit code's: a check fails only
with a finding at or above `--fail-on`, so a CI reading the XML and one reading the exit code
agree. A check that crashed is an `error` (nothing was judged) unless `--fail-on never`; `skip`/`blocked` are skipped;
findings below the gate are kept as system-out. Characters XML 1.0 cannot hold (terminal escapes,
NUL, other control bytes a server or a log may send) are replaced, or the file would not parse."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from llm_doctor.engine import CheckResult
from llm_doctor.report import FAIL_ON, Report

NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return NOT_XML.sub("\ufffd", text)


def _body(c: CheckResult) -> str:
    return "\n\n".join(
        "\n".join([f"{f.code}: {f.title}", *f.evidence, *(f"fix: {x.summary} {x.command or ''}" for x in f.fixes)])
        for f in c.findings
    )


def render(report: Report, fail_on: str = "error") -> str:
    gate = FAIL_ON[fail_on]
    suite = ET.Element("testsuite", name="llm-doctor")
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for c in report.checks:
        case = ET.SubElement(suite, "testcase", classname=f"llm-doctor.{c.layer}", name=c.id, time=f"{c.duration_ms / 1000:.3f}")
        failing = any(f.severity in gate for f in c.findings)
        if c.status == "error" and gate:  # the check itself crashed: nothing was judged (its doctor.check_crashed fails the exit code too)
            kind = "error"
            ET.SubElement(case, kind, message=c.detail, type=c.status).text = _body(c) or c.detail
        elif failing:
            kind = "failure"
            ET.SubElement(case, kind, message=c.detail, type=c.status).text = _body(c)
        elif c.status in ("skip", "blocked"):
            kind = "skipped"
            ET.SubElement(case, kind, message=c.detail)
        else:
            kind = ""
            if c.findings:
                ET.SubElement(case, "system-out").text = "\n".join(f"{f.severity}: {f.code}: {f.title}" for f in c.findings)
        if kind:
            counts[kind] += 1
    suite.set("tests", str(len(report.checks)))
    suite.set("failures", str(counts["failure"]))
    suite.set("errors", str(counts["error"]))
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", f"{sum(c.duration_ms for c in report.checks) / 1000:.3f}")
    if report.extra_sections:  # collector notes, the memory budget and its assumptions
        ET.SubElement(suite, "system-out").text = "\n\n".join(f"{h}\n{body}" for h, body in report.extra_sections)
    for element in suite.iter():
        element.text = _xml(element.text) if element.text else element.text
        for name, value in element.attrib.items():
            element.set(name, _xml(value))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
