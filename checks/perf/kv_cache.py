"""Is the KV cache the bottleneck right now? (perf.kv_cache_pressure, from /metrics)

When the cache is near full the scheduler stops admitting requests (they wait), preempts
running ones (vLLM recomputes or swaps them; SGLang retracts decodes) and throughput drops while
GPUs look busy. The relief is computed from the scrape: the number of sequences that would have
kept usage near 80% at the observed load, or more memory for the cache.
"""

from __future__ import annotations

import math

from checks.perf import facts_view as fv
from doctor import fp8
from doctor.engine import check
from doctor.facts import Facts
from doctor.findings import Finding, Fix, NotApplicable, Outcome

FULL = 0.90
TARGET = 0.80


@check("perf.kv_cache_metrics", "perf", codes=["perf.kv_cache_pressure"], needs=("metrics",), running=True)
def kv_cache_metrics(facts: Facts) -> Outcome:
    """The KV cache has room: usage below 90%, no preemptions, no swapped requests."""
    m = facts.metrics
    if m is None or not m.available:
        raise NotApplicable(f"no /metrics scrape: {m.reason}" if m is not None and m.reason else "no /metrics scrape")
    v = m.values
    usage = v.get("kv_cache_usage")
    preempt_total, preempt_rate = v.get("preemptions_total"), v.get("preemptions_per_s")
    swapped, running, waiting = v.get("swapped", 0.0), v.get("running", 0.0), v.get("waiting", 0.0)
    if usage is None and preempt_total is None:
        raise NotApplicable("the scrape has no KV-cache usage or preemption metric")
    preempting = (preempt_rate or 0) > 0 if preempt_rate is not None else (preempt_total or 0) > 0
    full = usage is not None and usage >= FULL
    if not (full or preempting or swapped > 0):
        return Outcome(detail=f"KV cache usage {usage:.0%}" if usage is not None else "no preemptions")
    evidence = [m.raw[k] for k in ("kv_cache_usage", "preemptions_total", "swapped", "running", "waiting") if k in m.raw]
    if preempt_rate is not None:
        evidence.append(f"preemptions in the {m.window_s:g} s window: {preempt_rate:g}/s")
    cfg = fv.maybe_deployment(facts)
    engine = (cfg.engine if cfg else "") or m.engine or "vllm"
    fixes = []
    if running and usage:
        seqs = max(1, math.floor(running * TARGET / max(usage, 0.01)))
        fixes.append(Fix(f"Admit fewer sequences at once: {running:g} running use {usage:.0%} of the cache, "
                         f"{seqs} would keep it near {TARGET:.0%}", f"{fv.flag('max_seqs', engine)} {seqs}"))
    elif cfg and cfg.max_num_seqs:
        fixes.append(Fix("Admit fewer sequences at once", f"{fv.flag('max_seqs', engine)} {max(1, cfg.max_num_seqs // 2)}"))
    util = cfg.gpu_memory_utilization if cfg else None
    if util is None and m.cache_config.get("gpu_memory_utilization"):
        util = float(m.cache_config["gpu_memory_utilization"])
    if util is not None and util < 0.9:
        fixes.append(Fix(f"Give the KV cache more of the GPU (now {util:g})", f"{fv.flag('mem', engine)} {min(0.92, round(util + 0.05, 2)):.2f}"))
    if engine == "vllm" and not (cfg and cfg.kv_cache_dtype.startswith("fp8")) and fp8.from_facts(facts) is not False:
        fixes.append(Fix("Or halve the KV cache per token with an fp8 cache (Ada/Hopper or newer)", "--kv-cache-dtype fp8"))
    title = (f"KV cache {usage:.0%} full" if full else "KV cache under pressure") + (
        f", {preempt_total:g} preemptions" if preempting and preempt_total else "") + (
        f", {swapped:g} requests swapped out" if swapped else "") + (f", {waiting:g} waiting" if waiting else "")
    return Outcome([Finding("perf.kv_cache_pressure", title, evidence, fixes,
                            explains=["perf.high_latency", "perf.batching_limited"])])
