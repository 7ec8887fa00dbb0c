"""`nvidia-smi topo -m` and `topo -p2p r` matrices -> the GPU-to-GPU link level and P2P status.

Real pastes are damaged: TABs expanded to spaces, a leading TAB before `GPU0`, cells fused by a
lost TAB (`SYSSYS`, `PXBNODE`), truncated CPU-affinity columns, NIC rows without their self cell.
So a row is read as the sequence of *known cell tokens* after its label, not by column position:
the first N tokens of a GPU row are its N GPU cells, whatever the spacing.
"""

from __future__ import annotations

import re

LEVELS = ("X", "NV#", "PIX", "PXB", "PHB", "NODE", "SYS")
P2P_STATUSES = ("OK", "CNS", "GNS", "TNS", "NS", "U")

_HEADER = re.compile(r"^\s*GPU0(\s+GPU\d+)*\b")
_HEADER_ANYWHERE = re.compile(r"^[ \t]*GPU0[ \t]+GPU1\b", re.M)
_ROW = re.compile(r"^\s*(GPU\d+|NIC\d+|mlx\S+)\s+(.*)$")
_TOPO_CELL = re.compile(r"NV\d+|PIX|PXB|PHB|NODE|SYS|X")
_P2P_CELL = re.compile(r"OK|CNS|GNS|TNS|NS|U|X")
_NIC_LEGEND = re.compile(r"^\s*NIC(\d+):\s*(\S+)")


def looks_like_topo(head: str) -> bool:
    lines = head.splitlines()
    for i, line in enumerate(lines[:50]):
        if _HEADER.match(line.replace("\t", " ")):
            nxt = " ".join(lines[i + 1 : i + 3])
            return bool(re.search(r"\bGPU0\s+(X|NV\d+|PIX|PXB|PHB|NODE|SYS|OK|CNS)\b", nxt))
    return False


def embedded_at(text: str) -> int | None:
    """Where a `topo -m` / `topo -p2p` matrix starts inside a longer paste (an issue's log with the
    reporter's `nvidia-smi topo -m`, collect_env's "NVIDIA Topology:" section); None when there is none."""
    if "GPU1" not in text:  # a C-speed look first: most logs hold no matrix
        return None
    for m in _HEADER_ANYWHERE.finditer(text):
        if looks_like_topo(text[m.start() : m.start() + 4096]):
            return m.start()
    return None


def parse(text: str) -> tuple[list[list[str]], list[list[str]], list[str]]:
    """-> (topology matrix, p2p matrix, NIC names); the one not in the text is empty."""
    lines = text.replace("\r", "").split("\n")
    header_at = next((i for i, ln in enumerate(lines) if _HEADER.match(ln.replace("\t", " "))), None)
    if header_at is None:
        return [], [], []
    n_gpus = len(re.findall(r"\bGPU\d+\b", lines[header_at].split("CPU")[0]))
    rows: list[list[str]] = []
    p2p = False
    for line in lines[header_at + 1 :]:
        m = _ROW.match(line)
        if not m or not m.group(1).startswith("GPU"):
            if rows and (not line.strip() or line.lstrip().startswith(("NIC", "Legend"))):
                break
            continue
        body = m.group(2)
        if not rows:
            p2p = bool(re.search(r"\b(OK|CNS|GNS|TNS)\b", body)) and not re.search(r"NV\d+|PIX|PXB|PHB|NODE|SYS", body)
        cells = (_P2P_CELL if p2p else _TOPO_CELL).findall(body)
        rows.append(cells[:n_gpus])
    nics = []
    for line in lines:
        if m := _NIC_LEGEND.match(line):
            nics.append(m.group(2))
    rows = [r for r in rows if len(r) == n_gpus]
    return ([], rows, nics) if p2p else (rows, [], nics)


def level_is_nvlink(level: str) -> bool:
    return level.startswith("NV")


def nvlink_count(level: str) -> int:
    m = re.match(r"NV(\d+)", level)
    return int(m.group(1)) if m else 0
