"""Did something give up on the model before it finished loading? (a launcher or router waiting N
seconds for workers, an RPC result that expired, a Kubernetes probe)."""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


@check("load.startup", "load", codes=["load.startup_timeout"], events=["startup_timeout"])
def startup(facts: Facts, log: LogView) -> Outcome:
    """The model finished loading before any watchdog or probe gave up."""
    found = log.events("startup_timeout")
    if not found:
        return Outcome(detail="no start-up timeout in the log")
    timeout = le.first_value(found, "timeout")
    longer = int(timeout) * 3 if isinstance(timeout, int) else 1800
    evidence = le.evidence(found) + log.earlier_runs()
    if isinstance(timeout, int):
        evidence.append(f"gave up after {timeout} s")
    if le.engine(facts) == "ollama":
        return Outcome([Finding("load.startup_timeout", "the model did not finish loading before Ollama or its client gave up",
                                evidence, _ollama_fixes(found), explains=le.CLIENT_SYMPTOMS)])
    fixes = [
        Fix(f"Give loading more time (router/launcher): {longer} s", f"--router-worker-startup-timeout-secs {longer}"
            if "workers" in " ".join(found[0].lines) else None),
        Fix("Kubernetes: a startupProbe with failureThreshold x periodSeconds above the load time (e.g. 60 x 10 s)"),
        Fix("Or make loading faster: local NVMe weights, safetensors, no torch.compile at start"),
    ]
    return Outcome([Finding("load.startup_timeout", "start-up took longer than a watchdog/probe allowed", evidence, fixes,
                            explains=le.CLIENT_SYMPTOMS)])


# envconfig.LoadTimeout: how long a load may stall before Ollama gives up (OLLAMA_LOAD_TIMEOUT, default 5m)
OLLAMA_LOAD_TIMEOUT_MIN = 5


def _ollama_fixes(found: list) -> list[Fix]:
    """Ollama's own watchdog (the runner made no progress for OLLAMA_LOAD_TIMEOUT), or the client closing the
    connection while the model loaded: each is lengthened where it is set."""
    fixes = []
    if any("client connection closed" in line for e in found for line in e.lines):
        fixes.append(Fix("The client gave up first: raise its request timeout, or load the model before sending work "
                         "(a request with keep_alive, e.g. `ollama run MODEL \"\"`)"))
    fixes.append(Fix(f"Give a slow load longer in the Ollama server's environment (default {OLLAMA_LOAD_TIMEOUT_MIN}m)",
                     f"OLLAMA_LOAD_TIMEOUT={OLLAMA_LOAD_TIMEOUT_MIN * 3}m"))
    fixes.append(Fix("Or make loading faster: model files on a local SSD, fewer layers on a slow GPU/CPU (num_gpu), a smaller quantization"))
    return fixes
