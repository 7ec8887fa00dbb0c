"""What differs between the nodes of a Ray cluster: versions, GPU counts, socket interfaces, /dev/shm.

vLLM with `--distributed-executor-backend ray` runs one worker per GPU on every node, and they must
agree: another vLLM, torch or NCCL on one node breaks the collective set-up, a node that registered
fewer GPUs than it has leaves a placement group unschedulable, an NCCL_SOCKET_IFNAME naming no
interface there stops NCCL at its first all-reduce. Each finding names the node that differs from
the rest, and the value the others have, which is the fix.
"""

from __future__ import annotations

import statistics
from collections import Counter

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import NodeFacts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

NOT_INSTALLED = "(not installed)"
VERSION_NAMES = {"driver": "NVIDIA driver", "cuda": "CUDA (driver API)", "python": "Python", "ray": "Ray",
                 "torch": "torch", "vllm": "vLLM", "sglang": "SGLang", "nccl": "NCCL (nvidia-nccl-cu12)"}
PIP_NAMES = {"ray": "ray", "torch": "torch", "vllm": "vllm", "sglang": "sglang", "nccl": "nvidia-nccl-cu12"}
SOCKET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


def answered(facts: Facts) -> list[NodeFacts]:
    """The nodes that gave facts; comparing needs at least two."""
    nodes = [n for n in (facts.cluster.nodes.values() if facts.cluster else []) if not n.error]
    if len(nodes) < 2:
        raise NotApplicable(f"{len(nodes)} node(s) answered: nothing to compare")
    return nodes


def versions(node: NodeFacts) -> dict[str, str]:
    out = dict(node.versions)
    if node.gpus and node.gpus.available:
        out.update({k: v for k, v in (("driver", node.gpus.driver_version), ("cuda", node.gpus.cuda_version)) if v})
    return out


def majority(groups: dict[str, list[NodeFacts]]) -> str:
    """The value most nodes have (on a tie, the first node's): the others are the ones that differ."""
    return max(groups, key=lambda v: len(groups[v]))


def names(nodes: list[NodeFacts]) -> str:
    return ", ".join(n.label for n in nodes)


@check("cluster.versions", "cluster", codes=["cluster.version_skew"], needs=("cluster",))
def version_skew(facts: Facts) -> Outcome:
    """Driver, CUDA, torch, vLLM, NCCL, Python and Ray are the same version on every node."""
    nodes = answered(facts)
    per_node = {n.node_id: versions(n) for n in nodes}
    keys = [k for k in VERSION_NAMES if any(k in v for v in per_node.values())]
    findings = []
    for key in keys:
        # a node without NVML (a CPU-only head) says nothing about its driver: compare those with one
        judged = [n for n in nodes if key in per_node[n.node_id] or key not in ("driver", "cuda")]
        groups: dict[str, list[NodeFacts]] = {}
        for n in judged:
            groups.setdefault(per_node[n.node_id].get(key, NOT_INSTALLED), []).append(n)
        if len(groups) < 2:
            continue
        want = majority(groups)
        odd = [n for v, ns in groups.items() if v != want for n in ns]
        evidence = [f"{VERSION_NAMES[key]} {v} on {names(ns)}" for v, ns in groups.items()]
        if want == NOT_INSTALLED:
            fix = Fix(f"Remove {VERSION_NAMES[key]} from {names(odd)}, or install the same version on every node")
        elif key in PIP_NAMES:
            fix = Fix(f"On {names(odd)}: install {VERSION_NAMES[key]} {want}, as on the other nodes",
                      f"pip install '{PIP_NAMES[key]}=={want}'")
        else:
            fix = Fix(f"On {names(odd)}: install {VERSION_NAMES[key]} {want}, as on the other nodes"
                      + (" (or use the same container image everywhere)" if key != "python" else ""))
        findings.append(Finding("cluster.version_skew", f"{VERSION_NAMES[key]} differs between nodes: {want} on most; "
                                + "; ".join(f"{v} on {names(ns)}" for v, ns in groups.items() if v != want),
                                evidence, [fix]))
    return Outcome(findings, detail=f"{len(keys)} version(s) compared over {len(nodes)} nodes")


@check("cluster.gpus", "cluster", codes=["cluster.gpu_resources_mismatch"], needs=("cluster",))
def gpu_counts(facts: Facts) -> Outcome:
    """Each node registered with Ray the GPUs it has, and the GPU nodes have the same count."""
    nodes = answered(facts)
    findings = []
    for n in nodes:
        registered = int(n.resources.get("GPU", 0))
        if n.gpus is None or not n.gpus.available:
            continue
        seen = len(n.gpus.gpus)
        if registered != seen:
            visible = n.env.get("CUDA_VISIBLE_DEVICES")
            evidence = [f"{n.label}: Ray registered {registered} GPU(s), NVML sees {seen} ({n.gpus.driver_version or 'driver ?'})"]
            if visible is not None:
                evidence.append(f"CUDA_VISIBLE_DEVICES={visible} in the node's Ray workers")
            findings.append(Finding(
                "cluster.gpu_resources_mismatch", f"Ray node {n.label} registered {registered} GPU(s) but has {seen}", evidence,
                [Fix(f"Restart Ray on that node with its {seen} GPU(s)", f"ray start --address HEAD_IP:6379 --num-gpus {seen}")],
            ))
    counts = {n.node_id: int(n.resources.get("GPU", 0)) for n in nodes if n.resources.get("GPU", 0) > 0}
    if len(set(counts.values())) > 1:
        gpu_nodes = [n for n in nodes if n.node_id in counts]
        common = Counter(counts.values()).most_common(1)[0][0]
        odd = [n for n in gpu_nodes if counts[n.node_id] != common]
        least = min(counts.values())
        evidence = [f"{n.label}: {counts[n.node_id]} GPU(s) registered with Ray" for n in gpu_nodes]
        findings.append(Finding(
            "cluster.gpu_resources_mismatch",
            f"GPU counts differ between nodes: {common} on most; " + "; ".join(f"{counts[n.node_id]} on {n.label}" for n in odd),
            evidence,
            [Fix(f"Give {names(odd)} {common} GPU(s) like the others (ray start --num-gpus {common}), or remove them from the cluster"),
             Fix(f"Or keep tensor parallelism inside the smallest node: {least} GPU(s) per node over {len(gpu_nodes)} nodes",
                 f"vllm serve MODEL --distributed-executor-backend ray --tensor-parallel-size {least} "
                 f"--pipeline-parallel-size {len(gpu_nodes)}")],
        ))
    return Outcome(findings, detail=f"GPUs per node: {', '.join(str(int(n.resources.get('GPU', 0))) for n in nodes)}")


def _env(node: NodeFacts, var: str) -> str | None:
    """The variable as the node's Ray workers see it, else as an engine process there was given it."""
    if var in node.env:
        return node.env[var]
    procs = node.host.processes if node.host else []
    return next((p.env[var] for p in procs if var in p.env), None)


def missing_interfaces(value: str, interfaces: list[str], exact: bool) -> list[str]:
    """The names in an NCCL/Gloo interface list that match no interface on the node. NCCL matches by
    prefix unless the list starts with '='; a '^' list excludes, so it cannot name a missing one."""
    if value.startswith("^"):
        return []
    if value.startswith("="):
        value, exact = value[1:], True
    names = [v.strip() for v in value.split(",") if v.strip()]
    return [name for name in names
            if not any(i == name or (not exact and i.startswith(name)) for i in interfaces)]


@check("cluster.network", "cluster", codes=["cluster.network_interface"], needs=("cluster",))
def socket_interfaces(facts: Facts) -> Outcome:
    """NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME name interfaces that exist on each node."""
    nodes = answered(facts)
    findings = []
    for n in nodes:
        if not n.interfaces:
            continue
        for var in SOCKET_VARS:
            value = _env(n, var)
            if value is None:
                continue
            missing = missing_interfaces(value, n.interfaces, exact=var.startswith("GLOO"))
            if not missing:
                continue
            usable = [i for i in n.interfaces if i != "lo"]
            findings.append(Finding(
                "cluster.network_interface", f"{var}={value} on {n.label}: no interface {', '.join(missing)} there",
                [f"{n.label}: {var}={value}", f"interfaces on that node: {', '.join(n.interfaces)}"],
                [Fix(f"Set {var} on that node to an interface it has ({', '.join(usable) or 'none but lo'}), "
                     "the one on the network the other nodes reach it by",
                     f"{var}={usable[0]} ray start --address HEAD_IP:6379" if usable else None)],
            ))
    return Outcome(findings, detail=f"{len(findings)} socket interface variable(s) name a missing interface")


@check("cluster.shm", "cluster", codes=["load.shm_insufficient"], needs=("cluster",))
def shm_sizes(facts: Facts) -> Outcome:
    """No node has a far smaller /dev/shm than the others (a container started without --shm-size)."""
    nodes = [n for n in answered(facts) if n.host and n.host.shm_total_mib is not None]
    if len(nodes) < 2:
        raise NotApplicable("fewer than two nodes reported /dev/shm")
    sizes = {n.node_id: float(n.host.shm_total_mib or 0) for n in nodes}  # type: ignore[union-attr]
    median = statistics.median(sizes.values())
    small = [n for n in nodes if sizes[n.node_id] < median / 4]
    evidence = [f"{n.label}: /dev/shm {sizes[n.node_id]:.0f} MiB" for n in nodes]
    findings = [Finding(
        "load.shm_insufficient", f"/dev/shm on {n.label} is {sizes[n.node_id]:.0f} MiB, under a quarter of the nodes' median {median:.0f} MiB",
        evidence,
        [Fix("Docker: start that node's container like the others, with the host IPC namespace or the same /dev/shm",
             f"docker run --ipc=host ...   # or --shm-size={int(median)}m"),
         Fix(f"Kubernetes: mount an emptyDir with medium: Memory at /dev/shm (sizeLimit: {int(median)}Mi)")],
        explains=["load.nccl_failed"],
    ) for n in small]
    return Outcome(findings, detail=f"/dev/shm median {median:.0f} MiB over {len(nodes)} nodes")


@check("cluster.infiniband", "cluster", codes=["perf.slow_interconnect"], needs=("cluster",))
def infiniband(facts: Facts) -> Outcome:
    """InfiniBand is on every node or on none: NCCL falls back to sockets for the whole job when
    one node lacks it, so every pipeline or cross-node hop runs at Ethernet speed."""
    nodes = answered(facts)
    with_ib = [n for n in nodes if n.infiniband]
    without = [n for n in nodes if not n.infiniband and n.interfaces]  # a node that listed nothing says nothing
    if not with_ib or not without:
        return Outcome(detail=f"InfiniBand on {len(with_ib)} of {len(nodes)} nodes")
    evidence = [f"{n.label}: InfiniBand {', '.join(n.infiniband)}" for n in with_ib]
    evidence += [f"{n.label}: no InfiniBand device (/sys/class/infiniband is empty or absent)" for n in without]
    return Outcome([Finding(
        "perf.slow_interconnect", f"InfiniBand on {len(with_ib)} node(s) but not on {names(without)}: NCCL falls back to sockets",
        evidence,
        [Fix(f"Give {names(without)} the InfiniBand devices the others have (container: --device=/dev/infiniband, "
             "--cap-add=IPC_LOCK; Kubernetes: the RDMA device plugin), or keep those nodes out of the deployment"),
         Fix("Confirm what NCCL picked on each node", "NCCL_DEBUG=INFO vllm serve ...   # look for 'NET/IB' vs 'NET/Socket'")],
    )])
