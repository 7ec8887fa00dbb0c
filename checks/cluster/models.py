"""The model is on every node, and the same there: vLLM's workers load the weights from each node's
own disk (or hub cache), so a node without them fails the start-up (or downloads for an hour), and a
node with another revision serves another model behind the same name.

Each node fingerprints the model it was asked about (file count, bytes, weight files, config.json
hash); this check compares the fingerprints and names the node that differs, with a copy command
from a node that has the majority's copy.
"""

from __future__ import annotations

from collections import defaultdict

from llm_doctor.checks.cluster.differences import answered, majority, names
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import ModelCopy, NodeFacts, is_local
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

GiB = 1024**3


def _shape(copy: ModelCopy) -> str:
    return f"{copy.files} files, {copy.bytes / GiB:.2f} GiB, {copy.weight_files} weight files, config.json {copy.config_sha256 or 'absent'}"


def _fetch(ref: str, source: NodeFacts, copy: ModelCopy) -> Fix:
    if is_local(ref):
        return Fix(f"Copy the model from {source.label}, which has the others' copy", f"rsync -a {source.ip}:{copy.path}/ {copy.path}/")
    return Fix(f"Download {ref} into that node's hub cache (the others have it at {copy.path})", f"huggingface-cli download {ref}")


@check("cluster.models", "cluster", codes=["cluster.model_missing_on_node"], needs=("cluster",))
def model_copies(facts: Facts) -> Outcome:
    """The model is present on every node, with the same files and config.json."""
    nodes = answered(facts)
    refs = list(dict.fromkeys(m.ref for n in nodes for m in n.models if m.path))
    if not refs:
        raise NotApplicable("no node was asked about a model given as a local path or a Hugging Face ID")
    findings = []
    for ref in refs:
        copies = {n.node_id: next((m for m in n.models if m.ref == ref), None) for n in nodes}
        have = [n for n in nodes if copies[n.node_id] and copies[n.node_id].present]  # type: ignore[union-attr]
        lack = [n for n in nodes if n not in have]
        if not have:
            if is_local(ref):
                findings.append(Finding("cluster.model_missing_on_node", f"model {ref} is on none of the {len(nodes)} nodes",
                                        [f"{n.label}: no folder {copies[n.node_id].path}" for n in nodes if copies[n.node_id]],  # type: ignore[union-attr]
                                        [Fix("Put the model at that path on every node (or on shared storage mounted there)")]))
            continue
        groups: dict[str, list[NodeFacts]] = defaultdict(list)
        for n in have:
            c = copies[n.node_id]
            groups["" if c.error else _shape(c)].append(n)  # type: ignore[union-attr]
        common = majority(groups)
        source = groups[common][0]
        source_copy = copies[source.node_id]
        assert source_copy is not None
        for n in lack:
            findings.append(Finding(
                "cluster.model_missing_on_node", f"model {ref} is missing on {n.label}",
                [f"{n.label}: nothing at {copies[n.node_id].path if copies[n.node_id] else '?'}",  # type: ignore[union-attr]
                 f"{names(have)}: {common or 'present'}"],
                [_fetch(ref, source, source_copy)],
                explains=["load.model_files"],
            ))
        for shape, members in groups.items():
            if shape == common or not shape:
                continue
            findings.append(Finding(
                "cluster.model_missing_on_node", f"model {ref} differs on {names(members)} from the other nodes' copy",
                [f"{names(members)}: {shape}", f"{names(groups[common])}: {common}"],
                [_fetch(ref, source, source_copy)],
                explains=["load.model_files"],
            ))
    return Outcome(findings, detail=f"{len(refs)} model(s) compared over {len(nodes)} nodes")
