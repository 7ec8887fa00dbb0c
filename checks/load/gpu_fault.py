"""A GPU hardware or driver fault: Xid errors, uncorrectable ECC, a GPU fallen off the bus. An
illegal memory access is usually a kernel bug, not hardware: it counts only alongside Xid/ECC."""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


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
        _reset(facts, le.first_value(found, "pci")),
    ]
    title = f"GPU hardware/driver fault{f' (Xid {xid})' if xid else ''}"
    # a GPU the driver lost (Xid 79 fallen off the bus, Xid 119 its GSP stopped answering) is one no process sees any more:
    # nvidia-smi's "couldn't communicate with the NVIDIA driver" and CUDA's "no CUDA-capable device" after it are the symptom
    explains = ["load.nccl_failed", "load.runtime_oom", "load.gpu_not_visible", *le.CLIENT_SYMPTOMS]
    return Outcome([Finding("load.gpu_fault", title, evidence, fixes, explains=explains)])


def _reset(facts: Facts, pci: object) -> Fix:
    """Reset the faulty GPU: the one NVML shows lost or with uncorrected ECC errors, else the bus id
    the Xid line names (nvidia-smi -i takes either); without one, say how to find it."""
    gpus = facts.gpus.gpus if facts.gpus else []
    bad = next((g for g in gpus if g.lost or g.ecc_uncorrected_volatile), None)
    target = str(bad.index) if bad else _bus_id(str(pci or ""))
    summary = "Drain the node and reset the GPU (or have it replaced if errors repeat)"
    if target:
        return Fix(summary, f"nvidia-smi -r -i {target}")
    return Fix(summary + ": the faulty one is the GPU whose ECC counters above show uncorrected errors, or whose bus id "
               "the kernel's Xid line names; `nvidia-smi -r -i` takes its index or bus id")


def _bus_id(pci: str) -> str:
    """`PCI:0000:3b:00` (an Xid line) -> `0000:3b:00.0`, the form nvidia-smi -i takes."""
    pci = pci.removeprefix("PCI:").strip()
    return pci if not pci or "." in pci else pci + ".0"
