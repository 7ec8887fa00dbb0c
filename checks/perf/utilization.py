"""Do the GPUs work while requests are served? (perf.low_gpu_util)

NVML utilization is the share of the sample period in which a kernel ran; sampled over the
--sample window, a mean below 50% while the engine has requests running means the GPU waits on
something: too few concurrent requests to batch, a batch cap, the CPU, or the interconnect. The
queue says which: requests waiting means the engine holds them back (batching), none waiting
means the clients send too little. Judged only with evidence that requests run (/metrics, or the
load probe), since an idle server is rightly idle.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

LOW = 50.0
WORKED = 10.0  # a sample this busy is work, not an idle GPU's noise (0-3%)
SERIES = 3  # samples that make a series: a monitor left running, not one reading


@check("perf.gpu_offload", "perf", codes=["perf.low_gpu_util"], needs=("deployment",))
def gpu_offload(facts: Facts) -> Outcome:
    """llama.cpp is told to put layers on the GPU (not -ngl 0)."""
    cfg = fv.deployment(facts)
    if not (cfg.engine == "llamacpp" and cfg.n_gpu_layers == 0 and cfg.is_set("n_gpu_layers")):
        return Outcome(detail="layers are offloaded to the GPU" if cfg.engine == "llamacpp" else f"{cfg.engine}: runs on the GPU")
    gpus = facts.gpus.gpus if facts.gpus and facts.gpus.available else []
    return Outcome([Finding("perf.low_gpu_util", "llama.cpp is told to offload no layer (-ngl 0): the model runs on the CPU",
                            [f"n_gpu_layers=0 ({cfg.sources.get('n_gpu_layers')})"]
                            + ([f"{len(gpus)} GPU(s) present: {gpus[0].name}"] if gpus else []),
                            [Fix("Offload every layer to the GPU", "-ngl 999")], explains=["perf.cpu_bound"])])


@check("perf.gpu_utilization", "perf", codes=["perf.low_gpu_util"], needs=("gpus",), running=True, per_node=True)
def gpu_utilization(facts: Facts) -> Outcome:
    """The engine's GPUs are busy (mean utilization >= 50%) while requests run."""
    cfg = fv.maybe_deployment(facts)
    g = fv.gpus(facts)
    mine = [x for x in fv.engine_gpus(cfg, g) if x.util_gpu is not None]
    if not mine:
        raise NotApplicable("no GPU utilization samples")
    m = facts.metrics if facts.metrics and facts.metrics.available else None
    probe = facts.host.probe if facts.host else None
    running = m.values.get("running", 0) if m else 0
    pasted = m is None and "nvml" not in g.source and any(_worked(x.util_gpu) for x in mine)
    if not running and not (probe and probe.tps_n) and not pasted:
        raise NotApplicable("no requests were running while the GPUs were sampled (no /metrics load, no --probe-load)")
    mean = sum(x.util_gpu.mean for x in mine) / len(mine)
    if mean >= LOW:
        return Outcome(detail=f"GPU utilization mean {mean:.0f}% while serving")
    evidence = [f"GPU{x.index}: utilization min/mean/max {x.util_gpu.min:g}/{x.util_gpu.mean:g}/{x.util_gpu.max:g}% "
                f"over {x.util_gpu.samples} sample(s)" for x in mine[:8]]
    if not running and not (probe and probe.tps_n):
        return Outcome([_bursts_finding(g, mine, mean, evidence)])
    if m:
        evidence += dict.fromkeys(m.raw[k] for k in ("running", "waiting", "kv_cache_usage") if k in m.raw)  # one stat line: once
    if probe and probe.tps_n:
        evidence.append(f"load probe: {probe.tps_n:g} tokens/s at {probe.concurrency} concurrent requests")
    engine = (cfg.engine if cfg else "") or (m.engine if m else "") or "vllm"
    waiting = m.values.get("waiting", 0) if m else 0
    if waiting:
        fixes = [Fix("Requests wait while the GPU idles: the batch cap holds them back",
                     f"{fv.flag('max_seqs', engine)} {int(max(running + waiting, running * 2))}")]
    else:
        fixes = [Fix(f"Only {running:g} request(s) run at once: send more concurrent requests (or fewer GPUs per replica: "
                     "a smaller TP leaves GPUs for more replicas)")]
    if cfg and cfg.engine == "llamacpp" and cfg.n_gpu_layers == 0:
        fixes.insert(0, Fix("No layer is offloaded (-ngl 0): offload all layers", "-ngl 999"))
    snapshot = all(x.util_gpu.samples <= 1 for x in mine)  # one nvidia-smi reading, not a sampled window
    if snapshot:
        fixes.append(Fix("This is one reading: sample over seconds while serving to confirm", "llm-doctor run --sample 10"))
    return Outcome([Finding("perf.low_gpu_util", f"GPU utilization {mean:.0f}% while {running:g} request(s) run"
                            + (" (one reading)" if snapshot else ""), evidence, fixes, severity="info" if snapshot else "warn")])


def _worked(util) -> bool:
    """A pasted monitor series (dmon, gpustat -i, --query-gpu -l) in which the GPU did work in some
    samples: requests were running while it was sampled. Only where nothing else says what ran: a
    /metrics scrape showing no request running is an idle server, whatever the GPU did."""
    return util.samples >= SERIES and util.max >= WORKED


def _bursts_finding(g, mine, mean: float, evidence: list[str]) -> Finding:
    """Low utilization seen only in a pasted monitor: what the GPU waited on is not in it, so the
    fix says how to tell the causes apart with the numbers that decide it."""
    peak = max(x.util_gpu.max for x in mine)
    evidence.append(f"{g.source}: the GPU worked (up to {peak:g}%) but waited most of the time: mean {mean:.0f}%")
    return Finding("perf.low_gpu_util", f"GPU utilization {mean:.0f}% (peaks {peak:g}%) in the {g.source} samples", evidence,
                   [Fix("Find what the GPU waits on: requests queued behind a batch cap (Waiting > 0 in the engine's stat "
                        "lines), too few concurrent requests, or a saturated CPU (the API server or tokenizer at 100% in top)",
                        "llm-doctor run --sample 10 --probe-load 16")])
