"""Is the host CPU the bottleneck? (perf.cpu_bound)

The GPU waits when the CPU cannot keep up: tokenization, scheduling and detokenization run on the
CPU (vLLM's API server and engine core each want a core, plus one per GPU worker), a container can
be capped to fewer CPUs than that, and llama.cpp given more threads than physical cores spends
its time switching. Judged only where an engine runs (a busy host without an engine is not ours
to judge). Reads host facts, the engine process/config and the GPU utilization.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

BUSY_CPU = 90.0
ABSURD_THREADS = 256


@check("perf.host_cpu", "perf", codes=["perf.cpu_bound"], any_of=("host", "deployment"), running=True)
def host_cpu(facts: Facts) -> Outcome:
    """The host has CPU to spare for the engine (not saturated, not capped below its workers)."""
    cfg = fv.maybe_deployment(facts)
    h = facts.host
    running = bool(h and h.processes)
    if cfg is None and not running:
        raise NotApplicable("no engine running here and no engine config: CPU load is not the engine's")
    if h is None and not (cfg and cfg.engine == "llamacpp"):
        raise NotApplicable("no host facts (CPU count, load, cgroup limits) to judge the CPU by")
    findings = [f for f in (_threads(cfg, h), _cgroup(cfg, h), _saturated(facts, cfg, h) if running else None) if f]
    return Outcome(findings, "" if findings else "CPU not saturated")


def _threads(cfg, h) -> Finding | None:
    if cfg is None or cfg.engine != "llamacpp":
        return None
    raw = cfg.extra.get("threads") or cfg.extra.get("t") or cfg.extra.get("--threads") or cfg.extra.get("-t")
    if raw is None or not str(raw).isdigit():
        return None
    threads = int(raw)
    physical = h.cpu_physical if h and h.cpu_physical else None
    if physical and threads > physical:
        fix = Fix("Use about one thread per physical (performance) core; threads are CPU threads, not CUDA cores", f"-t {physical}")
    elif physical is None and threads > ABSURD_THREADS:
        # the host's cores are not known here: llama.cpp's own default is one thread per physical core
        fix = Fix(f"Drop -t {threads}: llama.cpp then starts one thread per physical core (threads are CPU threads, not CUDA cores)")
    else:
        return None
    evidence = [f"llama.cpp threads (-t) = {threads}"] + ([f"host: {h.cpu_physical} physical cores, {h.cpu_count} logical"] if physical else [])
    return Finding("perf.cpu_bound", f"-t {threads} asks for more CPU threads than the host has physical cores", evidence, [fix])


def _cgroup(cfg, h) -> Finding | None:
    if h is None or not h.cgroup_cpu_limit or cfg is None:
        return None
    need = fv.world_size(cfg) + 2  # a core per GPU worker, the API server and the engine core
    if h.cgroup_cpu_limit >= need:
        return None
    return Finding("perf.cpu_bound", f"the container may use {h.cgroup_cpu_limit:g} CPUs; the engine wants about {need}",
                   [f"cgroup CPU limit {h.cgroup_cpu_limit:g}", f"TP x PP = {fv.world_size(cfg)} GPU workers + API server + engine core"],
                   [Fix(f"Give the container at least {need} CPUs", f"docker run --cpus {need} ... (Kubernetes: resources.limits.cpu: {need})")],
                   explains=["perf.low_gpu_util", "perf.high_latency"])


def _saturated(facts: Facts, cfg, h) -> Finding | None:
    if h is None or not (h.cpu_count or h.cpu_percent is not None):  # a pasted top may not say how many CPUs
        return None
    busy = (h.cpu_percent or 0) >= BUSY_CPU or bool(h.cpu_count and (h.load_avg_1m or 0) >= h.cpu_count)
    if not busy:
        return None
    said = [f"host CPU {h.cpu_percent:g}% busy"] if h.cpu_percent is not None else []
    if h.load_avg_1m is not None:
        said.append(f"load average {h.load_avg_1m:g}" + (f" on {h.cpu_count} CPUs" if h.cpu_count else ""))
    evidence = [", ".join(said)]
    g = facts.gpus
    if g and g.available:
        utils = [x.util_gpu.mean for x in g.gpus if x.util_gpu]
        if utils:
            evidence.append(f"GPU utilization mean {sum(utils) / len(utils):.0f}% meanwhile")
            if min(utils) >= 80:
                return None  # the GPUs are busy: the CPU is not what holds them back
    for p in h.processes[:3]:
        evidence.append(f"engine pid {p.pid} ({p.engine}): {p.num_threads or '?'} threads, {p.cpu_percent or '?'}% CPU")
    need = fv.world_size(cfg) + 2 if cfg else 4
    return Finding("perf.cpu_bound", "the host CPU is saturated while the engine serves",
                   evidence, [Fix("Free or add CPU cores for the engine (other CPU-heavy processes, or a bigger CPU share: "
                                      "add to the `docker run` command)", f"--cpus {max(need, (h.cpu_count or 0) + 2)}"),
                              Fix("Pin the engine's threads to fewer OpenMP threads per worker", "OMP_NUM_THREADS=1")],
                   explains=["perf.low_gpu_util", "perf.high_latency"])
