"""Did every node of the Ray cluster answer? A node that is dead, died during the run, or did not
answer in time is the first suspect of a multi-node failure, and the other cluster checks can only
compare the nodes that did answer."""

from __future__ import annotations

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import ClusterFacts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome


@check("cluster.reachable", "cluster", codes=["cluster.connect_failed", "cluster.node_unreachable"], needs=("cluster",))
def reachable(facts: Facts) -> Outcome:
    """The cluster answers, and so does each of its nodes."""
    cluster = facts.cluster
    if cluster is None:
        raise NotApplicable("no Ray cluster inspected")
    if cluster.error:
        return Outcome([Finding(
            "cluster.connect_failed", f"the Ray cluster at {cluster.address} cannot be reached", [cluster.error],
            [Fix("Give the head's GCS address (the port of `ray start --head --port`, 6379 by default)",
                 "llm-doctor run --ray HEAD_IP:6379"),
             Fix("Check that the head is up there", "ray status --address HEAD_IP:6379")],
        )])
    if cluster.source:  # a `ray status` text: its "Recent failures" are the nodes that went
        return _status_failures(cluster)
    findings = []
    for node in cluster.nodes.values():
        if not node.error:
            continue
        gpus = node.resources.get("GPU", 0)
        evidence = [f"{node.label}: {node.error}",
                    f"Ray registered {gpus:g} GPU(s) and {node.resources.get('CPU', 0):g} CPU(s) there"]
        fixes = [Fix(f"On {node.ip or node.hostname}: check that the raylet runs and that the node reaches the head",
                     "ray status"),
                 Fix("Look for why it stopped (OOM killer, preemption, a crashed raylet)",
                     "less /tmp/ray/session_latest/logs/raylet.out")]
        if "No module named 'llm_doctor'" in node.error or "ModuleNotFoundError" in node.error:
            fixes.insert(0, Fix(f"Install llm-doctor on {node.ip or node.hostname} too, the same version as here",
                                "pip install llm-doctor"))
        if node.alive and "did not answer" in node.error and cluster.seconds:
            fixes.insert(0, Fix("A node busy or swapping answers late: run again with twice the time this run took",
                                f"llm-doctor run --ray {cluster.address} --deadline {int(cluster.seconds * 2) + 1}"))
        findings.append(Finding("cluster.node_unreachable", f"Ray node {node.label} gave no facts", evidence, fixes))
    answered = sum(1 for n in cluster.nodes.values() if not n.error)
    return Outcome(findings, detail=f"{answered} of {len(cluster.nodes)} node(s) answered"
                   + (f" in {cluster.seconds:g} s" if cluster.seconds is not None else ""))


def _status_failures(cluster: ClusterFacts) -> Outcome:
    if not cluster.failures:
        return Outcome(detail=f"{cluster.source}: `ray status` lists no recent node failures")
    return Outcome([Finding(
        "cluster.node_unreachable", f"Ray lists {len(cluster.failures)} recent node failure(s)",
        [f"{cluster.source}: {line}" for line in cluster.failures],
        [Fix("Read why each failed to start or died: the autoscaler's log on the head names the launch or setup error",
             "tail -n 200 /tmp/ray/session_latest/logs/monitor.log")],
        severity="warn")])
