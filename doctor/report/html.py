"""A single self-contained HTML page of the report, to attach to a ticket: no external scripts,
fonts or images (it must open from a mail attachment on a machine with no network).

Top to bottom: a summary (status, tool version, when, and what was read), the ranked findings with
their evidence and fixes (a copy button per command), the memory budget as one bar per GPU, the
GPU topology as a matrix, the Ray cluster as a table with the odd values highlighted, the other
sections, then every check with its status in colour. The budget, topology and cluster are drawn
from the facts; everything else is the same Report every format renders."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape

from llm_doctor import __version__
from llm_doctor.facts import Facts
from llm_doctor.facts.gpu import GpuFacts
from llm_doctor.facts.plan import MemoryPlan
from llm_doctor.report import BUDGET_HEADING, CLUSTER_HEADING, Report

CSS = """
:root{--err:#c62828;--warn:#b26a00;--info:#1565c0;--ok:#2e7d32;--inc:#8e24aa;--muted:#666;--line:#e3e3e3;--bg:#f6f7f9}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1d1d1f;
 max-width:76rem;margin:0 auto;padding:1.5rem 2rem 3rem;background:#fff}
h1{font-size:1.5rem;margin:0 0 .4rem}h2{font-size:1.15rem;margin:2rem 0 .6rem;padding-bottom:.3rem;border-bottom:1px solid var(--line)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.86em}
pre{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.6rem .8rem;margin:.4rem 0;
 white-space:pre-wrap;overflow-wrap:anywhere}
.summary{display:flex;gap:1.5rem;align-items:flex-start;background:var(--bg);border:1px solid var(--line);border-radius:10px;padding:1rem 1.2rem}
.summary dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0;flex:1}
.summary dt{color:var(--muted)}.summary dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;border-radius:999px;padding:.1rem .7rem;font-weight:600;color:#fff;font-size:.85rem;text-transform:uppercase;letter-spacing:.03em}
.big{font-size:1.1rem;padding:.35rem 1.1rem}
.error,.fail{background:var(--err)}.warn{background:var(--warn)}.info{background:var(--info)}.ok,.pass{background:var(--ok)}
.incomplete{background:var(--inc)}.skip,.blocked{background:#9e9e9e}
.finding{border:1px solid var(--line);border-left:6px solid var(--info);border-radius:8px;padding:.8rem 1rem;margin:.9rem 0}
.finding.sev-error{border-left-color:var(--err)}.finding.sev-warn{border-left-color:var(--warn)}
.finding h3{margin:0 0 .5rem;font-size:1.05rem;display:flex;gap:.6rem;align-items:baseline;flex-wrap:wrap}
.rank{color:var(--muted);font-weight:700}.finding h3 code{font-size:.9rem}
.label{color:var(--muted);font-size:.8rem;text-transform:uppercase;letter-spacing:.05em;margin-top:.6rem}
ol.fixes{margin:.3rem 0 0;padding-left:1.4rem}ol.fixes li{margin:.35rem 0}
.cmd{display:flex;align-items:stretch;gap:.4rem;margin-top:.25rem}
.cmd code{flex:1;background:#1e1e24;color:#e8e8e8;border-radius:6px;padding:.4rem .7rem;overflow-wrap:anywhere}
button.copy{border:1px solid #bbb;background:#fff;border-radius:6px;padding:0 .8rem;cursor:pointer;font:inherit;font-size:.8rem}
button.copy:hover{background:#eef}button.copy.done{background:var(--ok);color:#fff;border-color:var(--ok)}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}
tr.st-fail td,tr.st-error td{background:#fdecea}tr.st-warn td{background:#fff6e0}tr.st-blocked td,tr.st-skip td{color:var(--muted)}
.bars{display:grid;grid-template-columns:max-content 1fr max-content;gap:.35rem .8rem;align-items:center}
.bar{display:flex;height:1.4rem;border-radius:5px;overflow:hidden;border:1px solid #ccc;background:#fafafa}
.bar span{display:block;height:100%}
.seg-weights{background:#3f51b5}.seg-act{background:#00897b}.seg-kv{background:#7cb342}.seg-free{background:#e0e0e0}
.seg-over{background:repeating-linear-gradient(45deg,#c62828 0 6px,#ef9a9a 6px 12px)}.seg-used{background:#5c6bc0}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;margin:.6rem 0;font-size:.85rem}
.legend i{display:inline-block;width:.9rem;height:.9rem;border-radius:3px;vertical-align:-.12rem;margin-right:.35rem}
table.topo{width:auto}table.topo td,table.topo th{text-align:center;border:1px solid #fff;min-width:3.2rem;font-family:ui-monospace,monospace}
.lk-self{background:#f0f0f0;color:#999}.lk-nv{background:#2e7d32;color:#fff}.lk-pix{background:#a5d6a7}
.lk-phb{background:#fff59d}.lk-sys{background:#ef9a9a}.lk-other{background:#eee}
td.odd,.leg-odd{background:#ffe082;font-weight:700}
.muted{color:var(--muted)}.allclear{font-size:1.05rem;color:var(--ok);font-weight:600}
details>summary{cursor:pointer;margin:.6rem 0;color:var(--muted)}
footer{margin-top:2.5rem;color:var(--muted);font-size:.8rem}
"""

# A copy button per fix command; file:// pages may lack the async clipboard, so fall back to a selection.
SCRIPT = """
document.querySelectorAll('button.copy').forEach(function(b){b.addEventListener('click',function(){
 var text=b.previousElementSibling.textContent;
 function done(){b.textContent='Copied';b.classList.add('done');setTimeout(function(){b.textContent='Copy';b.classList.remove('done')},1500)}
 function fallback(){var t=document.createElement('textarea');t.value=text;document.body.appendChild(t);t.select();
  try{document.execCommand('copy');done()}finally{document.body.removeChild(t)}}
 if(navigator.clipboard){navigator.clipboard.writeText(text).then(done,fallback)}else{fallback()}
})});
"""

LINK_CLASSES = (("X", "lk-self"), ("NV", "lk-nv"), ("PIX", "lk-pix"), ("PXB", "lk-pix"), ("PHB", "lk-phb"),
                ("NODE", "lk-phb"), ("SYS", "lk-sys"))  # fmt: skip
LINK_LEGEND = (("lk-nv", "NV# NVLink (# bonded links)"), ("lk-pix", "PIX/PXB PCIe bridges"),
               ("lk-phb", "PHB/NODE PCIe host bridge"), ("lk-sys", "SYS across NUMA nodes"))  # fmt: skip
WORDS = {"error": ("error", "errors"), "warn": ("warning", "warnings"), "info": ("note", "notes")}
SEGMENT_CLASSES = {"weights": "seg-weights", "activations+non-torch": "seg-act", "KV cache": "seg-kv",
                   "headroom": "seg-free", "over budget": "seg-over"}  # fmt: skip


def render(report: Report) -> str:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>{escape(report.title)}: {report.status}</title><style>{CSS}</style></head><body>",
        _summary(report),
        _findings(report),
    ]
    if report.plan is not None:
        parts.append(_budget(report.plan))
    if report.facts.gpus is not None:
        parts.append(_memory_now(report.facts.gpus))
        parts.append(_topology(report.facts.gpus))
    if report.facts.cluster is not None and report.facts.cluster.nodes:
        parts.append(_cluster(report))
    for heading, body in report.extra_sections:
        if not heading.startswith((BUDGET_HEADING, CLUSTER_HEADING)):
            parts.append(f"<h2>{escape(heading)}</h2><pre>{escape(body)}</pre>")
    parts.append(_checks(report))
    parts.append(f"<footer>llm-doctor {escape(__version__)} · report schema llm-doctor.report/1</footer>")
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(p for p in parts if p) + "\n"


def _summary(report: Report) -> str:
    counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "warn", "info")}
    said = ", ".join(f"{n} {WORDS[s][n > 1]}" for s, n in counts.items() if n) or "no findings"
    rows = [("findings", said),
            ("tool", f"llm-doctor {escape(__version__)}"),
            ("generated", datetime.now(timezone.utc).isoformat(timespec="seconds"))]  # fmt: skip
    if report.facts.collected_at:
        rows.append(("collected", escape(report.facts.collected_at)))
    rows += [(name, escape(value)) for name, value in inputs(report.facts)]
    cells = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    return (f"<h1>{escape(report.title)}</h1><div class='summary'>"
            f"<span class='badge big {report.status}'>{report.status}</span><dl>{cells}</dl></div>")  # fmt: skip


def inputs(facts: Facts) -> list[tuple[str, str]]:
    """What was read, in words: the logs (with bytes), the GPUs' source, the endpoint, the cluster,
    the plan's model; and what was not read in full."""
    out = []
    if facts.settings is not None and facts.settings.base_url.value:
        s = facts.settings
        out.append(("endpoint", f"{s.base_url.value} ({s.base_url.source or 'given'})" + (f", model {s.model.value}" if s.model.value else "")))
    elif facts.endpoint is not None and facts.endpoint.base_url:
        out.append(("endpoint", facts.endpoint.base_url))
    if facts.logs is not None and facts.logs.sources:
        logs = facts.logs
        engine = " ".join(x for x in (logs.engine, logs.engine_version) if x)
        out.append(("logs", f"{', '.join(logs.sources)} ({logs.bytes_read:,} bytes, {logs.lines_read:,} lines"
                            + (f"; engine {engine}" if engine else "") + ")"))  # fmt: skip
    if facts.gpus is not None:
        g = facts.gpus
        names = sorted({x.name for x in g.gpus if x.name})
        what = f"{len(g.gpus)} GPU(s)" + (f" {', '.join(names)}" if names else "") if g.available or g.gpus else f"none ({g.reason})"
        out.append(("GPUs", f"{what} via {g.source or 'unknown source'}" + (f", driver {g.driver_version}" if g.driver_version else "")))
    if facts.deployment is not None and facts.deployment.engine:
        out.append(("engine", facts.deployment.engine))
    if facts.plan is not None:
        out.append(("plan", f"{facts.plan.model or '?'} on {facts.plan.gpu_count} x {facts.plan.gpu_name or 'GPU'}"))
    if facts.cluster is not None:
        c = facts.cluster
        totals = ", ".join(f"{v:g} {k}" for k, v in sorted(c.totals.items()))
        out.append(("Ray cluster", f"`ray status` in {c.source}: {totals}" if c.source
                    else f"{c.address} ({len(c.nodes)} node(s))"))
    out += [("not read in full", f"{gap.source}: {gap.reason}") for gap in facts.gaps]
    return out


def _findings(report: Report) -> str:
    if report.status == "ok":
        return "<h2>Findings</h2><p class='allclear'>No problems found.</p>"
    parts = ["<h2>Findings, fix in this order</h2>"]
    for i, f in enumerate(report.findings, 1):
        node = f" <span class='muted'>on {escape(f.node)}</span>" if f.node else ""
        parts.append(f"<section class='finding sev-{f.severity}'><h3><span class='rank'>{i}.</span>"
                     f"<span class='badge {f.severity}'>{f.severity}</span><code>{escape(f.code)}</code>"
                     f"<span>{escape(f.title)}{node}</span></h3>")  # fmt: skip
        if f.fixes:
            parts.append("<div class='label'>Fix</div><ol class='fixes'>")
            for fix in f.fixes:
                cmd = (f"<div class='cmd'><code>{escape(fix.command)}</code><button class='copy' type='button'>Copy</button></div>"
                       if fix.command else "")  # fmt: skip
                parts.append(f"<li>{escape(fix.summary)}{cmd}</li>")
            parts.append("</ol>")
        if f.evidence:
            parts.append("<div class='label'>Evidence</div><pre>" + escape("\n".join(f.evidence)) + "</pre>")
        parts.append("</section>")
    return "\n".join(parts)


def _bar(segments: list[tuple[str, str, float]], scale: float) -> str:
    spans = "".join(f"<span class='{cls}' style='width:{100 * size / scale:.2f}%' title='{escape(name)} {size:.2f} GiB'></span>"
                    for cls, name, size in segments if size > 0)  # fmt: skip
    return f"<div class='bar'>{spans}</div>"


def _legend(items: list[tuple[str, str]]) -> str:
    return "<div class='legend'>" + "".join(f"<span><i class='{cls}'></i>{escape(text)}</span>" for cls, text in items) + "</div>"


def _budget(plan: MemoryPlan) -> str:
    """One bar per GPU of the plan: each GPU of a TP x PP split holds the same share."""
    from llm_doctor.report.budget import segments

    head = f"<h2>{BUDGET_HEADING}</h2>"
    assumed = "".join(f"<li>{escape(a)}</li>" for a in plan.assumptions)
    assumed = f"<details><summary class='muted'>assumptions</summary><ul>{assumed}</ul></details>" if assumed else ""
    if not plan.gpu_total_gib:
        return head + f"<p>not computed ({escape(plan.verdict)}): {escape('; '.join(plan.reasons))}</p>" + assumed
    parts = [(SEGMENT_CLASSES[name], name, size) for _, name, size in segments(plan)]
    scale = max(plan.gpu_total_gib, sum(size for _, _, size in parts))
    used = f"<span class='muted'>budget {plan.budget_gib:.2f} of {plan.gpu_total_gib:.2f} GiB</span>"
    rows = "".join(f"<span class='mono'>GPU {i}</span>{_bar(parts, scale)}{used}" for i in range(max(1, plan.gpu_count)))
    fits = "yes" if plan.fits else f"NO ({plan.verdict})"
    return (head + f"<p>{plan.gpu_count} x {escape(plan.gpu_name or 'GPU')}, {plan.gpu_total_gib:.2f} GiB each, "
            f"{escape(plan.engine or 'engine')} TP={plan.tensor_parallel_size} PP={plan.pipeline_parallel_size}</p>"
            f"<div class='bars'>{rows}</div>"
            + _legend([(cls, f"{name} {size:.2f} GiB") for cls, name, size in parts if size > 0])
            + f"<p>KV cache <b>{plan.kv_cache_tokens:,}</b> tokens; max concurrency <b>{plan.max_concurrency}x</b> at "
            f"{plan.max_model_len:,} tokens; fits: <b>{fits}</b></p>" + assumed)  # fmt: skip


def _memory_now(gpus: GpuFacts) -> str:
    """Each GPU's memory in use and free as NVML or nvidia-smi showed it."""
    known = [g for g in gpus.gpus if g.memory_total_mib and g.memory_used_mib is not None]
    if not known:
        return ""
    rows = ""
    for g in known:
        total, used = g.memory_total_mib / 1024, g.memory_used_mib / 1024  # type: ignore[operator]
        rows += (f"<span class='mono'>GPU {g.index}</span>"
                 + _bar([("seg-used", "in use", used), ("seg-free", "free", max(0.0, total - used))], max(total, used))
                 + f"<span class='muted'>{used:.2f} of {total:.2f} GiB</span>")  # fmt: skip
    return (f"<h2>GPU memory in use ({escape(gpus.source)})</h2><div class='bars'>{rows}</div>"
            + _legend([("seg-used", "in use"), ("seg-free", "free")]))


def _link_class(level: str) -> str:
    return next((cls for prefix, cls in LINK_CLASSES if level.startswith(prefix)), "lk-other")


def _topology(gpus: GpuFacts) -> str:
    """The `nvidia-smi topo -m` levels between GPUs as a matrix."""
    if not gpus.topology:
        return ""
    n = len(gpus.topology)
    head = "".join(f"<th>GPU{j}</th>" for j in range(n))
    rows = "".join(
        f"<tr><th>GPU{i}</th>" + "".join(f"<td class='{_link_class(level)}'>{escape(level)}</td>" for level in row) + "</tr>"
        for i, row in enumerate(gpus.topology)
    )
    nics = f"<p class='muted'>NICs: {escape(', '.join(gpus.nics))}</p>" if gpus.nics else ""
    return (f"<h2>GPU topology</h2><table class='topo'><tr><th></th>{head}</tr>{rows}</table>"
            + _legend(list(LINK_LEGEND)) + nics)


def _cluster(report: Report) -> str:
    from llm_doctor.report.cluster_table import table

    cluster = report.facts.cluster
    assert cluster is not None
    header, rows = table(cluster)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td class='odd' title='differs from most nodes'>{escape(c.value)}</td>" if c.odd
                         else f"<td>{escape(c.value)}</td>" for c in row) + "</tr>"
        for row in rows
    )  # fmt: skip
    return (f"<h2>{CLUSTER_HEADING} {escape(cluster.address)}, a row per node</h2>"
            f"<table class='cluster'><tr>{head}</tr>{body}</table>"
            + _legend([("leg-odd", "differs from most nodes")]))


def _checks(report: Report) -> str:
    """Checks that warned, failed, crashed or were blocked in the open; passed and skipped ones
    folded under a summary line, as in the text report."""
    folded = [c for c in report.checks if c.status in ("pass", "skip")]
    listed = [c for c in report.checks if c not in folded]
    head = "<tr><th>check</th><th>layer</th><th>status</th><th>ms</th><th>detail</th></tr>"

    def table(rows: list) -> str:
        return f"<table class='checks'>{head}" + "".join(
            f"<tr class='st-{c.status}'><td><code>{escape(c.id)}</code></td><td>{escape(c.layer)}</td>"
            f"<td><span class='badge {c.status}'>{c.status}</span></td><td>{c.duration_ms:g}</td><td>{escape(c.detail)}</td></tr>"
            for c in rows
        ) + "</table>"

    counts = [(sum(c.status == s for c in folded), word) for s, word in (("pass", "passed"), ("skip", "skipped"))]
    out = "<h2>Checks</h2>" + (table(listed) if listed else "")
    if folded:
        out += f"<details><summary>{', '.join(f'{n} {word}' for n, word in counts if n)}</summary>{table(folded)}</details>"
    return out
