"""The deploy gate: each requirement of the configuration (`[requirements]` in llm-doctor.toml)
judged against the facts, with the figure, where it came from and the requirement side by side.

The figures come from what the doctor already reads: the KV cache size from the engine's own
/metrics (`vllm:cache_config_info` blocks x block size, SGLang's max_total_tokens), its start-up
log ("GPU KV cache size: N tokens") or `plan`'s arithmetic, in that order (the running engine is
the truth, the plan a forecast); concurrency at a context length is KV tokens / that length;
TTFT and tokens/s from `--probe-load`; GPU memory from NVML or nvidia-smi. A requirement whose
figure was not collected is `gate.requirement_unmeasured`: a gate never passes on a figure it did
not see.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

CODES = ("gate.kv_cache_tokens_below", "gate.concurrency_below", "gate.ttft_above", "gate.tokens_per_s_below",
         "gate.gpu_memory_above", "gate.requirement_unmeasured")  # fmt: skip


@dataclass
class Figure:
    value: float
    source: str


@check("gate.requirements", "gate", codes=CODES, needs=("gate",))
def requirements(facts: Facts) -> Outcome:
    """Every requirement the configuration sets is met by the figures collected."""
    req = facts.gate.requirements if facts.gate else {}
    judged = {k: v for k, v in req.items() if k != "context_length"}
    if not judged:
        raise NotApplicable("only a context_length is configured: no requirement to judge at it")
    findings: list[Finding] = []
    met: list[str] = []
    cfg = facts.gate.config_file if facts.gate else ""
    kv = kv_tokens(facts)
    if "min_kv_cache_tokens" in req:
        need = req["min_kv_cache_tokens"]
        if kv is None:
            findings.append(_unmeasured("min_kv_cache_tokens", need, KV_HOW, cfg))
        elif kv.value < need:
            findings.append(Finding(
                "gate.kv_cache_tokens_below", f"the KV cache holds {kv.value:,.0f} tokens; the gate requires at least {need:,.0f}",
                [f"KV cache tokens {kv.value:,.0f} ({kv.source})", f"min_kv_cache_tokens = {need:,.0f} ({cfg})"],
                _kv_fixes(need / kv.value)))  # fmt: skip
        else:
            met.append(f"KV cache tokens {kv.value:,.0f} >= {need:,.0f}")
    if "min_concurrency" in req:
        need = req["min_concurrency"]
        ctx = context_length(facts)
        if kv is None or ctx is None:
            missing = KV_HOW if kv is None else "a context length: `context_length` in [requirements], or the engine's max_model_len"
            findings.append(_unmeasured("min_concurrency", need, missing, cfg))
        else:
            have = kv.value / ctx.value
            line = f"{have:.2f} requests of {ctx.value:,.0f} tokens fit the KV cache at once"
            if have < need:
                findings.append(Finding(
                    "gate.concurrency_below", f"{line}; the gate requires {need:g}",
                    [f"KV cache tokens {kv.value:,.0f} ({kv.source}) / context length {ctx.value:,.0f} ({ctx.source}) = {have:.2f}",
                     f"min_concurrency = {need:g} ({cfg})"],
                    [*_kv_fixes(need / have),
                     Fix(f"Or require less context per request: {int(kv.value // need):,} tokens give {need:g} at once",
                         f"--max-model-len {int(kv.value // need)}")]))  # fmt: skip
            else:
                met.append(f"concurrency {have:.2f} >= {need:g} at {ctx.value:,.0f} tokens")
    probe = facts.host.probe if facts.host else None
    probe_how = "the load probe: add --probe-load 4 (or probe_load = 4 in the configuration)"
    if "max_ttft_ms" in req:
        need = req["max_ttft_ms"]
        have = probe.ttft_ms if probe else None
        if have is None:
            findings.append(_unmeasured("max_ttft_ms", need, probe_how, cfg))
        elif have > need:
            findings.append(Finding(
                "gate.ttft_above", f"time to first token {have:,.0f} ms; the gate allows at most {need:,.0f} ms",
                [f"TTFT {have:,.1f} ms of one streamed request alone (--probe-load)", f"max_ttft_ms = {need:g} ({cfg})"],
                [Fix("Find what the time goes to: the perf findings above (queueing, CPU, KV pressure), or the engine's "
                     "/metrics time_to_first_token and queue time")]))  # fmt: skip
        else:
            met.append(f"TTFT {have:,.0f} ms <= {need:,.0f} ms")
    if "min_tokens_per_s" in req:
        need = req["min_tokens_per_s"]
        have = probe.tps_n if probe else None
        if have is None:
            findings.append(_unmeasured("min_tokens_per_s", need, probe_how, cfg))
        elif have < need:
            findings.append(Finding(
                "gate.tokens_per_s_below",
                f"{have:,.1f} generated tokens/s at concurrency {probe.concurrency}; the gate requires at least {need:,.1f}",
                [f"tokens/s {probe.tps_1} at concurrency 1, {have} at {probe.concurrency} (--probe-load, {probe.seconds:g} s)",
                 f"min_tokens_per_s = {need:g} ({cfg})"],
                [Fix("Find what limits throughput: the perf findings above (batching, TP, utilization, throttling)")]))  # fmt: skip
        else:
            met.append(f"{have:,.1f} tokens/s >= {need:,.1f}")
    if "max_gpu_memory_fraction" in req:
        need = req["max_gpu_memory_fraction"]
        gpus = [g for g in (facts.gpus.gpus if facts.gpus and facts.gpus.available else [])
                if g.memory_total_mib and g.memory_used_mib is not None]  # fmt: skip
        if not gpus:
            findings.append(_unmeasured("max_gpu_memory_fraction", need, "GPU memory: run on the GPU host (NVML) or pass nvidia-smi output", cfg))
        else:
            over = [g for g in gpus if g.memory_used_mib / g.memory_total_mib > need]
            worst = max(gpus, key=lambda g: g.memory_used_mib / g.memory_total_mib)
            if over:
                findings.append(Finding(
                    "gate.gpu_memory_above",
                    f"{len(over)} GPU(s) use more than {need:.0%} of their memory (GPU {worst.index}: "
                    f"{worst.memory_used_mib / worst.memory_total_mib:.1%})",
                    [f"GPU {g.index} {g.name}: {g.memory_used_mib:,.0f} of {g.memory_total_mib:,.0f} MiB used "
                     f"({g.memory_used_mib / g.memory_total_mib:.1%})" for g in over] + [f"max_gpu_memory_fraction = {need:g} ({cfg})"],
                    [Fix(f"Give the engine a smaller share (at most {need:g} of each GPU, less what other processes hold)",
                         f"--gpu-memory-utilization {need:g}")]))  # fmt: skip
            else:
                met.append(f"GPU memory at most {worst.memory_used_mib / worst.memory_total_mib:.1%} <= {need:.0%}")
    detail = "; ".join(met)
    if findings:
        detail = f"{len(findings)} of {len(judged)} requirement(s) not met" + (f"; met: {detail}" if detail else "")
    return Outcome(findings, detail)


KV_HOW = "the KV cache size: the engine's /metrics (run), its start-up log (--log), or `llm-doctor plan`"


def _unmeasured(name: str, need: float, how: str, cfg: str) -> Finding:
    return Finding(
        "gate.requirement_unmeasured", f"requirement {name} = {need:g} could not be judged: its figure was not collected",
        [f"{name} = {need:g} ({cfg})", f"needs {how}"],
        [Fix(f"Collect {how}")],
    )


def _kv_fixes(factor: float) -> list[Fix]:
    return [Fix(f"Give the KV cache {factor:.2f}x the memory it has now: a larger --gpu-memory-utilization, fp8 KV cache "
                "(--kv-cache-dtype fp8 roughly doubles it), more tensor parallelism, or a quantized model; "
                "`llm-doctor plan` computes each")]  # fmt: skip


def kv_tokens(facts: Facts) -> Figure | None:
    """The KV cache size in tokens: what the running engine reports, else the plan's forecast."""
    m = facts.metrics
    if m is not None and m.available:
        blocks, size = m.cache_config.get("num_gpu_blocks", ""), m.cache_config.get("block_size", "")
        if blocks.isdigit() and size.isdigit() and int(blocks) > 0:
            return Figure(int(blocks) * int(size), f"/metrics vllm:cache_config_info num_gpu_blocks {blocks} x block_size {size}")
        if m.values.get("max_total_tokens"):
            return Figure(m.values["max_total_tokens"], "/metrics max_total_tokens")
    logs = facts.logs
    if logs is not None and logs.setup.kv_cache_tokens:
        return Figure(logs.setup.kv_cache_tokens, f"engine log {', '.join(logs.sources)}: GPU KV cache size")
    dep = facts.deployment
    if dep is not None and dep.max_total_tokens:
        return Figure(dep.max_total_tokens, f"engine max_total_tokens ({dep.sources.get('max_total_tokens', 'configuration')})")
    plan = facts.plan
    if plan is not None and plan.kv_cache_tokens > 0:
        return Figure(plan.kv_cache_tokens, f"`plan` arithmetic for {plan.model} on {plan.gpu_count}x {plan.gpu_name}")
    return None


def context_length(facts: Facts) -> Figure | None:
    req = facts.gate.requirements if facts.gate else {}
    if "context_length" in req:
        return Figure(req["context_length"], f"context_length in {facts.gate.config_file if facts.gate else 'the configuration'}")
    dep = facts.deployment
    if dep is not None and dep.max_model_len:
        return Figure(dep.max_model_len, f"engine max_model_len ({dep.sources.get('max_model_len', 'configuration')})")
    if facts.plan is not None and facts.plan.max_model_len:
        return Figure(facts.plan.max_model_len, "`plan` max_model_len")
    return None
