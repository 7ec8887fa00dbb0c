"""A `ray status` text handed to `analyze` (its own file, or pasted inside a log) -> ClusterFacts,
so the cluster checks judge what Ray had when the engine waited for its placement group, without a
live cluster. Per-node resources exist only in `ray status -v`; otherwise the totals do."""

from __future__ import annotations

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import ClusterFacts, NodeFacts, PlacementGroupFacts
from llm_doctor.logparse import ray_status


def to_cluster(status: ray_status.RayStatus, source: str) -> ClusterFacts:
    nodes = {nid: NodeFacts(node_id=nid, resources=res) for nid, res in status.nodes.items()}
    groups = [PlacementGroupFacts(id=f"demand {i + 1}", state="PENDING", strategy=d.strategy or "PACK", bundles=d.bundles,
                                  name=f"`{d.line}`")
              for i, d in enumerate(x for x in status.demands if x.placement_group)]
    return ClusterFacts(source=source, nodes=nodes, placement_groups=groups, totals=status.totals,
                        failures=status.failures)


def _cluster(text: str, source: str) -> ClusterFacts | None:
    status = ray_status.parse(text)  # empty when the text holds no status
    return to_cluster(status, source) if status.totals or status.active else None


def load_status(path: str, facts: Facts, deadline: Deadline) -> None:
    from llm_doctor.collect.gpu import EMBEDDED_BYTES, _read_text

    cluster = _cluster(_read_text(path, EMBEDDED_BYTES), path)
    if cluster is None:
        facts.notes.append(f"{path}: looked like `ray status` output but no resources could be read")
        return
    facts.cluster = cluster


def status_in(path: str, text: str, facts: Facts) -> bool:
    """A `ray status` pasted inside a log (an issue with the engine's output and the status it asked
    for) -> facts.cluster; True when one was read."""
    if facts.cluster is not None or (cluster := _cluster(text, path)) is None:
        return False
    facts.cluster = cluster
    return True
