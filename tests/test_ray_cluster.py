"""`run --ray` against a real Ray cluster started here: a head and three nodes on one host
(ray.cluster_utils.Cluster), told apart by custom resources, with differences planted per node
through the raylet's environment (a fake NVML with another driver and fewer GPUs than Ray was told,
an older vLLM on the node's PYTHONPATH, an NCCL_SOCKET_IFNAME naming no interface), then a node
killed in the middle of a run. The cluster is shared by the module: starting one costs ~10 s."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

cluster_utils = pytest.importorskip("ray.cluster_utils")

from tests.nvml import build  # noqa: E402

RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
FAST_HEALTH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}
TIMES: dict[str, float] = {}  # measured start-up and run times, printed at the end of the module


def fake_dist(root: Path, name: str, version: str) -> Path:
    """A site directory holding only `name`'s metadata: what importlib.metadata reads on that node."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return root


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llm_doctor", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **RAY_ENV, **(env or {})})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster_utils.Cluster]:
    tmp = tmp_path_factory.mktemp("ray")
    nvml_dir = str(build.compile_fake(tmp / "nvml").parent)
    newer = str(fake_dist(tmp / "site-newer", "vllm", "0.10.1"))
    older = str(fake_dist(tmp / "site-older", "vllm", "0.9.2"))
    hf_home = str(cached_model(tmp / "hf", MODEL))
    gpu_node = {"LD_LIBRARY_PATH": nvml_dir, "FAKE_NVML_GPUS": "2", "NCCL_SOCKET_IFNAME": "lo", "PYTHONPATH": newer,
                "HF_HOME": hf_home}
    saved = {k: os.environ.get(k) for k in RAY_ENV}
    os.environ.update(RAY_ENV)
    started = time.monotonic()
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "resources": {"head": 1}, "env_vars": {"PYTHONPATH": newer, "HF_HOME": hf_home},
        "_system_config": FAST_HEALTH})
    try:
        c.add_node(num_cpus=1, num_gpus=2, resources={"node_b": 1}, env_vars={
            **gpu_node, "FAKE_NVML_GPUS": "1", "FAKE_NVML_DRIVER": "535.104.05", "NCCL_SOCKET_IFNAME": "ibnowhere0",
            "PYTHONPATH": older, "HF_HOME": str(tmp / "hf-empty")})
        c.add_node(num_cpus=1, num_gpus=2, resources={"node_c": 1}, env_vars={**gpu_node, "FAKE_NVML_ECC": "0,2"})
        c.add_node(num_cpus=1, num_gpus=2, resources={"node_d": 1}, env_vars=gpu_node)
        c.wait_for_nodes()
        TIMES["cluster start-up (head + 3 nodes)"] = time.monotonic() - started
        c.nvml_dir, c.newer = nvml_dir, newer  # type: ignore[attr-defined]
        yield c
    finally:
        c.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        print("\nmeasured: " + "; ".join(f"{k} {v:.1f} s" for k, v in TIMES.items()))


MODEL = "org/tiny-model"


def cached_model(hf_home: Path, ref: str) -> Path:
    """A Hugging Face hub cache holding `ref` the way huggingface_hub lays it out (a snapshot of
    symlinks into blobs/, named by refs/main)."""
    repo = hf_home / "hub" / ("models--" + ref.replace("/", "--"))
    snapshot = repo / "snapshots" / "5f0b02c75b57c5855da9ae460ce51323ea669d8a"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snapshot.name)
    (repo / "blobs").mkdir()
    for name, body in (("config.json", b'{"model_type": "llama"}'), ("model.safetensors", b"\0" * 4096)):
        blob = repo / "blobs" / name.replace(".", "-")
        blob.write_bytes(body)
        (snapshot / name).symlink_to(blob)
    return hf_home


def findings(out: subprocess.CompletedProcess[str]) -> set[tuple[str, str]]:
    assert out.stdout.lstrip().startswith("{"), out.stderr[-2000:]
    return {(f["code"], f["title"]) for f in json.loads(out.stdout)["findings"]}


def test_each_planted_difference_is_named_with_its_node(cluster: cluster_utils.Cluster, tmp_path: Path) -> None:
    bundle = tmp_path / "cluster.json"
    started = time.monotonic()
    out = cli("run", "--ray", cluster.address, "--only", "cluster", "--format", "json", "--sample", "0.5",
              "--deadline", "60", "--save-bundle", str(bundle))
    TIMES["run --ray over 4 nodes"] = elapsed = time.monotonic() - started
    assert out.returncode == 1, out.stderr[-2000:]
    assert elapsed < 60  # the deadline is the contract, not a speed measure
    got = findings(out)
    report = json.loads(out.stdout)
    nodes = report["facts"]["cluster"]["nodes"]
    assert len(nodes) == 4 and all(not n["error"] for n in nodes.values())
    b = next(n for n in nodes.values() if "node_b" in n["resources"])
    label = f"{b['ip']} node {b['node_id'][:8]} [node_b]"
    assert ("cluster.version_skew", f"vLLM differs between nodes: 0.10.1 on most; 0.9.2 on {label}") in got
    assert ("cluster.version_skew", f"NVIDIA driver differs between nodes: 550.90.07 on most; 535.104.05 on {label}") in got
    assert ("cluster.gpu_resources_mismatch", f"Ray node {label} registered 2 GPU(s) but has 1") in got
    assert ("cluster.network_interface", f"NCCL_SOCKET_IFNAME=ibnowhere0 on {label}: no interface ibnowhere0 there") in got
    assert {code for code, _ in got} == {"cluster.version_skew", "cluster.gpu_resources_mismatch", "cluster.network_interface"}
    skew = next(f for f in report["findings"] if "vLLM" in f["title"])
    assert skew["fixes"][0]["command"] == "pip install 'vllm==0.10.1'"
    # the saved bundle gives the same diagnosis offline
    offline = cli("analyze", str(bundle), "--only", "cluster", "--format", "json")
    assert offline.returncode == 1 and findings(offline) == got


def test_ray_address_from_the_environment_and_a_wrong_address(cluster: cluster_utils.Cluster) -> None:
    out = cli("run", "--ray", "auto", "--only", "cluster.reachable", "--format", "json", "--sample", "0.2",
              env={"RAY_ADDRESS": cluster.address})
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["facts"]["cluster"]["address"] == cluster.address
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    out = cli("run", "--ray", f"127.0.0.1:{port}", "--only", "cluster", "--format", "json", "--deadline", "60")
    TIMES["run --ray WRONG_ADDRESS"] = time.monotonic() - started
    assert out.returncode == 1
    assert findings(out) == {("cluster.connect_failed", f"the Ray cluster at 127.0.0.1:{port} cannot be reached")}


def test_a_port_that_is_not_ray_is_given_up_on_within_the_deadline() -> None:
    """Ray's connect retries for minutes against something that accepts TCP but is no GCS."""
    with socket.socket() as listener:  # the kernel completes the handshake; nothing ever answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        started = time.monotonic()
        out = cli("run", "--ray", f"127.0.0.1:{port}", "--only", "cluster", "--format", "json", "--deadline", "8")
        TIMES["run --ray NOT_RAY (deadline 8 s)"] = elapsed = time.monotonic() - started
    assert out.returncode == 1 and elapsed < 8 + 10, out.stderr[-2000:]
    (finding,) = json.loads(out.stdout)["findings"]
    assert finding["code"] == "cluster.connect_failed"
    assert "accepts connections but did not answer as a Ray cluster" in finding["evidence"][0]


def test_ray_start_head_as_its_own_process(tmp_path: Path) -> None:
    """The `--ray ADDRESS` path against `ray start --head --block`, stopped by its process group."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_bin = str(Path(sys.executable).with_name("ray"))
    started = time.monotonic()
    head = subprocess.Popen([ray_bin, "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
                             "--num-cpus", "1", "--include-dashboard", "false", "--block"],
                            env={**os.environ, **RAY_ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        while time.monotonic() - started < 90:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        TIMES["ray start --head (port open)"] = time.monotonic() - started
        out = cli("run", "--ray", f"127.0.0.1:{port}", "--only", "cluster", "--format", "json", "--sample", "0.2")
        assert out.returncode == 0, out.stderr[-2000:]
        (node,) = json.loads(out.stdout)["facts"]["cluster"]["nodes"].values()
        assert node["head"] and not node["error"] and node["versions"]["ray"]
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=10)


def test_a_placement_group_that_can_never_be_placed(cluster: cluster_utils.Cluster) -> None:
    """A driver asks for 8 one-GPU bundles (TP 4 x PP 2) on a cluster that registered 6 GPUs."""
    import ray
    from ray.util.placement_group import placement_group

    ray.init(address=cluster.address, log_to_driver=False, include_dashboard=False)
    try:
        placement_group([{"GPU": 1}] * 8, strategy="PACK", name="vllm-tp4-pp2")
        out = cli("run", "--ray", cluster.address, "--only", "cluster.placement", "--format", "json", "--sample", "0.2")
    finally:
        ray.shutdown()
    (finding,) = json.loads(out.stdout)["findings"]
    assert finding["title"] == "placement group vllm-tp4-pp2 can never be placed: it needs 8 GPU in all; the cluster has 6"
    assert finding["fixes"][0]["command"].endswith("--tensor-parallel-size 2 --pipeline-parallel-size 3")


def test_a_node_killed_during_the_run_is_named(cluster: cluster_utils.Cluster) -> None:
    """Runs last: it removes a node. The node's task is killed while it samples its GPU."""
    import psutil

    victim = cluster.add_node(num_cpus=1, num_gpus=1, resources={"node_e": 1}, env_vars={
        "LD_LIBRARY_PATH": cluster.nvml_dir, "FAKE_NVML_GPUS": "1", "NCCL_SOCKET_IFNAME": "lo", "PYTHONPATH": cluster.newer})
    cluster.wait_for_nodes()
    raylet = psutil.Process(victim.all_processes["raylet"][0].process.pid)
    started = time.monotonic()
    run = subprocess.Popen([sys.executable, "-m", "llm_doctor", "run", "--ray", cluster.address, "--only", "cluster",
                            "--format", "json", "--sample", "8", "--deadline", "45"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **RAY_ENV})
    try:
        while time.monotonic() - started < 40:  # wait for the task to run on that node
            if any("node_report" in " ".join(p.cmdline()) for p in raylet.children(recursive=True) if p.is_running()):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the task never started on the victim node")
        cluster.remove_node(victim, allow_graceful=False)
        stdout, stderr = run.communicate(timeout=90)
    finally:
        if run.poll() is None:
            run.kill()
    TIMES["run --ray with a node killed"] = elapsed = time.monotonic() - started
    assert elapsed < 45 + 10, stderr[-2000:]
    report = json.loads(stdout)
    dead = [f for f in report["findings"] if f["code"] == "cluster.node_unreachable"]
    assert len(dead) == 1 and "[node_e]" in dead[0]["title"], report["findings"]
    assert any("died" in e or "failed" in e or "did not answer" in e for e in dead[0]["evidence"])


def test_node_local_checks_and_the_model_on_every_node(cluster: cluster_utils.Cluster) -> None:
    """load.gpu_health runs on each node's own GPUs (node_c's fake NVML reports ECC errors on GPU 1),
    and the model asked for is looked up in each node's hub cache (node_b's HF_HOME is empty)."""
    started = time.monotonic()
    out = cli("run", "--ray", cluster.address, "--only", "cluster.models,load.gpu_health", "--model", MODEL,
              "--format", "json", "--sample", "0.3", "--deadline", "60")
    TIMES["run --ray, node-local and model checks"] = time.monotonic() - started
    assert out.returncode == 1, out.stderr[-2000:]
    report = json.loads(out.stdout)
    nodes = report["facts"]["cluster"]["nodes"].values()
    label = {tag: f"{n['ip']} node {n['node_id'][:8]} [{tag}]" for n in nodes for tag in ("node_b", "node_c") if tag in n["resources"]}
    got = {(f["code"], f.get("node", ""), f["title"]) for f in report["findings"]}
    assert got == {
        ("load.gpu_fault", label["node_c"], f"{label['node_c']}: GPU hardware fault on GPU 1"),
        ("cluster.model_missing_on_node", "", f"model {MODEL} is missing on {label['node_b']}"),
    }
    missing = next(f for f in report["findings"] if f["code"] == "cluster.model_missing_on_node")
    assert missing["fixes"][0]["command"] == f"huggingface-cli download {MODEL}"
    assert "4 weight files" not in missing["evidence"][1] and "1 weight files" in missing["evidence"][1]
