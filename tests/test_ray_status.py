"""`ray status` texts (real ones, fixtures/ray) read by `analyze`: what Ray has, what waits for it,
and the placement vLLM asked for judged against it."""

from __future__ import annotations

from pathlib import Path

from llm_doctor.logparse import ray_status
from tests.analyze_json import analyze, check

RAY = Path(__file__).resolve().parents[1] / "fixtures" / "ray"



def test_status_layouts_of_each_ray_era_are_read() -> None:
    idle = ray_status.parse((RAY / "ray-status-2nodes-16gpu-h20-vllm-idle.txt").read_text())
    assert (idle.totals, idle.used, sum(idle.active.values()), idle.demands) == (
        {"CPU": 360.0, "GPU": 16.0}, {"CPU": 0.0, "GPU": 0.0}, 2, [])
    busy = ray_status.parse((RAY / "ray-status-autoscaling-17nodes-408-pending-ray-exec.txt").read_text())
    assert busy.active == {"x86_worker_node": 8, "arm_worker_node": 8, "head_node": 1}
    assert busy.totals == {"CPU": 68.0, "Graviton": 8.0, "Intel": 9.0}  # memory sizes are not resources asked for
    (tasks,) = busy.demands
    assert (tasks.bundles, tasks.waiting, tasks.placement_group) == ([{"CPU": 1.0}], 408, False)
    old = ray_status.parse((RAY / "ray-status-1.3-recent-failure-custom1.txt").read_text())
    assert old.active == {"cpu_4_ondemand": 2} and old.failures == ["10.0.0.157: custom1"]
    assert old.totals == {"CPU": 8.0}  # "0.00/19.915 GiB memory" (a space before the unit) is not a resource
    pg = ray_status.parse((RAY / "vllm-ray-pg-2gpu-status-1gpu-gpustack.txt").read_text())
    (demand,) = pg.demands
    assert (demand.bundles, demand.strategy, demand.placement_group) == ([{"GPU": 1.0}, {"GPU": 1.0}], "PACK", True)
    assert pg.totals == {"CPU": 34.0, "GPU": 1.0, "TPU": 1.0}


def test_placement_group_larger_than_the_cluster_is_infeasible_with_rays_numbers() -> None:
    # vLLM waits for 2 GPU bundles; the reporter's `ray status` (pasted below the log) lists 1 GPU
    r = analyze(RAY / "vllm-ray-pg-2gpu-status-1gpu-gpustack.txt")
    top = r["findings"][0]
    assert top["code"] == "cluster.placement_infeasible" and top["severity"] == "error"
    assert top["title"] == "a pending placement group needs 2 GPU in all; the cluster has 1"
    assert top["evidence"][1].endswith("cluster totals {CPU: 34, GPU: 1, TPU: 1}")
    assert top["fixes"][0]["command"] == "--tensor-parallel-size 1 --pipeline-parallel-size 1"
    # the engine's own "Waiting for creating a placement group" line is the same failure: one finding, not two
    assert [f["code"] for f in r["findings"]].count("cluster.placement_infeasible") == 1


def test_engine_line_alone_is_a_waiting_placement_group(tmp_path: Path) -> None:
    log = (RAY / "vllm-ray-pg-2gpu-status-1gpu-gpustack.txt").read_text().splitlines()[0]
    path = tmp_path / "pg-line.log"
    path.write_text(log + "\n")
    (f,) = analyze(path)["findings"]
    assert (f["code"], f["severity"]) == ("cluster.placement_infeasible", "warn")


def test_idle_cluster_status_is_read_and_judged_ok() -> None:
    r = analyze(RAY / "ray-status-2nodes-16gpu-h20-vllm-idle.txt")
    assert r["status"] == "ok" and r["findings"] == []
    assert check(r, "cluster.placement")["detail"] == "0 pending placement group(s) against the cluster's totals {CPU: 360, GPU: 16}"
    assert check(r, "cluster.reachable")["status"] == "pass"


def test_pending_tasks_are_busy_not_infeasible() -> None:
    r = analyze(RAY / "ray-status-autoscaling-17nodes-408-pending-ray-exec.txt")
    assert "cluster.placement_infeasible" not in [f["code"] for f in r["findings"]]
    assert r["status"] == "ok"


def test_recent_node_failures_are_named() -> None:
    r = analyze(RAY / "ray-status-1.3-recent-failure-custom1.txt")
    (f,) = r["findings"]
    assert (f["code"], f["severity"]) == ("cluster.node_unreachable", "warn")
    assert f["evidence"] == [f"{RAY / 'ray-status-1.3-recent-failure-custom1.txt'}: 10.0.0.157: custom1"]
    assert f["fixes"][0]["command"] == "tail -n 200 /tmp/ray/session_latest/logs/monitor.log"


def test_status_pasted_after_a_long_engine_log_is_read(tmp_path: Path) -> None:
    # a ticket: a 15 KB Ray start-up log, then the gpustack reporter's wait line and `ray status`
    paste = tmp_path / "ticket.log"
    paste.write_text((RAY / "vllm-0.10.1.1-v1-tp2-ray-2nodes-a100-40gb.txt").read_text()
                     + (RAY / "vllm-ray-pg-2gpu-status-1gpu-gpustack.txt").read_text())
    top = analyze(paste)["findings"][0]
    assert (top["code"], top["title"]) == ("cluster.placement_infeasible", "a pending placement group needs 2 GPU in all; the cluster has 1")
