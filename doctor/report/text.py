"""Terminal report: one line per check with a status mark (flutter-doctor style), then the ranked
findings with evidence and exact fixes. Colour only on a TTY without NO_COLOR."""

from __future__ import annotations

import io

from doctor.codes import LAYERS
from doctor.report import Report

MARKS = {"pass": "✓", "warn": "!", "fail": "✗", "error": "✗", "skip": "-", "blocked": "~"}
STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta", "skip": "dim", "blocked": "dim"}
SEV_STYLES = {"error": "bold red", "incomplete": "bold magenta", "warn": "yellow", "info": "cyan"}


def render(report: Report, color: bool = False, width: int = 100) -> str:
    from rich.console import Console
    from rich.markup import escape

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False, soft_wrap=True)
    p = console.print
    p(f"[bold]{escape(report.title)}[/bold] — status: [{SEV_STYLES.get(report.status, 'green')}]{report.status}[/]")
    for layer in LAYERS:
        rows = [c for c in report.checks if c.layer == layer]
        if not rows:
            continue
        p(f"\n[bold]{layer}[/bold]")
        for c in rows:
            style = STYLES[c.status]
            p(f"  [{style}]{MARKS[c.status]} {c.status:<7}[/] {escape(c.id):<28} {escape(c.detail)}")
    for heading, body in report.extra_sections:
        p(f"\n[bold]{escape(heading)}[/bold]")
        p(escape(body))
    if not report.findings:
        p("\n[green]No problems found.[/green]")
        return buf.getvalue()
    p("\n[bold]Findings, fix in this order[/bold]")
    for i, f in enumerate(report.findings, 1):
        p(f"\n{i}. [{SEV_STYLES[f.severity]}]{f.severity.upper()}[/] [bold]{escape(f.code)}[/bold]  {escape(f.title)}")
        for ev in f.evidence:
            p(f"     | {escape(ev)}")
        for fix in f.fixes:
            p(f"     -> {escape(fix.summary)}")
            if fix.command:
                p(f"        [bold]{escape(fix.command)}[/bold]")
    return buf.getvalue()
