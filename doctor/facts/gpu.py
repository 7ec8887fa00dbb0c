"""GPU facts: from NVML on a live box, or from saved nvidia-smi outputs (table, -q, -q -x, topo -m).

Every field is optional because every source shows a different subset: the default table has no
PCIe link state, `topo -m` has nothing but the matrix, and NVML answers NotSupported per metric on
consumer cards. A check reads only what is there and says `skip` when what it needs is absent.
Names in `unsupported` are metrics the driver refused, so "not measured" is never read as "zero".
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Sampled:
    """A value sampled over the --sample window (NVML utilization is "share of time a kernel ran",
    so one reading says little; min/mean/max over seconds says whether the GPU is busy)."""

    min: float
    mean: float
    max: float
    samples: int = 1


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
    lost: bool = False  # the GPU is listed but does not answer (fallen off the bus, Xid 79)
    util_gpu: Sampled | None = None  # percent
    util_memory: Sampled | None = None  # percent
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    throttle_reasons: list[str] = field(default_factory=list)  # active, "idle" excluded
    performance_state: str = ""  # "P0" (full) .. "P8" (idle) .. "P12": nvidia-smi -q's Performance State
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    power_max_limit_w: float | None = None
    temperature_c: float | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    nvlink_active: int | None = None  # NVLink links up; 0 = none (PCIe only)
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    mig_mode: str = ""  # "Enabled" | "Disabled" | "N/A"
    persistence_mode: str = ""
    unsupported: list[str] = field(default_factory=list)


@dataclass
class GpuFacts:
    source: str = ""  # "nvml" | "nvidia-smi" | "nvidia-smi -q" | "nvidia-smi -q -x" | "nvidia-smi topo -m"
    available: bool = False
    reason: str = ""  # why not available (no driver, no NVML, no GPU)
    driver_version: str = ""
    cuda_version: str = ""
    gpus: list[Gpu] = field(default_factory=list)
    # topology[i][j]: the `nvidia-smi topo -m` level between GPU i and GPU j ("X", "NV12", "PIX",
    # "PXB", "PHB", "NODE", "SYS"); from NVML's topology common ancestor and NVLink state live.
    topology: list[list[str]] = field(default_factory=list)
    # p2p[i][j]: `topo -p2p r` / NVML P2P read status ("OK", "CNS", "GNS", "TNS", "NS", "U").
    p2p: list[list[str]] = field(default_factory=list)
    nics: list[str] = field(default_factory=list)
    sample_seconds: float | None = None

    def by_index(self, index: int) -> Gpu | None:
        return next((g for g in self.gpus if g.index == index), None)

    def merge(self, other: GpuFacts) -> None:
        """Combine another source (a table, -q, topo -m, nvlink --status of the same box) into
        this one: GPUs matched by bus id; where one side names no bus id (topo -m, nvlink
        --status), by index, in either order of the files; a field already known is kept."""
        import dataclasses

        if other.available:
            self.available, self.reason = True, ""
        elif not self.available and not self.reason:
            self.reason = other.reason
        self.source = ", ".join(s for s in dict.fromkeys([*self.source.split(", "), other.source]) if s)
        self.driver_version = self.driver_version or other.driver_version
        self.cuda_version = self.cuda_version or other.cuda_version
        self.topology = self.topology or other.topology
        self.p2p = self.p2p or other.p2p
        self.nics = self.nics or other.nics
        if self.sample_seconds is None:
            self.sample_seconds = other.sample_seconds
        for gpu in other.gpus:
            mine = next((g for g in self.gpus if g.bus_id and _bus(g.bus_id) == _bus(gpu.bus_id)), None)
            if mine is None and (same := self.by_index(gpu.index)) and not (same.bus_id and gpu.bus_id):
                mine = same
            if mine is None:
                self.gpus.append(gpu)
                continue
            for f in dataclasses.fields(Gpu):
                value = getattr(mine, f.name)
                if value in (None, "", []):
                    setattr(mine, f.name, getattr(gpu, f.name))
        self.gpus.sort(key=lambda g: g.index)


def _bus(bus_id: str) -> str:
    """'00000000:18:00.0' and '0000:18:00.0' name the same device."""
    parts = bus_id.lower().split(":")
    return ":".join(parts[-2:]) if len(parts) >= 2 else bus_id.lower()
