"""The side-by-side table of a comparison and the ranking of several models, as plain fixed-width
text: it goes into every report format (text, markdown code block, HTML <pre>) unchanged, and
`as_json` gives the same figures to the JSON report."""

from __future__ import annotations

from typing import Any

from llm_doctor.baseline.compare import LATENCY, Comparison, Summary


def _num(value: float | None, fmt: str = "{:,.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _pct(before: float | None, after: float | None) -> str:
    if before is None or after is None or before == 0:
        return ""
    return f"{after / before - 1:+.0%}"


def _rows(c: Comparison) -> list[tuple[str, ...]]:
    """(figure, before, after, change, verdict): the verdict says "worse"/"better" only for a move
    beyond the tolerance and the noise, so a reader sees at once which changes count."""
    b, a = c.before, c.after

    def judged(key: str) -> str:
        v = c.verdicts.get(key)
        return v.direction if v else ""

    rows = []
    for name, title in LATENCY:
        (b50, b95), (a50, a95) = b.latency[name], a.latency[name]
        rows.append((f"{title} p50 / p95 ms", f"{_num(b50)} / {_num(b95)}", f"{_num(a50)} / {_num(a95)}", _pct(b50, a50), judged(name)))
    for conc in sorted(set(b.tokens_per_s) | set(a.tokens_per_s)):
        tb, ta = b.tokens_per_s.get(conc), a.tokens_per_s.get(conc)
        rows.append((f"tokens/s at concurrency {conc}", _num(tb), _num(ta), _pct(tb, ta), judged(f"tokens_per_s@{conc}")))
    kb, ka = b.kv_cache_tokens, a.kv_cache_tokens
    rows.append(("KV cache tokens", _num(kb, "{:,}"), _num(ka, "{:,}"), _pct(kb, ka), judged("kv_cache_tokens")))
    mb, ma = b.gpu_memory_mib, a.gpu_memory_mib
    rows.append(("GPU memory used MiB", _num(mb, "{:,.0f}"), _num(ma, "{:,.0f}"), _pct(mb, ma), judged("gpu_memory_mib")))
    quality = "worse" if a.right < b.right else "better" if a.right > b.right else ""
    rows.append(("quality (scored right)", _quality(b), _quality(a), "", quality if b.scored and a.scored else ""))
    o = c.outputs
    compared = len(o.identical) + len(o.similar) + len(o.different)
    answers = f"{len(o.identical)} identical, {len(o.similar)} similar, {len(o.different)} different"
    rows.append(("answers vs before", "", answers, f"of {compared}", "changed" if compared > len(o.identical) else ""))
    return rows


def _quality(s: Summary) -> str:
    if not s.scored:
        return "-"
    return f"{s.right}/{s.scored} ({s.right / s.scored:.0%})"


def table(c: Comparison) -> str:
    header = ("figure", c.before.label, c.after.label, "change", "verdict")
    rows = [header, *_rows(c)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if c.config_changes:
        lines.append("")
        lines += [f"configuration: {n} {x} -> {y}" for n, x, y in c.config_changes]
    return "\n".join(lines)


def ranking(summaries: list[Summary]) -> str:
    """Several models side by side, each ranked on the four figures (1 = best): latency (TTFT p50),
    throughput (tokens/s at the highest concurrency both recorded), GPU memory, quality."""
    conc = max((k for s in summaries for k in s.tokens_per_s), default=None)
    figures = [  # (heading, value, higher is better, format)
        ("TTFT p50 ms", lambda s: s.latency["ttft_ms"][0], False, "{:,.1f}"),
        (f"tokens/s @{conc}", lambda s: s.tokens_per_s.get(conc) if conc else None, True, "{:,.1f}"),
        ("GPU MiB", lambda s: s.gpu_memory_mib, False, "{:,.0f}"),
        ("quality", lambda s: s.quality, True, "{:.0%}"),
    ]
    header = ["model", *[f[0] for f in figures], "rank"]
    ranks: dict[str, list[int]] = {s.label: [] for s in summaries}
    cells: dict[str, list[str]] = {s.label: [] for s in summaries}
    for _, get, higher, fmt in figures:
        values = {s.label: get(s) for s in summaries}
        known = sorted((v for v in values.values() if v is not None), reverse=higher)
        for s in summaries:
            v = values[s.label]
            rank = known.index(v) + 1 if v is not None else len(summaries)
            ranks[s.label].append(rank)
            cells[s.label].append("-" if v is None else f"{fmt.format(v)} (#{rank})")
    order = sorted(summaries, key=lambda s: (sum(ranks[s.label]), -(s.quality or 0)))
    rows = [header] + [[s.label, *cells[s.label], str(i)] for i, s in enumerate(order, 1)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def as_json(c: Comparison) -> dict[str, Any]:
    def side(s: Summary) -> dict[str, Any]:
        return {
            "label": s.label,
            "latency_ms": {name: {"p50": _round(p50), "p95": _round(p95), "noise": _round(s.latency_noise[name], 3)}
                           for name, (p50, p95) in s.latency.items()},  # fmt: skip
            "tokens_per_s": {str(k): _round(v) for k, v in s.tokens_per_s.items()},
            "kv_cache_tokens": s.kv_cache_tokens,
            "gpu_memory_used_mib": s.gpu_memory_mib,
            "quality": {"right": s.right, "scored": s.scored},
            "failed": s.failed,
        }

    o = c.outputs
    return {
        "before": side(c.before),
        "after": side(c.after),
        "verdicts": {k: {"direction": v.direction, "change": round(v.change, 4), "noise": round(v.noise, 4)} for k, v in c.verdicts.items()},
        "answers": {"identical": o.identical, "similar": o.similar, "different": o.different, "unsteady": o.unsteady},
        "config_changes": [{"arg": n, "before": x, "after": y} for n, x, y in c.config_changes],
        "notes": c.notes,
    }


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)
