"""Markdown report, to paste into a ticket: the ranked findings first, then the checks table."""

from __future__ import annotations

from llm_doctor import __version__
from llm_doctor.report import CLUSTER_HEADING, Report


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render(report: Report) -> str:
    out = [f"# {report.title} report", "", f"**Status: {report.status}** · llm-doctor {__version__}", ""]
    if report.findings:
        out += ["## Findings (fix in this order)", ""]
        for i, f in enumerate(report.findings, 1):
            out.append(f"### {i}. `{f.code}` ({f.severity}) — {f.title}")
            out.append("")
            if f.evidence:
                out.append("Evidence:")
                out.append("```")
                out += f.evidence
                out.append("```")
            for fix in f.fixes:
                out.append(f"- {fix.summary}" + (f": `{fix.command}`" if fix.command else ""))
            out.append("")
    else:
        out += ["No problems found.", ""]
    for heading, body in report.extra_sections:
        if heading.startswith(CLUSTER_HEADING) and report.facts.cluster is not None:
            out += [f"## {heading}", "", *_cluster(report), ""]
        else:
            out += [f"## {heading}", "", "```", body, "```", ""]
    out += ["## Checks", "", "| check | layer | status | ms | detail |", "| --- | --- | --- | ---: | --- |"]
    for c in report.checks:
        out.append(f"| `{c.id}` | {c.layer} | {c.status} | {c.duration_ms:g} | {_cell(c.detail)} |")
    return "\n".join(out) + "\n"


def _cluster(report: Report) -> list[str]:
    """The cluster as a Markdown table, a value that differs from most nodes in bold."""
    from llm_doctor.report.cluster_table import table

    assert report.facts.cluster is not None
    header, rows = table(report.facts.cluster)
    return [
        "| " + " | ".join(_cell(h) for h in header) + " |",
        "|" + " --- |" * len(header),
        *("| " + " | ".join(f"**{_cell(c.value)}**" if c.odd and c.value else _cell(c.value) for c in row) + " |" for row in rows),
        "",
        "**bold**: differs from most nodes",
    ]
