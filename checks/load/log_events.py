"""Shared helpers for the checks that judge engine-log events (no check is registered here).

The events themselves come from the engine, as the LogView a check's `events=` declaration asks
for (doctor/logview.py: the run being diagnosed, the declared kinds only). Every load-layer
root cause found in a log also explains what a client saw while the server was down (refused
connections, 5xx, timeouts), so ranking puts the server's cause before those symptoms.
"""

from __future__ import annotations

from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.logview import evidence  # noqa: F401  (the checks quote events through le.evidence)

CLIENT_SYMPTOMS = ["access.connect_failed", "access.server_error", "access.timeout", "access.response_invalid", "access.not_ready"]
GIB = 1024**3


def first_value(found: list[LogEvent], key: str) -> object | None:
    for e in found:
        if key in e.values:
            return e.values[key]
    return None


def deployment_value(facts: Facts, name: str) -> object | None:
    return getattr(facts.deployment, name, None) if facts.deployment is not None else None


def engine(facts: Facts) -> str:
    """The engine: from the parsed arguments, else from what wrote the log."""
    if facts.deployment is not None and facts.deployment.engine:
        return facts.deployment.engine
    return facts.logs.engine if facts.logs else ""


def gpu_total_gib(facts: Facts) -> float | None:
    """Total memory of one GPU: as the log states it, else from the GPU facts or the GPU's name."""
    logs = facts.logs
    if logs and logs.setup.gpu_total_gib:
        return float(logs.setup.gpu_total_gib)
    if logs and logs.setup.smi_total_mib:
        return logs.setup.smi_total_mib / 1024
    if facts.gpus and facts.gpus.gpus and facts.gpus.gpus[0].memory_total_mib:
        return facts.gpus.gpus[0].memory_total_mib / 1024
    if logs and logs.setup.gpu_names:
        from llm_doctor.planning import lookup_gpu

        try:
            return lookup_gpu(logs.setup.gpu_names[0])[1] / 1024
        except ValueError:
            return None
    return None


def gpu_count(facts: Facts) -> int | None:
    """GPUs the log (or the GPU facts) show on this host."""
    logs = facts.logs
    counts = []
    if facts.gpus and facts.gpus.gpus:
        counts.append(len(facts.gpus.gpus))
    if logs:
        s = logs.setup
        if s.gpu_count:
            counts.append(s.gpu_count)
        if s.gpu_names:
            counts.append(len(s.gpu_names))
        if s.visible_devices:
            counts.append(len([d for d in s.visible_devices.split(",") if d.strip()]))
    return max(counts) if counts else None
