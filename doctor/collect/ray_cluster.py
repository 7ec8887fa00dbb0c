"""Per-node facts from a running Ray cluster (`run --ray auto|ADDRESS`): the host and GPU collectors
run as one Ray task pinned to each alive node, all at once, under the overall deadline.

Ray is an optional extra, imported only here. Ray's own connect retries for minutes on a wrong
address, so the address is checked with a plain TCP connect first, and every wait on the cluster is
bounded by the deadline: a node that does not answer in time, or dies during the run, is recorded
with the reason, never waited for.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from llm_doctor.engine import Deadline
from llm_doctor.facts.cluster import ClusterFacts, NodeFacts, PlacementGroupFacts

INSTALL = "pip install 'llm-doctor[ray]'"
DEFAULT_GCS_PORT = 6379
CURRENT_CLUSTER_FILE = Path("/tmp/ray/ray_current_cluster")  # where `ray start --head` writes its address
CONNECT_TIMEOUT_S = 3.0
NODE_ENV_PREFIXES = ("NCCL_", "GLOO_", "CUDA_VISIBLE_DEVICES")
VERSIONED_PACKAGES = {"ray": "ray", "torch": "torch", "vllm": "vllm", "sglang": "sglang", "nccl": "nvidia-nccl-cu12"}


def require_ray() -> None:
    """--ray without the `ray` package: a usage error naming the install command (checked without
    importing ray, which costs ~0.7 s)."""
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        found = False
    if not found:
        raise RuntimeError(f"--ray needs the Ray client: {INSTALL}")


def resolve(address: str) -> str:
    """`auto`: RAY_ADDRESS, else the cluster `ray start --head` recorded on this machine."""
    if address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    try:
        return CURRENT_CLUSTER_FILE.read_text().strip()
    except OSError:
        return ""


def host_port(address: str) -> tuple[str, int]:
    """'10.0.0.5:6379', 'ray://10.0.0.5:10001', '10.0.0.5' -> (host, port)."""
    rest = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return rest, DEFAULT_GCS_PORT
    return host.strip("[]"), int(port)


def collect(address: str, sample_s: float, deadline: Deadline, models: tuple[str, ...] = ()) -> ClusterFacts:
    """`models`: the model references (a local path or a Hugging Face ID) each node is asked to
    locate and fingerprint."""
    started = time.monotonic()
    target = resolve(address)
    facts = ClusterFacts(address=target or address)
    if not target:
        facts.error = (f"--ray {address}: RAY_ADDRESS is not set and no Ray cluster was started on this machine "
                       f"({CURRENT_CLUSTER_FILE} is absent)")
        return facts
    host, port = host_port(target)
    try:
        with socket.create_connection((host, port), timeout=max(0.1, min(CONNECT_TIMEOUT_S, deadline.remaining()))):
            pass
    except OSError as exc:
        facts.error = f"nothing answers at {host}:{port} ({exc.strerror or exc})"
        return facts
    import ray

    facts.ray_version = ray.__version__
    # Ray prints cluster events ("(raylet) Raylet is terminated ...") to stdout, which belongs to the report
    with contextlib.redirect_stdout(sys.stderr):
        wait = deadline.remaining() / 2
        failure = connect(ray, target, wait)
        if failure:
            facts.error = failure
            return facts
        try:
            _gather(ray, facts, sample_s, deadline, models)
        finally:
            ray.shutdown()
    facts.seconds = round(time.monotonic() - started, 2)
    return facts


def connect(ray: Any, target: str, wait: float) -> str:
    """ray.init, bounded: something that accepts TCP but is not a Ray GCS makes it retry for
    minutes, so it runs in a daemon thread that is given up on after `wait` seconds.
    Returns why it failed, or "" once connected."""
    outcome: list[str] = []

    def init() -> None:
        try:
            ray.init(address=target, log_to_driver=False, logging_level=logging.ERROR, include_dashboard=False)
            outcome.append("")
        except Exception as exc:  # e.g. the cluster runs another Ray version than this client
            outcome.append(f"Ray could not connect to {target}: {type(exc).__name__}: {first_line(exc)}")

    thread = threading.Thread(target=init, name="ray-connect", daemon=True)
    thread.start()
    thread.join(wait)
    if not outcome:
        return f"{target} accepts connections but did not answer as a Ray cluster (GCS) within {wait:.1f} s"
    return outcome[0]


def _gather(ray: Any, facts: ClusterFacts, sample_s: float, deadline: Deadline, models: tuple[str, ...]) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    for n in ray.nodes():
        resources = dict(n.get("Resources") or {})
        facts.nodes[n["NodeID"]] = NodeFacts(
            node_id=n["NodeID"], ip=n.get("NodeManagerAddress", ""), hostname=n.get("NodeManagerHostname", ""),
            alive=bool(n.get("Alive")), head="node:__internal_head__" in resources, resources=resources,
            error="" if n.get("Alive") else "Ray lists this node as dead",
        )
    for pg in ray.util.placement_group_table().values():
        facts.placement_groups.append(PlacementGroupFacts(
            id=pg.get("placement_group_id", ""), name=pg.get("name", ""), state=pg.get("state", ""),
            scheduling_state=(pg.get("stats") or {}).get("scheduling_state", ""), strategy=pg.get("strategy", ""),
            bundles=[{k: float(v) for k, v in b.items()} for _, b in sorted((pg.get("bundles") or {}).items())],
        ))
    # a tenth of what is left for the driver to gather the answers; the rest for the nodes
    budget = deadline.remaining() * 0.9
    sample = max(0.1, min(sample_s, budget / 3))
    task = ray.remote(num_cpus=0, max_retries=0)(node_report)
    refs = {
        task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(sample, budget, models): node_id
        for node_id, node in facts.nodes.items()
        if node.alive
    }
    done, pending = ray.wait(list(refs), num_returns=len(refs), timeout=max(0.1, budget))
    for ref in done:
        node = facts.nodes[refs[ref]]
        try:
            _fill(node, ray.get(ref, timeout=max(0.1, deadline.remaining())))
        except Exception as exc:  # the node died, the worker crashed, the task could not start there
            node.error = f"its task failed: {type(exc).__name__}: {first_line(exc)}"
    for ref in pending:
        facts.nodes[refs[ref]].error = f"did not answer within {budget:.1f} s"
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
    alive_now = {n["NodeID"]: bool(n.get("Alive")) for n in ray.nodes()}
    for node_id, node in facts.nodes.items():
        if node.alive and not alive_now.get(node_id, False):
            node.alive = False
            node.error = f"died during the run ({node.error})" if node.error else "died during the run"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _fill(node: NodeFacts, report: dict[str, Any]) -> None:
    from llm_doctor.facts import from_dict
    from llm_doctor.facts.cluster import ModelCopy
    from llm_doctor.facts.gpu import GpuFacts
    from llm_doctor.facts.host import HostFacts

    node.hostname = report.get("hostname") or node.hostname
    node.host = from_dict(HostFacts, report.get("host"))
    node.gpus = from_dict(GpuFacts, report.get("gpus"))
    node.versions = dict(report.get("versions") or {})
    node.interfaces = list(report.get("interfaces") or [])
    node.infiniband = list(report.get("infiniband") or [])
    node.env = dict(report.get("env") or {})
    node.models = [from_dict(ModelCopy, m) for m in report.get("models") or []]
    node.error = "; ".join(report.get("errors") or [])


def node_report(sample_s: float, budget_s: float, models: tuple[str, ...] = ()) -> dict[str, Any]:
    """Runs ON each node (a Ray task): the same host and GPU collectors a local run uses, plus
    what only matters across nodes. Returns plain values, so driver and node need not share classes.
    The deadline is rebuilt here from seconds: monotonic clocks differ between machines."""
    import importlib.metadata as md
    import platform

    import psutil

    from llm_doctor.collect import gpu, host, model_copy
    from llm_doctor.facts import to_dict

    deadline = Deadline(budget_s)
    out: dict[str, Any] = {"hostname": socket.gethostname(), "errors": []}
    for name, collect_part in (("host", lambda: host.collect(min(sample_s, 1.0))), ("gpus", lambda: gpu.collect(sample_s, deadline))):
        try:
            out[name] = to_dict(collect_part())
        except Exception as exc:
            out["errors"].append(f"the {name} collector failed: {type(exc).__name__}: {exc}")
    versions = {"python": platform.python_version()}
    for key, dist in VERSIONED_PACKAGES.items():
        try:
            versions[key] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    out["versions"] = versions
    out["interfaces"] = sorted(psutil.net_if_addrs())
    ib = Path("/sys/class/infiniband")
    out["infiniband"] = sorted(p.name for p in ib.iterdir()) if ib.is_dir() else []
    out["models"] = [to_dict(model_copy.fingerprint(ref)) for ref in models]
    out["env"] = {k: v for k, v in os.environ.items() if k.startswith(NODE_ENV_PREFIXES) and not host.SECRET_ENV.search(k)}
    return out
