"""`ray status` (the autoscaler's status text) -> what Ray has and what is waiting for it.

vLLM on Ray tells the user to run `ray status` when its placement group does not come up, so the
text arrives beside the engine log, or pasted inside it. Its layout is Ray's
`autoscaler/_private/util.py` (format_info_string), across versions:

    ======== Autoscaler status: 2025-03-28 00:38:24.697168 ========
    Node status
    Active:                    ("Healthy:" before Ray 1.4)
     1 node_0e1b...            (or "8 x86_worker_node": a count and a node type)
    Pending:
     (no pending nodes)
    Recent failures:
     (no failures)             (or " 10.0.0.157: custom1": a node that failed to start)
    Resources
    Usage:                     ("Total Usage:" since Ray 2.10)
     0.0/16.0 GPU              (" (0.0 used of 1.0 reserved in placement groups)" may follow)
     0B/3.39TiB memory
    Demands:                   ("Total Demands:" / "Pending Demands:" since 2.10)
     {'CPU': 1.0} * 1, {'GPU': 2.0} * 1 (PACK): 1+ pending placement groups
     {'CPU': 1.0}: 408+ pending tasks/actors

`ray status -v` adds one "Node: <id>" section per node with its own Usage block, which gives the
per-node totals the placement check needs; without it only the cluster's totals are known.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_BANNER = re.compile(r"=+ Autoscaler status: [^=\n]*=+")
_SECTION = re.compile(r"^\s*(Node status|Resources|Active:|Healthy:|Idle:|Pending:|Recent failures:|(?:Total |Pending )?Usage:|"
                      r"(?:Total |Pending )?Demands:|Total Constraints:|From request_resources:|Node: \S+)\s*$")
_USAGE = re.compile(r"^\s*(?P<used>[\d.]+)(?P<uunit>[KMGTP]?i?B)?/(?P<total>[\d.]+)(?P<tunit>[KMGTP]?i?B)?\s+(?P<name>\S+)")
_DEMAND = re.compile(r"^\s*(?P<bundles>\{.*?\}(?:\s*\*\s*\d+)?(?:,\s*\{.*?\}(?:\s*\*\s*\d+)?)*)\s*"
                     r"(?:\((?P<strategy>[A-Z_]+)\))?\s*:\s*(?P<count>\d+)\+?\s+pending\s+(?P<what>placement groups|tasks/actors)",
                     re.I)
_BUNDLE = re.compile(r"(\{[^{}]*\})(?:\s*\*\s*(\d+))?")
_BYTES_UNIT = re.compile(r"[KMGTP]?i?B")  # Ray before 2.0 printed "0.00/19.915 GiB memory"
_NODE_COUNT = re.compile(r"^\s*(\d+)\s+(\S+)")


@dataclass
class Demand:
    """One line of Demands: a request shape and how many wait for it."""

    bundles: list[dict[str, float]]  # a placement group's bundles, repeated as `* N` says
    strategy: str  # PACK | SPREAD | STRICT_PACK | STRICT_SPREAD, "" for tasks/actors
    waiting: int  # the "N+" Ray prints
    placement_group: bool
    line: str


@dataclass
class RayStatus:
    """What one `ray status` text says."""

    active: dict[str, int] = field(default_factory=dict)  # node ID or node type -> count
    pending_nodes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=dict)  # resource -> the cluster's total
    used: dict[str, float] = field(default_factory=dict)
    nodes: dict[str, dict[str, float]] = field(default_factory=dict)  # `ray status -v`: node ID -> its totals
    demands: list[Demand] = field(default_factory=list)


def embedded_at(text: str) -> int | None:
    """Where a `ray status` text starts inside a longer paste; None when there is none."""
    m = _BANNER.search(text)
    if m is None:
        return None
    rest = text[m.end() : m.end() + 4096]
    return m.start() if "Resources" in rest and "Usage:" in rest else None


def looks_like_ray_status(head: str) -> bool:
    at = embedded_at(head)
    return at is not None and at < 4096  # a status at the top (after a few lines of CLI chatter)


def parse(text: str) -> RayStatus:
    """Every status block in the text is read; the last one wins (a paste of `watch ray status`)."""
    at = embedded_at(text)
    if at is None:
        return RayStatus()
    blocks = _BANNER.split(text[at:])[1:]
    return _parse_block(blocks[-1] if blocks else "")


def _parse_block(block: str) -> RayStatus:
    status = RayStatus()
    section, node = "", ""
    for raw in block.splitlines():
        line = raw.rstrip()
        head = _SECTION.match(line)
        if head:
            title = head.group(1)
            if title.startswith("Node: "):
                node = title.split(None, 1)[1]
                status.nodes.setdefault(node, {})
                section = ""
            else:
                section = title
            continue
        if not line.strip() or line.strip().startswith(("(no ", "(none)", "---")):
            continue
        if section in ("Active:", "Healthy:", "Idle:"):
            m = _NODE_COUNT.match(line)
            if m:
                status.active[m.group(2)] = status.active.get(m.group(2), 0) + int(m.group(1))
        elif section == "Pending:":
            status.pending_nodes.append(line.strip())
        elif section == "Recent failures:":
            status.failures.append(line.strip())
        elif section.endswith("Usage:"):
            m = _USAGE.match(line)
            if m and not m.group("tunit") and not _BYTES_UNIT.fullmatch(m.group("name")):  # not memory sizes
                target = status.nodes[node] if node else status.totals
                target[m.group("name")] = float(m.group("total"))
                if not node:
                    status.used[m.group("name")] = float(m.group("used"))
        elif section.endswith("Demands:"):
            demand = _demand(line)
            if demand is not None:
                status.demands.append(demand)
    return status


def _demand(line: str) -> Demand | None:
    m = _DEMAND.match(line)
    if m is None:
        return None
    bundles: list[dict[str, float]] = []
    for shape, times in _BUNDLE.findall(m.group("bundles")):
        try:
            bundle = ast.literal_eval(shape)
        except (ValueError, SyntaxError):
            return None
        if not isinstance(bundle, dict):
            return None
        clean = {str(k): float(v) for k, v in bundle.items() if isinstance(v, int | float)}
        bundles.extend([clean] * int(times or 1))
    is_pg = m.group("what").lower() == "placement groups"
    return Demand(bundles, (m.group("strategy") or "").upper(), int(m.group("count")), is_pg, line.strip())
