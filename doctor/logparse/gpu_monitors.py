"""GPU monitors people paste into a ticket -> GpuFacts: `nvidia-smi dmon`, `dcgmi dmon` and `gpustat`.

Both print one row per GPU per sample, so a paste is a series: utilization becomes min/mean/max
over the rows (what the live collector's --sample window gives), and the other readings come from
the busiest row. Found anywhere in a text (an issue with prose around the paste). No decisions here.

The formats, as the tools write them:
- `nvidia-smi dmon` (the nvidia-smi man page, DEVICE MONITORING): a header line `# gpu pwr gtemp
  mtemp sm mem enc dec mclk pclk` (older drivers: `temp`; `-s v` adds `pviol tviol`, `-s m` `fb
  bar1`, `-s t` `rxpci txpci`; `-o DT` puts `Date Time` first), a units line `# Idx W C C % ...`,
  then rows of numbers with `-` for a value the GPU does not report; the header is repeated.
  Pasted into an issue it is often quoted (`> `) and its `#` escaped (a backslash before it).
  `pviol` is the share of the sample the power limit held the clocks down (%), `tviol` whether a
  thermal limit did (a flag): NVML's power and thermal violation counters.
- `dcgmi dmon -e <field ids>` (NVIDIA/DCGM dcgmi/DeviceMonitor.cpp SetHeaderForOutput and the row
  printer; field short names from dcgmlib/src/dcgm_fields.cpp): a `#Entity` header of short names
  (GPUTL GPU utilization %, SMCLK SM clock MHz, POWER W, TMPTR GPU temperature C, SMACT/SMOCC/DRAMA
  profiling ratios, PCITX/NVLTX bytes), an `ID` units line, then rows `GPU 0  ...` with `N/A` for a
  value not sampled. Only GPUTL is utilization as NVML and nvidia-smi report it (SMACT is a share
  of SMs, a different scale).
- `gpustat` (wookayin/gpustat, gpustat/core.py GPUStat.print_to): `[0] NVIDIA A100-SXM4-80GB |
  45°C,  97 %,  312 / 400 W | 70000 / 81920 MB | user:python/1234(69000M)`; `--show-fan` puts a
  fan `%` before the utilization, `-e` an `(E: .. D: ..)` group after it, `-P` the power; unknown
  values print `??`. Its header line names the host, the time and the driver version.
"""

from __future__ import annotations

import re
from statistics import fmean

from llm_doctor.facts.gpu import Gpu, GpuFacts, Sampled

# -------------------------------------------------------------------------------------------
# nvidia-smi dmon

_DMON_HEADER = re.compile(r"^[ \t]*(?:>[ \t]*)?\\?#[ \t]*(?:Date[ \t]+)?(?:Time[ \t]+)?gpu[ \t]+(?P<names>[a-z0-9]+(?:[ \t]+[a-z0-9]+)*)[ \t]*$", re.M)
_DMON_COLUMNS = {"pwr", "gtemp", "temp", "sm", "mem", "mclk", "pclk", "pviol", "tviol", "fb"}
_CELL = re.compile(r"^-?\d+(\.\d+)?$|^-$")


def embedded_dmon(text: str) -> GpuFacts | None:
    """The rows of an `nvidia-smi dmon` output inside a text, one Gpu per index; None when there is none."""
    if "# gpu" not in text and "#gpu" not in text and "Time" not in text:
        return None
    header = next((m for m in _DMON_HEADER.finditer(text) if "sm" in m.group("names").split()), None)
    if header is None:
        return None
    names = header.group("names").split()
    if not set(names) & _DMON_COLUMNS:
        return None
    stamped = len(re.findall(r"\b(Date|Time)\b", header.group(0)))  # -o D / -o T: columns before the index
    rows: dict[int, list[dict[str, str]]] = {}
    for line in text[header.end() :].split("\n"):
        cells = line.lstrip(" \t>").split()  # a markdown quote ("> ") of the paste
        if not cells or cells[0].lstrip("\\").startswith("#"):
            continue  # the units line, a repeated header
        cells = cells[stamped:]
        if len(cells) != len(names) + 1 or not cells[0].isdigit() or not all(_CELL.match(c) for c in cells[1:]):
            if rows:
                break  # the end of the paste
            continue
        rows.setdefault(int(cells[0]), []).append(dict(zip(names, cells[1:], strict=True)))
    if not rows:
        return None
    facts = GpuFacts(source="nvidia-smi dmon", available=True)
    for index, samples in sorted(rows.items()):
        facts.gpus.append(_dmon_gpu(index, samples))
    return facts


def _dmon_gpu(index: int, samples: list[dict[str, str]]) -> Gpu:
    gpu = Gpu(index=index)
    gpu.util_gpu = _series([_value(s.get("sm")) for s in samples])
    gpu.util_memory = _series([_value(s.get("mem")) for s in samples])
    busiest = max(samples, key=lambda s: _value(s.get("sm")) or 0)
    gpu.power_draw_w = _value(busiest.get("pwr"))
    gpu.temperature_c = _value(busiest.get("gtemp") or busiest.get("temp"))
    gpu.sm_clock_mhz = _value(busiest.get("pclk"))
    gpu.memory_used_mib = _value(busiest.get("fb"))
    if any((_value(s.get("pviol")) or 0) > 0 for s in samples):
        gpu.throttle_reasons.append("sw_power_cap")
    if any((_value(s.get("tviol")) or 0) > 0 for s in samples):
        gpu.throttle_reasons.append("sw_thermal_slowdown")
    if "pviol" not in samples[0]:
        gpu.unsupported.append("throttle_reasons")  # not asked for (-s v): not measured, not "none"
    return gpu


# -------------------------------------------------------------------------------------------
# dcgmi dmon

_DCGMI_HEADER = re.compile(r"^[ \t]*#Entity[ \t]+(?P<names>[A-Z0-9]+(?:[ \t]+[A-Z0-9]+)*)[ \t]*$", re.M)
_DCGMI_ROW = re.compile(r"^[ \t]*GPU[ \t]+(?P<index>\d+)[ \t]+(?P<cells>.*)$")
_DCGMI_FIELDS = {"GPUTL": "util", "SMCLK": "sm_clock_mhz", "POWER": "power_draw_w", "TMPTR": "temperature_c"}


def embedded_dcgmi(text: str) -> GpuFacts | None:
    """The GPU rows of a `dcgmi dmon` output inside a text (its GPUTL column as utilization)."""
    if "#Entity" not in text:
        return None
    m = _DCGMI_HEADER.search(text)
    if m is None or not set(m.group("names").split()) & set(_DCGMI_FIELDS):
        return None
    names = m.group("names").split()
    rows: dict[int, list[dict[str, str]]] = {}
    for line in text[m.end() :].split("\n"):
        row = _DCGMI_ROW.match(line)
        cells = row.group("cells").replace("N/A", "-").split() if row else []
        if row is None or len(cells) != len(names):
            if line.strip() and not line.strip().startswith(("ID", "#")) and rows:
                break
            continue
        rows.setdefault(int(row.group("index")), []).append(dict(zip(names, cells, strict=True)))
    if not rows:
        return None
    facts = GpuFacts(source="dcgmi dmon", available=True)
    for index, samples in sorted(rows.items()):
        gpu = Gpu(index=index)
        gpu.util_gpu = _series([_value(s.get("GPUTL")) for s in samples])
        busiest = max(samples, key=lambda s: _value(s.get("GPUTL")) or 0)
        for name, attr in _DCGMI_FIELDS.items():
            if name != "GPUTL":
                setattr(gpu, attr, _value(busiest.get(name)))
        gpu.unsupported.append("throttle_reasons")  # not among the fields a dmon shows by name here
        facts.gpus.append(gpu)
    return facts


# -------------------------------------------------------------------------------------------
# gpustat

_GPUSTAT_ROW = re.compile(
    r"^[ \t]*\[(?P<index>\d+)\][ \t]+(?P<name>[^|\n]*?)[ \t]*\|[ \t]*(?P<temp>\d+|\?\?)[^,|\n]{0,4}C,"
    r"(?:[ \t]*(?:\d+|\?\?)[ \t]*%,)?[ \t]*(?P<util>\d+|\?\?)[ \t]*%(?:[ \t]*\([^)\n]*\))?"
    r"(?:,[ \t]*(?P<draw>\d+|\?\?)(?:[ \t]*/[ \t]*(?P<limit>\d+|\?\?))?[ \t]*W?)?"
    r"[ \t]*\|[ \t]*(?P<used>\d+|\?\?)[ \t]*/[ \t]*(?P<total>\d+|\?\?)[ \t]*MB",
    re.M,
)


def embedded_gpustat(text: str) -> GpuFacts | None:
    """The GPU rows of one or more `gpustat` snapshots inside a text (`gpustat -i` repeats them)."""
    if "MB" not in text or "[0]" not in text:
        return None
    rows: dict[int, list[re.Match[str]]] = {}
    for m in _GPUSTAT_ROW.finditer(text):
        rows.setdefault(int(m.group("index")), []).append(m)
    if not rows:
        return None
    facts = GpuFacts(source="gpustat", available=True)
    for index, samples in sorted(rows.items()):
        busiest = max(samples, key=lambda m: _value(m.group("util")) or 0)
        gpu = Gpu(index=index, name=busiest.group("name"))
        gpu.util_gpu = _series([_value(m.group("util")) for m in samples])
        gpu.temperature_c = _value(busiest.group("temp"))
        gpu.power_draw_w = _value(busiest.group("draw"))
        gpu.power_limit_w = _value(busiest.group("limit"))
        gpu.memory_used_mib = _value(busiest.group("used"))  # gpustat's "MB" are MiB (bytes // 1024**2)
        gpu.memory_total_mib = _value(busiest.group("total"))
        gpu.unsupported.append("throttle_reasons")  # gpustat does not show them
        facts.gpus.append(gpu)
    return facts


# -------------------------------------------------------------------------------------------


def is_monitor(head: str) -> bool:
    """A paste that is mostly a monitor's output (its rows are at least half of the lines): read as
    that tool's file. A log with a monitor pasted into it stays a log (doctor.collect.gpu.embedded_in)."""
    found = load(head)
    if found is None:
        return False
    rows = sum(g.util_gpu.samples if g.util_gpu else 1 for g in found.gpus)
    lines = sum(1 for line in head.splitlines() if line.strip())
    return rows * 2 >= lines


def load(text: str) -> GpuFacts | None:
    """The monitor output in a text: `nvidia-smi dmon`, else `dcgmi dmon`, else `gpustat`, else `rocm-smi`."""
    # imported here: rocm_smi reads its cells with this module's helpers
    from llm_doctor.logparse.rocm_smi import embedded_rocm_smi

    return embedded_dmon(text) or embedded_dcgmi(text) or embedded_gpustat(text) or embedded_rocm_smi(text)


def _value(cell: str | None) -> float | None:
    """'97' -> 97.0; '-', '??', None -> None (not reported, never zero)."""
    if cell is None or not re.match(r"^-?\d+(\.\d+)?$", cell):
        return None
    return float(cell)


def _series(values: list[float | None]) -> Sampled | None:
    known = [v for v in values if v is not None]
    return Sampled(min(known), round(fmean(known), 1), max(known), len(known)) if known else None
