"""Host facts: RAM, swap, /dev/shm, CPUs, cgroup limits, and the engine processes running."""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.facts.deployment import EngineConfig


@dataclass
class EngineProcess:
    pid: int
    engine: str = ""
    cmdline: str = ""
    config: EngineConfig | None = None
    env: dict[str, str] = field(default_factory=dict)
    rss_mib: float | None = None


@dataclass
class HostFacts:
    cpu_count: int | None = None
    mem_total_mib: float | None = None
    mem_available_mib: float | None = None
    swap_total_mib: float | None = None
    shm_total_mib: float | None = None
    shm_used_mib: float | None = None
    processes: list[EngineProcess] = field(default_factory=list)
