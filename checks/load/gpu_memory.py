"""Is GPU memory held by something else? (engine logs)

vLLM V1 stops at start-up when the free memory is below what --gpu-memory-utilization asks for
("Free memory on device (31.44/47.38 GiB) on startup is less than desired ..."); older engines
only fail later (no memory for the cache blocks, KV cache too small, OOM). An nvidia-smi table
pasted into the log, or a CUDA OOM message that lists the memory of other processes, shows the
same cause. It is the root cause of those symptoms, so the finding explains them.
"""

from __future__ import annotations

import math
import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logparse import events as ev
from llm_doctor.logview import LogView

# torch's per-process report in an OOM message (CUDACachingAllocator.cpp reportProcessMemoryInfo, torch 2.1+)
PROCESS_HAS = re.compile(r"\bProcess \d+ has (\d[\d,]*(?:\.\d+)?\s*[KMGT]i?B) memory in use")
# torch < 2.1's OOM message (CUDACachingAllocator.cpp, format_size: "N bytes" below 1 KiB): "Tried to allocate X (GPU 0;
# T total capacity; A already allocated; F free; [L allowed; ]R reserved in total by PyTorch)". What is neither free nor in
# this process's PyTorch cache is its own non-PyTorch memory (a CUDA context) or another process's.
_SIZE_OR_BYTES = r"\d[\d,]*(?:\.\d+)?\s*(?:[KMGT]i?B|bytes)"
OLD_FORMAT = re.compile(r"\(GPU \d+; (?P<total>" + _SIZE_OR_BYTES + r") total capacity; (?:" + _SIZE_OR_BYTES + r") already allocated; "
                        r"(?P<free>" + _SIZE_OR_BYTES + r") free; (?:(?:" + _SIZE_OR_BYTES + r") allowed; )?"
                        r"(?P<reserved>" + _SIZE_OR_BYTES + r") reserved in total by PyTorch\)")
# torch 2.1+ (the same allocator), when it names no process (NVML unavailable): "Of the allocated memory A is allocated by
# PyTorch, [with P allocated in private pools (e.g., CUDA Graphs), ]and U is reserved by PyTorch but unallocated." (A
# counts the private pools): the process's PyTorch cache is A + U
NEW_RESERVE = re.compile(r"Of the allocated memory (?P<allocated>" + _SIZE_OR_BYTES + r") is allocated by PyTorch, (?:with .{0,80}? "
                         r"allocated in private pools \(e\.g\., CUDA Graphs\), )?and (?P<unallocated>" + _SIZE_OR_BYTES
                         + r") is reserved by PyTorch but unallocated")
CUDA_CONTEXT_GIB = 1.0  # a CUDA context with cuBLAS/NCCL workspaces, outside PyTorch's cache (checks/load/oom.py)
# Read from the PyTorch cache alone, what lies outside it may be the process's own non-PyTorch memory (NCCL buffers, custom
# kernels' workspaces: a few GiB on a large card); a third of the card or more outside it is another process's
OUTSIDE_SHARE = 1 / 3
SYMPTOMS = ["load.no_kv_cache_memory", "load.kv_cache_insufficient", "load.runtime_oom", "load.weights_oom"]
MEMORY_FAILURES = {"no_kv_memory", "kv_cache_too_small", "cuda_oom"}


@check("load.gpu_memory_free", "load", codes=["load.gpu_memory_occupied"], events=["free_memory_low", "no_kv_memory", "kv_cache_too_small", "cuda_oom"])
def gpu_memory_free(facts: Facts, log: LogView) -> Outcome:
    """The GPU memory the engine asks for is free when it starts."""
    low = log.events("free_memory_low")
    if low:
        return Outcome([_free_low(facts, log, le.wrapped(low))])
    failing = [e for e in log.events() if e.kind in MEMORY_FAILURES]
    if not failing:
        return Outcome(detail="no sign of memory held by other processes")
    for e in failing:
        if e.kind == "cuda_oom":
            finding = _oom_others(facts, e)
            if finding:
                return Outcome([finding])
    finding = _smi_table(facts, log, failing)
    return Outcome([finding] if finding else [], "" if finding else "no sign of memory held by other processes")


def _move(facts: Facts) -> Fix:
    """Stop the other process, or move to a GPU that NVML shows with no process on it (the one
    with the most free memory); without GPU facts, the command that lists them."""
    stop = "Stop the other process on this GPU (see `nvidia-smi --query-compute-apps=pid,used_memory --format=csv`) or move this engine to a free GPU"
    gpus = facts.gpus.gpus if facts.gpus else []
    idle = [g for g in gpus if not g.processes and g.memory_free_mib is not None and not g.lost]
    if idle:
        best = max(idle, key=lambda g: g.memory_free_mib or 0)
        return Fix(f"{stop}: GPU {best.index} has no process and {best.memory_free_mib:.0f} MiB free", f"CUDA_VISIBLE_DEVICES={best.index}")
    return Fix(f"{stop}: a free GPU shows little memory used and no process", "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv")


def _fixes(facts: Facts, free_gib: float, total_gib: float) -> list[Fix]:
    fit = math.floor((free_gib / total_gib - 0.02) * 100) / 100 if total_gib else 0
    fixes = [_move(facts)]
    if fit > 0.05:
        fixes.append(Fix(f"Or ask only for what is free ({free_gib:.2f} of {total_gib:.2f} GiB)",
                         f"--gpu-memory-utilization {fit:.2f}"))
    return fixes


def _free_low(facts: Facts, log: LogView, pieces: list) -> Finding:
    v = le.joined_values(pieces)
    free, total = float(v.get("free", 0)), float(v.get("total", 0))  # type: ignore[arg-type]
    util, requested = v.get("util"), v.get("requested")
    evidence = le.evidence(pieces) + log.earlier_runs()
    if total:
        asked = f"; it asked for {requested} GiB (utilization {util})" if requested is not None else ""
        evidence.append(f"{total - free:.2f} GiB of {total:.2f} GiB is in use before the engine starts{asked}")
    title = (f"only {free:g} GiB of {total:g} GiB is free at start-up: other processes hold the GPU" if total
             else "the GPUs are already taken by other processes or models")  # the log gave no sizes
    return Finding("load.gpu_memory_occupied", title,
                   evidence, _fixes(facts, free, total), explains=SYMPTOMS + le.CLIENT_SYMPTOMS)


def _oom_others(facts: Facts, e) -> Finding | None:
    """Memory the OOM message says other processes hold: the total less the free and this process's
    ("Including non-PyTorch memory, this process has X memory in use"); or, where torch lists every
    process on the GPU from NVML instead ("Process 1234 has X memory in use. ", c10/cuda/
    CUDACachingAllocator.cpp reportProcessMemoryInfo), all but the largest of them: this process is
    one of them, so the others hold at least that much."""
    v = e.values
    total, free, mine = v.get("total"), v.get("free"), v.get("this_process")
    text = " ".join(e.lines)
    old = OLD_FORMAT.search(text)
    if old is not None and mine is None:
        reserved = _gib(old["reserved"])
        return _outside_cache(facts, e, _gib(old["total"]), _gib(old["free"]), reserved)
    if not all(isinstance(x, (int, float)) for x in (total, free)):
        return None
    listed = [ev.to_number(m) for m in PROCESS_HAS.findall(text)]
    sizes = [float(x) for x in listed if isinstance(x, (int, float))]
    held = NEW_RESERVE.search(text)
    if mine is None and not sizes and held is not None:
        reserved = _gib(held["allocated"]) + _gib(held["unallocated"])
        return _outside_cache(facts, e, float(total), float(free), reserved)  # type: ignore[arg-type]
    if isinstance(mine, (int, float)):
        others = float(total) - float(free) - float(mine)  # type: ignore[arg-type]
        whose = f"this process: {mine} GiB"
    elif len(sizes) >= 2:
        others = sum(sizes) - max(sizes)
        whose = f"{len(sizes)} processes listed, the largest {max(sizes):g} GiB taken as this one"
    else:
        return None
    if others < max(2.0, 0.1 * float(total)):  # type: ignore[arg-type]
        return None
    evidence = le.evidence([e]) + [f"{others:.2f} GiB of {total} GiB is held by other processes ({whose})"]
    return Finding("load.gpu_memory_occupied", f"other processes hold {others:.1f} GiB of this GPU", evidence,
                   _fixes(facts, float(total) - others, float(total)),  # type: ignore[arg-type]
                   explains=SYMPTOMS + le.CLIENT_SYMPTOMS)


def _gib(size: str) -> float:
    """'10.56 MiB' -> GiB; '0 bytes' -> 0."""
    if size.strip().endswith("bytes"):
        return float(size.split()[0].replace(",", "")) / 1024**3
    number = ev.to_number(size)
    return float(number) if isinstance(number, (int, float)) else 0.0


def _outside_cache(facts: Facts, e, total: float, free: float, reserved: float) -> Finding | None:
    """An OOM message that names no process: the GPU's total less its free memory and this process's PyTorch cache is
    held outside that cache. A third of the card or more (OUTSIDE_SHARE), beyond a CUDA context, is another process's,
    unless the engine allocates outside PyTorch itself (LMDeploy's TurboMind, TensorRT-LLM: le.FREE_MEMORY_SHARE)."""
    if le.engine(facts) in le.FREE_MEMORY_SHARE:
        return None
    outside = total - free - reserved
    others = outside - CUDA_CONTEXT_GIB
    if total <= 0 or others < max(2.0, OUTSIDE_SHARE * total):
        return None
    evidence = le.evidence([e]) + [f"{outside:.2f} GiB of the {total:g} GiB GPU is neither free ({free:.2f} GiB) nor "
                                   f"in this process's PyTorch cache ({reserved:.2f} GiB reserved): beyond a CUDA context, "
                                   "another process holds it"]
    return Finding("load.gpu_memory_occupied", f"other processes hold about {others:.1f} GiB of this GPU", evidence,
                   _fixes(facts, total - others, total), explains=SYMPTOMS + le.CLIENT_SYMPTOMS)


def _smi_table(facts: Facts, log: LogView, failing: list) -> Finding | None:
    """An nvidia-smi table in the log: memory in use before/while the engine failed."""
    s = log.logs.setup
    if not (s.smi_used_mib and s.smi_total_mib):
        return None
    util = facts.deployment.gpu_memory_utilization if facts.deployment else None
    budget_mib = (util or 0.9) * s.smi_total_mib
    per_gpu: dict[str, list[int]] = {}
    for key, mib in s.smi_processes.items():
        per_gpu.setdefault(key.split(":")[0], []).append(mib)
    shared = any(len(v) >= 2 for v in per_gpu.values())
    if not (shared or s.smi_used_mib >= 0.5 * budget_mib) or s.smi_used_mib < 1024:
        return None
    evidence = le.evidence(failing[-1:]) + [
        f"nvidia-smi in the log shows {s.smi_used_mib} MiB of {s.smi_total_mib} MiB in use"
        + (f" by {sum(len(v) for v in per_gpu.values())} processes" if per_gpu else "")
        + (f"; this engine's budget is {budget_mib:.0f} MiB (gpu_memory_utilization {util or 0.9:g})")
    ]
    free_gib = (s.smi_total_mib - s.smi_used_mib) / 1024
    return Finding("load.gpu_memory_occupied", "another process holds GPU memory this engine counted on", evidence,
                   _fixes(facts, free_gib, s.smi_total_mib / 1024), explains=SYMPTOMS + le.CLIENT_SYMPTOMS)
