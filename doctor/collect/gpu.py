"""GPU facts: live from NVML (nvidia-ml-py, `import pynvml`), or from saved nvidia-smi outputs.

NVML is what nvidia-smi itself reads, so a live run sees what an engineer would with `nvidia-smi`,
`nvidia-smi -q` and `topo -m` at once. Every metric is asked separately: consumer cards, old
drivers and containers answer NotSupported / NoPermission / FunctionNotFound for some, and one
refusal must only mark that metric "unsupported", never lose the GPU. No library, no driver, no
GPU: GpuFacts(available=False, reason=...) and the other layers go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.gpu import Gpu, GpuFacts, GpuProcess, Sampled
from llm_doctor.facts.inputs import InputGap

MIB = 1024 * 1024
SAMPLE_INTERVAL_S = 0.25
MAX_SAMPLES = 200

# NVML clocks-event (throttle) reason bits -> the names nvidia-smi -q prints (snake_case)
THROTTLE_BITS = {
    0x1: "idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# nvmlGpuTopologyLevel_t -> the `topo -m` legend
TOPOLOGY_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlGpuP2PStatus_t -> the `topo -p2p` legend
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "NS", 5: "NS", 6: "U"}
NVML_P2P_CAPS_INDEX_READ = 0  # pynvml defines it as the tuple (0,) by a stray comma


def collect(sample_s: float = 3.0, deadline: Deadline | None = None) -> GpuFacts:
    try:
        import pynvml
    except ImportError:
        return GpuFacts(source="nvml", reason="nvidia-ml-py is not installed, so NVML cannot be read")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return GpuFacts(source="nvml", reason=_init_reason(pynvml, exc))
    except OSError as exc:
        return GpuFacts(source="nvml", reason=f"NVML could not be loaded: {exc}")
    try:
        return _read(pynvml, sample_s, deadline)
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _init_reason(nv: Any, exc: Exception) -> str:
    code = getattr(exc, "value", None)
    if code == nv.NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver is installed or visible on this host"
    if code == nv.NVML_ERROR_DRIVER_NOT_LOADED:
        return "the NVIDIA kernel driver is not loaded (nvidia.ko): NVML cannot talk to any GPU"
    if code == nv.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "NVML and the loaded NVIDIA driver are different versions (driver upgraded without reboot)"
    if code == nv.NVML_ERROR_NO_PERMISSION:
        return "no permission to open the NVIDIA devices (/dev/nvidia*)"
    return f"NVML init failed: {exc}"


def _read(nv: Any, sample_s: float, deadline: Deadline | None) -> GpuFacts:
    facts = GpuFacts(source="nvml", available=True)
    facts.driver_version = _text(_call(nv, nv.nvmlSystemGetDriverVersion)) or ""
    cuda = _call(nv, nv.nvmlSystemGetCudaDriverVersion_v2) or _call(nv, nv.nvmlSystemGetCudaDriverVersion)
    if isinstance(cuda, int) and cuda > 0:
        facts.cuda_version = f"{cuda // 1000}.{cuda % 1000 // 10}"
    try:
        count = nv.nvmlDeviceGetCount()
    except nv.NVMLError as exc:
        return GpuFacts(source="nvml", reason=f"NVML could not count GPUs: {exc}", driver_version=facts.driver_version)
    if count == 0:
        facts.available = False
        facts.reason = "NVML works but reports no NVIDIA GPU (none installed, or none passed into this container)"
        return facts
    handles: dict[int, Any] = {}
    for i in range(count):
        try:
            handles[i] = nv.nvmlDeviceGetHandleByIndex(i)
        except nv.NVMLError as exc:
            facts.gpus.append(Gpu(index=i, lost=True, unsupported=[f"handle: {exc}"]))
    for i, h in handles.items():
        facts.gpus.append(_static(nv, i, h))
    facts.gpus.sort(key=lambda g: g.index)
    _sample(nv, facts, handles, sample_s, deadline)
    _links(nv, facts, handles)
    return facts


def _call(nv: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """One NVML query; None when the driver does not support or allow it."""
    try:
        return fn(*args)
    except nv.NVMLError:
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _static(nv: Any, index: int, h: Any) -> Gpu:
    gpu = Gpu(index=index)

    def get(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(h, *args)
        except nv.NVMLError as exc:
            if getattr(exc, "value", None) == nv.NVML_ERROR_GPU_IS_LOST:
                gpu.lost = True
            gpu.unsupported.append(name)
            return None

    gpu.name = _text(get("name", nv.nvmlDeviceGetName)) or ""
    gpu.uuid = _text(get("uuid", nv.nvmlDeviceGetUUID)) or ""
    pci = get("pci", nv.nvmlDeviceGetPciInfo)
    if pci is not None:
        gpu.bus_id = _text(pci.busId) or ""
    mem = get("memory", nv.nvmlDeviceGetMemoryInfo)
    if mem is not None:
        gpu.memory_total_mib = round(mem.total / MIB, 1)
        gpu.memory_used_mib = round(mem.used / MIB, 1)
        gpu.memory_free_mib = round(mem.free / MIB, 1)
    cc = get("compute_capability", nv.nvmlDeviceGetCudaComputeCapability)
    if cc:
        gpu.compute_capability = f"{cc[0]}.{cc[1]}"
    procs = get("processes", nv.nvmlDeviceGetComputeRunningProcesses) or []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        gpu.processes.append(GpuProcess(pid=int(p.pid), used_mib=round(used / MIB, 1) if used is not None else None))
    _name_processes(gpu.processes)
    gpu.sm_clock_max_mhz = get("max_sm_clock", nv.nvmlDeviceGetMaxClockInfo, nv.NVML_CLOCK_SM)
    limit = get("power_limit", nv.nvmlDeviceGetEnforcedPowerLimit)
    gpu.power_limit_w = limit / 1000 if limit is not None else None
    constraints = get("power_limit_constraints", nv.nvmlDeviceGetPowerManagementLimitConstraints)
    if constraints:
        gpu.power_max_limit_w = constraints[1] / 1000
    gpu.pcie_gen_current = get("pcie_gen_current", nv.nvmlDeviceGetCurrPcieLinkGeneration)
    gpu.pcie_gen_max = get("pcie_gen_max", nv.nvmlDeviceGetMaxPcieLinkGeneration)
    gpu.pcie_width_current = get("pcie_width_current", nv.nvmlDeviceGetCurrPcieLinkWidth)
    gpu.pcie_width_max = get("pcie_width_max", nv.nvmlDeviceGetMaxPcieLinkWidth)
    gpu.ecc_uncorrected_volatile = get(
        "ecc_volatile", nv.nvmlDeviceGetTotalEccErrors, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC
    )
    gpu.ecc_uncorrected_aggregate = get(
        "ecc_aggregate", nv.nvmlDeviceGetTotalEccErrors, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_AGGREGATE_ECC
    )
    mig = get("mig_mode", nv.nvmlDeviceGetMigMode)
    if mig:
        gpu.mig_mode = "Enabled" if mig[0] == 1 else "Disabled"
    persistence = get("persistence_mode", nv.nvmlDeviceGetPersistenceMode)
    if persistence is not None:
        gpu.persistence_mode = "Enabled" if persistence == 1 else "Disabled"
    return gpu


def _name_processes(procs: list[GpuProcess]) -> None:
    """Name and command line via psutil; in a container the pids are the host's and may not exist here."""
    import psutil

    for p in procs:
        try:
            proc = psutil.Process(p.pid)
            p.name = proc.name()
            p.cmdline = " ".join(proc.cmdline())
        except (psutil.Error, OSError):
            pass


def _sample(nv: Any, facts: GpuFacts, handles: dict[int, Any], sample_s: float, deadline: Deadline | None) -> None:
    """Utilization is the share of the last sample period in which a kernel ran: read it over
    the window, and the clocks, power and throttle reasons at the end of it."""
    budget = min(sample_s, deadline.remaining() * 0.5) if deadline else sample_s
    end = time.monotonic() + max(0.0, budget)
    util: dict[int, list[tuple[float, float]]] = {i: [] for i in handles}
    while True:
        for i, h in handles.items():
            rates = _call(nv, nv.nvmlDeviceGetUtilizationRates, h)
            if rates is not None:
                util[i].append((float(rates.gpu), float(rates.memory)))
        if time.monotonic() >= end or len(next(iter(util.values()), [])) >= MAX_SAMPLES:
            break
        time.sleep(min(SAMPLE_INTERVAL_S, max(0.0, end - time.monotonic())))
    facts.sample_seconds = round(budget, 2)
    for i, h in handles.items():
        gpu = facts.by_index(i)
        if gpu is None:
            continue
        if util[i]:
            g = [u[0] for u in util[i]]
            m = [u[1] for u in util[i]]
            gpu.util_gpu = Sampled(min(g), round(sum(g) / len(g), 1), max(g), len(g))
            gpu.util_memory = Sampled(min(m), round(sum(m) / len(m), 1), max(m), len(m))
        else:
            gpu.unsupported.append("utilization")
        clock = _call(nv, nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
        gpu.sm_clock_mhz = float(clock) if clock is not None else None
        power = _call(nv, nv.nvmlDeviceGetPowerUsage, h)
        gpu.power_draw_w = power / 1000 if power is not None else None
        temp = _call(nv, nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
        gpu.temperature_c = float(temp) if temp is not None else None
        reasons = _call(nv, nv.nvmlDeviceGetCurrentClocksEventReasons, h)
        if reasons is None:
            reasons = _call(nv, nv.nvmlDeviceGetCurrentClocksThrottleReasons, h)
        if reasons is None:
            gpu.unsupported.append("throttle_reasons")
        else:
            gpu.throttle_reasons = [n for bit, n in THROTTLE_BITS.items() if reasons & bit and n != "idle"]


def _links(nv: Any, facts: GpuFacts, handles: dict[int, Any]) -> None:
    """NVLink links per GPU (and to whom), then the pairwise matrix as `topo -m` prints it: NV#
    where NVLinks join the pair, else the PCIe common ancestor; and P2P read status."""
    bus_of = {i: _bus_key(g.bus_id) for i in handles if (g := facts.by_index(i))}
    peers: dict[int, dict[str, int]] = {}
    for i, h in handles.items():
        gpu = facts.by_index(i)
        active, remote = 0, {}
        for link in range(nv.NVML_NVLINK_MAX_LINKS):
            try:
                state = nv.nvmlDeviceGetNvLinkState(h, link)
            except nv.NVMLError:
                break  # NotSupported / InvalidArgument past the last link
            if state == nv.NVML_FEATURE_ENABLED:
                active += 1
                pci = _call(nv, nv.nvmlDeviceGetNvLinkRemotePciInfo, h, link)
                key = _bus_key(_text(pci.busId) or "") if pci is not None else "?"
                remote[key] = remote.get(key, 0) + 1
        if gpu is not None:
            gpu.nvlink_active = active
        peers[i] = remote
    n = max(handles) + 1 if handles else 0
    if n < 2:
        return
    topo = [["" for _ in range(n)] for _ in range(n)]
    p2p = [["" for _ in range(n)] for _ in range(n)]
    gpu_buses = set(bus_of.values())
    for i, hi in handles.items():
        for j, hj in handles.items():
            if i == j:
                topo[i][j] = p2p[i][j] = "X"
                continue
            direct = peers[i].get(bus_of.get(j, ""), 0)
            via_switch = sum(c for b, c in peers[i].items() if b not in gpu_buses)  # NVSwitch fabric
            if direct or (via_switch and peers[j]):
                topo[i][j] = f"NV{direct or via_switch}"
            else:
                level = _call(nv, nv.nvmlDeviceGetTopologyCommonAncestor, hi, hj)
                topo[i][j] = TOPOLOGY_LEVELS.get(level, "") if level is not None else ""
            status = _call(nv, nv.nvmlDeviceGetP2PStatus, hi, hj, NVML_P2P_CAPS_INDEX_READ)
            p2p[i][j] = P2P_STATUS.get(status, "U") if status is not None else ""
    facts.topology = topo
    facts.p2p = p2p


def _bus_key(bus_id: str) -> str:
    parts = bus_id.lower().split(":")
    return ":".join(parts[-2:]) if len(parts) >= 2 else bus_id.lower()


# -------------------------------------------------------------------------------------------
# saved outputs for `analyze` (readers registered in doctor/collect/files.py)


def _merge(facts: Facts, new: GpuFacts) -> None:
    if facts.gpus is None:
        facts.gpus = new
    else:
        facts.gpus.merge(new)


def _read_text(path: str, limit: int = 32 * 1024 * 1024) -> str:
    import gzip

    raw = Path(path).open("rb").read(2)
    opener = gzip.open if raw == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


def load_table(path: str, facts: Facts, deadline: Deadline) -> None:
    from llm_doctor.logparse import nvidia_smi

    lines = _read_text(path).splitlines()
    table = nvidia_smi.parse_table(lines)
    facts.gaps += [InputGap(path, f"nvidia-smi table: {gap}") for gap in nvidia_smi.table_gaps(lines, table)]
    _merge(facts, table)


def load_query(path: str, facts: Facts, deadline: Deadline) -> None:
    from llm_doctor.logparse import nvidia_smi

    text = _read_text(path)
    parsed = nvidia_smi.parse_query(text.splitlines())
    facts.gaps += [InputGap(path, f"nvidia-smi -q: {gap}") for gap in nvidia_smi.attached_gaps(text, parsed)]
    _merge(facts, parsed)


def load_xml(path: str, facts: Facts, deadline: Deadline) -> None:
    import xml.etree.ElementTree as ET

    from llm_doctor.logparse import nvidia_smi

    text = _read_text(path)
    try:
        parsed = nvidia_smi.parse_xml(text)
    except ET.ParseError as exc:
        facts.notes.append(f"{path}: nvidia-smi -q -x output is not well-formed XML ({exc}); ignored")
        return
    facts.gaps += [InputGap(path, f"nvidia-smi -q -x: {gap}") for gap in nvidia_smi.attached_gaps(text, parsed)]
    _merge(facts, parsed)


def load_nvlink(path: str, facts: Facts, deadline: Deadline) -> None:
    from llm_doctor.logparse import nvidia_smi

    text = _read_text(path)
    parsed = nvidia_smi.parse_nvlink_status(text.splitlines())
    if "all links are inActive" in text and facts.gpus:
        for g in facts.gpus.gpus:
            g.nvlink_active = 0 if g.nvlink_active is None else g.nvlink_active
    _merge(facts, parsed)


def load_topo(path: str, facts: Facts, deadline: Deadline) -> None:
    if not _topo_facts(_read_text(path), facts):
        facts.notes.append(f"{path}: looked like nvidia-smi topo output but no GPU matrix could be read")


def load_monitor(path: str, facts: Facts, deadline: Deadline) -> None:
    """A saved `nvidia-smi dmon` or `gpustat` output (doctor.logparse.gpu_monitors)."""
    from llm_doctor.logparse import gpu_monitors

    series = gpu_monitors.load(_read_text(path))
    if series is None:
        facts.notes.append(f"{path}: looked like a GPU monitor's output but no GPU row could be read")
        return
    _merge_series(facts, series)


EMBEDDED_BYTES = 1024 * 1024  # a paste with attachments (an issue, a ticket: GitHub holds 65,536 characters a comment), not a day of engine log


def embedded_in(text: str, facts: Facts) -> bool:
    """GPU artefacts pasted inside a log (a `topo -m` matrix after the engine's output, as issue
    reports and vLLM's collect_env give it; an `nvidia-smi -q` dump or its clocks-event section; an
    `nvidia-smi --query-gpu ... --format=csv` sampling; an `nvidia-smi dmon`, `dcgmi dmon`, `gpustat` or `rocm-smi` series; the
    GPU rows of an `nvidia-smi` table copied without its header; `lspci -vv` link states):
    read as if they were their own file, so the perf checks see the links and clocks the reporter's
    GPUs have. (A pasted `nvidia-smi` table the log scan reads itself.) `text` is the head of the log
    (doctor.collect.files reads it once for every embedded reader). True when something was read."""
    from llm_doctor.logparse import gpu_monitors, lspci, nvidia_smi, rocm_smi, topo

    found = False
    at = topo.embedded_at(text)
    if at is not None and (facts.gpus is None or not facts.gpus.topology):
        found = _topo_facts(text[at:], facts)
    if facts.gpus is None or not facts.gpus.gpus or all(x.name == "" for x in facts.gpus.gpus):
        lines = nvidia_smi.embedded_query(text)
        if lines and (query := nvidia_smi.parse_query(lines)).gpus:
            _merge(facts, query)
            found = True
    if facts.gpus is None or not facts.gpus.gpus:  # the GPU rows of a table, pasted without its header
        table = nvidia_smi.parse_table(text.splitlines())
        if table.gpus:
            _merge(facts, table)
            found = True
    header, rows = nvidia_smi.embedded_csv(text)
    if rows and (facts.gpus is None or not facts.gpus.gpus or all(x.util_gpu is None for x in facts.gpus.gpus)):
        _merge(facts, nvidia_smi.parse_csv(header, rows))
        found = True
    if (links := lspci.embedded_lspci(text)) is not None:
        _merge(facts, links)
        found = True
    for series in (gpu_monitors.embedded_dmon(text), gpu_monitors.embedded_dcgmi(text), gpu_monitors.embedded_gpustat(text),
                   rocm_smi.embedded_rocm_smi(text)):
        if series is not None:
            _merge_series(facts, series)
            found = True
    return found


def _merge_series(facts: Facts, series: GpuFacts) -> None:
    """A monitor's series of a GPU replaces a single utilization reading (a table's GPU-Util) of it."""
    _merge(facts, series)
    assert facts.gpus is not None
    for gpu in series.gpus:
        mine = facts.gpus.by_index(gpu.index)
        if mine is not None and gpu.util_gpu and (mine.util_gpu is None or mine.util_gpu.samples < gpu.util_gpu.samples):
            mine.util_gpu = gpu.util_gpu


def _topo_facts(text: str, facts: Facts) -> bool:
    from llm_doctor.logparse import topo

    matrix, p2p, nics = topo.parse(text)
    if not matrix and not p2p:
        return False
    n = len(matrix or p2p)
    new = GpuFacts(source="nvidia-smi topo -m" if matrix else "nvidia-smi topo -p2p", available=True)
    new.topology, new.p2p, new.nics = matrix, p2p, nics
    new.gpus = [Gpu(index=i) for i in range(n)]
    _merge(facts, new)
    return True
