"""Did something give up on the model before it finished loading? (a launcher or router waiting N
seconds for workers, an RPC result that expired, a Kubernetes probe)."""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


@check("load.startup", "load", codes=["load.startup_timeout"], events=["startup_timeout", "client_timeout"])
def startup(facts: Facts, log: LogView) -> Outcome:
    """The model finished loading before any watchdog or probe gave up."""
    found = log.events("startup_timeout")
    if not found:
        return _client_gave_up(log) or Outcome(detail="no start-up timeout in the log")
    timeout = le.first_value(found, "timeout")
    longer = int(timeout) * 3 if isinstance(timeout, int) else 1800
    evidence = le.evidence(found) + log.earlier_runs()
    if isinstance(timeout, int):
        evidence.append(f"gave up after {timeout} s")
    if le.engine(facts) == "ollama":
        return Outcome([Finding("load.startup_timeout", "the model did not finish loading before Ollama or its client gave up",
                                evidence, _ollama_fixes(found), explains=le.CLIENT_SYMPTOMS)])
    if any("response from front-end process" in line for e in found for line in e.lines):
        return Outcome([Finding("load.startup_timeout", "vLLM's engine core gave up waiting for its front-end process",
                                evidence, _handshake_fixes(), explains=le.CLIENT_SYMPTOMS)])
    if any("ping health check" in line for e in found for line in e.lines):
        return Outcome([Finding("load.startup_timeout", "SageMaker gave up on the container before its model server answered /ping",
                                evidence, _sagemaker_fixes(longer), explains=le.CLIENT_SYMPTOMS)])
    fixes = [
        Fix(f"Give loading more time (router/launcher): {longer} s", f"--router-worker-startup-timeout-secs {longer}"
            if "workers" in " ".join(found[0].lines) else None),
        Fix("Kubernetes: a startupProbe with failureThreshold x periodSeconds above the load time (e.g. 60 x 10 s)"),
        Fix("Or make loading faster: local NVMe weights, safetensors, no torch.compile at start"),
    ]
    return Outcome([Finding("load.startup_timeout", "start-up took longer than a watchdog/probe allowed", evidence, fixes,
                            explains=le.CLIENT_SYMPTOMS)])


def _handshake_fixes() -> list[Fix]:
    """vLLM V1's start-up handshake (v1/engine/core.py startup_handshake, HANDSHAKE_TIMEOUT_MINS): each engine core
    registers with its front-end (the API server; with data parallelism DP rank 0's, maybe on another node) and waits
    a fixed 5 minutes for the answer; the wait is no setting, so the fix is what kept the front-end from answering."""
    return [
        Fix("Read the front-end's log (the API server, or DP rank 0's node) for an error it raised first: that process "
            "died, and its error is the cause"),
        Fix("Or the other ranks were still loading: put the weights on local disk (NFS read by every DP rank at once "
            "is slow), or start the headless DP ranks once rank 0 is up"),
        Fix("With nodes apart: check that every node reaches rank 0's --data-parallel-address and --data-parallel-rpc-port"),
    ]


def _sagemaker_fixes(longer: int) -> list[Fix]:
    """SageMaker's hosting health check (the endpoint fails once /ping has not answered within the
    container's start-up timeout): the container either died first, which its own log says, or loads
    too slowly, which the deploy's timeouts cover (sagemaker-python-sdk Model.deploy)."""
    return [
        Fix("Read the endpoint's CloudWatch log (/aws/sagemaker/Endpoints/<endpoint>) for an error the model server raised "
            "first: then that error is the cause"),
        Fix(f"Or give a slow load longer: Model.deploy(container_startup_health_check_timeout={min(longer, 3600)}, "
            "model_data_download_timeout=...) (each at most 3600 s)"),
        Fix("Or make loading faster: a smaller or quantized model, an instance type with more GPU memory"),
    ]


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


# the engines that answer GET /health with 200 only once the model is loaded
HEALTH_ROUTE = ("vllm", "sglang", "tgi", "llamacpp")


def _root(base_url: str) -> str:
    """http://host:8000/v1 -> http://host:8000 (the health route sits at the server's root)."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def _client_gave_up(log: LogView) -> Outcome | None:
    """A client's request timed out while the engine's own log, in the same paste, shows its last start
    never reaching ready: the client asked a server that was still loading the model."""
    logs = log.logs
    timeouts = log.events("client_timeout")
    if not timeouts or not logs.started or logs.ready or logs.engine in ("", "client"):
        return None
    evidence = le.evidence(timeouts) + [f"the {logs.engine} log shows its last start never ready to serve when the request timed out"]
    health = f"curl -sf {_root(logs.setup.base_url)}/health" if logs.setup.base_url and logs.engine in HEALTH_ROUTE else None
    fixes = [
        Fix("Send requests only once the server says it is ready: poll its health endpoint first", health),
        Fix("Or give the client a timeout longer than the model's load (the client's timeout= / request_timeout setting)"),
    ]
    return Outcome([Finding("load.startup_timeout", "a client gave up while the server was still loading the model", evidence, fixes,
                            explains=le.CLIENT_SYMPTOMS)])
