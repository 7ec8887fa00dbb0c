"""A GPU hardware or driver fault: Xid errors, uncorrectable ECC, a GPU fallen off the bus. An
illegal memory access is usually a kernel bug, not hardware: it counts only alongside Xid/ECC."""

from __future__ import annotations

from checks.load import log_events as le
from doctor.engine import check
from doctor.facts import Facts
from doctor.findings import Finding, Fix, Outcome
from doctor.logview import LogView


@check("load.gpu_fault", "load", codes=["load.gpu_fault"], events=["gpu_fault", "illegal_memory_access"])
def gpu_fault(facts: Facts, log: LogView) -> Outcome:
    """No GPU hardware/driver fault in the log."""
    found = log.events("gpu_fault")
    if not found:
        return Outcome(detail="no Xid/ECC fault in the log")
    xid = le.first_value(found, "xid") or le.first_value(found, "xid2")
    evidence = le.evidence(found) + log.earlier_runs()
    fixes = [
        Fix("Check the GPU's ECC counters and retired pages", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
        Fix("Check the kernel log for Xid errors", "dmesg -T | grep -i xid"),
        Fix("Drain the node and reset the GPU (or have it replaced if errors repeat)", "nvidia-smi -r -i <gpu index>"),
    ]
    title = f"GPU hardware/driver fault{f' (Xid {xid})' if xid else ''}"
    return Outcome([Finding("load.gpu_fault", title, evidence, fixes, explains=["load.nccl_failed", "load.runtime_oom", *le.CLIENT_SYMPTOMS])])
