"""Benchmark tools' summaries pasted alone -> the TTFT and inter-token latency perf.high_latency judges.

Every fixture is a verbatim excerpt of a public thread (fixtures/bench/*.source.txt says where); the
formats are the tools' own (doctor/logparse/bench_tools.py names the source of each). A slow
benchmark names the computed latency and the line it came from; a healthy one stays quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.logparse import bench_tools
from tests.analyze_json import analyze

BENCH = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def loud_perf(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"].startswith("perf.") and f["severity"] in ("warn", "error")]


def test_llama_bench_on_an_npu_backend_is_slow_per_token_and_per_prompt():
    path = BENCH / "llama-bench-qnn-tg128-0.70tps.txt"
    r = analyze(path)
    m = r["facts"]["metrics"]
    assert (m["origin"], m["engine"]) == ("log", "llamacpp")
    assert m["values"]["itl_mean_s"] == pytest.approx(1 / 0.70)  # tg128 at 0.70 t/s
    assert m["values"]["ttft_mean_s"] == pytest.approx(512 / 18.46)  # pp512 at 18.46 t/s
    (f,) = loud_perf(r)
    assert f["code"] == "perf.high_latency" and f["title"].startswith("TTFT 27.7 s and 1429 ms per output token")
    assert f"{path}:4: | llama 1B F16" in f["evidence"][1] and "1 / 0.7 = 1428.6 ms per token" in f["evidence"][1]
    assert "a 512-token prompt takes 27.74 s" in f["evidence"][0]
    assert [x["command"] for x in f["fixes"]] == ["-ngl 999"]


@pytest.mark.parametrize("name, itl_ms", [
    ("llama-bench-rtx2060-b1468-pp-512-tg-128.txt", 1000 / 39.39),  # build 1468 wrote "tg 128"
    ("llama-bench-rtx5090-qwen3moe-tg128-219tps.txt", 1000 / 219.49),
])
def test_healthy_llama_bench_is_read_and_quiet(name, itl_ms):
    r = analyze(BENCH / name)
    assert r["facts"]["metrics"]["values"]["itl_mean_s"] * 1000 == pytest.approx(itl_ms)
    assert loud_perf(r) == []


def test_llama_bench_cpu_rows_are_not_judged_against_a_gpu():
    table = (BENCH / "llama-bench-qnn-tg128-0.70tps.txt").read_text().replace("QNN       ", "CPU       ").replace("|  99 |", "|   0 |")
    assert bench_tools.llama_bench(table).values == {}


def test_ollama_verbose_slow_response_names_both_latencies():
    path = BENCH / "ollama-verbose-8.87tps-prompt-19.7s.txt"
    r = analyze(path)
    v = r["facts"]["metrics"]["values"]
    assert v["itl_mean_s"] == pytest.approx(1 / 8.87) and v["ttft_mean_s"] == pytest.approx(19.747)
    (f,) = loud_perf(r)
    assert f["title"].startswith("TTFT 19.7 s and 113 ms per output token")
    assert f"{path}:8: eval rate:            8.87 tokens/s" in f["evidence"][1]
    assert [x["command"] for x in f["fixes"]] == ['PARAMETER num_gpu 999 (Modelfile) or "options": {"num_gpu": 999}']


def test_ollama_verbose_healthy_response_is_quiet():
    r = analyze(BENCH / "ollama-verbose-mistral-24tps.txt")
    v = r["facts"]["metrics"]["values"]
    assert v["itl_mean_s"] == pytest.approx(1 / 24.61) and v["ttft_mean_s"] == pytest.approx(0.204563)
    assert loud_perf(r) == []


def test_go_durations_as_ollama_prints_them():
    assert bench_tools._go_seconds("2m7.682s") == pytest.approx(127.682)
    assert bench_tools._go_seconds("891.933µs") == pytest.approx(891.933e-6)
    assert bench_tools._go_seconds("1.5 s") is None  # not Go's format: not guessed


@pytest.mark.parametrize("name, ttft_s, itl_s", [
    ("genai-perf-vllm-reasoning-ttft-1764ms.txt", 1.76461, 0.02217),  # the author's "--->" mark before the avg
    ("aiperf-trtllm-vlm-ttft-1655ms.txt", 1.65527, 0.01572),  # AIPerf: "Time to First Token", a Metric column
])
def test_genai_perf_table_avg_column_and_healthy_run_is_quiet(name, ttft_s, itl_s):
    r = analyze(BENCH / name)
    v = r["facts"]["metrics"]["values"]
    assert (v["ttft_mean_s"], v["itl_mean_s"]) == (pytest.approx(ttft_s), pytest.approx(itl_s))
    assert loud_perf(r) == []


def test_genai_perf_slow_ttft_is_named_with_its_row(tmp_path):
    # the real table with its TTFT row's avg raised past 2 s: the thousands comma is read
    text = (BENCH / "genai-perf-vllm-reasoning-ttft-1764ms.txt").read_text().replace("--->  1,764.61", "--->  3,764.61")
    path = tmp_path / "genai-perf.txt"
    path.write_text(text)
    (f,) = loud_perf(analyze(path))
    assert f["code"] == "perf.high_latency" and f["title"].startswith("TTFT 3.8 s")
    assert f"{path}:5:" in f["evidence"][0] and "(genai-perf: avg 3,764.61 ms)" in f["evidence"][0]


def test_genai_perf_export_json_is_read(tmp_path):
    # the layout json_exporter.py writes (its own test, tests/test_exporters/test_json_exporter.py: metric -> {"unit", "avg", ...})
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text('{\n  "time_to_first_token": {"unit": "ms", "avg": 2500.5, "p99": 3100.0},\n'
                    '  "inter_token_latency": {"unit": "ms", "avg": 12.5},\n  "input_config": {}\n}\n')
    v = analyze(path)["facts"]["metrics"]["values"]
    assert (v["ttft_mean_s"], v["itl_mean_s"]) == (pytest.approx(2.5005), pytest.approx(0.0125))


def test_tgi_benchmark_reads_batch_one_and_the_merged_blank_cells():
    path = BENCH / "tgi-benchmark-gaudi-decode-26ms.txt"
    r = analyze(path)
    m = r["facts"]["metrics"]
    assert m["engine"] == "tgi"
    assert m["values"]["itl_mean_s"] == pytest.approx(0.02601) and m["values"]["ttft_mean_s"] == pytest.approx(0.06819)
    assert m["raw"]["bench:itl_mean_s"].startswith(f"{path}:9: | Decode (token) | 1 ")
    assert loud_perf(r) == []


def test_llmperf_slow_run_with_its_indent_lost_names_both_means():
    path = BENCH / "llmperf-inf2-llama2-13b-c22-itl-110ms.txt"
    r = analyze(path)
    v = r["facts"]["metrics"]["values"]
    assert v["itl_mean_s"] == pytest.approx(0.10989042557537512) and v["ttft_mean_s"] == pytest.approx(3.032657462526748)
    (f,) = loud_perf(r)
    assert f["code"] == "perf.high_latency" and f["title"].startswith("TTFT 3.0 s and 110 ms per output token")
    assert f"{path}:8: mean = 0.10989042557537512 (llmperf: mean inter_token_latency_s" in f["evidence"][1]


def test_llmperf_healthy_printed_summary_is_quiet():
    r = analyze(BENCH / "llmperf-inf2-llama3-8b-c1-healthy.txt")
    v = r["facts"]["metrics"]["values"]
    assert v["itl_mean_s"] == pytest.approx(0.053548951905597324) and v["ttft_mean_s"] == pytest.approx(1.5821313202395686)
    assert loud_perf(r) == []


def test_llmperf_summary_json_is_read():
    # the keys token_benchmark_ray.py writes: metrics_summary's dict under "results", flattened with "_" (utils.flatten_dict)
    found = bench_tools.llmperf('{\n    "results_inter_token_latency_s_mean": 0.25,\n    "results_ttft_s_mean": 0.5\n}')
    assert found.values == {"itl_mean_s": 0.25, "ttft_mean_s": 0.5}


def test_sglang_bench_one_batch_reads_the_measured_run_not_the_warmup():
    path = BENCH / "sglang-bench-one-batch-mlx-qwen3-0.6b-bs1.txt"
    r = analyze(path)
    m = r["facts"]["metrics"]
    assert m["engine"] == "sglang"
    assert (m["values"]["itl_mean_s"], m["values"]["ttft_mean_s"]) == (0.00689, 0.01788)  # not the warm-up's 0.00717 / 0.06075
    assert m["raw"]["bench:itl_mean_s"].startswith(f"{path}:19: Decode.  median latency: 0.00689 s")
    assert loud_perf(r) == []


def test_sglang_bench_one_batch_prefill_of_a_batch_is_not_a_ttft():
    text = (BENCH / "sglang-bench-one-batch-mlx-qwen3-0.6b-bs1.txt").read_text().replace("Batch size: 1,", "Batch size: 64,")
    assert set(bench_tools.sglang_one_batch(text).values) == {"itl_mean_s"}
