"""Compare two recordings: pure functions from two baseline Runs to figures and findings.

Honest statistics: p50/p95 come from the samples (linear interpolation between order statistics,
as numpy's default). A figure has regressed only when its change is beyond `tolerance` AND beyond
the noise the recordings themselves show, so a service that wobbles by 15% run to run is not
called 10% slower. The noise of a latency is the median, over requests, of half the spread of that
request's repeats relative to its median; of a throughput, half the spread of its per-round
samples; of GPU memory, the spread of its readings. The two sides' noises add up (both wobble).

Only requests recorded on both sides with the same id are compared, so two request sets never
get pooled into one percentile.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from statistics import median

from doctor.baseline.model import Baseline, RequestResult, Run
from doctor.baseline.requests import Expect, score
from doctor.findings import Finding, Fix

SIMILAR_RATIO = 0.9  # difflib ratio at or above which a changed answer counts as "similar"
DIFFS_SHOWN = 3
LATENCY = (("ttft_ms", "TTFT"), ("itl_ms", "ITL"), ("e2e_ms", "end-to-end"))


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(values: list[float]) -> float | None:
    """Half the range relative to the median: how far one sample may stray from the typical one."""
    if len(values) < 2:
        return None
    mid = median(values)
    return (max(values) - min(values)) / 2 / mid if mid > 0 else None


def latency_noise(per_request: list[list[float]]) -> float | None:
    spreads = [s for s in (spread(v) for v in per_request) if s is not None]
    return median(spreads) if spreads else None


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
            s.right += bool(_right(r))
    return s


def _right(r: RequestResult) -> bool:
    if r.expect is None:
        return False
    try:
        return score(Expect(str(r.expect.get("kind")), r.expect.get("value")), r.output)
    except (TypeError, ValueError, AttributeError, KeyError):
        return False  # a hand-edited expectation that cannot be checked scores nothing


@dataclass
class OutputDiff:
    identical: list[str] = field(default_factory=list)
    similar: list[str] = field(default_factory=list)
    different: list[str] = field(default_factory=list)
    unsteady: list[str] = field(default_factory=list)  # repeats disagreed: not deterministic, not compared
    diffs: dict[str, str] = field(default_factory=dict)  # request id -> word diff of its changed answer


@dataclass
class Comparison:
    before: Summary
    after: Summary
    outputs: OutputDiff
    config_changes: list[tuple[str, str, str]]  # (arg, before, after)
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # figure -> how it moved
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    """How one figure moved: "worse", "better" or "" (within the tolerance or the noise)."""

    direction: str
    change: float  # relative, after vs before (+0.5 = half again as much)
    noise: float  # relative noise both recordings show together


def verdict(before: float | None, after: float | None, tolerance: float, noise: float, higher_is_better: bool = False) -> Verdict | None:
    """A move counts only beyond the tolerance AND beyond the noise; None when not measured."""
    if before is None or after is None or before <= 0:
        return None
    change = after / before - 1
    loss = -change if higher_is_better else change
    if abs(loss) > tolerance and abs(loss) > noise:
        return Verdict("worse" if loss > 0 else "better", change, noise)
    return Verdict("", change, noise)


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


def diff_outputs(before: Run, after: Run, ids: set[str]) -> OutputDiff:
    out = OutputDiff()
    after_by_id = {r.id: r for r in after.requests}
    for rb in before.requests:
        ra = after_by_id.get(rb.id)
        if ra is None or rb.id not in ids or not (rb.e2e_ms and ra.e2e_ms):
            continue
        if not (rb.consistent and ra.consistent):
            out.unsteady.append(rb.id)
            continue
        if rb.output == ra.output:
            out.identical.append(rb.id)
            continue
        ratio = difflib.SequenceMatcher(None, rb.output, ra.output, autojunk=False).ratio()
        (out.similar if ratio >= SIMILAR_RATIO else out.different).append(rb.id)
        out.diffs[rb.id] = word_diff(rb.output, ra.output)
    return out


def word_diff(old: str, new: str, limit: int = 300) -> str:
    """[-removed-]{+added+} over words, as `git diff --word-diff` shows it, cut at `limit`."""
    a, b = old.split(), new.split()
    parts: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            same = a[i1:i2]
            parts.append(" ".join(same) if len(same) <= 6 else " ".join(same[:3] + ["…"] + same[-3:]))
            continue
        if i2 > i1:
            parts.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            parts.append("{+" + " ".join(b[j1:j2]) + "+}")
    text = " ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quality_findings(before: Run, after: Run, c: Comparison, ids: set[str]) -> list[Finding]:
    after_by_id = {r.id: r for r in after.requests}
    turned_wrong, now_failing, fixed = [], [], set()
    for rb in before.requests:
        ra = after_by_id.get(rb.id)
        if ra is None or rb.id not in ids or not rb.e2e_ms:
            continue
        if ra.errors and not ra.e2e_ms:
            now_failing.append(f"{rb.id}: answered before, fails now: {ra.errors[0]}")
        elif rb.expect is not None and _right(rb) and not _right(ra):
            turned_wrong.append(f"{rb.id}: expected {rb.expect.get('kind')} {rb.expect.get('value')!r}; "
                                f"was {_quote(rb.output)}, now {_quote(ra.output)}")  # fmt: skip
        elif rb.expect is not None and _right(ra) and not _right(rb):
            fixed.add(rb.id)  # a change for the better: `improved` names it
    o = c.outputs
    compared = len(o.identical) + len(o.similar) + len(o.different)
    changed = len([i for i in o.similar + o.different if i not in fixed])
    if not (turned_wrong or now_failing or changed):
        return []
    score_line = f"quality score {_score(c.before)} -> {_score(c.after)}"
    share = f"answers: {len(o.identical)} identical, {len(o.similar)} similar, {len(o.different)} different of {compared} compared"
    if o.unsteady:
        share += f" ({len(o.unsteady)} not compared: their repeats already disagreed)"
    shown = [f"{i}: {d}" for i, d in o.diffs.items() if i not in fixed][:DIFFS_SHOWN]
    evidence = turned_wrong + now_failing + [score_line, share] + shown
    fixes = [Fix("Roll the change back, or check the new setup's answers on these requests before it serves users")]
    if turned_wrong or now_failing:
        n = len(turned_wrong) + len(now_failing)
        title = f"{n} answer{'s that were' if n > 1 else ' that was'} right {'are' if n > 1 else 'is'} now wrong or missing ({score_line})"
        return [Finding("baseline.quality_drop", title, evidence, fixes)]
    fixes.insert(0, Fix("Decoding is deterministic, so changed answers come from the change: read the diffs; "
                        "score them with `expect` in a --prompts file to turn this into a gate"))  # fmt: skip
    title = f"{changed} of {compared} answers changed (no scored answer got worse)"
    if fixed:
        title = f"{changed} of {compared} answers changed besides the {len(fixed)} scored ones that became right"
    return [Finding("baseline.quality_drop", title, evidence, fixes, severity="warn")]


def _quote(text: str, limit: int = 80) -> str:
    t = " ".join(text.split())
    return repr(t if len(t) <= limit else t[: limit - 1] + "…")


def _score(s: Summary) -> str:
    return f"{s.right}/{s.scored}" if s.scored else "-"


def config_changes(before: Run, after: Run) -> list[tuple[str, str, str]]:
    """(arg, before, after) for every engine argument that differs; "-" where a side does not set
    it, but only when that side's same source (its command line, log, /metrics) was read, so an
    unreachable /metrics is not taken for a changed configuration."""
    b, a = before.server, after.server
    out = []
    for name in dict.fromkeys([*b.args, *a.args]):
        x, y = b.args.get(name), a.args.get(name)
        if x == y or name == "command_line":
            continue
        source = (b.args_source if x is not None else a.args_source).get(name, "")
        other = a if x is not None else b
        if (x is None or y is None) and source not in other.args_source.values():
            continue
        out.append((name, x if x is not None else "-", y if y is not None else "-"))
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _raised(b: str, a: str) -> bool:
    return (_number(a) or 0) > (_number(b) or 0) > 0


def _turned_on(b: str, a: str) -> bool:
    return a.lower() == "true" and b.lower() in ("false", "-", "")


def _added(b: str, a: str) -> bool:
    return b.lower() in ("-", "none", "", "0") and a.lower() not in ("-", "none", "", "0")


# (engine argument, "did it change the way that should help", the figure it should improve, why)
EXPECTED_EFFECTS = (
    ("kv_cache_dtype", lambda b, a: "fp8" in a.lower() and "fp8" not in b.lower(), "kv_cache_tokens",
     "an fp8 KV cache stores each token in half the bytes of fp16/bf16, so the same memory holds about twice the tokens"),
    ("gpu_memory_utilization", _raised, "kv_cache_tokens", "a larger memory fraction leaves more memory for the KV cache"),
    ("quantization", _added, "kv_cache_tokens",
     "quantized weights take less memory, and the engine gives what they free to the KV cache"),
    ("tensor_parallel_size", _raised, "itl_ms", "more GPUs per replica split each token's work"),
    ("enforce_eager", lambda b, a: a.lower() == "false" and b.lower() == "true", "itl_ms",
     "CUDA graphs remove the per-step kernel launch overhead"),
    ("n_gpu_layers", _raised, "itl_ms", "layers on the GPU run faster than on the CPU"),
    ("num_speculative_tokens", _added, "itl_ms", "accepted draft tokens arrive several per step"),
)  # fmt: skip
FIGURE_TEXT = {"kv_cache_tokens": ("the KV cache did not grow", "KV cache capacity", "tokens"),
               "itl_ms": ("inter-token latency did not improve", "ITL p50", "ms")}  # fmt: skip


def no_effect_findings(c: Comparison, tolerance: float, skip: frozenset[str] | set[str] = frozenset()) -> list[Finding]:
    """A change that should improve a figure (EXPECTED_EFFECTS) while that figure did not improve
    beyond the tolerance and the noise: the flag was not applied, or something else caps it."""
    out = []
    for arg, helps, figure, why in EXPECTED_EFFECTS:
        change = next(((b, a) for n, b, a in c.config_changes if n == arg), None)
        v = c.verdicts.get(figure)
        if arg in skip or change is None or not helps(*change) or v is None or v.direction == "better":
            continue
        did_not, name, unit = FIGURE_TEXT[figure]
        fb, fa = (c.before.kv_cache_tokens, c.after.kv_cache_tokens) if figure == "kv_cache_tokens" else (
            c.before.latency[figure][0], c.after.latency[figure][0])  # fmt: skip
        shown = f"{fb:,.0f} -> {fa:,.0f} {unit}"
        noise = f" and the ±{v.noise:.0%} noise" if v.noise else ""
        fixes = [Fix("Check that the engine really applied the flag: its start-up log prints what it runs with", "llm-doctor analyze ENGINE.log")]
        if figure == "kv_cache_tokens":
            fixes.append(Fix("If the capacity is capped elsewhere (num_gpu_blocks_override, kv_cache_memory_bytes, max_total_tokens), lift the cap, or drop the flag and its cost"))
        else:
            fixes.append(Fix("If the time goes elsewhere (a CPU-bound host, a slow interconnect, batching limits), the flag cannot help: find where",
                             "llm-doctor run --only perf"))
        out.append(Finding("baseline.no_effect", f"{arg} {change[0]} -> {change[1]}, but {did_not} ({shown})", [
            f"{arg}: {change[0]} ({c.before.label}) -> {change[1]} ({c.after.label}), as the server reports it",
            f"{name}: {shown} ({v.change:+.0%}); expected to improve beyond the {tolerance:.0%} tolerance{noise}: {why}",
        ], fixes))  # fmt: skip
    return out


def unapplied_findings(after: Run, label: str) -> list[Finding]:
    """Flags the engine was given but its own /metrics report contradicts: not applied at all."""
    s = after.server
    if not s.unapplied:
        return []
    evidence = [f"{n}: asked {asked}, but the engine reports {s.args.get(n)} (/metrics) in {label}" for n, asked in s.unapplied.items()]
    return [Finding("baseline.no_effect", f"{', '.join(s.unapplied)} given but not applied: the engine reports otherwise", evidence, [
        Fix("Read the engine's start-up log for why it overrode or ignored the flag (an unsupported combination, a later flag, a config file)",
            "llm-doctor analyze ENGINE.log"),
    ])]  # fmt: skip


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
        evidence.append(f"quality score {_score(c.before)} -> {_score(c.after)}")
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


# values the server reports about its state, not settings someone chose: they are effects, not causes
MEASURED = {"num_gpu_blocks", "command_line"}


def unmoved_findings(c: Comparison) -> list[Finding]:
    """A configuration change after which nothing measured moved (no figure beyond the tolerance
    and noise, the same answers): the change took no visible effect. Info: many changes are meant
    to change nothing measurable, but "did my change do anything?" is the question asked."""
    changes = [(n, x, y) for n, x, y in c.config_changes if n not in MEASURED]
    o = c.outputs
    moved = any(v.direction for v in c.verdicts.values()) or o.similar or o.different or c.before.right != c.after.right
    if not changes or moved or not c.verdicts or any(f.code in ("baseline.no_effect", "baseline.improved") for f in c.findings):
        return []
    listed = ", ".join(f"{n} {x} -> {y}" for n, x, y in changes)
    return [Finding("baseline.no_effect", f"configuration changed ({listed}) but nothing measured moved", [
        f"configuration change: {n} {x} ({c.before.label}) -> {y} ({c.after.label})" for n, x, y in changes
    ] + ["latency, throughput, KV cache and GPU memory all within the tolerance and the noise; "
         f"answers: {len(o.identical)} identical of {len(o.identical) + len(o.similar) + len(o.different)}"], [
        Fix("If the change was meant to move one of these figures, check that the engine applied it (its start-up log and /metrics say what it runs with)"),
    ], severity="info")]  # fmt: skip
