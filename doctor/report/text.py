"""Terminal report: the ranked findings with evidence and exact fixes first (what a person at 3 a.m.
acts on), then the checks. Passed and skipped checks fold into one line per layer unless
`verbose`; a check that warned, failed, crashed or was blocked is always listed.

On a terminal the lines wrap to its width with hanging indents; to a file or a pipe nothing is
hard-wrapped (`width=None`), so a log line or a command is never cut in two. Colour only on a TTY
without NO_COLOR."""

from __future__ import annotations

import io
import re
from collections import Counter

from llm_doctor.codes import LAYERS
from llm_doctor.report import CLUSTER_HEADING, Report

MARKS = {"pass": "✓", "warn": "!", "fail": "✗", "error": "✗", "skip": "-", "blocked": "~"}
STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta", "skip": "dim", "blocked": "dim"}
SEV_STYLES = {"error": "bold red", "incomplete": "bold magenta", "warn": "yellow", "info": "cyan"}
FOLDED = {"pass": "passed", "skip": "skipped"}  # listed only with --verbose
ODD = re.compile(r"(?<!\S)(\S+\*)(?=\s|$)")
UNWRAPPED = 1 << 20  # a width no line reaches: to a file or pipe nothing wraps


def render(report: Report, color: bool = False, width: int | None = None, verbose: bool = False) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    buf = io.StringIO()
    # soft_wrap: rich never wraps a line by itself; p() wraps, on a terminal only
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width or UNWRAPPED, highlight=False, soft_wrap=True)

    def p(markup: str = "", indent: int = 0, lead: str = "", wrap: bool = True) -> None:
        """One line: `indent` spaces, the `lead` markup, then `markup`; when it wraps (on a
        terminal), its continuation lines start under the text after the lead. Tables and bars
        (`wrap=False`) keep their columns: the terminal folds what is wider."""
        first = Text(" " * indent) + Text.from_markup(lead)
        text = Text.from_markup(markup)
        if width is None or not wrap:
            console.print(first + text)
            return
        hang = first.cell_len
        for n, line in enumerate(text.wrap(console, max(20, width - hang))):
            console.print((first if n == 0 else Text(" " * hang)) + line)

    status = report.status
    p(f"[bold]{escape(report.title)}[/bold] — status: [{SEV_STYLES.get(status, 'green')}]{status}[/]")
    if report.findings:
        p()
        p("[bold]Findings, fix in this order[/bold]")
    for i, f in enumerate(report.findings, 1):
        p()
        p(f"[{SEV_STYLES[f.severity]}]{f.severity.upper()}[/] [bold]{escape(f.code)}[/bold]  {escape(f.title)}", 0, f"{i}. ")
        for ev in f.evidence:
            p(escape(ev), 5, "| ")
        for fix in f.fixes:
            p(escape(fix.summary), 5, "-> ")
            if fix.command:
                p(f"[bold]{escape(fix.command)}[/bold]", 8)
    for heading, body in report.extra_sections:
        p()
        p(f"[bold]{escape(heading)}[/bold]")
        for line in body.splitlines():
            if heading.startswith(CLUSTER_HEADING):  # a value that differs from most nodes (marked *) stands out on a terminal
                p(ODD.sub(r"[bold yellow]\1[/]", escape(line)), wrap=False)
            else:
                p(escape(line), wrap=False)
    p()
    p("[bold]Checks[/bold]" + ("" if verbose else " [dim](passed and skipped folded; --verbose lists each)[/dim]"))
    for layer in LAYERS:
        rows = [c for c in report.checks if c.layer == layer]
        if not rows:
            continue
        counts = Counter(c.status for c in rows if c.status in FOLDED)
        folded = ", ".join(f"{counts[s]} {word}" for s, word in FOLDED.items() if counts[s])
        p(f"[bold]{layer}[/bold]" + (f": {folded}" if folded and not verbose else ""))
        for c in rows:
            if verbose or c.status not in FOLDED:
                p(escape(c.detail), 2, f"[{STYLES[c.status]}]{MARKS[c.status]} {c.status:<7}[/] {escape(c.id):<28} ")
    if status == "ok":
        p()
        p("[green]No problems found.[/green]")
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"
