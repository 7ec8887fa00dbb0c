"""Perf problems a person states that no measured fact lets a check judge (the reporter's words).

doctor/logparse/perf_prose.py reads "the KV cache is always full and requests queue", "SW Power Cap
is active under load", "TTFT is very high" into facts.stated; where a sentence gives the number a
check needs, the number is in facts.metrics (or the statement's GPU) and that check judges it with
its own threshold. A statement whose code no fact lets a check judge is still a finding, never an
all-clear: info level, the code it speaks of, the sentence as evidence, and as the next step the
command that shows the numbers (a computed fix needs them). A number the check's threshold calls
healthy ("GPU utilisation is 85 %", "CPU at 40 %") stays quiet.
"""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.checks.perf import cpu, memory_headroom, throttle, utilization
from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.checks.perf.kv_cache import FULL
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.stated import PerfStatement
from llm_doctor.findings import STATEMENT, Finding, Fix, Outcome

MAX_QUOTED = 3

# what each code's symptom is, the codes it explains (as the measured check's finding names them),
# and how to get the numbers that would let the check compute a fix
ABOUT: dict[str, tuple[str, list[str], Fix]] = {
    "perf.kv_cache_pressure": (
        "the KV cache is said to be full or preempting", ["perf.high_latency", "perf.batching_limited"],
        Fix("Show the engine's own numbers (KV cache usage, running and waiting requests, preemptions): the stat lines of "
            "its log, or its /metrics", "curl -s localhost:8000/metrics | grep -E 'cache_usage|num_requests|preemption'")),
    "perf.prefix_caching_off": (
        "repeated prompt prefixes are said not to be reused", ["perf.high_latency"],
        Fix("Show whether prefix caching is on and what it hits: the launch command and the engine's prefix cache counters",
            "curl -s localhost:8000/metrics | grep -E 'prefix_cache|cache_hit'")),
    "perf.high_latency": (
        "latency is said to be high", [],
        Fix("Measure it: the engine's TTFT and inter-token histograms (or a serving benchmark at the load you see)",
            "curl -s localhost:8000/metrics | grep -E 'time_to_first_token|time_per_output_token|inter_token'")),
    "perf.gpu_throttled": (
        "the GPU clocks are said to be held down", ["perf.high_latency"],
        Fix("Show the clocks, the active clocks event reasons, power draw against its limit and temperature, while it serves",
            "nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE")),
    "perf.cpu_bound": (
        # a CPU held busy is why throughput stops growing with load: the "does not scale" said beside it is its symptom
        "the host CPU is said to hold the engine back", ["perf.low_gpu_util", "perf.high_latency", "perf.batching_limited"],
        Fix("Show the host while it serves: per-process CPU (the API server, the engine core) and the CPUs it may use",
            "top -b -n 1 -c | head -30; nproc")),
    "perf.batching_limited": (
        "requests are said to be served one at a time, not batched", ["perf.high_latency", "perf.low_gpu_util"],
        Fix("Show the batch cap it runs with and its running/waiting counts under load (the launch command, and the stat "
            "lines or /metrics); llama-server: its slots", "curl -s localhost:8000/metrics | grep -E 'num_requests_(running|waiting)'")),
    "perf.slow_interconnect": (
        "the GPUs' link is said to be slow (more GPUs slower than fewer, no P2P or NVLink, a path across host bridges)", ["perf.high_latency"],
        Fix("Show how the GPUs are connected: tensor parallelism all-reduces every layer, over PCIe where there is no NVLink",
            "nvidia-smi topo -m")),
    "perf.tp_mismatch": (
        "the model is said to gain less than the GPUs added (or nothing over one GPU): the split is larger than it needs", ["perf.slow_interconnect", "perf.high_latency"],
        Fix("Serve one replica per GPU (or per smallest TP group that holds the model) behind a load balancer instead of one "
            "wide TP: the same throughput per replica without a per-layer all-reduce (vLLM --data-parallel-size, SGLang --dp-size)")),
    "perf.memory_overcommitted": (
        "the engine is said to take (almost) all GPU memory", ["load.runtime_oom"],
        Fix("Show the engine's memory share as it runs (its launch command or the arguments its log prints)")),
    "perf.eager_mode": (
        "CUDA graphs are said to be off (eager decode)", ["perf.high_latency", "perf.low_gpu_util"],
        Fix("Show the launch command and the start-up log: --enforce-eager (vLLM) / --disable-cuda-graph (SGLang) turn the "
            "graphs off, and a batch above the captured sizes (SGLang --cuda-graph-max-bs, vLLM max_cudagraph_capture_size) "
            "decodes eager")),
    "perf.low_gpu_util": (
        "the GPUs are said to be under-used", [],
        Fix("Sample the GPUs while requests run, with the engine's running/waiting counts",
            "llm-doctor run --sample 10 --probe-load 16")),
}


# perf.tp_mismatch said as idle GPUs or as TP across machines: the fix those words call for, not the replicas of a TP too wide
WHICH = {
    "idle_gpus": Fix("Use every GPU the engine was given: tensor parallelism over all of them where the model needs it, else "
                     "one replica per GPU (vLLM --data-parallel-size, SGLang --dp-size); show the split with the launch command "
                     "and nvidia-smi", "nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv"),
    "across_nodes": Fix("Keep tensor parallelism inside one node and split across nodes with pipeline parallelism "
                        "(TP = GPUs per node, PP = nodes), or serve a replica per node"),
}


# a setting a benchmark table measures off and on (doctor/logparse/tp_compare.py): what the off arm is, and the fix
COSTED = {
    "perf.prefix_caching_off": ("runs without prefix caching", Fix(
        "Turn prefix caching on where requests share a prefix (vLLM --enable-prefix-caching, on by default in V1; SGLang: "
        "drop --disable-radix-cache), then check its hit rate", "--enable-prefix-caching")),
    "perf.eager_mode": ("runs without CUDA graphs (eager)", Fix(
        "Drop --enforce-eager (SGLang --disable-cuda-graph) so the engine captures CUDA graphs")),
}


def _capture_fix(said: list[PerfStatement]) -> Fix:
    """A capture ceiling said raised with a speed-up: the ceiling that helped is the fix (vLLM
    --max-cudagraph-capture-size, SGLang --cuda-graph-max-bs)."""
    raised = next(s.measures for s in said if "capture_raised" in s.measures)
    flag = "--cuda-graph-max-bs" if raised.get("capture_sglang") else "--max-cudagraph-capture-size"
    return Fix(f"Capture CUDA graphs up to the decode batch the load reaches ({raised['capture_raised']:g}, said faster than "
               f"{raised['capture_size']:g}): steps above the ceiling run eager", f"{flag} {raised['capture_raised']:g}")


@check("perf.stated", "perf", codes=list(ABOUT), needs=("stated",), running=True)
def stated(facts: Facts) -> Outcome:
    """Every perf problem stated in words is judged: by the check its numbers feed, else reported as said."""
    by_code: dict[str, list[PerfStatement]] = {}
    for s in facts.stated:
        if s.code in ABOUT and not _judged(facts, s):
            by_code.setdefault(s.code, []).append(s)
    findings = []
    for code, said in by_code.items():
        what, explains, fix = ABOUT[code]
        fix = next((WHICH[k] for k in WHICH if code == "perf.tp_mismatch" and any(k in s.measures for s in said)), fix)
        cold = next((s.measures for s in said if "cold_load_s" in s.measures), None)
        if code == "perf.high_latency" and cold is not None:
            what = (f"a request after an idle gap is said to take {cold['cold_load_s']:g} s against {cold['warm_s']:g} s warm: "
                    "the model is unloaded and loaded again")
            fix = Fix("Keep the model loaded between sparse requests (Ollama unloads it after keep_alive, 5 minutes by default; "
                      "-1 keeps it): set it on the server, or per request with \"keep_alive\"", "OLLAMA_KEEP_ALIVE=-1")
        if code == "perf.eager_mode" and any("capture_raised" in s.measures for s in said):
            what, fix = "decode batches above the CUDA graph capture ceiling are said to run eager", _capture_fix(said)
        costed = max((s.measures["setting_cost"] for s in said if "setting_cost" in s.measures), default=None)
        if costed is not None and code in COSTED:
            what, fix = f"{COSTED[code][0]} measure {costed:g}x slower in a benchmark table", COSTED[code][1]
            said = sorted(said, key=lambda s: "setting_cost" not in s.measures)  # the measured table first
        evidence = [f"{s.where}: {s.text}" for s in said[:MAX_QUOTED]]
        evidence.append("a benchmark table of the setting off and on: how the server runs now is not in the input" if costed is not None
                        else "stated in words: the figures a fix is computed from (the engine's own) are not in the input")
        # this check runs only where the log does not show the engine failed (running=True): a failure no rule places
        # beside it is what the person quoted of the perf problem they state (vLLM's "not supported on more than two
        # PCIe-only GPUs" inside a sentence on a slow link), and the statement places it
        findings.append(Finding(code, f"{what} ({len(said)} statement{'s' if len(said) > 1 else ''})", evidence, [fix],
                                severity="info", explains=[*explains, "load.unrecognized_failure"], tier=STATEMENT))
    return Outcome(findings, "" if findings else f"{len(facts.stated)} stated perf measure(s), judged by their checks")


# the log events perf.engine_log (perf.gpu_offload: the layers) judges each code by: where the log shows them, that check speaks for the code
LOGGED = {"perf.kv_cache_pressure": {"decode_retract", "preemption"}, "perf.cpu_bound": {"threads", "sampling_time", "eval_time", "ollama_cpu_share"},
          "perf.low_gpu_util": {"offload_layers", "ollama_cpu_share"}, "perf.eager_mode": {"enforce_eager"}}


def _judges(facts: Facts, e) -> bool:
    """The log event is one perf.engine_log judges: a bare "100% CPU" is `ollama ps`'s only in an Ollama paste (elsewhere
    it is `top`, or a person's "the process has 100% CPU usage", which is this statement itself)."""
    return e.kind != "ollama_cpu_share" or not e.values.get("all_cpu") or le.engine(facts) == "ollama"


def _judged(facts: Facts, s: PerfStatement) -> bool:
    """The statement's numbers (or other facts) let the code's own check judge it, or they are healthy."""
    m = facts.metrics if facts.metrics is not None and facts.metrics.available else None
    v = m.values if m else {}
    x = s.measures
    if "setting_cost" in x:  # a table of the setting off and on: no check reads the arms, the statement reports them
        return False
    if facts.logs is not None and any(e.kind in LOGGED.get(s.code, ()) and _judges(facts, e) for e in facts.logs.events):
        return True
    if s.code == "perf.kv_cache_pressure":
        # the check judges a reading: below full, full with the queue known, or a person's own "full" (their complaint)
        usage = v.get("kv_cache_usage")
        return "preemptions_total" in v or (usage is not None and (usage < FULL or bool(v.get("queued_samples")) or m.origin == "prose"))  # type: ignore[union-attr]
    if s.code == "perf.high_latency":  # (a spread between rows of one table is judged by no threshold)
        return "latency_ratio" not in x and ("ttft_mean_s" in v or "itl_mean_s" in v or "window_ttft_mean_s" in v)
    if s.code == "perf.prefix_caching_off":
        cfg = fv.maybe_deployment(facts)
        return "prefix_cache_hit_rate" in v or bool(cfg and cfg.engine in ("vllm", "sglang") and cfg.enable_prefix_caching is not None)
    if s.code == "perf.gpu_throttled":
        g = fv.maybe_gpus(facts)
        measured = g is not None and any(gpu.throttle_reasons or gpu.sm_clock_mhz for gpu in g.gpus)
        # perf.clocks reads the sentences about one GPU together: judged when one of them names a reason that counts
        same = [o.gpu for o in facts.stated if o.gpu is not None and s.gpu is not None and o.gpu.index == s.gpu.index]
        return measured or any(throttle.counts(gpu, r) for gpu in same for r in gpu.throttle_reasons)
    if s.code == "perf.cpu_bound":
        return "cpu_percent" in x and x["cpu_percent"] < cpu.BUSY_CPU
    if s.code == "perf.batching_limited":  # perf.batching judges a queue against the cache's room, and the cap
        cfg = fv.maybe_deployment(facts)
        return "cap_scaling" in x or all(k in v for k in ("running", "waiting", "kv_cache_usage")) or (
            "max_num_seqs" in x and cfg is not None and cfg.is_set("max_num_seqs"))
    if s.code == "perf.memory_overcommitted":  # perf.memory_headroom judges the share the deployment holds, and an OOM tied to it
        cfg = fv.maybe_deployment(facts)
        return bool(s.measures.get("oom_cured")) or (cfg is not None and cfg.gpu_memory_utilization is not None) or (
            s in memory_headroom.said_high(facts))
    if s.code == "perf.slow_interconnect":  # perf.interconnect judges the topology, and an nccl-tests bandwidth said in words
        g = fv.maybe_gpus(facts)
        return (g is not None and bool(g.topology)) or "busbw_gbs" in x
    if s.code == "perf.eager_mode":  # perf.engine_log judges the flag a command line or the engine's arguments give
        cfg = fv.maybe_deployment(facts)
        return cfg is not None and cfg.is_set("enforce_eager")
    if s.code == "perf.tp_mismatch":  # perf.parallelism judges a benchmark table of two TP sizes
        return "per_gpu_narrow" in x
    if s.code == "perf.low_gpu_util":
        return "cpu_offload_gb" in x or ("gpu_util_percent" in x and x["gpu_util_percent"] >= utilization.LOW) or fv.maybe_gpus(facts) is not None or (
            "offload_layers_model" in x and "offload_layers_model" in v)  # perf.gpu_offload judges the layers on the CPU
    return False
