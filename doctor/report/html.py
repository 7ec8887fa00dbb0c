"""A single self-contained HTML page of the report."""

from __future__ import annotations

from html import escape

from doctor.report import Report


def render(report: Report) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>llm-doctor report</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}pre{background:#f4f4f4;padding:.5em;"
        "white-space:pre-wrap}.error{color:#b00}.warn{color:#a60}.info{color:#06a}.incomplete{color:#a0a}td,th{padding:2px 8px}</style>",
        f"</head><body><h1>{escape(report.title)}</h1><p>Status: <b class='{report.status}'>{report.status}</b></p>",
    ]
    for i, f in enumerate(report.findings, 1):
        parts.append(f"<h2>{i}. <code>{escape(f.code)}</code> <span class='{f.severity}'>{f.severity}</span> {escape(f.title)}</h2>")
        if f.evidence:
            parts.append("<pre>" + escape("\n".join(f.evidence)) + "</pre>")
        parts.append("<ul>")
        for fix in f.fixes:
            cmd = f": <code>{escape(fix.command)}</code>" if fix.command else ""
            parts.append(f"<li>{escape(fix.summary)}{cmd}</li>")
        parts.append("</ul>")
    for heading, body in report.extra_sections:
        parts.append(f"<h2>{escape(heading)}</h2><pre>{escape(body)}</pre>")
    parts.append("<h2>Checks</h2><table><tr><th>check</th><th>layer</th><th>status</th><th>ms</th><th>detail</th></tr>")
    for c in report.checks:
        parts.append(
            f"<tr><td>{escape(c.id)}</td><td>{c.layer}</td><td>{c.status}</td><td>{c.duration_ms:g}</td><td>{escape(c.detail)}</td></tr>"
        )
    parts.append("</table></body></html>")
    return "\n".join(parts) + "\n"
