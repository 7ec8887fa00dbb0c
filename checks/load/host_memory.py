"""Was the engine killed for host RAM? (OOM killer, cgroup / Kubernetes OOMKilled, exit 137, Ray's
memory monitor, Ollama's system-memory check). A bare `Killed` line is the shell reporting SIGKILL:
host OOM when nothing else failed, but SGLang prints it after any child failure, so then it is
only mentioned."""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


@check("load.host_memory", "load", codes=["load.host_oom"], events=["host_oom", "killed", "swap_space_large", "load_failed"])
def host_memory(facts: Facts, log: LogView) -> Outcome:
    """The engine was not killed for host memory."""
    strong = log.events("host_oom")
    killed = log.events("killed")
    others = log.other_failures() | (log.fatal_kinds() - {"host_oom", "killed", "load_failed"})
    if not strong and not (killed and not others):
        return Outcome(detail="no host out-of-memory kill in the log")
    found = strong or killed
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
    return Outcome([Finding("load.host_oom", title, evidence, fixes, explains=le.CLIENT_SYMPTOMS)])
