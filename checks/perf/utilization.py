"""Do the GPUs work while requests are served? (perf.low_gpu_util)

NVML utilization is the share of the sample period in which a kernel ran; sampled over the
--sample window, a mean below 50% while the engine has requests running means the GPU waits on
something: too few concurrent requests to batch, a batch cap, the CPU, or the interconnect. The
queue says which: requests waiting means the engine holds them back (batching), none waiting
means the clients send too little. Judged only with evidence that requests run (/metrics, or the
load probe), since an idle server is rightly idle. A GGUF runner (llama.cpp, Ollama) that keeps layers on the CPU
makes the GPU wait for them on every token: its load lines say so without any sample.
"""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome
from llm_doctor.logview import LogView

LOW = 50.0
WORKED = 10.0  # a sample this busy is work, not an idle GPU's noise (0-3%)
SERIES = 3  # samples that make a series: a monitor left running, not one reading


@check("perf.gpu_offload", "perf", codes=["perf.low_gpu_util"], events=["offload_layers", "ollama_cpu_share"],
       any_of=("logs", "deployment"))
def gpu_offload(facts: Facts, log: LogView | None) -> Outcome:
    """The layers are on the GPU: llama.cpp is not told -ngl 0, and the engine's own load lines (llama.cpp's
    "offloaded N/M layers", Ollama's offload plan and `ollama ps`) put every layer there. Where the layers went is
    decided at load, so it is judged whether or not the log also shows a later failure: a model split with the CPU
    runs slowly whenever it runs, and a failure found in the same paste ranks before it."""
    cfg = fv.maybe_deployment(facts)
    if cfg is not None and cfg.engine == "llamacpp" and cfg.n_gpu_layers == 0 and cfg.is_set("n_gpu_layers"):
        gpus = facts.gpus.gpus if facts.gpus and facts.gpus.available else []
        return Outcome([Finding("perf.low_gpu_util", "llama.cpp is told to offload no layer (-ngl 0): the model runs on the CPU",
                                [f"n_gpu_layers=0 ({cfg.sources.get('n_gpu_layers')})"]
                                + ([f"{len(gpus)} GPU(s) present: {gpus[0].name}"] if gpus else []),
                                [Fix("Offload every layer to the GPU", "-ngl 999")], explains=["perf.cpu_bound"])])
    found = _no_offload(facts, log) if log is not None else None
    if found:
        return Outcome([found])
    engine = (cfg.engine if cfg else "") or le.engine(facts)
    return Outcome(detail="layers are offloaded to the GPU" if engine == "llamacpp" else f"{engine or 'the engine'}: runs on the GPU")


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


def _loads(facts: Facts, log: LogView) -> list:
    """The "offloaded N/M layers" lines of the judged run, else of the last run that loaded layers: a paste's
    failure can sit in another start (or another attached file) than the load that placed the layers."""
    found = log.events("offload_layers")
    if found or facts.logs is None:
        return found
    every = [e for e in facts.logs.events if e.kind == "offload_layers"]
    return [e for e in every if e.run == max(e.run for e in every)] if every else []


def _no_offload(facts: Facts, log: LogView) -> Finding | None:
    found = [e for e in _loads(facts, log) if isinstance(e.values.get("offloaded"), int) and isinstance(e.values.get("layers"), int)]
    zero = [e for e in found if e.values["offloaded"] == 0]
    if zero:  # any load that ran on the CPU (a pasted log often holds the slow attempt and the fixed one)
        layers = int(zero[0].values["layers"])  # type: ignore[call-overload]
        return Finding("perf.low_gpu_util", "no layer is offloaded to the GPU: the model runs on the CPU",
                       le.evidence(zero[:1]), [Fix(f"Offload all {layers} layers to the GPU", f"-ngl {layers + 1}")],
                       explains=["perf.cpu_bound", "perf.high_latency"])
    partial = [e for e in found if e.values["offloaded"] < e.values["layers"]]  # type: ignore[operator]
    m = facts.metrics
    planned = m.values if m and "offload_layers_model" in m.values else {}
    if partial:
        last = partial[-1]
        done, layers = int(last.values["offloaded"]), int(last.values["layers"])  # type: ignore[call-overload]
        evidence = le.evidence([last])
    elif planned and planned["offload_layers_gpu"] < planned["offload_layers_model"]:
        # Ollama's own plan ("offload to cuda ... layers.model=43 layers.offload=42"), when the runner's
        # "offloaded 42/43 layers" line is not in the paste
        done, layers = int(planned["offload_layers_gpu"]), int(planned["offload_layers_model"])
        evidence = [m.raw["offload"]] if m.origin == "prose" and "offload" in m.raw else [  # type: ignore[union-attr]
            f"Ollama offloads {done} of the model's {layers} layers to the GPU"]
    else:
        return _ollama_on_cpu(facts, log)
    # Ollama takes the layer count as its num_gpu option (a Modelfile line, or the request's options), llama.cpp as -ngl
    command = f"PARAMETER num_gpu {layers}" if le.engine(facts) == "ollama" else f"-ngl {layers}"
    need, have = (m.values.get("offload_required_gib"), m.values.get("offload_available_gib")) if m else (None, None)
    if need and have:
        evidence.append(f"the model needs {need:g} GiB on the GPU for all layers, {have:g} GiB are free: "
                        f"{need - have:.1f} GiB short" + (f" ({m.raw['offload']})" if m and "offload" in m.raw else ""))
        fix = Fix(f"Make the whole model fit: free {need - have:.1f} GiB of GPU memory (a shorter context, a smaller "
                  f"quantization, or a GPU with at least {need:g} GiB), then offload all {layers} layers", command)
    else:
        fix = Fix(f"Offload all {layers} layers once they fit (a shorter context or a smaller quantization frees GPU memory)",
                  command)
    return Finding("perf.low_gpu_util", f"{layers - done} of {layers} layers run on the CPU: each token waits for them",
                   evidence, [fix], explains=["perf.cpu_bound", "perf.high_latency"])


def _ollama_on_cpu(facts: Facts, log: LogView) -> Finding | None:
    """`ollama ps` says how much of the loaded model runs on the CPU ("100% CPU", "36%/64% CPU/GPU"):
    Ollama puts on the GPU only the layers that fit with the KV cache of the model's num_ctx."""
    # a bare "100% CPU" is Ollama's only in an Ollama paste (elsewhere it is `top` or prose about the host)
    ollama = le.engine(facts) == "ollama"
    found = [e for e in log.events("ollama_cpu_share") if ollama or not e.values.get("all_cpu")]
    if not found:
        return None
    v = found[-1].values
    cpu = 100 if v.get("all_cpu") else int(v.get("cpu") or 0)  # type: ignore[call-overload]
    fixes = [Fix("Lower num_ctx (the KV cache grows with it) or pick a smaller quantization, until `ollama ps` says 100% GPU",
                 "ollama ps")]
    return Finding("perf.low_gpu_util", f"Ollama runs {cpu}% of the model on the CPU: each token waits for it",
                   le.evidence(found[-1:]), fixes,
                   explains=["perf.cpu_bound", "perf.high_latency"])
