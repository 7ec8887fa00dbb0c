"""`rocm-smi`'s concise table pasted alone or with an engine log -> GpuFacts the perf checks judge.

Fixtures are verbatim public pastes (fixtures/monitors/rocm-smi-*.source.txt); the layouts are
rocm_smi.py's showAllConcise across its history (doctor/logparse/rocm_smi.py names the commits).
"""

from __future__ import annotations

from pathlib import Path

from llm_doctor.logparse.rocm_smi import embedded_rocm_smi
from tests.analyze_json import analyze, check

FIX = Path(__file__).resolve().parents[1] / "fixtures"
MON = FIX / "monitors"


def test_current_layout_reads_each_device_and_leaves_partitions_unread():
    facts = embedded_rocm_smi((MON / "rocm-smi-concise-mi300-dpx-partitions.txt").read_text())
    assert facts is not None and facts.source == "rocm-smi" and len(facts.gpus) == 8
    g0, g1 = facts.gpus[0], facts.gpus[1]
    assert (g0.temperature_c, g0.power_draw_w, g0.power_limit_w, g0.sm_clock_mhz) == (60.0, 319.0, 1000.0, 2203.0)
    assert g0.util_gpu is not None and (g0.util_gpu.mean, g0.util_gpu.samples) == (0.0, 1)
    assert (g1.util_gpu, g1.temperature_c, g1.power_draw_w) == (None, None, None)  # N/A is not read, never zero
    assert "throttle_reasons" in g0.unsupported  # the concise table shows none: not measured


def test_old_layout_of_rocm_3_3_is_read():
    (g,) = embedded_rocm_smi((MON / "rocm-smi-concise-rocm3.3-old-layout.txt").read_text()).gpus
    assert (g.index, g.temperature_c, g.power_draw_w, g.power_limit_w, g.sm_clock_mhz) == (1, 24.0, 3.0, 170.0, 852.0)


def test_an_idle_rocm_smi_alone_is_quiet_and_clocks_are_not_judged():
    r = analyze(MON / "rocm-smi-concise-mi300-dpx-partitions.txt")
    assert r["facts"]["gpus"]["source"] == "rocm-smi"
    assert [f for f in r["findings"] if f["code"].startswith("perf.")] == []
    assert check(r, "perf.clocks")["status"] == "skip"


def test_rocm_smi_with_requests_running_is_judged_for_utilization():
    r = analyze(MON / "rocm-smi-concise-rocm3.3-old-layout.txt", FIX / "stat_lines" / "vllm-0.2-v0-stat-lines.log")
    (f,) = [f for f in r["findings"] if f["code"] == "perf.low_gpu_util"]
    assert f["title"] == "GPU utilization 0% while 4 request(s) run (one reading)" and f["severity"] == "info"
    assert f["evidence"][0] == "GPU1: utilization min/mean/max 0/0/0% over 1 sample(s)"
    assert len(f["evidence"]) == len(set(f["evidence"]))  # the stat line that says 4 run is quoted once
