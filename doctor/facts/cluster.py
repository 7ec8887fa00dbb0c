"""Cluster facts: one entry per Ray node, keyed by Ray's node ID, with that node's own host and GPU
facts, the versions installed there, its network interfaces and the NCCL/Gloo variables its workers see.

A multi-node deployment usually fails because one node differs from the others (another driver or
vLLM, fewer GPUs registered with Ray, an NCCL_SOCKET_IFNAME that names no interface there, a tiny
/dev/shm); the cluster checks compare these entries, so each must say what that node itself reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_doctor.facts.gpu import GpuFacts
from llm_doctor.facts.host import HostFacts


def is_local(ref: str) -> bool:
    """A model reference that is a path on the node (else a Hugging Face ID or a served name)."""
    return ref.startswith(("/", "./", "../", "~"))


@dataclass
class ModelCopy:
    """A model as one node has it: where it was looked for, and a fingerprint to compare nodes by."""

    ref: str  # as given: a local path or a Hugging Face ID
    path: str = ""  # where it was looked for on the node (the path, or its hub-cache snapshot)
    present: bool = False
    files: int = 0
    weight_files: int = 0
    bytes: int = 0
    config_sha256: str = ""  # of config.json, the first 16 hex digits
    error: str = ""  # why it could not be read (permissions, too many files)


@dataclass
class NodeFacts:
    node_id: str
    ip: str = ""
    hostname: str = ""
    alive: bool = True  # what Ray's GCS said when the run started
    head: bool = False
    resources: dict[str, float] = field(default_factory=dict)  # what Ray registered: CPU, GPU, custom
    error: str = ""  # why this node gave no facts (dead, timed out, the task failed)
    host: HostFacts | None = None
    gpus: GpuFacts | None = None
    versions: dict[str, str] = field(default_factory=dict)  # python, ray, torch, vllm, nccl, driver, cuda
    interfaces: list[str] = field(default_factory=list)  # network interfaces present on the node
    infiniband: list[str] = field(default_factory=list)  # /sys/class/infiniband devices
    env: dict[str, str] = field(default_factory=dict)  # NCCL_*/GLOO_* socket and IB variables its workers see
    models: list[ModelCopy] = field(default_factory=list)  # the model the deployment serves, as this node has it

    @property
    def label(self) -> str:
        """How a finding names the node: its address, a short node ID, and its custom resources
        (nodes on one host share the address, so the ID and resources tell them apart)."""
        custom = sorted(k for k in self.resources if k not in STANDARD_RESOURCES and not k.startswith("node:"))
        tags = f" [{', '.join(custom)}]" if custom else ""
        return f"{self.ip or self.hostname or '?'} node {self.node_id[:8]}{' (head)' if self.head else ''}{tags}"


STANDARD_RESOURCES = ("CPU", "GPU", "memory", "object_store_memory", "accelerator_type")


@dataclass
class PlacementGroupFacts:
    """A placement group as Ray's GCS lists it: vLLM asks for one bundle per GPU worker."""

    id: str
    name: str = ""
    state: str = ""  # PENDING | PREPARED | CREATED | REMOVED | RESCHEDULING
    scheduling_state: str = ""  # Ray's own verdict, e.g. INFEASIBLE, NO_RESOURCES, FINISHED
    strategy: str = ""  # PACK | SPREAD | STRICT_PACK | STRICT_SPREAD
    bundles: list[dict[str, float]] = field(default_factory=list)


@dataclass
class ClusterFacts:
    address: str = ""
    error: str = ""  # why the cluster could not be reached at all (no address, nothing listening)
    ray_version: str = ""  # of the driver that connected
    nodes: dict[str, NodeFacts] = field(default_factory=dict)  # node ID -> facts
    placement_groups: list[PlacementGroupFacts] = field(default_factory=list)
    seconds: float | None = None  # how long collection across the nodes took
    source: str = ""  # "" for a live cluster (run --ray); the file a `ray status` text was read from
    totals: dict[str, float] = field(default_factory=dict)  # the cluster's resources in all, as `ray status` sums them
    failures: list[str] = field(default_factory=list)  # `ray status` "Recent failures" lines
