"""The Ray cluster as a table, a row per node, with each value that differs from most nodes
marked `*`: the odd node stands out at a glance (text, markdown and HTML reports, via
Report.extra_sections)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from llm_doctor.facts.cluster import ClusterFacts, NodeFacts


def _gpus(n: NodeFacts) -> str:
    seen = len(n.gpus.gpus) if n.gpus and n.gpus.available else "?"
    return f"{int(n.resources.get('GPU', 0))}/{seen}"


def _version(key: str) -> Callable[[NodeFacts], str]:
    def get(n: NodeFacts) -> str:
        if key in ("driver", "cuda"):
            gpus = n.gpus if n.gpus and n.gpus.available else None
            return (gpus.driver_version if key == "driver" else gpus.cuda_version) if gpus else ""
        return n.versions.get(key, "-")
    return get


COLUMNS: tuple[tuple[str, Callable[[NodeFacts], str]], ...] = (
    ("GPUs ray/nvml", _gpus),
    ("driver", _version("driver")),
    ("vllm", _version("vllm")),
    ("torch", _version("torch")),
    ("nccl", _version("nccl")),
    ("python", _version("python")),
    ("ray", _version("ray")),
    ("/dev/shm MiB", lambda n: f"{n.host.shm_total_mib:.0f}" if n.host and n.host.shm_total_mib is not None else ""),
    ("IB", lambda n: ",".join(n.infiniband) or "-"),
    ("NCCL_SOCKET_IFNAME", lambda n: n.env.get("NCCL_SOCKET_IFNAME", "")),
)


@dataclass
class Cell:
    value: str
    odd: bool = False  # differs from the value most nodes have


def table(cluster: ClusterFacts) -> tuple[list[str], list[list[Cell]]]:
    """The header and a row per node; the text and HTML reports draw the same cells."""
    nodes = list(cluster.nodes.values())
    answered = [n for n in nodes if not n.error]
    header = ["node", *(name for name, _ in COLUMNS)]
    rows = []
    for n in nodes:
        if n.error:
            rows.append([Cell(n.label), Cell(f"({n.error})", odd=True), *[Cell("")] * (len(COLUMNS) - 1)])
            continue
        row = [Cell(n.label)]
        for _, get in COLUMNS:
            values = Counter(get(m) for m in answered if get(m))
            value = get(n)
            row.append(Cell(value, len(values) > 1 and value != values.most_common(1)[0][0]))
        rows.append(row)
    return header, rows


def render(cluster: ClusterFacts) -> str:
    header, rows = table(cluster)
    cells = [header, *([c.value + ("*" if c.odd and not c.value.startswith("(") else "") for c in r] for r in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join([*lines, "* differs from most nodes"])
