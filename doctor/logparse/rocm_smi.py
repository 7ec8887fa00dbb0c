"""`rocm-smi` pasted into a ticket -> GpuFacts: AMD users paste it where NVIDIA users paste nvidia-smi.

Its default output is the concise table (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py,
showAllConcise), in the layouts its history shows:
- until 2022-08: a header `GPU  Temp  AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%`, rows
  `0    34.0c  41.0W  800Mhz  1600Mhz  0%  auto  300.0W  0%  0%`; from dfd88b5 (2022-08) `Temp (DieEdge)`;
- from 755e14d (2023-08): `Device  [Model : Revision]  Temp  Power  Partitions  SCLK ...` and a
  subheader line (`Name (20 chars)  (Edge)  (Avg)  (Mem, Compute)`), temperatures `34.0°C`;
- from 4b5ccb5 (2024-01): `Device  Node  IDs  Temp  Power  Partitions  SCLK  MCLK  Fan  Perf  PwrCap
  VRAM%  GPU%`, subheader `(DID, GUID)  (Junction)  (Socket)  (Mem, Compute, ID)`.
A row's last seven cells are always SCLK MCLK Fan Perf PwrCap VRAM% GPU% (none holds a space) and
its first the device index; the temperature (`34.0c`, `60.0°C`) and the power (`319.0W`) are the
first cells of their shape before them, so the cells in between (a model name, partitions with
spaces and commas) do not matter. `N/A` or `Unsupported` is a value not read (never zero).

What the facts can hold: GPU% as utilization (a series when the table is repeated, `watch
rocm-smi`), the temperature, the power draw and cap, the current SCLK. The concise table has no
maximum clock and no throttle reasons (not measured, so not "none"), and VRAM% no total to make
MiB of. No decisions here.
"""

from __future__ import annotations

import re

from llm_doctor.facts.gpu import Gpu, GpuFacts
from llm_doctor.logparse.gpu_monitors import _series, _value

_HEADER = re.compile(r"^[ \t]*(?:GPU|Device)[ \t]+.*\bSCLK[ \t]+MCLK[ \t]+Fan[ \t]+Perf[ \t]+PwrCap[ \t]+VRAM%[ \t]+GPU%[ \t]*$", re.M)
_TEMP = re.compile(r"^(\d+(?:\.\d+)?)(?:°|\u00c2\u00b0)?[cC]$")  # '34.0c', '60.0°C' (and its UTF-8 read as Latin-1)
_WATTS = re.compile(r"^(\d+(?:\.\d+)?)W$")
_CLOCK = re.compile(r"^(\d+)Mhz$|^N/A$|^None$")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$|^N/A$|^Unsupported$")


def embedded_rocm_smi(text: str) -> GpuFacts | None:
    """The device rows of every concise table in a text, one Gpu per device index."""
    if "PwrCap" not in text:
        return None
    rows: dict[int, list[dict[str, float | None]]] = {}
    for header in _HEADER.finditer(text):
        started = False
        for line in text[header.end() :].split("\n")[1:]:
            row = _row(line.split())
            if row is not None:
                rows.setdefault(int(row.pop("index") or 0), []).append(row)
                started = True
            elif started:
                break  # the closing rule: the end of this table
            # before the first row: the subheader line and the rule under it
    if not rows:
        return None
    facts = GpuFacts(source="rocm-smi", available=True)
    for index, samples in sorted(rows.items()):
        gpu = Gpu(index=index)
        gpu.util_gpu = _series([s["util"] for s in samples])
        busiest = max(samples, key=lambda s: s["util"] or 0)
        gpu.temperature_c, gpu.power_draw_w = busiest["temp"], busiest["power"]
        gpu.power_limit_w, gpu.sm_clock_mhz = busiest["cap"], busiest["sclk"]
        gpu.unsupported.append("throttle_reasons")  # the concise table does not show them
        facts.gpus.append(gpu)
    return facts


def _row(cells: list[str]) -> dict[str, float | None] | None:
    """index, temperature, power, SCLK, power cap and GPU% of one device row; None for a line that is not one."""
    if len(cells) < 10 or not cells[0].isdigit():
        return None
    sclk, _mclk, _fan, _perf, cap, vram, util = cells[-7:]
    if not (_CLOCK.match(sclk) and _PERCENT.match(vram) and _PERCENT.match(util)):
        return None
    middle = cells[1:-7]
    temp = next((float(m.group(1)) for c in middle if (m := _TEMP.match(c))), None)
    power = next((float(m.group(1)) for c in middle if (m := _WATTS.match(c))), None)
    cap_w = _WATTS.match(cap)
    return {"index": int(cells[0]), "temp": temp, "power": power, "cap": float(cap_w.group(1)) if cap_w else None,
            "sclk": _value(sclk.removesuffix("Mhz")), "util": _value(util.removesuffix("%"))}
