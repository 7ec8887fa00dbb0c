"""GPU facts: from NVML on a live box, or from saved nvidia-smi outputs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GpuProcess:
    pid: int
    used_mib: float | None = None
    name: str = ""
    cmdline: str = ""


@dataclass
class Gpu:
    index: int
    name: str = ""
    uuid: str = ""
    bus_id: str = ""
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    memory_free_mib: float | None = None
    compute_capability: str = ""
    processes: list[GpuProcess] = field(default_factory=list)


@dataclass
class GpuFacts:
    source: str = ""  # "nvml" | "nvidia-smi" | "nvidia-smi -q" | ...
    available: bool = False
    reason: str = ""  # why not available (no driver, no NVML, no GPU)
    driver_version: str = ""
    cuda_version: str = ""
    gpus: list[Gpu] = field(default_factory=list)
