"""GPU facts for the load layer: can the doctor see the GPUs at all, does another process hold
memory on the GPUs the engine wants (load.gpu_memory_occupied), and is a GPU lost or failing
(load.gpu_fault) — from NVML on a live box or from saved nvidia-smi outputs.

Memory held by others is judged against what the engine will ask for
(gpu_memory_utilization x total): a few hundred MiB of a desktop session do not matter, 20 GiB
of a forgotten notebook kernel do. Processes of the engine itself (its pid and its workers') are
not "others".
"""

from __future__ import annotations

import math
import re

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

MIN_OTHER_MIB = 512
ENGINE_NAMES = re.compile(r"python|ray::|vllm|sglang|text-generation|llama|ollama|trtllm|tritonserver", re.I)
DEFAULT_UTIL = {"vllm": 0.9, "sglang": 0.88, "tgi": 1.0, "trtllm": 0.9}
SYMPTOMS = ["load.no_kv_cache_memory", "load.kv_cache_insufficient", "load.runtime_oom", "load.weights_oom"]


@check("load.gpu_facts", "load", codes=["load.gpu_not_visible"])
def gpu_facts(facts: Facts) -> Outcome:
    """The GPUs can be read (NVML, or saved nvidia-smi outputs)."""
    g = facts.gpus
    if g is None:
        raise NotApplicable("GPU facts were not collected")
    if g.available:
        names = sorted({x.name for x in g.gpus if x.name})
        mem = sorted({int(x.memory_total_mib) for x in g.gpus if x.memory_total_mib})
        parts = [f"{len(g.gpus)}x {', '.join(names) or 'GPU'}" + (f" ({', '.join(f'{m} MiB' for m in mem)})" if mem else ""),
                 f"via {g.source}"]
        if g.driver_version:
            parts.append(f"driver {g.driver_version}" + (f", CUDA {g.cuda_version}" if g.cuda_version else ""))
        utils = [x.util_gpu.mean for x in g.gpus if x.util_gpu]
        if utils:
            parts.append(f"utilization mean {sum(utils) / len(utils):.0f}%")
        return Outcome(detail="; ".join(parts))
    engines = [p for p in (facts.host.processes if facts.host else []) if p.engine not in ("ollama", "llamacpp")]
    severity = "error" if engines else "info"
    title = ("an inference engine runs here but no NVIDIA GPU is visible: " if engines else "no NVIDIA GPU visible on this host: ") + g.reason
    evidence = [f"NVML: {g.reason}"] + [f"engine pid {p.pid}: {p.cmdline[:200]}" for p in engines[:2]]
    fixes = [Fix("Check the driver and the devices (in a container: --gpus all / the NVIDIA container runtime)", "nvidia-smi")] if engines else []
    return Outcome([Finding("load.gpu_not_visible", title, evidence, fixes, severity=severity)],
                   detail="GPU checks skipped: " + g.reason)


@check("load.gpu_processes", "load", codes=["load.gpu_memory_occupied"], needs=("gpus",), per_node=True)
def gpu_processes(facts: Facts) -> Outcome:
    """No other process holds the GPU memory the engine asks for."""
    g = fv.gpus(facts)
    cfg = fv.maybe_deployment(facts)
    engine_pids = set()
    for p in facts.host.processes if facts.host else []:
        engine_pids |= {p.pid, *p.children}
    if cfg is None and not engine_pids:
        raise NotApplicable("no engine to compare with (no launch command, log or engine process)")
    wanted = fv.engine_gpus(cfg, g)
    util = (cfg.gpu_memory_utilization if cfg else None) or DEFAULT_UTIL.get(cfg.engine if cfg else "", 0.9)
    evidence, holders, short = [], [], []
    for gpu in wanted:
        if not gpu.memory_total_mib:
            continue
        if engine_pids:
            others = [p for p in gpu.processes if p.pid not in engine_pids and (p.used_mib or 0) >= MIN_OTHER_MIB]
            held = sum(p.used_mib or 0 for p in others)
        else:  # a saved table: the memory in use may be the engine's own; judge only what is plainly not
            if any(ENGINE_NAMES.search(p.name or "") for p in gpu.processes):
                continue
            others = [p for p in gpu.processes if (p.used_mib or 0) >= MIN_OTHER_MIB]
            held = gpu.memory_used_mib or 0
        requested = util * gpu.memory_total_mib
        free_for_engine = gpu.memory_total_mib - held
        if held < MIN_OTHER_MIB or free_for_engine >= requested:
            continue
        short.append((gpu, free_for_engine))
        holders += others
        evidence.append(f"GPU{gpu.index} {gpu.name}: {held:.0f} MiB of {gpu.memory_total_mib:.0f} MiB held by other processes; "
                        f"the engine asks for {util:g} x {gpu.memory_total_mib:.0f} = {requested:.0f} MiB")
        evidence += [f"  GPU{gpu.index} pid {p.pid} {p.name or '?'}: {p.used_mib:.0f} MiB" + (f" ({p.cmdline[:120]})" if p.cmdline else "")
                     for p in others[:5]]
    if not short:
        return Outcome(detail=f"the {len(wanted)} GPU(s) the engine wants are free enough")
    gpu, free_mib = min(short, key=lambda t: t[1] / (t[0].memory_total_mib or 1))
    fit = math.floor((free_mib / gpu.memory_total_mib - 0.02) * 100) / 100
    fixes = []
    pids = list(dict.fromkeys(p.pid for p in holders))
    if pids:
        fixes.append(Fix("Stop the process(es) holding the GPU(s)", "kill " + " ".join(map(str, pids[:8]))))
    busy = {x.index for x, _ in short}
    free_gpus = [x.index for x in g.gpus if x.index not in busy and x not in wanted and x.memory_total_mib and (x.memory_used_mib or 0) < MIN_OTHER_MIB]
    if len(free_gpus) >= len(busy):
        fixes.append(Fix("Or run the engine on GPUs nobody holds", f"CUDA_VISIBLE_DEVICES={','.join(map(str, free_gpus[: len(wanted)]))}"))
    if fit > 0.05:
        fixes.append(Fix(f"Or ask only for what is free ({free_mib / 1024:.1f} GiB of GPU{gpu.index})",
                         f"{fv.flag('mem', cfg.engine if cfg else 'vllm')} {fit:.2f}"))
    title = (f"other processes hold memory on GPU {','.join(str(x.index) for x, _ in short)}: "
             f"the engine cannot get its {util:g} share" + (f" ({', '.join(f'pid {p}' for p in pids[:4])})" if pids else ""))
    return Outcome([Finding("load.gpu_memory_occupied", title, evidence, fixes, explains=SYMPTOMS)])


@check("load.gpu_health", "load", codes=["load.gpu_fault"], needs=("gpus",), per_node=True)
def gpu_health(facts: Facts) -> Outcome:
    """No GPU is lost, with uncorrectable ECC errors, or pending page retirement/row remapping."""
    g = fv.gpus(facts)
    bad = []
    for x in g.gpus:
        if x.lost:
            bad.append((x, f"GPU{x.index} {x.bus_id or ''}: does not answer NVML (GPU is lost / fallen off the bus)"))
        if x.ecc_uncorrected_volatile:
            bad.append((x, f"GPU{x.index}: {x.ecc_uncorrected_volatile} uncorrectable ECC error(s) since the last driver load"))
        if x.remapped_rows_pending:
            bad.append((x, f"GPU{x.index}: remapped rows pending (a reset is needed to apply them)"))
        if x.retired_pages_pending:
            bad.append((x, f"GPU{x.index}: retired pages pending (a reset is needed to retire them)"))
    if not bad:
        return Outcome(detail="no lost GPU, no uncorrectable ECC error")
    ids = ",".join(dict.fromkeys(str(x.index) for x, _ in bad))
    return Outcome([Finding("load.gpu_fault", f"GPU hardware fault on GPU {ids}", [b for _, b in bad],
                            [Fix("Drain the GPU and reset it (then check `nvidia-smi -q -d ECC,ROW_REMAPPER`); replace it if errors return",
                                 f"sudo nvidia-smi -r -i {bad[0][0].index}")],
                            explains=["load.runtime_oom", "load.nccl_failed"])])
