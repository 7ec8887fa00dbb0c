"""Can each pending placement group ever be placed? vLLM on Ray reserves one bundle per GPU worker
(TP x PP of them) before it starts; when the nodes Ray has cannot hold them, the engine waits
("Waiting for creating a placement group ...") until it times out. Judged against each node's
total resources as Ray registered them, so "busy" is never mistaken for "impossible"."""

from __future__ import annotations

from collections import Counter

from llm_doctor.engine import check
from llm_doctor.engine_flags import command
from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import ClusterFacts, PlacementGroupFacts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

PENDING = ("PENDING", "RESCHEDULING")


def fits(bundle: dict[str, float], node: dict[str, float]) -> bool:
    return all(node.get(k, 0.0) >= v for k, v in bundle.items() if v > 0)


def _fmt(resources: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in sorted(resources.items()) if v > 0) + "}"


def asked(pg: PlacementGroupFacts) -> Counter[str]:
    """What all of a placement group's bundles ask for together."""
    total: Counter[str] = Counter()
    for b in pg.bundles:
        total.update(b)
    return total


def why_infeasible(pg: PlacementGroupFacts, nodes: list[dict[str, float]]) -> str:
    """Why no placement on these nodes can exist ("" when one might): only certain reasons."""
    total = asked(pg)
    if pg.strategy == "STRICT_PACK" and not any(fits(dict(total), n) for n in nodes):
        best = max(nodes, key=lambda n: n.get("GPU", 0.0), default={})
        return f"STRICT_PACK needs {_fmt(dict(total))} on one node; the largest node has {_fmt({k: best.get(k, 0.0) for k in total})}"
    for b in pg.bundles:
        if not any(fits(b, n) for n in nodes):
            return f"bundle {_fmt(b)} fits no node"
    if pg.strategy == "STRICT_SPREAD":
        biggest = max(pg.bundles, key=lambda b: sum(b.values()), default={})
        room = sum(1 for n in nodes if fits(biggest, n))
        if room < len(pg.bundles):
            return f"STRICT_SPREAD needs {len(pg.bundles)} nodes that each hold {_fmt(biggest)}; {room} do"
    for key, need in total.items():
        have = sum(n.get(key, 0.0) for n in nodes)
        if need > have:
            return f"it needs {need:g} {key} in all; the cluster has {have:g}"
    return ""


@check("cluster.placement", "cluster", codes=["cluster.placement_infeasible"], needs=("cluster",))
def placement(facts: Facts) -> Outcome:
    """Every pending placement group fits the cluster's nodes."""
    cluster = facts.cluster
    if cluster is not None and not cluster.nodes and cluster.totals:
        cfg = facts.deployment
        return _against_totals(cluster, cfg.engine if cfg is not None else "")
    if cluster is None or not cluster.nodes:
        raise NotApplicable("no cluster nodes")
    pending = [pg for pg in cluster.placement_groups if pg.state in PENDING]
    nodes = [n for n in cluster.nodes.values() if n.alive]
    totals = [n.resources for n in nodes]
    gpu_nodes = [int(r.get("GPU", 0)) for r in totals if r.get("GPU", 0) > 0]
    findings = []
    for pg in pending:
        reason = why_infeasible(pg, totals)
        if not reason and pg.scheduling_state != "INFEASIBLE":
            continue  # waiting for busy resources, not impossible
        evidence = [f"placement group {pg.name or pg.id} ({pg.strategy}, {len(pg.bundles)} bundles {_fmt(pg.bundles[0]) if pg.bundles else ''}): "
                    f"{pg.state}, Ray says {pg.scheduling_state or '?'}",
                    *(f"{n.label}: {_fmt(n.resources)}" for n in nodes)]
        fixes = []
        if any(b.get("GPU") for b in pg.bundles) and gpu_nodes:
            per_node = min(gpu_nodes)
            fixes.append(Fix(f"Ask for what the cluster has: {sum(gpu_nodes)} GPU(s) on {len(gpu_nodes)} node(s), at least {per_node} per node "
                             "(tensor parallel inside a node, pipeline parallel across nodes)",
                             f"vllm serve MODEL --distributed-executor-backend ray --tensor-parallel-size {per_node} "
                             f"--pipeline-parallel-size {len(gpu_nodes)}"))
        fixes.append(Fix("Or add nodes that hold the missing resources (ray start --address HEAD_IP:6379 --num-gpus N on each)"))
        findings.append(Finding("cluster.placement_infeasible",
                                f"placement group {pg.name or pg.id} can never be placed: {reason or 'Ray marks it infeasible'}",
                                evidence, fixes))
    return Outcome(findings, detail=f"{len(pending)} pending of {len(cluster.placement_groups)} placement group(s)")


def short_of_totals(cluster: ClusterFacts | None) -> list[tuple[PlacementGroupFacts, str, float]]:
    """Pending placement groups that ask for more of a resource than a `ray status` says the cluster
    has in all: (group, resource, amount asked), GPU first. A status without `-v` sums the nodes, so
    this is the one reason that is certain from it."""
    if cluster is None or not cluster.totals:
        return []
    out = []
    for pg in cluster.placement_groups:
        if pg.state not in PENDING:
            continue
        short = {k: v for k, v in asked(pg).items() if v > cluster.totals.get(k, 0.0)}
        if short:
            key = "GPU" if "GPU" in short else sorted(short)[0]
            out.append((pg, key, short[key]))
    return out


def _against_totals(cluster: ClusterFacts, engine: str) -> Outcome:
    have = _fmt(cluster.totals)
    findings = []
    for pg, key, amount in short_of_totals(cluster):
        gpus = int(cluster.totals.get("GPU", 0))
        fixes = []
        if key == "GPU" and gpus == 1:
            fixes.append(Fix("Ask for the one GPU Ray has", command(engine or "vllm", ("tp", 1), ("pp", 1))))
        elif key == "GPU" and gpus:
            fixes.append(Fix(f"Ask for the {gpus} GPUs Ray has: TP x PP = {gpus}, tensor parallel inside a node and "
                             "pipeline parallel across nodes (`ray status -v` shows the GPUs per node)"))
        fixes.append(Fix(f"Or add nodes with the missing {key} (ray start --address HEAD_IP:6379 --num-gpus N on each), "
                         "then check again", "ray status -v"))
        findings.append(Finding(
            "cluster.placement_infeasible",
            f"a pending placement group needs {amount:g} {key} in all; the cluster has {cluster.totals.get(key, 0.0):g}",
            [f"{cluster.source}: {pg.name}", f"{cluster.source}: cluster totals {have}"], fixes))
    pending = sum(1 for pg in cluster.placement_groups if pg.state in PENDING)
    return Outcome(findings, detail=f"{pending} pending placement group(s) against the cluster's totals {have}")
