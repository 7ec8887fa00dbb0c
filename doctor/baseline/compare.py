"""Compare two recordings: pure functions from two baseline Runs to figures and findings.

Honest statistics (stats.py): p50/p95 come from the samples. A figure has regressed only when its change is beyond `tolerance` AND beyond
the noise the recordings themselves show, so a service that wobbles by 15% run to run is not
called 10% slower. The noise of a latency is the median, over requests, of half the spread of that
request's repeats relative to its median; of a throughput, half the spread of its per-round
samples; of GPU memory, the spread of its readings. The two sides' noises add up (both wobble).

Only requests recorded on both sides with the same id are compared, so two request sets never
get pooled into one percentile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from llm_doctor.baseline.answers import OutputDiff, diff_outputs, is_right, quality_findings, score_text
from llm_doctor.baseline.effects import (
    config_changes,
    no_effect_findings,
    unapplied_findings,
    unmoved_findings,
)
from llm_doctor.baseline.model import Baseline, Run
from llm_doctor.baseline.stats import Verdict, latency_noise, percentile, spread, verdict
from llm_doctor.findings import Finding, Fix

LATENCY = (("ttft_ms", "TTFT"), ("itl_ms", "ITL"), ("e2e_ms", "end-to-end"))


@dataclass
class Summary:
    """One run's figures over the compared requests."""

    label: str
    latency: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # name -> (p50, p95)
    latency_noise: dict[str, float | None] = field(default_factory=dict)
    tokens_per_s: dict[int, float] = field(default_factory=dict)  # concurrency -> median tokens/s
    throughput_noise: dict[int, float | None] = field(default_factory=dict)
    kv_cache_tokens: int | None = None
    gpu_memory_mib: float | None = None  # the highest reading
    gpu_memory_noise_mib: float = 0.0
    gpu_memory_total_mib: float | None = None
    gpu_memory_scope: str = ""
    right: int = 0
    scored: int = 0
    failed: list[str] = field(default_factory=list)  # request ids that got no answer

    @property
    def quality(self) -> float | None:
        return self.right / self.scored if self.scored else None


def summarise(run: Run, label: str, ids: set[str]) -> Summary:
    reqs = [r for r in run.requests if r.id in ids]
    s = Summary(label)
    for name, _ in LATENCY:
        samples = [v for r in reqs for v in getattr(r, name)]
        s.latency[name] = (percentile(samples, 50), percentile(samples, 95))
        s.latency_noise[name] = latency_noise([getattr(r, name) for r in reqs])
    for t in run.throughput:
        if t.tokens_per_s:
            s.tokens_per_s[t.concurrency] = median(t.tokens_per_s)
            s.throughput_noise[t.concurrency] = spread(t.tokens_per_s)
    s.kv_cache_tokens = run.server.kv_cache_tokens
    mem = run.server.gpu_memory_used_mib
    if mem:
        s.gpu_memory_mib, s.gpu_memory_noise_mib = max(mem), max(mem) - min(mem)
    s.gpu_memory_total_mib, s.gpu_memory_scope = run.server.gpu_memory_total_mib, run.server.gpu_memory_scope
    for r in reqs:
        if r.errors and not r.e2e_ms:
            s.failed.append(r.id)
        elif r.expect is not None:
            s.scored += 1
            s.right += bool(is_right(r))
    return s


@dataclass
class Comparison:
    before: Summary
    after: Summary
    outputs: OutputDiff
    config_changes: list[tuple[str, str, str]]  # (arg, before, after)
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # figure -> how it moved
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def verdicts(b: Summary, a: Summary, tolerance: float) -> dict[str, Verdict]:
    out: dict[str, Verdict | None] = {}
    for name, _ in LATENCY:
        noise = (b.latency_noise[name] or 0.0) + (a.latency_noise[name] or 0.0)
        out[name] = verdict(b.latency[name][0], a.latency[name][0], tolerance, noise)
    for conc in set(b.tokens_per_s) & set(a.tokens_per_s):
        noise = (b.throughput_noise.get(conc) or 0.0) + (a.throughput_noise.get(conc) or 0.0)
        out[f"tokens_per_s@{conc}"] = verdict(b.tokens_per_s[conc], a.tokens_per_s[conc], tolerance, noise, True)
    out["kv_cache_tokens"] = verdict(b.kv_cache_tokens, a.kv_cache_tokens, tolerance, 0.0, True)
    if same_memory_scope(b, a):
        mem_noise = (b.gpu_memory_noise_mib + a.gpu_memory_noise_mib) / b.gpu_memory_mib if b.gpu_memory_mib else 0.0
        out["gpu_memory_mib"] = verdict(b.gpu_memory_mib, a.gpu_memory_mib, tolerance, mem_noise)
    return {k: v for k, v in out.items() if v is not None}


def same_memory_scope(b: Summary, a: Summary) -> bool:
    """Both readings count the same thing: the engine's own processes, or everything on the GPUs."""
    return b.gpu_memory_scope.startswith("engine") == a.gpu_memory_scope.startswith("engine")


def compare(before: Run, after: Run, tolerance: float, labels: tuple[str, str] = ("before", "after"),
            sets: tuple[Baseline, Baseline] | None = None) -> Comparison:  # fmt: skip
    ids_b, ids_a = {r.id for r in before.requests}, {r.id for r in after.requests}
    ids = ids_b & ids_a
    notes = []
    if ids_b != ids_a:
        notes.append(f"the recordings hold different requests: only the {len(ids)} with the same id are compared")
    if sets is not None:
        sb, sa = sets[0].request_set, sets[1].request_set
        if sb.get("sha256") != sa.get("sha256") and ids_b == ids_a:
            notes.append(f"request sets {sb.get('name')} {sb.get('sha256')} and {sa.get('name')} {sa.get('sha256')} have the same "
                         "ids but different contents: answers and timings may differ for that reason alone")  # fmt: skip
        for b, label in zip(sets, labels, strict=True):
            if not b.complete:
                notes.append(f"{label} is an incomplete recording: {'; '.join(b.problems[:3])}")
    sb_, sa_ = summarise(before, labels[0], ids), summarise(after, labels[1], ids)
    c = Comparison(sb_, sa_, diff_outputs(before, after, ids), config_changes(before, after), notes=notes)
    c.verdicts = verdicts(sb_, sa_, tolerance)
    c.findings += latency_findings(c, tolerance)
    c.findings += throughput_findings(c, tolerance)
    c.findings += quality_findings(before, after, c, ids)
    c.findings += unapplied_findings(after, labels[1])
    c.findings += no_effect_findings(c, tolerance, skip=set(after.server.unapplied))
    c.findings += memory_findings(c, tolerance)
    c.findings += improved_findings(c, tolerance)
    c.findings += unmoved_findings(c)
    unpaired = sorted(set(sb_.tokens_per_s) ^ set(sa_.tokens_per_s))
    if unpaired:
        notes.append(f"tokens/s at concurrency {', '.join(map(str, unpaired))} recorded on one side only: not compared")
    if sb_.gpu_memory_mib is not None and sa_.gpu_memory_mib is not None and not same_memory_scope(sb_, sa_):
        notes.append(f"GPU memory not compared: {labels[0]} counted {sb_.gpu_memory_scope}, {labels[1]} {sa_.gpu_memory_scope}")
    for label, s in ((labels[0], sb_), (labels[1], sa_)):
        if s.kv_cache_tokens is None and any(a in ("kv_cache_dtype", "gpu_memory_utilization", "quantization") for a, _, _ in c.config_changes):
            notes.append(f"{label}: KV cache capacity not read (no /metrics cache_config_info, /props or --log), "
                         "so whether the configuration change took effect cannot be judged")  # fmt: skip
    return c


def _noise_text(noise: float, tolerance: float) -> str:
    return f"beyond the {tolerance:.0%} tolerance and the ±{noise:.0%} the repeats vary by"


def latency_findings(c: Comparison, tolerance: float) -> list[Finding]:
    """TTFT and ITL at p50 (end-to-end follows from them and from the answer length)."""
    evidence = []
    for name, title in LATENCY[:2]:
        v = c.verdicts.get(name)
        if v is None or v.direction != "worse":
            continue
        (b50, b95), (a50, a95) = c.before.latency[name], c.after.latency[name]
        evidence.append(f"{title} p50 {b50:.1f} ms -> {a50:.1f} ms ({v.change:+.0%}; p95 {_f(b95)} -> {_f(a95)} ms), "
                        + _noise_text(v.noise, tolerance))  # fmt: skip
    if not evidence:
        return []
    # a request that takes longer also makes fewer tokens/s: the latency finding is ranked as their cause
    return [Finding("baseline.latency_regression", f"latency regressed: {evidence[0].split(' (')[0]}", evidence, explains=["baseline.throughput_regression"], fixes=[
        Fix("If the change was meant to buy memory or quality, weigh this cost; otherwise roll it back and record again"),
        Fix("Find where the time goes on the new setup", "llm-doctor run --only perf --probe-load 4"),
    ])]  # fmt: skip


def throughput_findings(c: Comparison, tolerance: float) -> list[Finding]:
    evidence = []
    for conc in sorted(set(c.before.tokens_per_s) & set(c.after.tokens_per_s)):
        v = c.verdicts[f"tokens_per_s@{conc}"]
        if v.direction == "worse":
            tb, ta = c.before.tokens_per_s[conc], c.after.tokens_per_s[conc]
            evidence.append(f"{tb:.1f} -> {ta:.1f} tokens/s at concurrency {conc} ({v.change:+.0%}), " + _noise_text(v.noise, tolerance))
    if not evidence:
        return []
    return [Finding("baseline.throughput_regression", f"throughput regressed: {evidence[0].split(' (')[0]}", evidence, [
        Fix("Roll the change back, or find the new bottleneck (batch limits, KV cache, GPU utilization)",
            "llm-doctor run --only perf --probe-load 4"),
    ])]  # fmt: skip


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


TITLES = {"ttft_ms": "TTFT p50", "itl_ms": "ITL p50", "e2e_ms": "end-to-end p50", "kv_cache_tokens": "KV cache tokens",
          "gpu_memory_mib": "GPU memory MiB"}  # fmt: skip


def improved_findings(c: Comparison, tolerance: float) -> list[Finding]:
    """What got better beyond the tolerance and the noise: "did the change work?" has a yes too."""
    evidence = []
    for key, v in c.verdicts.items():
        if v.direction == "better":
            name = TITLES.get(key) or f"tokens/s at concurrency {key.split('@')[1]}"
            evidence.append(f"{name}: {v.change:+.0%}, beyond the {tolerance:.0%} tolerance and the ±{v.noise:.0%} noise")
    if c.after.right > c.before.right:
        evidence.append(f"quality score {score_text(c.before)} -> {score_text(c.after)}")
    if not evidence:
        return []
    return [Finding("baseline.improved", f"improved: {'; '.join(e.split(',')[0] for e in evidence)}", evidence)]


def memory_findings(c: Comparison, tolerance: float) -> list[Finding]:
    v = c.verdicts.get("gpu_memory_mib")
    if v is None or v.direction != "worse":
        return []
    b, a = c.before, c.after
    mb, ma = b.gpu_memory_mib or 0.0, a.gpu_memory_mib or 0.0
    growth, noise = ma - mb, b.gpu_memory_noise_mib + a.gpu_memory_noise_mib
    total = f" of {a.gpu_memory_total_mib:,.0f} MiB" if a.gpu_memory_total_mib else ""
    evidence = [f"GPU memory used {mb:,.0f} MiB -> {ma:,.0f} MiB{total} ({v.change:+.0%}, {growth:+,.0f} MiB), "
                f"beyond the {tolerance:.0%} tolerance and the {noise:,.0f} MiB the readings vary by",
                f"counted: {b.gpu_memory_scope or '-'} ({b.label}); {a.gpu_memory_scope or '-'} ({a.label})"]  # fmt: skip
    evidence += [f"configuration change: {n} {x} -> {y}" for n, x, y in c.config_changes]
    return [Finding("baseline.memory_growth", f"GPU memory grew {v.change:+.0%}: {mb:,.0f} -> {ma:,.0f} MiB", evidence, [
        Fix("If the growth is not what the change was for, roll it back; memory that grows leaves less headroom and invites OOM under peaks"),
        Fix("See what holds the memory now", "llm-doctor run --only load"),
    ])]  # fmt: skip
