"""`lspci -vv` of NVIDIA GPUs, pasted to show a PCIe link -> GpuFacts (link generation and width).

A GPU that trained its link narrower (x8 of x16) or slower than it can halves host<->GPU bandwidth;
`lspci -vv` is how people show it, and perf.interconnect judges the same fields NVML gives live.

The format, as pciutils writes it (ls-caps.c, cap_express_link and link_speed): under each device's
header line (`01:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 80GB] (rev a1)`, lspci.c
show_slot_name + class + names; `-D` adds the domain), the PCI Express capability prints
`LnkCap:	Port #0, Speed 16GT/s, Width x16, ...` (what the link can do) and `LnkSta:	Speed 8GT/s,
Width x8` (what it trained to); pciutils 3.8 appends ` (downgraded)`, some earlier releases ` (ok)`.
Speeds are 2.5/5/8/16/32/64/128 GT/s: PCIe generations 1 to 7. Bridges and other devices print the
same lines: only an NVIDIA display or 3D controller's lines count, unless the text holds no device
line at all (the two Lnk lines copied out of the listing of the GPU the reporter is asking about).
"""

from __future__ import annotations

import re

from llm_doctor.facts.gpu import Gpu, GpuFacts

_DEVICE = re.compile(r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<cls>[^:\n]+):\s*(?P<names>.*)$")
_GPU_CLASS = ("VGA compatible controller", "3D controller", "Display controller")
_LINK = re.compile(r"^\s*Lnk(?P<which>Cap|Sta):\s*(?:Port #\d+,\s*)?Speed (?P<speed>[\d.]+)GT/s[^,]*,\s*Width x(?P<width>\d+)")
GENERATION = {"2.5": 1, "5": 2, "8": 3, "16": 4, "32": 5, "64": 6, "128": 7}


def embedded_lspci(text: str) -> GpuFacts | None:
    """The NVIDIA GPUs of an `lspci -vv` output inside a text, with their link state; None when none shows one."""
    if "LnkSta" not in text:
        return None
    facts = GpuFacts(source="lspci -vv", available=True)
    lines = text.splitlines()
    # the two Lnk lines alone, copied out of the listing of the GPU the text is about: that GPU
    current: Gpu | None = None if any(_DEVICE.match(line.strip()) for line in lines) else Gpu(index=0)
    if current is not None:
        facts.gpus.append(current)
    for line in lines:
        if m := _DEVICE.match(line.strip()):
            current = None
            cls = re.sub(r"\s*\[[0-9a-fA-F]{4}\]$", "", m.group("cls").strip())  # `lspci -nn` adds the class code
            if cls in _GPU_CLASS and "NVIDIA" in m.group("names"):
                current = Gpu(index=len(facts.gpus), bus_id=m.group("bus"), name=_name(m.group("names")))
                facts.gpus.append(current)
        elif current is not None and (m := _LINK.match(line)):
            gen, width = GENERATION.get(m.group("speed")), int(m.group("width"))
            if m.group("which") == "Cap":
                current.pcie_gen_max, current.pcie_width_max = gen, width
            else:
                current.pcie_gen_current, current.pcie_width_current = gen, width
    facts.gpus = [g for g in facts.gpus if g.pcie_width_current is not None]
    for index, gpu in enumerate(facts.gpus):
        gpu.index = index
    return facts if facts.gpus else None


def _name(names: str) -> str:
    """'NVIDIA Corporation GA100 [A100 PCIe 80GB] (rev a1)' -> 'A100 PCIe 80GB' (the marketing name)."""
    m = re.search(r"\[([^\]]+)\]", names)
    return m.group(1) if m else re.sub(r"\s*\(rev [0-9a-f]+\)$", "", names.replace("NVIDIA Corporation", "")).strip()
