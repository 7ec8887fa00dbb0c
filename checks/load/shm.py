"""Is /dev/shm big enough? Docker's default 64 MB /dev/shm breaks NCCL (it cannot create its
~9.6 MB segments per peer) and PyTorch/Ray multiprocessing; the NCCL error is the symptom."""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


@check("load.shm", "load", codes=["load.shm_insufficient"], events=["shm_too_small"])
def shm(facts: Facts, log: LogView) -> Outcome:
    """/dev/shm holds the segments NCCL and the workers need."""
    found = log.events("shm_too_small")
    if not found:
        return Outcome(detail="no /dev/shm failure in the log")
    size = le.first_value(found, "segment") or le.first_value(found, "size")
    available = le.first_value(found, "available_bytes")
    evidence = le.evidence(found) + log.earlier_runs()
    if isinstance(available, int):
        evidence.append(f"/dev/shm has {available / 1024**2:.0f} MiB")
    if isinstance(size, int):
        evidence.append(f"NCCL needs segments of {size / 1024**2:.1f} MiB per peer")
    fixes = [
        Fix("Docker: share the host IPC namespace (add to the `docker run` command)", "--ipc=host"),
        Fix("Or give the container a bigger /dev/shm (add to the `docker run` command)", "--shm-size=16g"),
        Fix("Kubernetes: mount an emptyDir with medium: Memory at /dev/shm (sizeLimit: 16Gi)"),
    ]
    return Outcome([Finding("load.shm_insufficient", "/dev/shm is too small for NCCL/worker shared memory", evidence, fixes,
                            explains=["load.nccl_failed", "load.host_oom", *le.CLIENT_SYMPTOMS])])
