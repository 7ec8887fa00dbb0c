"""Was the engine killed for host RAM? (OOM killer, cgroup / Kubernetes OOMKilled, exit 137, Ray's
memory monitor). A bare `Killed` line is the shell reporting SIGKILL: host OOM when nothing else
failed, but SGLang prints it after any child failure, so then it is only mentioned.

Ollama's refusal before loading ("model requires more system memory (X) than is available (Y)",
llm/server.go: the model's estimated size less what fits in VRAM, against free RAM and swap) kills
nothing but names host RAM as what ran short: load.host_oom, with load.weights_oom beside it (the
model is too large for this machine). The corpus labels disagree on which comes first (rounds x-f
host_oom, round g weights_oom); the two findings carry the same computed shortfall either way."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


@check("load.host_memory", "load", codes=["load.host_oom", "load.weights_oom"], events=["host_oom", "killed", "swap_space_large", "load_failed", "cuda_oom"])
def host_memory(facts: Facts, log: LogView) -> Outcome:
    """The engine was not killed for host memory."""
    strong = log.events("host_oom")
    killed = log.events("killed")
    others = log.other_failures() | (log.fatal_kinds() - {"host_oom", "killed", "load_failed"})
    if not strong and not (killed and not others):
        return Outcome(detail="no host out-of-memory kill in the log")
    found = strong or killed
    refused = [e for e in strong if "required" in e.values and "available" in e.values]
    if refused:
        return Outcome(_refused(log, refused))
    evidence = le.evidence(found) + log.earlier_runs()
    fixes = [Fix("Give the container/pod more memory (Kubernetes: resources.limits.memory; Docker: --memory)")]
    swap = log.events("swap_space_large")
    if swap:
        evidence += le.evidence(swap, 1)
        fixes.insert(0, Fix("Reserve less CPU swap space per GPU worker (vLLM default 4 GiB each)", "--swap-space 1"))
    req = le.first_value(found, "required")
    if req is not None:
        fixes.insert(0, Fix(f"The model needs {req} GiB of system memory: use a smaller or more quantized model"))
    title = "the engine was killed for host memory"
    if le.engine(facts) in ("ollama", "llamacpp"):  # GGUF engines read the weights through mmap, not a staging load
        if strong and le.engine(facts) == "ollama":  # Ollama's own check before loading, not a kill
            title = "the model does not fit in system memory (RAM and the GPUs together)"
        if req is None:
            fixes.insert(0, Fix("Use a smaller model or a smaller quantization (a lower Q-level of the same model)"))
        fixes.append(Fix("Or a shorter context (num_ctx / -c): the KV cache is allocated next to the weights"))
    else:
        fixes.append(Fix("Load weights without staging them in RAM", "--load-format safetensors"))
    return Outcome([Finding("load.host_oom", title, evidence, fixes, explains=_driver_ooms(log, strong) + le.CLIENT_SYMPTOMS)])


# the NVIDIA kernel module's own words (its "NVRM:" log prefix, the NV_ERR_NO_MEMORY status of its allocator,
# src/nvidia/inc/kernel/.../nvstatuscodes.h): an allocation the driver makes in the kernel, of system memory on
# a unified-memory GPU (GB10, Grace Hopper) and for every pinned or mapped buffer
NVRM_OOM = re.compile(r"\bNVRM\b.*out of memory|\bNV_ERR_NO_MEMORY\b", re.I)


def _driver_ooms(log: LogView, strong: list) -> list[str]:
    """The GPU out-of-memory codes this host kill explains: when the kernel's OOM killer ran and every GPU
    out-of-memory in the log is the NVIDIA kernel driver's own, host RAM ran out, not the GPU's memory."""
    ooms = log.events("cuda_oom")
    if not strong or not ooms or not all(NVRM_OOM.search(e.lines[0]) for e in ooms):
        return []
    return ["load.runtime_oom", "load.weights_oom"]


def _refused(log: LogView, refused: list) -> list[Finding]:
    """The engine's own check found the model larger than the memory it may use (RAM and GPUs),
    by the shortfall its two numbers give."""
    e = refused[-1]  # the last attempt is what failed
    req, avail = float(e.values["required"]), float(e.values["available"])
    short = req - avail
    evidence = le.evidence([e]) + [f"needs {req:g} GiB of system memory, {avail:g} GiB available: {short:.1f} GiB short"] + log.earlier_runs()
    smaller = Fix(f"Use a model or quantization at least {short:.1f} GiB smaller (a lower Q-level of the same model, or fewer parameters)")
    fixes = [Fix(f"Free {short:.1f} GiB of RAM (stop other processes; free swap counts too), or give the container more memory"),
             Fix("Or add GPU memory, so less of the model stays in RAM"), Fix(f"Or: {smaller.summary[0].lower()}{smaller.summary[1:]}"),
             Fix("Or a shorter context (num_ctx): its KV cache is part of the estimate")]
    host = Finding("load.host_oom", "the model does not fit in system memory (RAM and the GPUs together)", evidence, fixes,
                   explains=["load.weights_oom"] + le.CLIENT_SYMPTOMS)
    weights = Finding("load.weights_oom", f"the model is {short:.1f} GiB too large for this machine's memory", le.evidence([e], 1), [smaller])
    return [host, weights]
