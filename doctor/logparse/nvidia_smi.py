"""Saved nvidia-smi outputs -> GpuFacts: the default table, `-q` (and its `-d` subsets), `-q -x`
(XML) and `nvlink --status`.

These are what people attach to tickets, so each parser tolerates the real variations (old narrow
vs new wide table, `Clocks Throttle Reasons` (<= 525) vs `Clocks Event Reasons` (>= 535), ECC
blocks renamed across drivers, `[...]` elisions, N/A everywhere on consumer cards) and fills only
what the text shows. No decisions here: checks judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from llm_doctor.facts.gpu import Gpu, GpuFacts, GpuProcess, Sampled

# -------------------------------------------------------------------------------------------
# sniffers (content, not file name)

_TABLE_HEADER = re.compile(r"NVIDIA-SMI\s+\S+\s+Driver Version:\s*\S+")
_Q_HEADER = re.compile(r"^=+\s*NVSMI LOG\s*=+", re.M)
_Q_KEYS = re.compile(r"^\s*(Product Name|Attached GPUs|Driver Version|Clocks (Event|Throttle) Reasons|GPU UUID)\s+:", re.M)
_NVLINK_LINE = re.compile(r"^\s*Link \d+:\s*(\d+(\.\d+)?\s*GB/s|<inactive>)", re.M)
_NVLINK_GPU = re.compile(r"^GPU (\d+):\s*(.+?)\s*\(UUID:\s*([^)]*)\)", re.M)


def is_table(head: str) -> bool:
    return bool(_TABLE_HEADER.search(head)) and "Memory-Usage" in head


_Q_EXCERPT = re.compile(
    r"^\s+(ECC Errors|Retired [Pp]ages|Remapped Rows|Clocks (Event|Throttle) Reasons|GPU Link Info|FB Memory Usage)\s*$\n"
    r"(\s+\S.*\n){0,3}\s+[A-Z][\w .-]+?\s+:\s",
    re.M,
)


def is_query(head: str) -> bool:
    """`nvidia-smi -q`, a `-q -d` subset, or an excerpt of one section (pasted into tickets)."""
    return bool(_Q_HEADER.search(head)) or len(_Q_KEYS.findall(head)) >= 2 or bool(_Q_EXCERPT.match(head.lstrip("\n")))


_Q_SECTION = re.compile(r"^[ \t]*Clocks (?:Event|Throttle) Reasons[ \t]*\r?$", re.M)


def embedded_query(text: str) -> list[str]:
    """An `nvidia-smi -q` dump, or its clocks-event section, pasted inside a longer text: its lines
    from the header (or the section) to the first line that is not part of the key : value tree."""
    if "NVSMI LOG" not in text and " Reasons" not in text:  # a C-speed look first: most logs hold neither
        return []
    m = _Q_HEADER.search(text) or _Q_SECTION.search(text)
    if m is None:
        return []
    start = text.rfind("\n", 0, m.start()) + 1
    first, *rest = text[start:].split("\n")
    lines = [first.rstrip("\r")]  # the header or section line, indented or not as pasted
    for line in rest:
        plain = line.rstrip("\r")
        if plain and not plain[0].isspace() and not (_Q_HEADER.match(plain) or _Q_GPU.match(plain.strip()) or _Q_LINE.match(plain)):
            break
        lines.append(plain)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def is_xml(head: str) -> bool:
    return "<nvidia_smi_log" in head[:4096]


def is_nvlink_status(head: str) -> bool:
    return "Unable to retrieve NVLink information" in head or (
        bool(_NVLINK_GPU.search(head)) and len(_NVLINK_LINE.findall(head)) >= 2
    )


# -------------------------------------------------------------------------------------------
# shared helpers


def _num(text: str | None) -> float | None:
    """'81559 MiB' -> 81559.0, '100W' -> 100.0, 'N/A' -> None."""
    if not text:
        return None
    m = re.search(r"-?\d+(\.\d+)?", text)
    return float(m.group()) if m and "N/A" not in text else None


def _int(text: str | None) -> int | None:
    v = _num(text)
    return int(v) if v is not None else None


def _snapshot(value: float | None) -> Sampled | None:
    return Sampled(value, value, value, 1) if value is not None else None


def throttle_name(label: str) -> str:
    """'HW Thermal Slowdown' / 'clocks_event_reason_hw_thermal_slowdown' -> 'hw_thermal_slowdown'."""
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    return re.sub(r"^clocks_(event|throttle)_reasons?_", "", name)


# -------------------------------------------------------------------------------------------
# default table

_T_ROW1 = re.compile(
    r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+(\S+)\s*\|\s*(\S+)\s*\|"
)
_T_ROW2 = re.compile(
    r"^\|\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*/\s*(\S+)\s*\|\s*(\d+)\s*MiB\s*/\s*(\d+)\s*MiB\s*\|\s*(\S+)\s+(.+?)\s*\|"
)
_T_ROW3 = re.compile(r"^\|\s+\|\s+\|\s*(\S+)\s*\|")
_T_PROC = re.compile(r"^\|\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.+?)\s+(\d+|N/A)\s*(MiB)?\s*\|")
_VERSIONS = re.compile(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")


def parse_table(lines: Iterable[str]) -> GpuFacts:
    facts = GpuFacts(source="nvidia-smi", available=True)
    current: Gpu | None = None
    expect = 0
    in_procs = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        if m := _VERSIONS.search(line):
            facts.driver_version, facts.cuda_version = m.group(1), m.group(2)
            continue
        if "Processes:" in line:
            in_procs = True
            continue
        if in_procs:
            if (m := _T_PROC.match(line)) and facts.by_index(int(m.group(1))):
                gpu = facts.by_index(int(m.group(1)))
                used = None if m.group(7) == "N/A" else float(m.group(7))
                gpu.processes.append(GpuProcess(pid=int(m.group(4)), used_mib=used, name=m.group(6).strip()))
            continue
        if m := _T_ROW1.match(line):
            current = Gpu(index=int(m.group(1)), name=m.group(2).strip(), bus_id=m.group(4))
            current.persistence_mode = "Enabled" if m.group(3) == "On" else "Disabled"
            ecc = m.group(6)
            if ecc.isdigit():
                current.ecc_uncorrected_volatile = int(ecc)
            facts.gpus.append(current)
            expect = 2
            continue
        if current and expect == 2 and (m := _T_ROW2.match(line)):
            current.temperature_c = _num(m.group(2))
            current.power_draw_w = _num(m.group(4))
            current.power_limit_w = _num(m.group(5))
            current.memory_used_mib = float(m.group(6))
            current.memory_total_mib = float(m.group(7))
            current.memory_free_mib = current.memory_total_mib - current.memory_used_mib
            current.util_gpu = _snapshot(_num(m.group(8)))
            expect = 3
            continue
        if current and expect == 3 and (m := _T_ROW3.match(line)):
            current.mig_mode = m.group(1)
            expect = 0
    return facts


def table_gaps(lines: list[str], facts: GpuFacts) -> list[str]:
    """What a cut or damaged table lost: GPU indices with no row, rows cut short, and a table that
    ends before its closing Processes section (GPUs after the last row may be missing)."""
    indices = sorted(g.index for g in facts.gpus)
    if not indices:
        return ["the table has no GPU row: it is cut before the first GPU, so every GPU may be missing"]
    out = []
    absent = sorted(set(range(indices[-1] + 1)) - set(indices))
    if absent:
        out.append(f"GPU {', '.join(map(str, absent))} has no row in the table ({len(indices)} rows up to GPU {indices[-1]}): "
                   "lines were lost in the copy (or it was run for selected GPUs with -i)")
    cut_short = [g.index for g in facts.gpus if g.memory_total_mib is None]
    if cut_short:
        out.append(f"GPU {', '.join(map(str, cut_short))}: its rows are cut short (no memory figures)")
    if not any("Processes:" in line for line in lines):
        out.append(f"the table ends after GPU {indices[-1]} without its Processes section: it is cut, and GPUs after "
                   f"GPU {indices[-1]} may be missing")
    return out


def attached_gaps(text: str, facts: GpuFacts) -> list[str]:
    """`nvidia-smi -q` (text or XML) says how many GPUs are attached; fewer GPU blocks than that
    means the output was cut (or run for selected GPUs with -i)."""
    m = re.search(r"Attached GPUs\s+:\s*(\d+)|<attached_gpus>\s*(\d+)", text)
    attached = int(m.group(1) or m.group(2)) if m else None
    if attached is None or len(facts.gpus) >= attached:
        return []
    return [f"{len(facts.gpus)} of the {attached} attached GPUs are in the output: it is cut (or was run for "
            "selected GPUs with -i), so GPUs may be missing"]


# -------------------------------------------------------------------------------------------
# nvidia-smi -q (text)

_Q_LINE = re.compile(r"^(\s*)(\S.*?)\s+:\s?(.*)$")
_Q_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


def parse_query(lines: Iterable[str]) -> GpuFacts:
    """`nvidia-smi -q`: an indented key : value tree, one `GPU <bus id>` block per GPU. We keep
    each GPU's leaves as 'Section/Sub/Key' -> value, then read the fields we know."""
    facts = GpuFacts(source="nvidia-smi -q", available=True)
    blocks: list[tuple[str, dict[str, str], list[dict[str, str]]]] = []
    leaves: dict[str, str] | None = None
    procs: list[dict[str, str]] = []
    stack: list[tuple[int, str]] = []
    for raw in lines:
        line = raw.rstrip("\r\n").expandtabs(8)
        if not line.strip() or line.strip().startswith("[..."):
            continue
        if m := _Q_GPU.match(line.strip()) if not line.startswith(" ") else None:
            leaves, procs, stack = {}, [], []
            blocks.append((m.group(1), leaves, procs))
            continue
        indent = len(line) - len(line.lstrip())
        m = _Q_LINE.match(line)
        key = (m.group(2) if m else line.strip()).strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([s for _, s in stack] + [key])
        if m is None:
            stack.append((indent, key))
            continue
        value = m.group(3).strip()
        if leaves is None and indent > 0 and not blocks:  # an excerpt of one GPU's sections, no header
            leaves, procs = {}, []
            blocks.append(("", leaves, procs))
        if leaves is None:  # the header before the first GPU
            if key == "Driver Version":
                facts.driver_version = value
            elif key == "CUDA Version":
                facts.cuda_version = value
            continue
        if path.startswith("Processes/") and key == "Process ID":
            procs.append({})
        if path.startswith("Processes/") and procs:
            procs[-1][key] = value
        leaves.setdefault(path, value)
        if not value:
            stack.append((indent, key))
    for index, (bus_id, leaf, proc_list) in enumerate(blocks):
        facts.gpus.append(_gpu_from_leaves(index, bus_id, leaf, proc_list))
    return facts


def _first(leaf: dict[str, str], *paths: str) -> str | None:
    for p in paths:
        if p in leaf and leaf[p] not in ("", "N/A"):
            return leaf[p]
    return None


def _gpu_from_leaves(index: int, bus_id: str, leaf: dict[str, str], procs: list[dict[str, str]]) -> Gpu:
    gpu = Gpu(index=index, bus_id=leaf.get("PCI/Bus Id", bus_id))
    gpu.name = leaf.get("Product Name", "")
    gpu.uuid = leaf.get("GPU UUID", "")
    gpu.persistence_mode = leaf.get("Persistence Mode", "")
    gpu.mig_mode = leaf.get("MIG Mode/Current", "")
    gpu.memory_total_mib = _num(leaf.get("FB Memory Usage/Total"))
    gpu.memory_used_mib = _num(leaf.get("FB Memory Usage/Used"))
    gpu.memory_free_mib = _num(leaf.get("FB Memory Usage/Free"))
    gpu.util_gpu = _snapshot(_num(leaf.get("Utilization/Gpu")))
    gpu.util_memory = _snapshot(_num(leaf.get("Utilization/Memory")))
    link = "PCI/GPU Link Info/"
    gpu.pcie_gen_max = _int(_first(leaf, link + "PCIe Generation/Device Max", link + "PCIe Generation/Max"))
    gpu.pcie_gen_current = _int(_first(leaf, link + "PCIe Generation/Device Current", link + "PCIe Generation/Current"))
    host_max = _int(leaf.get(link + "PCIe Generation/Host Max"))
    if host_max and gpu.pcie_gen_max and host_max < gpu.pcie_gen_max:
        gpu.pcie_gen_max = host_max  # the slot, not the card, sets the ceiling
    gpu.pcie_width_max = _int(leaf.get(link + "Link Width/Max"))
    gpu.pcie_width_current = _int(leaf.get(link + "Link Width/Current"))
    gpu.temperature_c = _num(_first(leaf, "Temperature/GPU Current Temp"))
    power = ("GPU Power Readings/", "Power Readings/")
    gpu.power_draw_w = _num(_first(leaf, *(p + "Power Draw" for p in power), *(p + "Instantaneous Power Draw" for p in power)))
    gpu.power_limit_w = _num(
        _first(leaf, *(p + k for p in power for k in ("Current Power Limit", "Enforced Power Limit", "Power Limit")))
    )
    gpu.power_max_limit_w = _num(_first(leaf, *(p + "Max Power Limit" for p in power)))
    gpu.sm_clock_mhz = _num(_first(leaf, "Clocks/SM"))
    gpu.performance_state = _pstate(leaf.get("Performance State", ""))
    gpu.sm_clock_max_mhz = _num(_first(leaf, "Max Clocks/SM"))
    for path, value in leaf.items():
        section = path.split("/", 1)[0]
        if section in ("Clocks Event Reasons", "Clocks Throttle Reasons") and "/" in path and value == "Active":
            name = throttle_name(path.rsplit("/", 1)[1])
            if name != "idle":
                gpu.throttle_reasons.append(name)
    gpu.ecc_uncorrected_volatile = _ecc_sum(leaf, "ECC Errors/Volatile/")
    gpu.ecc_uncorrected_aggregate = _ecc_sum(leaf, "ECC Errors/Aggregate/")
    pending = next((v for p, v in leaf.items() if p.lower() in ("retired pages/pending page blacklist", "retired pages/pending")), None)
    gpu.retired_pages_pending = {"Yes": True, "No": False}.get(pending or "")
    gpu.remapped_rows_pending = {"Yes": True, "No": False}.get(leaf.get("Remapped Rows/Pending", ""))
    for p in procs:
        if p.get("Process ID", "").isdigit():
            gpu.processes.append(
                GpuProcess(int(p["Process ID"]), _num(p.get("Used GPU Memory")), name=p.get("Name", "").strip())
            )
    return gpu


def _ecc_sum(leaf: dict[str, str], prefix: str) -> int | None:
    """Uncorrectable ECC errors: 'SRAM Uncorrectable (Parity|SEC-DED)', 'DRAM Uncorrectable' (>= 535),
    'Double Bit/...' (older drivers). None when the GPU has no ECC (all N/A)."""
    vals = [
        _int(v)
        for p, v in leaf.items()
        if p.startswith(prefix) and ("Uncorrectable" in p or "/Double Bit/" in p) and "Threshold" not in p
    ]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


# -------------------------------------------------------------------------------------------
# nvidia-smi -q -x (XML)

MAX_XML_BYTES = 32 * 1024 * 1024


def parse_xml(text: str) -> GpuFacts:
    import xml.etree.ElementTree as ET

    # the DOCTYPE names an external DTD; drop it so nothing is resolved
    text = re.sub(r"<!DOCTYPE[^>]*>", "", text[:MAX_XML_BYTES], count=1)
    root = ET.fromstring(text)
    facts = GpuFacts(source="nvidia-smi -q -x", available=True)
    facts.driver_version = (root.findtext("driver_version") or "").strip()
    facts.cuda_version = (root.findtext("cuda_version") or "").strip()

    for index, el in enumerate(root.findall("gpu")):

        def t(*paths: str, _el=el) -> str | None:
            for p in paths:
                v = _el.findtext(p)
                if v is not None and v.strip() not in ("", "N/A"):
                    return v.strip()
            return None

        gpu = Gpu(index=index, bus_id=el.get("id", "") or (t("pci/pci_bus_id") or ""))
        gpu.name = t("product_name") or ""
        gpu.uuid = t("uuid") or ""
        gpu.persistence_mode = t("persistence_mode") or ""
        gpu.mig_mode = t("mig_mode/current_mig") or ""
        gpu.memory_total_mib = _num(t("fb_memory_usage/total"))
        gpu.memory_used_mib = _num(t("fb_memory_usage/used"))
        gpu.memory_free_mib = _num(t("fb_memory_usage/free"))
        gpu.util_gpu = _snapshot(_num(t("utilization/gpu_util")))
        gpu.util_memory = _snapshot(_num(t("utilization/memory_util")))
        li = "pci/pci_gpu_link_info/"
        gpu.pcie_gen_max = _int(t(li + "pcie_gen/device_pcie_gen_max", li + "pcie_gen/max_link_gen"))
        gpu.pcie_gen_current = _int(t(li + "pcie_gen/device_current_link_gen", li + "pcie_gen/current_link_gen"))
        host_max = _int(t(li + "pcie_gen/max_host_link_gen"))
        if host_max and gpu.pcie_gen_max and host_max < gpu.pcie_gen_max:
            gpu.pcie_gen_max = host_max
        gpu.pcie_width_max = _int(t(li + "link_widths/max_link_width"))
        gpu.pcie_width_current = _int(t(li + "link_widths/current_link_width"))
        gpu.temperature_c = _num(t("temperature/gpu_temp"))
        pr = ("gpu_power_readings/", "power_readings/")
        gpu.power_draw_w = _num(t(*(p + "power_draw" for p in pr), *(p + "instant_power_draw" for p in pr)))
        gpu.power_limit_w = _num(t(*(p + k for p in pr for k in ("current_power_limit", "enforced_power_limit", "power_limit"))))
        gpu.power_max_limit_w = _num(t(*(p + "max_power_limit" for p in pr)))
        gpu.sm_clock_mhz = _num(t("clocks/sm_clock"))
        gpu.performance_state = _pstate(t("performance_state") or "")
        gpu.sm_clock_max_mhz = _num(t("max_clocks/sm_clock"))
        for section in ("clocks_event_reasons", "clocks_throttle_reasons"):
            for child in el.findall(section + "/*"):
                if (child.text or "").strip() == "Active":
                    name = throttle_name(child.tag)
                    if name != "gpu_idle" and name != "idle":
                        gpu.throttle_reasons.append(name.removeprefix("gpu_"))
        volatile = el.find("ecc_errors/volatile")
        if volatile is not None:
            vol = [
                int(c.text.strip())
                for c in volatile.iter()
                if ("uncorr" in c.tag.lower() or "double" in c.tag.lower()) and (c.text or "").strip().isdigit()
            ]
            gpu.ecc_uncorrected_volatile = sum(vol) if vol else None
        gpu.remapped_rows_pending = {"Yes": True, "No": False}.get(t("remapped_rows/remapped_row_pending") or "")
        for proc in el.findall("processes/process_info"):
            pid = (proc.findtext("pid") or "").strip()
            if pid.isdigit():
                gpu.processes.append(
                    GpuProcess(int(pid), _num(proc.findtext("used_memory")), name=(proc.findtext("process_name") or "").strip())
                )
        facts.gpus.append(gpu)
    return facts


# -------------------------------------------------------------------------------------------
# nvidia-smi nvlink --status


def parse_nvlink_status(lines: Iterable[str]) -> GpuFacts:
    """Active NVLink links per GPU. 'all links are inActive' (an NVLink-capable box without
    bridges) means zero links on every GPU, but the GPUs themselves are not listed."""
    facts = GpuFacts(source="nvidia-smi nvlink --status", available=True)
    current: Gpu | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if m := _NVLINK_GPU.match(line):
            current = Gpu(index=int(m.group(1)), name=m.group(2), uuid=m.group(3).strip(), nvlink_active=0)
            facts.gpus.append(current)
        elif current and (m := _NVLINK_LINE.match(line)):
            if "inactive" not in m.group(1):
                current.nvlink_active = (current.nvlink_active or 0) + 1
    return facts


# -------------------------------------------------------------------------------------------
# `nvidia-smi --query-gpu=a,b,c --format=csv[,noheader]` (often with -l N: one row per GPU per sample)

_CSV_HEADER = re.compile(r"^\s*((?:index|name|uuid|pci\.bus_id|utilization\.\w+|clocks\S*|power\.\S+|temperature\.\S+|"
                         r"memory\.\S+|pcie\.\S+|timestamp)(?: \[[^\]]+\])?(?:\s*,\s*|\s*$)){2,}$", re.M)
_CSV_FIELDS = {  # query field -> Gpu attribute
    "utilization.gpu": "util_gpu", "clocks.sm": "sm_clock_mhz", "clocks.current.sm": "sm_clock_mhz",
    "clocks.gr": "sm_clock_mhz", "clocks.current.graphics": "sm_clock_mhz",  # the graphics and SM clocks move together
    "clocks.max.sm": "sm_clock_max_mhz", "clocks.max.graphics": "sm_clock_max_mhz", "power.draw": "power_draw_w",
    "power.limit": "power_limit_w", "enforced.power.limit": "power_limit_w", "power.max_limit": "power_max_limit_w",
    "temperature.gpu": "temperature_c", "memory.total": "memory_total_mib", "memory.used": "memory_used_mib",
    "pcie.link.gen.current": "pcie_gen_current", "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.width.current": "pcie_width_current", "pcie.link.width.max": "pcie_width_max",
}
_CSV_LITERALS = ("utilization.", "clocks.", "clocks_", "power.draw", "power.limit", "temperature.gpu", "memory.used",
                 "memory.total", "pcie.link")
_CSV_REASON = re.compile(r"^clocks_(?:throttle|event)_reasons\.(\w+)$")


def embedded_csv(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of an `nvidia-smi --query-gpu ... --format=csv` output inside a text:
    the header names the query fields, each following line with as many comma-separated cells is a row.
    Without a header (`--format=csv,noheader`), the fields are named by the units nvidia-smi prints."""
    if not any(name in text for name in _CSV_LITERALS):  # a C-speed look first: most logs hold no sampling
        return _noheader_csv(text) if " MHz, " in text or " %, " in text else ([], [])
    m = _CSV_HEADER.search(text)
    if m is None:
        return _noheader_csv(text)
    header = [h.strip().split(" [")[0] for h in m.group(0).split(",")]
    rows = []
    for line in text[m.end() :].lstrip("\r\n").split("\n"):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(header):
            if rows:
                break
            continue
        rows.append(cells)
    return header, rows


# `--format=csv,noheader` prints each value with its unit (nvidia-smi's csv writer: "1980 MHz", "96 %", "312.45 W") and
# the timestamp as `2024/05/01 10:00:00.123`; a field is named by its unit only where one column has that unit
# (two MHz columns may be the SM and the memory clock, two % columns the GPU and the memory utilization)
_NOHEADER_CELL = (("timestamp", re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?$")),
                  ("clocks.sm", re.compile(r"^\d+ MHz$")), ("utilization.gpu", re.compile(r"^\d+ %$")),
                  ("power.draw", re.compile(r"^\d+(?:\.\d+)? W$")))
_NOHEADER_ROWS = 3  # consecutive rows of one shape: a sampling, not a sentence with a comma


def _noheader_csv(text: str) -> tuple[list[str], list[list[str]]]:
    """The longest run of `--format=csv,noheader` rows whose every cell is a timestamp or a value in a unit
    named once per row, with the field names those units give; ([], []) when there is none."""
    best: tuple[list[str], list[list[str]]] = ([], [])
    header: list[str] = []
    rows: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        cells = [c.strip() for c in line.split(",")]
        names = [next((n for n, rx in _NOHEADER_CELL if rx.match(c)), "") for c in cells] if len(cells) >= 2 else []
        shaped = bool(names) and all(names) and len(set(names)) == len(names) and set(names) != {"timestamp"}
        if shaped and names == header:
            rows.append(cells)
            continue
        if len(rows) >= _NOHEADER_ROWS and len(rows) > len(best[1]):
            best = (header, rows)
        header, rows = (names, [cells]) if shaped else ([], [])
    return best


def parse_csv(header: list[str], rows: list[list[str]]) -> GpuFacts:
    """One Gpu per index (or row position): utilization over the samples as min/mean/max, the other
    readings from the sample with the highest utilization (the busy moment), the throttle reasons
    active in any sample (perf.clocks judges whether they matter: a power cap only near the limit)."""
    facts = GpuFacts(source="nvidia-smi --query-gpu", available=True)
    by_gpu: dict[str, list[dict[str, str]]] = {}
    for cells in rows:
        row = dict(zip(header, cells, strict=True))
        by_gpu.setdefault(row.get("index") or row.get("pci.bus_id") or "0", []).append(row)  # no id column: one GPU
    for i, (key, samples) in enumerate(by_gpu.items()):
        gpu = Gpu(index=int(key) if key.isdigit() else i, name=samples[0].get("name", ""), bus_id=samples[0].get("pci.bus_id", ""))
        utils = [u for s in samples if (u := _num(s.get("utilization.gpu"))) is not None]
        if utils:
            gpu.util_gpu = Sampled(min(utils), sum(utils) / len(utils), max(utils), len(utils))
        busiest = max(samples, key=lambda s: _num(s.get("utilization.gpu")) or 0)
        for name, attr in _CSV_FIELDS.items():
            if name in busiest and attr != "util_gpu" and (value := _num(busiest[name])) is not None:
                setattr(gpu, attr, int(value) if attr.startswith("pcie_") else value)
        clocks = [c for s in samples if (c := _num(s.get("clocks.sm") or s.get("clocks.current.sm") or s.get("clocks.gr"))) is not None]
        if gpu.sm_clock_max_mhz is None and len(clocks) > 1:
            gpu.sm_clock_max_mhz = max(clocks)  # no max column: the GPU reached this clock in the same samples, so it can
        for s in samples:
            for name, value in s.items():
                reason = r.group(1).removeprefix("gpu_") if (r := _CSV_REASON.match(name)) else ""
                if value == "Active" and reason not in ("", "idle", "active"):
                    if reason not in gpu.throttle_reasons:
                        gpu.throttle_reasons.append(reason)
        facts.gpus.append(gpu)
    return facts


def _pstate(text: str) -> str:
    """"P2" from nvidia-smi's Performance State ("P2", " P0 "); "" for N/A or anything else."""
    text = text.strip().upper()
    return text if re.fullmatch(r"P\d{1,2}", text) else ""
