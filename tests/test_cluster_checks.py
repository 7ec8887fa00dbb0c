"""The cluster checks are pure functions of Facts: a saved cluster bundle (what `run --ray
--save-bundle` writes) analysed offline names each node that differs, with the value the others have."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.checks.cluster.differences import missing_interfaces
from llm_doctor.collect import model_copy
from llm_doctor.facts import Facts
from llm_doctor.facts.cluster import ClusterFacts, ModelCopy, NodeFacts
from llm_doctor.facts.gpu import Gpu, GpuFacts
from llm_doctor.facts.host import HostFacts
from llm_doctor.models import hf_cache_snapshot

BLOCKER = """
import sys
class NoRay:
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, NoRay())
from llm_doctor.cli import main
sys.argv = ["llm-doctor", *sys.argv[1:]]
main()
"""


def node(node_id: str, tag: str, gpus: int, shm_mib: float, **kw: object) -> NodeFacts:
    return NodeFacts(
        node_id=node_id * 8, ip="10.0.0." + node_id, hostname="gpu-" + tag,
        resources={"CPU": 64.0, "GPU": float(gpus), tag: 1.0, f"node:10.0.0.{node_id}": 1.0},
        host=HostFacts(cpu_count=64, shm_total_mib=shm_mib),
        gpus=GpuFacts(source="nvml", available=True, driver_version="550.90.07", cuda_version="12.4",
                      gpus=[Gpu(index=i, name="NVIDIA H100 80GB HBM3") for i in range(gpus)]),
        versions={"python": "3.11.9", "ray": "2.40.0", "vllm": "0.10.1", "torch": "2.7.1"},
        interfaces=["lo", "eth0", "ib0"], **kw,  # type: ignore[arg-type]
    )


def analyze(tmp_path: Path, cluster: ClusterFacts) -> dict:
    bundle = tmp_path / "cluster-bundle.json"
    bundle.write_text(json.dumps(Facts(cluster=cluster).to_dict()))
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(bundle), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_shm_and_gpu_count_differences_name_the_node(tmp_path: Path) -> None:
    nodes = [node("1", "rack_a", 8, 16384.0), node("2", "rack_b", 8, 16384.0), node("3", "rack_c", 4, 64.0)]
    nodes[2].gpus.gpus = nodes[2].gpus.gpus[:4]  # type: ignore[union-attr]
    report = analyze(tmp_path, ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes}))
    by_code = {f["code"]: f for f in report["findings"]}
    shm = by_code["load.shm_insufficient"]
    assert "rack_c" in shm["title"] and "64 MiB" in shm["title"] and "median 16384 MiB" in shm["title"]
    counts = by_code["cluster.gpu_resources_mismatch"]
    assert "8 on most; 4 on 10.0.0.3 node 33333333 [rack_c]" in counts["title"]
    assert any("--tensor-parallel-size 4 --pipeline-parallel-size 3" in (fix["command"] or "") for fix in counts["fixes"])


def test_versions_interfaces_and_a_dead_node(tmp_path: Path) -> None:
    nodes = [node("1", "rack_a", 8, 16384.0), node("2", "rack_b", 8, 16384.0),
             node("3", "rack_c", 8, 16384.0, env={"NCCL_SOCKET_IFNAME": "bond0"}),
             NodeFacts(node_id="4" * 8, ip="10.0.0.4", alive=False, error="died during the run", resources={"GPU": 8.0})]
    nodes[2].versions["vllm"] = "0.9.2"
    nodes[1].gpus.driver_version = "535.104.05"  # type: ignore[union-attr]
    nodes[0].resources["GPU"] = 7.0
    for n in nodes[:2]:
        n.infiniband = ["mlx5_0", "mlx5_1"]
    report = analyze(tmp_path, ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes}))
    titles = {(f["code"], f["title"]) for f in report["findings"]}
    assert ("cluster.version_skew", "vLLM differs between nodes: 0.10.1 on most; 0.9.2 on 10.0.0.3 node 33333333 [rack_c]") in titles
    assert ("cluster.version_skew",
            "NVIDIA driver differs between nodes: 550.90.07 on most; 535.104.05 on 10.0.0.2 node 22222222 [rack_b]") in titles
    assert ("cluster.network_interface", "NCCL_SOCKET_IFNAME=bond0 on 10.0.0.3 node 33333333 [rack_c]: no interface bond0 there") in titles
    assert ("cluster.gpu_resources_mismatch", "Ray node 10.0.0.1 node 11111111 [rack_a] registered 7 GPU(s) but has 8") in titles
    assert ("cluster.node_unreachable", "Ray node 10.0.0.4 node 44444444 gave no facts") in titles
    assert ("perf.slow_interconnect",
            "InfiniBand on 2 node(s) but not on 10.0.0.3 node 33333333 [rack_c]: NCCL falls back to sockets") in titles
    assert report["status"] == "error"


def test_nccl_interface_lists() -> None:
    ifaces = ["lo", "eth0", "ib0"]
    assert missing_interfaces("eth", ifaces, exact=False) == []  # NCCL matches by prefix
    assert missing_interfaces("=eth", ifaces, exact=False) == ["eth"]  # '=' asks for the exact name
    assert missing_interfaces("^docker,lo", ifaces, exact=False) == []  # an exclusion list
    assert missing_interfaces("eth0,bond0", ifaces, exact=False) == ["bond0"]
    assert missing_interfaces("eth", ifaces, exact=True) == ["eth"]  # Gloo: exact names


def test_ray_flag_without_ray_is_a_usage_error_naming_the_install() -> None:
    out = subprocess.run([sys.executable, "-c", BLOCKER, "run", "--ray", "auto"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "pip install 'llm-doctor[ray]'" in out.stderr


def test_text_report_shows_a_row_per_node_with_the_odd_values_marked(tmp_path: Path) -> None:
    nodes = [node("1", "rack_a", 8, 16384.0), node("2", "rack_b", 8, 16384.0), node("3", "rack_c", 8, 64.0)]
    nodes[2].versions["vllm"] = "0.9.2"
    bundle = tmp_path / "cluster-bundle.json"
    bundle.write_text(json.dumps(Facts(cluster=ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes})).to_dict()))
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(bundle), "--only", "cluster"],
                         capture_output=True, text=True, timeout=120)
    table = out.stdout.split("Ray cluster 10.0.0.1:6379, a row per node\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[0].split()[:3] == ["node", "GPUs", "ray/nvml"]
    rows = {line.split()[3]: line.split() for line in table[1:4]}
    assert "0.9.2*" in rows["[rack_c]"] and "64*" in rows["[rack_c]"]
    assert "0.10.1" in rows["[rack_a]"] and not any(cell.endswith("*") for cell in rows["[rack_a]"])
    assert table[-1] == "* differs from most nodes"


def test_placement_groups_that_can_never_be_placed(tmp_path: Path) -> None:
    from llm_doctor.facts.cluster import PlacementGroupFacts

    nodes = [node("1", "rack_a", 8, 16384.0), node("2", "rack_b", 8, 16384.0)]
    pgs = [
        PlacementGroupFacts(id="aa", name="vllm-tp16-pp2", state="PENDING", strategy="PACK", bundles=[{"GPU": 1.0}] * 32),
        PlacementGroupFacts(id="bb", state="PENDING", strategy="STRICT_PACK", bundles=[{"GPU": 1.0}] * 16),
        PlacementGroupFacts(id="cc", state="PENDING", strategy="PACK", bundles=[{"GPU": 1.0}] * 16),  # fits: only busy
    ]
    report = analyze(tmp_path, ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes}, placement_groups=pgs))
    placement = [f for f in report["findings"] if f["code"] == "cluster.placement_infeasible"]
    assert [f["title"] for f in placement] == [
        "placement group vllm-tp16-pp2 can never be placed: it needs 32 GPU in all; the cluster has 16",
        "placement group bb can never be placed: STRICT_PACK needs {GPU: 16} on one node; the largest node has {GPU: 8}",
    ]
    assert placement[0]["fixes"][0]["command"].endswith("--tensor-parallel-size 8 --pipeline-parallel-size 2")


def test_node_local_gpu_checks_run_on_each_node_and_name_it(tmp_path: Path) -> None:
    nodes = [node("1", "rack_a", 2, 16384.0), node("2", "rack_b", 2, 16384.0)]
    nodes[1].gpus.gpus[1].ecc_uncorrected_volatile = 3  # type: ignore[union-attr]
    report = analyze(tmp_path, ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes}))
    faults = [f for f in report["findings"] if f["code"] == "load.gpu_fault"]
    assert [(f["node"], f["title"]) for f in faults] == [
        ("10.0.0.2 node 22222222 [rack_b]", "10.0.0.2 node 22222222 [rack_b]: GPU hardware fault on GPU 1")]
    assert faults[0]["evidence"] == ["GPU1: 3 uncorrectable ECC error(s) since the last driver load"]
    assert faults[0]["fixes"][0]["command"] == "sudo nvidia-smi -r -i 1"
    row = next(c for c in report["checks"] if c["id"] == "load.gpu_health")
    assert row["status"] == "fail" and "rack_b" in row["detail"]


def copy(ref: str, path: str, present: bool = True, gib: float = 14.0, config: str = "a1b2c3d4e5f60718") -> ModelCopy:
    return ModelCopy(ref=ref, path=path, present=present, files=12 if present else 0, weight_files=4 if present else 0,
                     bytes=int(gib * 1024**3) if present else 0, config_sha256=config if present else "")


def test_model_missing_or_different_on_a_node(tmp_path: Path) -> None:
    path = "/models/Llama-3.1-8B-Instruct"
    nodes = [node("1", "rack_a", 8, 16384.0, models=[copy(path, path)]),
             node("2", "rack_b", 8, 16384.0, models=[copy(path, path)]),
             node("3", "rack_c", 8, 16384.0, models=[copy(path, path, present=False)]),
             node("4", "rack_d", 8, 16384.0, models=[copy(path, path, gib=7.5, config="ffffffffffffffff")])]
    report = analyze(tmp_path, ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes}))
    found = {f["title"]: f for f in report["findings"] if f["code"] == "cluster.model_missing_on_node"}
    missing = found[f"model {path} is missing on 10.0.0.3 node 33333333 [rack_c]"]
    assert missing["fixes"][0]["command"] == f"rsync -a 10.0.0.1:{path}/ {path}/"
    differs = found[f"model {path} differs on 10.0.0.4 node 44444444 [rack_d] from the other nodes' copy"]
    assert differs["evidence"][0].endswith("12 files, 7.50 GiB, 4 weight files, config.json ffffffffffffffff")
    assert len(found) == 2


def test_a_hub_model_missing_on_a_node_is_downloaded_there(tmp_path: Path) -> None:
    ref, snap = "meta-llama/Llama-3.1-8B-Instruct", "/root/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e"
    nodes = [node("1", "rack_a", 8, 16384.0, models=[copy(ref, snap)]),
             node("2", "rack_b", 8, 16384.0, models=[copy(ref, snap, present=False)])]
    report = analyze(tmp_path, ClusterFacts(address="10.0.0.1:6379", nodes={n.node_id: n for n in nodes}))
    (f,) = [f for f in report["findings"] if f["code"] == "cluster.model_missing_on_node"]
    assert f["title"] == f"model {ref} is missing on 10.0.0.2 node 22222222 [rack_b]"
    assert f["fixes"][0]["command"] == f"huggingface-cli download {ref}"


def test_model_fingerprint_reads_a_hub_cache_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "hub" / "models--org--tiny"
    blob = repo / "blobs" / "abc"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"x" * 1000)
    snap = repo / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to(blob)
    (snap / "config.json").write_text('{"model_type": "llama"}')
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    got = model_copy.fingerprint("org/tiny")
    assert (got.present, got.path, got.files, got.weight_files) == (True, str(snap), 2, 1)
    assert got.bytes == 1000 + len('{"model_type": "llama"}')
    assert got.config_sha256 == hashlib.sha256(b'{"model_type": "llama"}').hexdigest()[:16]
    assert model_copy.fingerprint("org/absent").present is False
    assert model_copy.fingerprint("gpt-4o").path == ""  # a served name, not a model location: nothing to compare


def test_ray_failures_in_an_engine_log_are_cluster_findings(tmp_path: Path) -> None:
    """vLLM's Ray executor waits for its placement group, then gives up (vllm/executor/ray_utils.py,
    v0.6.3 wording, as the catalogue records it): the cluster cannot place the bundles, which is the
    cause of the start-up failure, not a TP sizing error."""
    log = tmp_path / "vllm-ray.log"
    log.write_text(
        "INFO 09-02 10:11:02 api_server.py:528] vLLM API server version 0.6.3\n"
        "INFO 09-02 10:11:12 ray_utils.py:202] Waiting for creating a placement group of specs for 10 seconds. "
        "specs=[{'GPU': 1.0, 'node:10.0.0.5': 0.001}, {'GPU': 1.0}]. Check `ray status` to see if you have enough resources.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/executor/ray_utils.py", line 240, in initialize_ray_cluster\n'
        "ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0, 'node:10.0.0.5': 0.001}, "
        "{'GPU': 1.0}] within 1800 seconds. See `ray status` to make sure the cluster has enough resources.\n")
    out = subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(log), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    top = report["findings"][0]
    assert out.returncode == 1 and top["code"] == "cluster.placement_infeasible" and top["severity"] == "error"
    assert any("Cannot provide a placement group" in line for line in top["evidence"])
    assert top["fixes"][0]["command"] == "ray status"


def test_the_node_copy_and_the_config_lookup_resolve_the_same_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """refs/main names a download that stopped before config.json: the engine's config lookup falls
    back to the complete snapshot, and the node's fingerprint must describe that same folder."""
    repo = tmp_path / "hub" / "models--org--tiny"
    old, new = repo / "snapshots" / "old", repo / "snapshots" / "new"
    old.mkdir(parents=True)
    new.mkdir()
    (old / "config.json").write_text('{"model_type": "llama"}')
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("new")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert model_copy.where("org/tiny") == hf_cache_snapshot("org/tiny") == old
    assert model_copy.where("org/absent") == tmp_path / "hub" / "models--org--absent" / "snapshots"
