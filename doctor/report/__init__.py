"""One Report object, ranked once, rendered by every format (text, json, markdown, html, junit).

Ranking: a root cause comes before the symptoms it explains; then errors before warnings before
info; a recognised cause before what the doctor could not place (`*.unrecognized_failure`, its own
`doctor.*` state); then earlier layers first; then causal order in the log (the finding that quotes
the earliest root error of the judged run: a failure comes before the ones it set off, whichever
check ran first); then the order the checks ran in.

Status: the worst severity, or `incomplete` when part of the input was not read or judged
(doctor.input_incomplete), which fails the gate like an error: a pipeline must not pass on input
the doctor could not finish.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from doctor import __version__
from doctor.codes import LAYERS
from doctor.engine import CheckResult
from doctor.facts import Facts
from doctor.findings import SEVERITIES, Finding

REPORT_SCHEMA = "llm-doctor.report/1"
FAIL_ON = {"error": ("error", "incomplete"), "warn": ("error", "incomplete", "warn"), "never": ()}
STATUSES = ("error", "incomplete", "warn", "info", "ok")


@dataclass
class Report:
    findings: list[Finding]  # ranked: index 0 is rank 1
    checks: list[CheckResult]
    facts: Facts
    title: str = "llm-doctor"
    extra_sections: list[tuple[str, str]] = field(default_factory=list)  # (heading, markdown/plain text)

    @property
    def status(self) -> str:
        if any(f.code == "doctor.input_incomplete" for f in self.findings):
            return "incomplete"
        present = {f.severity for f in self.findings}
        return next((s for s in SEVERITIES if s in present), "ok")

    def exit_code(self, fail_on: str) -> int:
        failing = FAIL_ON[fail_on]
        return 1 if self.status in failing or any(f.severity in failing for f in self.findings) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "tool": {"name": "llm-doctor", "version": __version__},
            "status": self.status,
            "findings": [
                {
                    "rank": i,
                    "code": f.code,
                    "severity": f.severity,
                    "layer": f.layer,
                    "check": f.check,
                    **({"node": f.node} if f.node else {}),
                    "title": f.title,
                    "evidence": list(f.evidence),
                    "fixes": [{"summary": x.summary, "command": x.command} for x in f.fixes],
                }
                for i, f in enumerate(self.findings, 1)
            ],
            "checks": [
                {"id": c.id, "layer": c.layer, "status": c.status, "duration_ms": c.duration_ms, "detail": c.detail}
                for c in self.checks
            ],
            "facts": self.facts.to_dict(),
        }


def build_report(checks: list[CheckResult], facts: Facts, title: str = "llm-doctor") -> Report:
    findings = [f for c in checks for f in c.findings]
    report = Report(rank(findings, causal_order(findings, facts)), checks, facts, title)
    if facts.notes:
        report.extra_sections.append(("Collector notes", "\n".join(facts.notes)))
    if facts.plan is not None:
        from doctor.report.budget import render as budget_bar

        report.extra_sections.append(("Memory budget per GPU", budget_bar(facts.plan)))
    if facts.cluster is not None and facts.cluster.nodes:
        from doctor.report.cluster_table import render as cluster_table

        report.extra_sections.append((f"Ray cluster {facts.cluster.address}, a row per node", cluster_table(facts.cluster)))
    return report


def _unplaced(f: Finding) -> bool:
    """What the doctor could not place comes after every recognised cause of the same severity."""
    return f.code.endswith(".unrecognized_failure") or f.layer == "doctor"


def causal_order(findings: list[Finding], facts: Facts) -> dict[int, tuple[int, int, int]]:
    """Where in the log each finding's cause is: the earliest event of the judged run that its
    evidence quotes (doctor.logview.evidence writes `source:line: ...`), a root error before a
    wrapper's cascade (doctor.logparse.chains.WRAPPERS). Findings quoting no log line are absent."""
    from doctor.logview import judged_run, where

    logs = facts.logs
    if logs is None or not logs.events:
        return {}
    run = judged_run(logs)
    at: dict[str, tuple[int, int, int]] = {}
    for e in logs.events:
        if e.run == run and e.fatal:
            source = logs.sources.index(e.source) if e.source in logs.sources else 0
            at.setdefault(where(e), (int(bool(e.values.get("cascade"))), source, e.line_no))
    out = {}
    for f in findings:
        quoted = [at[m.group(1)] for line in f.evidence if (m := QUOTED.match(line)) and m.group(1) in at]
        if quoted:
            out[id(f)] = min(quoted)
    return out


QUOTED = re.compile(r"^(.+?:\d+|line \d+)(?: \(x\d+\))?: ")
NOWHERE = (2, 0, 0)  # a finding that quotes no log line: after those that do, among equals


def rank(findings: list[Finding], causal: dict[int, tuple[int, int, int]] | None = None) -> list[Finding]:
    order = {id(f): i for i, f in enumerate(findings)}
    causal = causal or {}

    def base(f: Finding) -> tuple[int, int, int, tuple[int, int, int], int]:
        return (SEVERITIES.index(f.severity), int(_unplaced(f)), LAYERS.index(f.layer), causal.get(id(f), NOWHERE), order[id(f)])

    by_code: dict[str, list[Finding]] = {}
    for f in findings:
        by_code.setdefault(f.code, []).append(f)

    def explained(f: Finding) -> list[Finding]:
        return [g for code in f.explains for g in by_code.get(code, []) if g is not f]

    def closure(f: Finding, seen: set[int]) -> list[Finding]:
        out = [f]
        for g in explained(f):
            if id(g) not in seen:
                seen.add(id(g))
                out += closure(g, seen)
        return out

    def depth(f: Finding, seen: frozenset[int] = frozenset()) -> int:
        causes = [g for g in findings if f.code in g.explains and g is not f and id(g) not in seen]
        return 1 + max((depth(g, seen | {id(f)}) for g in causes), default=-1)

    key = {id(f): (min(base(x) for x in closure(f, {id(f)})), depth(f), base(f)) for f in findings}
    return sorted(findings, key=lambda f: key[id(f)])
