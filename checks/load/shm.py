"""Is /dev/shm big enough? Docker's default 64 MB /dev/shm breaks NCCL (it cannot create its
~9.6 MB segments per peer) and PyTorch/Ray multiprocessing; the NCCL error is the symptom."""

from __future__ import annotations

import math

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

# Ray's own margin over its object store (python/ray/_private/services.py: "--shm-size={:.2f}gb" of
# object_store_memory * 1.1 / 2**30)
MARGIN = 1.1


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
    fixes = [Fix("Docker: share the host IPC namespace (add to the `docker run` command)", "--ipc=host")]
    needed = size_from_log(found)
    if needed is not None:
        evidence.append(f"/dev/shm of {needed[0]} GiB: {needed[1]}")
        fixes += [
            Fix("Or give the container a bigger /dev/shm (add to the `docker run` command)", f"--shm-size={needed[0]}g"),
            Fix(f"Kubernetes: mount an emptyDir with medium: Memory at /dev/shm (sizeLimit: {needed[0]}Gi)"),
        ]
    else:  # no number to size it by: what it has now is the command that finds out
        fixes += [
            Fix("Or give the container a bigger /dev/shm (`docker run --shm-size`); the log states no size it needs, "
                "this shows what it has now", "df -h /dev/shm"),
            Fix("Kubernetes: mount an emptyDir with medium: Memory at /dev/shm"),
        ]
    return Outcome([Finding("load.shm_insufficient", "/dev/shm is too small for NCCL/worker shared memory", evidence, fixes,
                            explains=["load.nccl_failed", "load.host_oom", *le.CLIENT_SYMPTOMS])])


def size_from_log(found: list[LogEvent]) -> tuple[int, str] | None:
    """The /dev/shm the log says is needed, in whole GiB, and where the number comes from; None when it states none.
    Ray computes it itself ("you can increase /dev/shm size by passing '--shm-size=10.24gb'"); Ray's object store
    (ValueError "The configured object store size (15.03 GB) exceeds /dev/shm size (4.5 GB)", decimal GB) and a
    request that did not fit (plasma's "The request is for N bytes", PyTorch MapAllocator's "unable to mmap N bytes")
    are what /dev/shm must at least hold, with Ray's margin."""
    suggested = le.first_value(found, "suggested_gb")
    if isinstance(suggested, (int, float)) and suggested > 0:
        return math.ceil(suggested), f"what Ray's own message asks for (--shm-size={suggested}gb)"
    store = le.first_value(found, "store_gb")
    if isinstance(store, (int, float)) and store > 0:
        return math.ceil(store * 1e9 * MARGIN / le.GIB), f"Ray's object store of {store} GB and Ray's 10% margin"
    requested = le.first_value(found, "requested_bytes")
    if isinstance(requested, int) and requested > 0:
        return (max(1, math.ceil(requested * MARGIN / le.GIB)),
                f"at least the {requested} bytes the failed request asked for, and a 10% margin")
    return None
