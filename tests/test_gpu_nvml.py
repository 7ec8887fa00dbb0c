"""The NVML collector through the real nvidia-ml-py against our fake libnvidia-ml.so.1."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.collect import gpu as gpu_collect
from llm_doctor.engine import load_checks, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.host import EngineProcess, HostFacts
from tests.nvml import build

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def fake_lib(tmp_path_factory) -> Path:
    return build.compile_fake(tmp_path_factory.mktemp("nvml"))


@pytest.fixture(scope="session")
def minimal_lib(tmp_path_factory) -> Path:
    return build.compile_fake(tmp_path_factory.mktemp("nvml-min"), minimal=True)


@pytest.fixture
def nvml(fake_lib, monkeypatch):
    for key in [k for k in os.environ if k.startswith("FAKE_NVML_")]:
        monkeypatch.delenv(key)
    build.use(fake_lib)
    yield monkeypatch
    build.use(None)


def run_perf(facts: Facts, only: str) -> list:
    return [r for r in run_checks(facts, select(load_checks(), [only])) if r.id == only]


def test_healthy_8_gpu_nvswitch_box(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "8")
    nvml.setenv("FAKE_NVML_NVLINKS", "18")
    nvml.setenv("FAKE_NVML_UTIL", "85")
    f = gpu_collect.collect(sample_s=0.3)
    assert f.available and f.source == "nvml"
    assert f.driver_version == "550.90.07" and f.cuda_version == "12.4"
    assert len(f.gpus) == 8
    g = f.gpus[3]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.bus_id == "00000000:48:00.0"
    assert g.memory_total_mib == 81559.0 and g.compute_capability == "9.0"
    assert g.util_gpu.mean == 85.0 and g.util_gpu.samples >= 2
    assert g.nvlink_active == 18 and g.throttle_reasons == []
    assert f.topology[0][7] == "NV18" and f.topology[2][2] == "X"
    assert f.p2p[0][1] == "OK"
    assert g.pcie_gen_current == 5 and g.pcie_width_max == 16
    assert g.mig_mode == "Disabled" and g.persistence_mode == "Enabled" and g.unsupported == []


def test_driver_not_loaded_is_a_reason_not_a_traceback(nvml):
    nvml.setenv("FAKE_NVML_INIT_ERROR", "9")
    f = gpu_collect.collect(sample_s=0.1)
    assert not f.available
    assert "driver is not loaded" in f.reason


def test_no_gpu(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "0")
    f = gpu_collect.collect(sample_s=0.1)
    assert not f.available and "no NVIDIA GPU" in f.reason


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="a real NVML is installed here")
def test_no_library():
    build.use(None)
    f = gpu_collect.collect(sample_s=0.1)
    assert not f.available and "libnvidia-ml.so.1" in f.reason


def test_lost_gpu_is_kept_and_reported(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "2")
    nvml.setenv("FAKE_NVML_LOST", "1")
    f = gpu_collect.collect(sample_s=0.1)
    assert f.available and len(f.gpus) == 2
    assert f.gpus[1].lost and not f.gpus[0].lost
    (res,) = run_perf(Facts(gpus=f), "load.gpu_health")
    assert res.status == "fail"
    assert res.findings[0].code == "load.gpu_fault"
    assert "GPU1" in res.findings[0].evidence[0] and "lost" in res.findings[0].evidence[0]
    assert res.findings[0].fixes[0].command == "sudo nvidia-smi -r -i 1"


def test_missing_functions_are_unsupported_not_fatal(minimal_lib, monkeypatch):
    for key in [k for k in os.environ if k.startswith("FAKE_NVML_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("FAKE_NVML_GPUS", "2")
    build.use(minimal_lib)
    try:
        f = gpu_collect.collect(sample_s=0.1)
    finally:
        build.use(None)
    assert f.available and len(f.gpus) == 2
    g = f.gpus[0]
    assert g.memory_total_mib == 81559.0 and g.util_gpu is not None
    assert {"power_limit", "pcie_gen_current", "ecc_volatile", "mig_mode"} <= set(g.unsupported)
    assert "throttle_reasons" in g.unsupported
    assert g.nvlink_active == 0 and f.topology == [["X", ""], ["", "X"]]


def test_not_supported_metrics(nvml):
    nvml.setenv("FAKE_NVML_UNSUPPORTED", "power,temperature,utilization")
    f = gpu_collect.collect(sample_s=0.1)
    g = f.gpus[0]
    assert g.power_draw_w is None and g.temperature_c is None and g.util_gpu is None
    assert "utilization" in g.unsupported and g.name


def test_pcie_box_without_p2p_under_tp(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "4")
    nvml.setenv("FAKE_NVML_TOPO", "50")  # SYS
    nvml.setenv("FAKE_NVML_P2P", "1")  # chipset not supported
    f = gpu_collect.collect(sample_s=0.1)
    assert f.topology[0][1] == "SYS" and f.p2p[0][1] == "CNS"
    cfg = EngineConfig(engine="vllm", tensor_parallel_size=4, sources={"tensor_parallel_size": "cmdline"})
    (res,) = run_perf(Facts(gpus=f, deployment=cfg), "perf.interconnect")
    (finding,) = res.findings
    assert finding.code == "perf.slow_interconnect"
    assert "SYS" in finding.title and "without P2P" in finding.title
    assert finding.fixes[0].command == "--tensor-parallel-size 2 --data-parallel-size 2"


def test_nvlink_bridge_pairs_pick_the_bridged_gpus(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "4")
    nvml.setenv("FAKE_NVML_NVLINKS", "4")
    nvml.setenv("FAKE_NVML_NVLINK_MODE", "pairs")
    nvml.setenv("FAKE_NVML_TOPO", "40")
    f = gpu_collect.collect(sample_s=0.1)
    assert f.topology[0][1] == "NV4" and f.topology[0][2] == "NODE"
    cfg = EngineConfig(engine="vllm", tensor_parallel_size=2, env={"CUDA_VISIBLE_DEVICES": "1,2"})
    (res,) = run_perf(Facts(gpus=f, deployment=cfg), "perf.interconnect")
    assert res.findings[0].code == "perf.slow_interconnect"
    assert res.findings[0].fixes[0].command == "CUDA_VISIBLE_DEVICES=0,1"


def test_degraded_pcie_link(nvml):
    nvml.setenv("FAKE_NVML_PCIE", "4,4,8,16")
    f = gpu_collect.collect(sample_s=0.1)
    (res,) = run_perf(Facts(gpus=f), "perf.interconnect")
    assert res.findings[0].code == "perf.slow_interconnect"
    assert res.findings[0].evidence == ["GPU0 00000000:18:00.0: PCIe link width x8 of x16 at Gen4 of Gen4, 0% busy"]
    assert res.findings[0].severity == "warn"  # at full generation a narrow link is real


def test_throttle_reasons_with_lowered_power_limit(nvml):
    nvml.setenv("FAKE_NVML_THROTTLE", str(0x4 | 0x40))  # SW power cap + HW thermal slowdown
    nvml.setenv("FAKE_NVML_POWER_W", "448")
    nvml.setenv("FAKE_NVML_POWER_LIMIT_W", "450")
    nvml.setenv("FAKE_NVML_SM_MHZ", "1410")
    nvml.setenv("FAKE_NVML_TEMP_C", "89")
    f = gpu_collect.collect(sample_s=0.1)
    assert f.gpus[0].throttle_reasons == ["sw_power_cap", "hw_thermal_slowdown"]
    (res,) = run_perf(Facts(gpus=f), "perf.clocks")
    (finding,) = res.findings
    assert finding.code == "perf.gpu_throttled"
    assert "SM 1410 of 1980 MHz" in finding.evidence[0] and "89 C" in finding.evidence[0]
    assert "sudo nvidia-smi -i 0 -pl 700" in [x.command for x in finding.fixes]


def test_idle_is_not_throttling(nvml):
    nvml.setenv("FAKE_NVML_THROTTLE", "1")
    f = gpu_collect.collect(sample_s=0.1)
    (res,) = run_perf(Facts(gpus=f), "perf.clocks")
    assert res.status == "pass" and not res.findings


def test_other_process_holds_the_engines_gpu(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "2")
    nvml.setenv("FAKE_NVML_USED_MIB", "30721,1")
    nvml.setenv("FAKE_NVML_PROCS", f"0:{os.getpid()}:30720")
    f = gpu_collect.collect(sample_s=0.1)
    proc = f.gpus[0].processes[0]
    assert proc.pid == os.getpid() and proc.used_mib == 30720.0 and "python" in proc.name.lower()
    cfg = EngineConfig(engine="vllm", tensor_parallel_size=1, gpu_memory_utilization=0.9)
    engine = EngineProcess(pid=999_999, engine="vllm", cmdline="vllm serve m", config=cfg)
    (res,) = run_perf(Facts(gpus=f, deployment=cfg, host=HostFacts(processes=[engine])), "load.gpu_processes")
    (finding,) = res.findings
    assert finding.code == "load.gpu_memory_occupied"
    assert f"pid {os.getpid()}" in finding.title
    commands = [x.command for x in finding.fixes]
    assert f"kill {os.getpid()}" in commands
    assert "CUDA_VISIBLE_DEVICES=1" in commands
    # 81559 - 30721 = 50838 MiB free = 0.623 of the GPU, minus 2% margin
    assert "--gpu-memory-utilization 0.60" in commands


def test_run_with_fake_nvml_end_to_end(fake_lib):
    """`llm-doctor run` in a subprocess finding libnvidia-ml.so.1 by LD_LIBRARY_PATH, as on a GPU box."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_NVML_")}
    env.update(LD_LIBRARY_PATH=str(fake_lib.parent), FAKE_NVML_GPUS="2", FAKE_NVML_UTIL="10")
    out = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "run", "--only", "load,perf", "--sample", "0.3", "--format", "json"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    gpus = report["facts"]["gpus"]
    assert gpus["available"] and gpus["source"] == "nvml" and len(gpus["gpus"]) == 2
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["load.gpu_facts"] == "pass"
    assert "Traceback" not in out.stderr


def test_run_without_nvml_gives_an_info_finding():
    """This machine has no GPU: `run` says so as info, no traceback, and the exit code follows the
    findings. A live `run` also reads the host's engine processes, and under xdist another worker's real
    llama-server peer may be one of them, so what else it finds is not this test's to fix."""
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("a real NVML is installed here")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "run", "--only", "load,perf", "--sample", "0.2", "--format", "json"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )
    report = json.loads(out.stdout)
    codes = [(f["code"], f["severity"]) for f in report["findings"]]
    assert ("load.gpu_not_visible", "info") in codes
    assert out.returncode == (1 if any(sev == "error" for _, sev in codes) else 0), out.stderr
    assert "Traceback" not in out.stderr


def test_low_utilization_while_requests_run(nvml):
    from llm_doctor.facts.metrics import MetricsFacts

    nvml.setenv("FAKE_NVML_GPUS", "2")
    nvml.setenv("FAKE_NVML_UTIL", "12,18")
    f = gpu_collect.collect(sample_s=0.3)
    m = MetricsFacts(source="test", engine="vllm", available=True, values={"running": 3.0, "waiting": 0.0},
                     raw={"running": "vllm:num_requests_running 3", "waiting": "vllm:num_requests_waiting 0"})
    cfg = EngineConfig(engine="vllm", tensor_parallel_size=2)
    (res,) = run_perf(Facts(gpus=f, metrics=m, deployment=cfg), "perf.gpu_utilization")
    (finding,) = res.findings
    assert finding.code == "perf.low_gpu_util" and finding.title == "GPU utilization 15% while 3 request(s) run"
    assert finding.evidence[0].startswith("GPU0: utilization min/mean/max 12/12/12%")
    # idle server: nothing runs, so low utilization is not judged
    m.values["running"] = 0.0
    (res,) = run_perf(Facts(gpus=f, metrics=m, deployment=cfg), "perf.gpu_utilization")
    assert res.status == "skip"


def test_live_facts_survive_a_bundle_round_trip(nvml):
    nvml.setenv("FAKE_NVML_GPUS", "2")
    nvml.setenv("FAKE_NVML_NVLINKS", "12")
    facts = Facts(gpus=gpu_collect.collect(sample_s=0.1))
    again = Facts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again.gpus == facts.gpus
    assert again.gpus.gpus[1].util_gpu.samples == facts.gpus.gpus[1].util_gpu.samples


def test_saved_bundle_reproduces_the_live_diagnosis(fake_lib, tmp_path):
    """run on a (fake) GPU box with --save-bundle, then analyze the bundle offline: same findings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_NVML_")}
    env.update(LD_LIBRARY_PATH=str(fake_lib.parent), FAKE_NVML_GPUS="2", FAKE_NVML_THROTTLE=str(0x40),
               FAKE_NVML_PCIE="4,4,8,16")
    bundle = tmp_path / "bundle.json"
    live = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "run", "--only", "load,perf", "--sample", "0.2", "--format", "json",
         "--save-bundle", str(bundle), "--fail-on", "never"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )
    assert live.returncode == 0, live.stderr
    offline = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "analyze", str(bundle), "--only", "load,perf", "--format", "json", "--fail-on", "never"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert offline.returncode == 0, offline.stderr
    codes = lambda out: [(f["code"], f["title"]) for f in json.loads(out)["findings"]]  # noqa: E731
    assert codes(live.stdout) == codes(offline.stdout)
    assert {"perf.gpu_throttled", "perf.slow_interconnect"} <= {c for c, _ in codes(live.stdout)}
