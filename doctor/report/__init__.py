"""One Report object, ranked once, rendered by every format (text, json, markdown, html, junit, codequality).

Ranking: a root cause comes before the symptoms it explains; then what a log line, a probe or a fact
shows before what a person only states in words (the evidence tier "statement") before the doctor's
own state (`doctor.*`); then errors before warnings before info; a recognised cause before what the doctor could not place (`*.unrecognized_failure`, its own
`doctor.*` state) and what is about how it was run (a key typed on its command line); then earlier layers first; then causal order in the log (the finding that quotes
the earliest line of the judged run, an error or not: a failure comes before the ones it set off, whichever
check ran first); then the order the checks ran in.

Status: the worst severity, or `incomplete` when part of the input was not read or judged
(doctor.input_incomplete), which fails the gate like an error: a pipeline must not pass on input
the doctor could not finish.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from llm_doctor import __version__
from llm_doctor.codes import LAYERS
from llm_doctor.engine import CheckResult
from llm_doctor.facts import Facts
from llm_doctor.facts.plan import MemoryPlan
from llm_doctor.findings import GUESS, SEVERITIES, STATEMENT, Finding

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
    ignored: list[tuple[Finding, str]] = field(default_factory=list)  # findings the configuration ignores, and why
    plan: MemoryPlan | None = None  # the memory budget per GPU, when the facts hold one (HTML draws its bars)

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
        out = {
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
                    **({"tier": f.tier} if f.tier else {}),
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
        if self.ignored:  # only when the configuration ignores a code that came up: the contract's keys stay as they are
            out["ignored"] = [{"code": f.code, "severity": f.severity, "check": f.check, "title": f.title, "reason": why}
                              for f, why in self.ignored]  # fmt: skip
        return out


def build_report(checks: list[CheckResult], facts: Facts, title: str = "llm-doctor",
                 ignored: list[tuple[Finding, str]] | None = None) -> Report:
    findings = _without_restated([f for c in checks for f in c.findings])
    report = Report(rank(findings, causal_order(findings, facts)), checks, facts, title, ignored=list(ignored or []))
    if facts.gate is not None:
        report.extra_sections.append((f"Configuration ({facts.gate.config_file})", _configuration(facts)))
    if report.ignored:
        report.extra_sections.append(("Ignored by the configuration", "\n".join(
            f"{f.code} ({f.severity}): {f.title} — reason: {why}" for f, why in report.ignored)))
    if facts.notes:
        report.extra_sections.append(("Collector notes", "\n".join(facts.notes)))
    report.plan = facts.plan or derived_plan(facts)
    if report.plan is not None:
        from llm_doctor.report.budget import render as budget_bar

        report.extra_sections.append((BUDGET_HEADING, budget_bar(report.plan)))
    if facts.cluster is not None and facts.cluster.nodes:
        from llm_doctor.report.cluster_table import render as cluster_table

        report.extra_sections.append((f"{CLUSTER_HEADING} {facts.cluster.address}, a row per node", cluster_table(facts.cluster)))
    return report


BUDGET_HEADING = "Memory budget per GPU"
CLUSTER_HEADING = "Ray cluster"  # the HTML report draws these two sections from the facts, not as text


def derived_plan(facts: Facts) -> MemoryPlan | None:
    """The budget load.memory_fit judges in a run or an analysis (the model, the engine arguments
    and the GPUs are all known), so the report draws it too; None when the facts lack a part."""
    from llm_doctor.planning import plan_from_facts

    try:
        return plan_from_facts(facts)
    except Exception:  # load.memory_fit reports it itself (doctor.check_crashed)
        return None


def _configuration(facts: Facts) -> str:
    """Each option the run used and where its value came from: flag, the configuration file, default."""
    rows = []
    if facts.settings is not None:
        for name, setting in (("endpoint", facts.settings.base_url), ("model", facts.settings.model), ("api key", facts.settings.api_key)):
            rows.append(f"{name} = {setting.value or '(none)'}  ({setting.source or 'not set'})")
    if facts.gate is not None:
        rows += [f"{v.name} = {v.value}  ({v.source})" for v in facts.gate.values if v.name not in ("endpoint", "model")]
        rows += [f"ignore {code}: {why}" for code, why in facts.gate.ignore.items()]
    return "\n".join(rows)


ABOUT_THE_RUN = ("access.key_on_command_line",)  # how the doctor was invoked, not what is wrong with the service


def _unplaced(f: Finding) -> bool:
    """What the doctor could not place, and what is about its own invocation, comes after every
    recognised cause of the same severity."""
    return f.code.endswith(".unrecognized_failure") or f.layer == "doctor" or f.code in ABOUT_THE_RUN


def causal_order(findings: list[Finding], facts: Facts) -> dict[int, tuple[int, int, int]]:
    """Where in the log each finding's cause is: the earliest event of the judged run that its
    evidence quotes (doctor.logview.evidence writes `source:line: ...`), a root error before a
    wrapper's cascade (doctor.logparse.chains.WRAPPERS). Findings quoting no log line are absent.
    An event counts whether or not it is fatal: a client's 5xx answer (an http_response event) is
    no fatal event, and when it came before the timeout of a later request, it is what went wrong first.
    A quoted line that is no event (whose run is not known) still places its finding, after the events (_line_at)."""
    from llm_doctor.logview import judged_run, where

    logs = facts.logs
    if logs is None or not logs.events:
        return {}
    run = judged_run(logs)
    at: dict[str, tuple[int, int, int]] = {}
    for e in sorted(logs.events, key=lambda e: not e.fatal):  # a fatal event's line is where it is, cascade or root
        if e.run == run:
            source = logs.sources.index(e.source) if e.source in logs.sources else 0
            # a cause the engine logged as a warning and went on from comes after an error it stopped on
            later = bool(e.values.get("cascade")) or e.level in WARNED
            at.setdefault(where(e), (int(later), source, e.line_no))
    out = {}
    for f in findings:
        places = [m.group(1) for line in f.evidence if (m := QUOTED.match(line))]
        quoted = [q for p in places if (q := at.get(p) or _line_at(p, logs.sources))]
        if quoted:
            out[id(f)] = min(quoted)
    return out


def _line_at(place: str, sources: list[str]) -> tuple[int, int, int] | None:
    """Where a quoted line that is no event is (a stat line, a request the engine logged): with the cascades, after
    the errors, yet before a finding that quotes no line at all (a value read from the command line)."""
    source, _, line = place.rpartition(":")
    return (1, sources.index(source), int(line)) if source in sources and line.isdigit() else None


WARNED = ("WARNING", "WARN")
QUOTED = re.compile(r"^(.+?:\d+|line \d+)(?: \(x\d+\))?: ")
NOWHERE = (2, 0, 0)  # a finding that quotes no log line: after those that do, among equals


def _without_restated(findings: list[Finding]) -> list[Finding]:
    """A statement whose code a finding with real evidence already has adds nothing: that finding judged it."""
    shown = {f.code for f in findings if f.tier not in (STATEMENT, GUESS)}
    return [f for f in findings if f.tier not in (STATEMENT, GUESS) or f.code not in shown]


def _tier(f: Finding) -> int:
    """What a log line, a probe or a fact shows (0) before what a person says (1), before what the words of a
    failure report lean to (2: a guess, doctor/guessed.py), before the doctor's own state (3: what it could not
    read comes after every diagnosis, the stated and guessed ones included). A failure no
    rule could place shows only that something failed: a cause a person names beside it (the maintainer's
    answer under the pasted error) places it, so it ranks with the statements, after them at its severity."""
    if f.layer == "doctor":
        return 3
    if f.tier == GUESS:
        return 2
    # a note (info) is no diagnosis: it ranks with the statements, after every failure, placed or not, by its severity
    return 1 if f.tier == STATEMENT or f.code.endswith(".unrecognized_failure") or f.severity == "info" else 0


def _said_at(f: Finding) -> tuple[int, int, int]:
    """Where in the text the statement's first sentence is: a title before the sentences below it."""
    m = QUOTED.match(f.evidence[0]) if f.evidence else None
    line = m.group(1).rsplit(":", 1)[-1] if m else ""
    return (1, 0, int(line)) if line.isdigit() else NOWHERE


def rank(findings: list[Finding], causal: dict[int, tuple[int, int, int]] | None = None) -> list[Finding]:
    order = {id(f): i for i, f in enumerate(findings)}
    causal = causal or {}

    def base(f: Finding) -> tuple[int, int, int, int, tuple[int, int, int], int]:
        if f.tier == STATEMENT:  # among statements: the worst first, then in the order they are said, whatever the layer
            return (1, SEVERITIES.index(f.severity), 0, 0, _said_at(f), order[id(f)])
        return (_tier(f), SEVERITIES.index(f.severity), int(_unplaced(f)), LAYERS.index(f.layer), causal.get(id(f), NOWHERE), order[id(f)])

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
