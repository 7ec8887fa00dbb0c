"""Ray's own cluster failures in an engine log (vLLM with `--distributed-executor-backend ray`), so
that `analyze` of a multi-node log names them without a live cluster: a placement group Ray cannot
place (too few GPUs registered, a bundle no node can hold), no Ray head at the address (GCS gone or
never started), a node marked dead. Their wordings are catalogue data (ray.jsonl, vllm.jsonl); the
engine's TP/NCCL errors that follow them are their symptoms.
"""

from __future__ import annotations

from llm_doctor.checks.cluster.placement import short_of_totals
from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

SYMPTOMS = ["load.tp_invalid", "load.nccl_failed", "load.gpu_not_visible", "load.startup_timeout", "load.unrecognized_failure"]


@check("cluster.ray_log", "cluster", codes=["cluster.placement_infeasible", "cluster.connect_failed", "cluster.node_unreachable"],
       events=["ray_placement_infeasible", "ray_cluster_unreachable", "ray_node_dead"])
def ray_log(facts: Facts, log: LogView) -> Outcome:
    """No Ray cluster failure (unplaceable placement group, no Ray head, a dead node) in the log."""
    findings = []
    placement = log.events("ray_placement_infeasible")
    if placement and not short_of_totals(facts.cluster):  # else cluster.placement names it with Ray's own numbers
        fatal = any(e.fatal for e in placement)
        findings.append(Finding(
            "cluster.placement_infeasible",
            "Ray cannot place the engine's GPU bundles: the cluster has fewer free GPUs (or none that fit a bundle) than TP x PP asks"
            if fatal else "a placement group is waiting for GPUs Ray does not have free",
            le.evidence(placement),
            [Fix("See what Ray has registered and what is pending", "ray status"),
             Fix("Make TP x PP equal to the GPUs Ray lists (TP within a node, PP across nodes), or start the missing nodes "
                 "with `ray start --address HEAD:6379 --num-gpus N`")],
            severity="error" if fatal else "warn", explains=SYMPTOMS,
        ))
    unreachable = log.events("ray_cluster_unreachable")
    if unreachable:
        findings.append(Finding(
            "cluster.connect_failed", "the engine found no Ray head (GCS) to connect to", le.evidence(unreachable),
            [Fix("Check the head is up and its address is the one the engine uses (RAY_ADDRESS)", "ray status"),
             Fix("Start the head if it is not running", "ray start --head --port 6379")],
            explains=SYMPTOMS,
        ))
    dead = log.events("ray_node_dead")
    if dead:
        findings.append(Finding(
            "cluster.node_unreachable", "Ray marked a node dead during the run (its raylet stopped answering heartbeats)",
            le.evidence(dead),
            [Fix("Find the dead node and why it went (its raylet log, the kernel log for an OOM kill)", "ray list nodes --filter state=DEAD")],
            explains=SYMPTOMS,
        ))
    if findings:
        return Outcome(findings)
    if placement:
        return Outcome(detail="the log's placement-group wait is judged by cluster.placement, against the `ray status` totals")
    return Outcome(detail="no Ray cluster failure in the log")
