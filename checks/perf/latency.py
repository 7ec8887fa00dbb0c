"""Are time to first token and inter-token latency far above what the hardware gives?
(perf.high_latency, from the engine's own histograms in /metrics)

Decode of one token on a GPU takes about (weights bytes per GPU / memory bandwidth); tens of ms
for a model that fills a GPU. An inter-token latency well above 100 ms, or a TTFT of seconds,
means time is lost elsewhere: in the queue (waiting), in prefill of long prompts, or in the
interconnect; the queue share says which. Window values (two scrapes) are preferred over values
since the process started.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

TTFT_S = 2.0
ITL_S = 0.1
FAR_ABOVE = 5.0  # observed ITL this many times the bandwidth floor: time goes elsewhere
MIN_ITL_S = 0.03
OVERLOAD = 2.0  # offered / completed requests per second above this: the benchmark's queue only grows
# the setting that puts every layer on the GPU: llama.cpp's --n-gpu-layers, Ollama's num_gpu option (api/types.go)
GGUF_OFFLOAD = {"llamacpp": "-ngl 999", "ollama": 'PARAMETER num_gpu 999 (Modelfile) or "options": {"num_gpu": 999}'}

# HBM/GDDR bandwidth in GB/s (vendor datasheets): one decode step reads every weight once, so
# weights-per-GPU / bandwidth is the floor of the inter-token latency at small batch.
BANDWIDTH_GBS = (
    ("H200", 4800), ("H20", 4000), ("H100 PCIe", 2000), ("H100 NVL", 3900), ("H100", 3350), ("H800", 3350),
    ("A100-PCIE-40GB", 1555), ("A100-SXM4-40GB", 1555), ("A100 80GB PCIe", 1935), ("A100", 2039), ("A800", 2039),
    ("L40S", 864), ("L40", 864), ("L20", 864), ("L4", 300), ("A10G", 600), ("A10", 600), ("A6000", 768),
    ("RTX 5090", 1792), ("RTX 4090", 1008), ("RTX 3090", 936), ("V100", 900), ("T4", 320),
)


def bandwidth_gbs(name: str) -> float | None:
    return next((bw for key, bw in BANDWIDTH_GBS if key.lower() in name.lower()), None)


def itl_floor_s(facts: Facts, cfg) -> tuple[float, str] | None:
    """Weights per GPU / memory bandwidth, when the model, the engine config and the GPU are known."""
    if facts.model is None or cfg is None or not facts.gpus or not facts.gpus.gpus:
        return None
    bw = bandwidth_gbs(facts.gpus.gpus[0].name)
    if not bw:
        return None
    from llm_doctor.memory import weights_bytes_per_gpu

    weights = weights_bytes_per_gpu(facts.model, cfg)
    return weights / (bw * 1e9), f"{weights / 1024**3:.1f} GiB of weights per GPU / {bw} GB/s ({facts.gpus.gpus[0].name})"


@check("perf.latency", "perf", codes=["perf.high_latency"], needs=("metrics",), running=True)
def latency(facts: Facts) -> Outcome:
    """TTFT below 2 s and inter-token latency below 100 ms (engine histograms)."""
    m = facts.metrics
    if m is None or not m.available:
        raise NotApplicable(f"no /metrics scrape: {m.reason}" if m is not None and m.reason else "no /metrics scrape")
    v = m.values

    def pick(name: str) -> tuple[float | None, str]:
        for prefix, what in ((f"window_{name}", f"over the {m.window_s or 0:g} s window"), (name, "since the engine started")):
            if f"{prefix}_mean_s" in v:
                if fv.from_log(m):  # a benchmark summary or the engine's per-request lines: say which line
                    what = f"({m.raw.get(f'bench:{prefix}_mean_s') or m.raw.get(prefix) or 'from the log'})"
                return v[f"{prefix}_mean_s"], what
        return None, ""

    ttft, ttft_when = pick("ttft")
    itl, itl_when = pick("itl")
    queue, _ = pick("queue")
    if ttft is None and itl is None:
        raise NotApplicable("the scrape has no TTFT or inter-token latency histogram")
    cfg = fv.maybe_deployment(facts)
    floor = itl_floor_s(facts, cfg)
    # a benchmark that fires every request at once measures its own queue in TTFT, not the server
    burst = fv.from_log(m) and v.get("bench_burst") == 1.0
    slow_ttft = ttft is not None and ttft > TTFT_S and not burst
    slow_itl = itl is not None and (itl > ITL_S or bool(floor and itl > FAR_ABOVE * floor[0] and itl > MIN_ITL_S))
    if not (slow_ttft or slow_itl):
        return Outcome(detail=f"TTFT {ttft or 0:.2f} s, ITL {(itl or 0) * 1000:.0f} ms")
    evidence = []
    if ttft is not None:
        p90 = v.get("window_ttft_p90_s", v.get("ttft_p90_s"))
        evidence.append(f"mean TTFT {ttft:.2f} s {ttft_when}" + (f", p90 {p90:.2f} s" if p90 is not None else ""))
    if itl is not None:
        rate = f" ({1 / itl:.1f} tokens/s per request)" if itl > 0 else ""  # a cut scrape can say 0
        evidence.append(f"mean inter-token latency {itl * 1000:.0f} ms{rate} {itl_when}")
    if floor and itl is not None:
        evidence.append(f"the hardware floor is about {floor[0] * 1000:.1f} ms per token: {floor[1]}; "
                        f"observed {itl / floor[0]:.0f}x that")
    if queue is not None:
        evidence.append(f"mean time waiting in the queue {queue:.2f} s")
    # a log's one stat line carries all three: quoted once (as perf.batching quotes it)
    evidence += dict.fromkeys(m.raw[k] for k in ("running", "waiting", "kv_cache_usage") if k in m.raw)
    engine = (cfg.engine if cfg else "") or m.engine or "vllm"
    fixes = []
    waiting = v.get("waiting", 0)
    queued = queue is not None and ttft and queue >= 0.5 * ttft
    # a benchmark offering more requests per second than the server completes: its queue grows for the
    # whole run, and TTFT is the time spent in it
    offered, done = v.get("bench_rate"), v.get("request_throughput")
    if fv.from_log(m) and slow_ttft and offered and done and offered >= OVERLOAD * done:
        queued = True
        evidence.append(f"the benchmark offers {offered:g} requests/s ({m.raw.get('bench:bench_rate', 'its command')}) and "
                        f"the server completes {done:g}/s ({m.raw.get('bench:request_throughput', 'its summary')})")
        fixes.append(Fix(f"Requests arrive {offered / done:.0f}x faster than they complete, so TTFT measures the queue: offer "
                         f"at most the measured {done:g} requests/s, or add that much more capacity (replicas)",
                         f"--request-rate {done:g}"))
    elif queued or waiting:
        usage, running = v.get("kv_cache_usage"), v.get("running", 0)
        if usage is not None and 0 < usage < 0.7 and running:
            fits = int(running * 0.8 / usage)
            fixes.append(Fix(f"Requests wait for a batch slot while the KV cache has room for about {fits} sequences",
                             f"{fv.flag('max_seqs', engine)} {fits}"))
        else:
            fixes.append(Fix("Requests wait for a batch slot and the KV cache is full: add replicas (more GPUs) for this load"))
    if engine in GGUF_OFFLOAD and (slow_ttft or slow_itl):
        # llama.cpp and Ollama run the layers they do not offload on the CPU: prompt and decode both crawl
        fixes.append(Fix("Layers left on the CPU slow both the prompt and every output token; offload every layer to the GPU "
                         "(and check that the run uses the GPU backend, not the CPU)", GGUF_OFFLOAD[engine]))
    elif slow_ttft and not queued:
        fixes.append(Fix("Long prompts dominate TTFT: reuse repeated prefixes and chunk long prefills",
                         "--enable-prefix-caching --enable-chunked-prefill" if engine == "vllm" else "--chunked-prefill-size 4096"))
    if slow_itl and engine not in GGUF_OFFLOAD:
        tp = cfg.tensor_parallel_size if cfg else None
        # ("per token: check" would read as a secret named token to the redactor)
        fixes.append(Fix("Decode is slow for each token; check CUDA graphs (no --enforce-eager), throttling and the TP interconnect"
                         + (f" (TP={tp})" if tp and tp > 1 else "")))
    title = " and ".join(x for x in (f"TTFT {ttft:.1f} s" if slow_ttft else "", f"{itl * 1000:.0f} ms per output token" if slow_itl else "") if x)
    return Outcome([Finding("perf.high_latency", f"{title}, well above what the GPU gives", evidence, fixes)])
