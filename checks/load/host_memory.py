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
        staged = _staging_shortfall(log)
        if staged:
            return Outcome([staged])
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


# vLLM's loader turns its prefetch off when the checkpoint exceeds 90% of the available RAM (weight_utils.py: "... and the
# checkpoint size (X GiB) exceeds 90% of available RAM (Y GiB)"): past that share the shards stream through a page cache
# that cannot hold them
RAM_SHARE = 0.9


def _staging_shortfall(log: LogView) -> Finding | None:
    """vLLM sized a checkpoint larger than its share of the available host RAM, then died before the weights were in,
    and nothing but its wrappers says so (an engine core killed while it reads the shards raises no exception): the
    host ran out of RAM staging the weights. A load that got past the weights ("Loading weights took") or failed with
    an error of its own is judged by that error."""
    s = log.setup
    ckpt, ram = s.checkpoint_gib, s.available_ram_gib
    if not ckpt or not ram or ckpt <= RAM_SHARE * ram or s.weights_gib is not None or not log.died_unexplained():
        return None
    evidence = [f"vLLM's loader logged a {ckpt:g} GiB checkpoint and {ram:g} GiB of available host RAM: "
                f"more than the {RAM_SHARE:.0%} of it the loader streams through the page cache",
                "the engine then died loading the weights with no error of its own (only the wrappers' lines)"]
    limit = max(1, int(ram / 4)) * 1024**3  # a staging buffer well inside the RAM left
    fixes = [Fix("Stream the weights through a bounded buffer instead of the page cache (vLLM's Run:ai model streamer)",
                 f"--load-format runai_streamer --model-loader-extra-config '{{\"memory_limit\": {limit}}}'"),
             Fix(f"Or give the host/container more RAM than the {ckpt:g} GiB checkpoint, or stop other memory users"),
             Fix("Or a smaller (quantized) checkpoint")]
    return Finding("load.host_oom", "the host ran out of RAM loading the checkpoint", evidence, fixes,
                   explains=["load.unrecognized_failure", *le.CLIENT_SYMPTOMS])
