"""Is the KV cache the bottleneck right now? (perf.kv_cache_pressure, from /metrics)

When the cache is near full the scheduler stops admitting requests (they wait), preempts
running ones (vLLM recomputes or swaps them; SGLang retracts decodes) and throughput drops while
GPUs look busy. The relief is computed from the scrape: the number of sequences that would have
kept usage near 80% at the observed load, or more memory for the cache.
"""

from __future__ import annotations

import math

from llm_doctor import fp8
from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

FULL = 0.90
TARGET = 0.80
HELD = 0.5  # share of the stat lines a full cache must hold, with nothing waiting, to be the run's state


@check("perf.kv_cache_metrics", "perf", codes=["perf.kv_cache_pressure"], needs=("metrics",), running=True)
def kv_cache_metrics(facts: Facts) -> Outcome:
    """The KV cache has room: usage below 90%, no preemptions, no swapped requests (from a log:
    not full while requests wait in a sustained share of its stat lines)."""
    m = facts.metrics
    if m is None or not m.available:
        raise NotApplicable(f"no /metrics scrape: {m.reason}" if m is not None and m.reason else "no /metrics scrape")
    v = m.values
    usage = v.get("kv_cache_usage")
    preempt_total, preempt_rate = v.get("preemptions_total"), v.get("preemptions_per_s")
    swapped, running, waiting = v.get("swapped_max", v.get("swapped", 0.0)), v.get("running", 0.0), v.get("waiting", 0.0)
    if usage is None and preempt_total is None:
        raise NotApplicable("no KV-cache usage or preemption figure (scrape or stat lines)")
    preempting = (preempt_rate or 0) > 0 if preempt_rate is not None else (preempt_total or 0) > 0
    log = fv.from_log(m)
    # a log is a series: one full moment is a busy engine doing its job, a full cache with a queue
    # over a share of the run is pressure
    full = fv.sustained(m, "pressed_samples") if log else usage is not None and usage >= FULL
    # ... or a cache that stays full over most of the series with nothing queued (or the queue not printed):
    # the running batch already fills it, and the next long request is preempted (vLLM) or retracted (SGLang)
    # (a person stating the cache full is their complaint: one statement is the state they saw)
    held = log and not full and (_held_full(v) or (m.origin == "prose" and usage is not None and usage >= FULL))
    full = full or held
    if not (full or preempting or swapped > 0):
        if log and usage is not None:
            return Outcome(detail=f"KV cache peak {v.get('kv_cache_usage_max', usage):.0%}, full with requests waiting in "
                                  f"{fv.share(m, 'pressed_samples')}")
        return Outcome(detail=f"KV cache usage {usage:.0%}" if usage is not None else "no preemptions")
    evidence = [m.raw[k] for k in ("kv_cache_usage", "preemptions_total", "swapped", "running", "waiting") if k in m.raw]
    evidence = list(dict.fromkeys(evidence))  # a log quotes one stat line for several values
    if log and not held and usage is not None:  # (a person's count of preemptions alone gives no usage to quote)
        evidence.append(f"the KV cache was >= {FULL:.0%} full with requests waiting in {fv.share(m, 'pressed_samples')} "
                        f"(peak usage {v.get('kv_cache_usage_max', 0):.0%}, at most {v.get('waiting_max', 0):g} waiting)")
    if held and m.origin != "prose":
        evidence.append(f"the KV cache was >= {FULL:.0%} full in {v['kv_full_samples']:g} of {v['kv_samples']:g} stat lines{fv.sampled(m)} "
                        f"(peak {v.get('kv_cache_usage_max', 0):.0%}) with {v.get('running_max', 0):g} running: the batch fills it, "
                        "one more long request is preempted or retracted")
    if preempt_rate is not None:
        evidence.append(f"preemptions in the {m.window_s:g} s window: {preempt_rate:g}/s")
    cfg = fv.maybe_deployment(facts)
    engine = (cfg.engine if cfg else "") or m.engine or "vllm"
    fixes = []
    if full and running and usage and waiting:
        # R running hold U of the cache; R + W requests want U * (R + W) / R of it, at TARGET each copy
        need = usage * (running + waiting) / running
        copies = math.ceil(need / TARGET)
        if copies > 1:
            fixes.append(Fix(f"Serve the queue: {running:g} running fill {usage:.0%} of the KV cache and {waiting:g} more wait, "
                             f"so this load needs about {need:.1f}x the cache: {copies} replicas (or {copies}x the KV memory "
                             "with more TP)", fv.command(engine, ("dp", copies))))
    if running and usage and (preempting or swapped > 0 or not fixes):
        seqs = max(1, math.floor(running * TARGET / max(usage, 0.01)))
        fixes.append(Fix(f"Admit fewer sequences at once: {running:g} running use {usage:.0%} of the cache, "
                         f"{seqs} would keep it near {TARGET:.0%}", f"{fv.flag('max_seqs', engine)} {seqs}"))
    elif cfg and cfg.max_num_seqs and not fixes:
        fixes.append(Fix("Admit fewer sequences at once", f"{fv.flag('max_seqs', engine)} {max(1, cfg.max_num_seqs // 2)}"))
    util = cfg.gpu_memory_utilization if cfg else None
    if util is None and m.cache_config.get("gpu_memory_utilization"):
        util = float(m.cache_config["gpu_memory_utilization"])
    if util is not None and util < 0.9:
        fixes.append(Fix(f"Give the KV cache more of the GPU (now {util:g})", fv.command(engine, ("mem", f"{min(0.92, round(util + 0.05, 2)):.2f}"))))
    if (halve := fv.kv_half(engine)) and not (cfg and cfg.kv_cache_dtype.startswith(("fp8", "q8", "q4"))) and (
        engine == "llamacpp" or fp8.from_facts(facts) is not False
    ):
        fixes.append(Fix(("Or h" if fixes else "H") + "alve the KV cache per token with an 8-bit cache" + ("" if engine == "llamacpp" else " (Ada/Hopper or newer)"), halve))
    if not fixes:
        fixes.append(Fix("Give the KV cache more room before the load grows: more GPU memory for it, more TP, or a shorter "
                         "maximum context"))
    title = (f"KV cache {usage:.0%} full" if full and usage is not None else "KV cache under pressure") + (
        f", {preempt_total:g} preemptions" if preempting and preempt_total else "") + (
        f", {swapped:g} requests swapped out" if swapped else "") + (f", {waiting:g} waiting" if waiting else "")
    # a cache held full with nothing waiting, preempted or swapped is the pool doing its job so far: the pressure is
    # the next long request's, not measured (a note); a queue or a preemption beside it is the warning
    calm = held and m.origin != "prose" and "waiting" in v and not (preempting or swapped > 0 or waiting)
    return Outcome([Finding("perf.kv_cache_pressure", title, evidence, fixes, severity="info" if calm else "",
                            explains=["perf.high_latency", "perf.batching_limited"])])


def _held_full(v: dict[str, float]) -> bool:
    """Full (>= FULL) in at least half of two or more stat lines while requests run: the run's state,
    not a moment's (one pasted line at 92% is a busy engine doing its job)."""
    samples, held = v.get("kv_samples", 0), v.get("kv_full_samples", 0)
    return samples >= 2 and held >= HELD * samples and v.get("running_max", 0) > 0
