"""Shared helpers for the checks that judge engine-log events (no check is registered here).

Which run to judge: a log may hold several starts of the engine; the last one that failed is
the one the user is looking at, earlier failures are mentioned in the evidence. Every load-layer
root cause found in a log also explains what a client saw while the server was down (refused
connections, 5xx, timeouts), so ranking puts the server's cause before those symptoms.
"""

from __future__ import annotations

from doctor.facts import Facts
from doctor.facts.logs import LogEvent, LogFacts
from doctor.findings import NotApplicable

CLIENT_SYMPTOMS = ["access.connect_failed", "access.server_error", "access.timeout", "access.response_invalid"]
GIB = 1024**3


def logs_of(facts: Facts) -> LogFacts:
    if facts.logs is None or not facts.logs.sources:
        raise NotApplicable("no engine log given (--log, --docker, --k8s, or analyze LOG)")
    return facts.logs


def judged_run(logs: LogFacts) -> int:
    """The last run with a fatal event, else the last run."""
    fatal = [e.run for e in logs.events if e.fatal]
    return max(fatal) if fatal else logs.runs - 1


def events(facts: Facts, *kinds: str) -> list[LogEvent]:
    """Events of these kinds in the judged run (raises NotApplicable without a log)."""
    logs = logs_of(facts)
    run = judged_run(logs)
    return [e for e in logs.events if e.run == run and (not kinds or e.kind in kinds)]


def fatal_kinds(facts: Facts) -> set[str]:
    return {e.kind for e in events(facts) if e.fatal}


def evidence(found: list[LogEvent], limit: int = 4) -> list[str]:
    """The quoted lines, with where they are and how often they repeat."""
    out = []
    for e in found[:limit]:
        where = f"{e.source}:{e.line_no}" if e.source else f"line {e.line_no}"
        times = f" (x{e.count})" if e.count > 1 else ""
        for line in e.lines:
            out.append(f"{where}{times}: {line}")
    if len(found) > limit:
        out.append(f"... and {len(found) - limit} more such lines")
    return out


def earlier_runs(facts: Facts) -> list[str]:
    """One evidence line about failed earlier starts in the same log, if any."""
    logs = logs_of(facts)
    run = judged_run(logs)
    earlier = sorted({(e.run, e.kind) for e in logs.events if e.fatal and e.run < run})
    if not earlier:
        return []
    runs = sorted({r for r, _ in earlier})
    kinds = sorted({k for _, k in earlier})
    return [
        f"the log holds {logs.runs} starts of the engine; this is the last failed one "
        f"(start {run + 1}); earlier failed start(s) {', '.join(str(r + 1) for r in runs)} showed: {', '.join(kinds)}"
    ]


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
        from doctor.planning import lookup_gpu

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
