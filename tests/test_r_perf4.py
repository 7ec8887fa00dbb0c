"""Perf codes from what real threads attach, read as `llm-doctor analyze` reads them: llama.cpp's thread count
against the host's hardware threads in every version's wording, and LMDeploy's pre-0.2 `--instance_num` against
the TurboMind batch cap. Each test asserts the code, the figure it rests on and the fix value."""

from __future__ import annotations

import pytest

from llm_doctor.logparse import bench_tools
from llm_doctor.logparse import events as ev
from llm_doctor.logparse import setup as st
from tests.analysis import codes, only, scenario

# llama.cpp's system_info line, as common get_system_info / llama-server print it across versions
THREADS = [
    ("system_info: n_threads = 24 / 32 | AVX = 1 | AVX2 = 1 | BLAS = 0 | SSE3 = 1 |", (24, 32)),
    ("system_info: n_threads = 8 (n_threads_batch = 8) / 16 | CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 |", (8, 16)),
    ("main: system info: n_threads = 12, n_threads_batch = 12, total_threads = 24", (12, 24)),
    ('INFO [main] system info | n_threads=4 n_threads_batch=-1 total_threads=8 system_info="AVX = 1 |"', (4, 8)),
]


@pytest.mark.parametrize("line,want", THREADS)
def test_every_version_of_the_system_info_line_gives_threads_and_hardware_threads(line, want):
    rule, values = ev.match(line)
    assert rule.kind == "threads" and (values["threads"], values["hw_threads"]) == want


CPU_RUN = """main: seed = 1680000000
system_info: n_threads = 24 / 32 | AVX = 1 | AVX2 = 1 | AVX512 = 0 | FMA = 1 | NEON = 0 | ARM_FMA = 0 | F16C = 1 | BLAS = 0 | SSE3 = 1 | VSX = 0 |
sampling: temp = 0.800000, top_k = 40, top_p = 0.950000, repeat_last_n = 64, repeat_penalty = 1.100000
"""


def test_a_cpu_only_x86_run_past_half_its_hardware_threads_is_cpu_bound(tmp_path):
    found = scenario(tmp_path, llama_log=CPU_RUN)
    bound = only(found, "perf.cpu_bound")
    assert bound.severity == "warn" and "n_threads = 24 / 32" in bound.evidence[0]
    assert bound.fixes[0].command == "-t 16"


def _sub(tmp_path, name: str):
    folder = tmp_path / name
    folder.mkdir()
    return folder


def test_threads_within_the_cores_a_gpu_build_or_an_arm_host_are_not_judged(tmp_path):
    within = CPU_RUN.replace("n_threads = 24 / 32", "n_threads = 16 / 32")
    gpu = CPU_RUN.replace("BLAS = 0", "BLAS = 1")
    arm = CPU_RUN.replace("AVX = 1 | AVX2 = 1", "AVX = 0 | AVX2 = 0").replace("SSE3 = 1", "SSE3 = 0").replace("NEON = 0", "NEON = 1")
    offloaded = CPU_RUN + "llm_load_tensors: offloaded 33/33 layers to GPU\n"
    for name, text in {"within": within, "gpu": gpu, "arm": arm, "offloaded": offloaded}.items():
        assert "perf.cpu_bound" not in codes(scenario(_sub(tmp_path, name), llama_log=text)), name


# InternLM/lmdeploy#716: the server command after a Chinese label, with no space between, and the benchmark's
LMDEPLOY = """服务启动命令lmdeploy serve api_server ./workspace --server_name 0.0.0.0 --server_port 8000 --instance_num 1000 --tp 2
请求命令 python profile_restful_api.py http://127.0.0.1:8000 workspace/triton_models/tokenizer --concurrency 1000
"""


def test_a_command_after_cjk_text_or_a_colon_is_read():
    for line in ("服务启动命令lmdeploy serve api_server ./workspace --tp 2", "启动命令：vllm serve Qwen/Qwen3-8B --tp 2",
                 "command:vllm serve Qwen/Qwen3-8B"):
        assert st.COMMAND.search(line), line


def test_instance_num_above_the_turbomind_batch_cap_is_batching_limited(tmp_path):
    limited = only(scenario(tmp_path, notes_txt=LMDEPLOY), "perf.batching_limited")
    assert limited.title.startswith("--instance_num 1000 holds 1000 sessions, but TurboMind batches at most 64")
    assert "936 of 1000" in limited.evidence[-1]
    assert limited.fixes[0].command == "sed -i 's/^max_batch_size = .*/max_batch_size = 1000/' ./workspace/triton_models/weights/config.ini"
    assert limited.fixes[1].command == "--max-batch-size 1000"


def test_instance_num_within_the_batch_cap_is_not_judged(tmp_path):
    within = "lmdeploy serve api_server ./workspace --instance_num 32 --tp 2\n"
    raised = "lmdeploy serve api_server ./workspace --instance_num 256 --max-batch-size 256\n"
    for name, text in {"within": within, "raised": raised}.items():
        assert "perf.batching_limited" not in codes(scenario(_sub(tmp_path, name), launch_sh=text)), name


# TensorRT-LLM trtllm-bench throughput (tensorrt_llm/bench/dataclasses/reporting.py), streaming, a paced run
TRTLLM_BENCH = """===========================================================
= WORLD + RUNTIME INFORMATION
===========================================================
TP Size:                1
Max Runtime Batch Size: 4
Issue Rate (req/sec):   2.0000E+00

===========================================================
= PERFORMANCE OVERVIEW
===========================================================
Request Throughput (req/sec):                     1.9921
Total Output Throughput (tokens/sec):             255.1000
Average time-to-first-token [TTFT] (ms):          2667.0339
Average time-per-output-token [TPOT] (ms):        182.9639
"""


def test_trtllm_bench_gives_ttft_and_tpot_and_a_burst_issue_rate_marks_the_queue():
    found = bench_tools.trtllm_bench(TRTLLM_BENCH)
    assert found.engine == "trtllm"
    assert found.values == pytest.approx({"ttft_mean_s": 2.6670339, "itl_mean_s": 0.1829639, "bench_burst": 0.0})
    burst = bench_tools.trtllm_bench(TRTLLM_BENCH.replace("2.0000E+00", "1.4117E+17"))
    assert burst.values["bench_burst"] == 1.0


def test_a_slow_trtllm_bench_decode_is_high_latency(tmp_path):
    slow = only(scenario(tmp_path, bench_txt=TRTLLM_BENCH), "perf.high_latency")
    assert "183 ms per output token" in slow.title and "TTFT 2.7 s" in slow.title
    assert any("[TPOT] (ms):        182.9639" in line for line in slow.evidence)


# LMDeploy's benchmark summaries: the profiler table (2025-01 on, seconds) and the 2023-12..2024 lines
LMDEPLOY_TABLE = """==================== Profile Throughput ====================
Benchmark duration                         143.961
Concurrency                                       256
------------------------------------------------------------
                                               mean       P50       P75       P95       P99
End-to-end Latency                           14.220    13.900    18.012    25.331    29.870
Time to First Token (TTFT)                    0.285     0.190     0.301     0.812     1.220
Time per Output Token (TPOT)                  0.041     0.040     0.046     0.061     0.072
Inter-token Latency (ITL)                     0.039     0.036     0.045     0.066     0.094
"""
LMDEPLOY_LINES = """concurrency: 256
elapsed_time: 399.739s

first token latency(s)(min, max, ave): 0.068, 4.066, 2.285
per-token latency(s) percentile(50, 75, 95, 99): [0, 0.094, 0.169, 0.227]
"""


def test_lmdeploy_profiles_give_their_mean_ttft_and_tpot_in_seconds():
    table = bench_tools.lmdeploy_profile(LMDEPLOY_TABLE)
    assert table.engine == "lmdeploy" and table.values == pytest.approx({"ttft_mean_s": 0.285, "itl_mean_s": 0.041})
    lines = bench_tools.lmdeploy_profile(LMDEPLOY_LINES)
    assert lines.values == {"ttft_mean_s": 2.285}  # the per-token percentiles give no mean
    older = bench_tools.lmdeploy_profile("first_token latency(min, max, ave): 0.068s, 4.066s, 0.285s\n")
    assert older.values == {"ttft_mean_s": 0.285}


def test_a_healthy_lmdeploy_profile_is_quiet(tmp_path):
    assert not [c for c in codes(scenario(tmp_path, bench_txt=LMDEPLOY_TABLE)) if c.startswith("perf.")]


# a vLLM V1 start-up at TP 4 for a 13B model: each worker's weights and the GPU's size as vLLM prints them
TP_LOG = """INFO 05-10 10:00:01 [api_server.py:1044] args: Namespace(model='codellama/CodeLlama-13b-hf', tensor_parallel_size={tp}, max_model_len=7000)
(VllmWorker rank=0 pid=101) INFO 05-10 10:01:10 [gpu_model_runner.py:1329] Model loading took {gib} GiB and 12.3 seconds
INFO 05-10 10:01:30 [worker.py:267] Memory profiling takes 4.1 seconds; the current vLLM instance can use total_gpu_memory ({gpu}GiB) x gpu_memory_utilization (0.90) = 71.24GiB
INFO 05-10 10:01:50 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000
"""


def test_tp_wider_than_the_logged_weights_need_is_tp_mismatch(tmp_path):
    wide = only(scenario(tmp_path, vllm_log=TP_LOG.format(tp=4, gib="6.1012", gpu="79.15")), "perf.tp_mismatch")
    assert wide.severity == "warn" and wide.title.startswith("TP=4 is more than this model needs: TP 1 holds it")
    assert "24.4 GiB per GPU at TP 1 (31% of a GPU)" in wide.evidence[-1]
    assert wide.fixes[0].command == "--tensor-parallel-size 1 --data-parallel-size 4"


def test_one_step_wider_is_a_note_and_a_tp_the_weights_need_is_quiet(tmp_path):
    # a 70B at TP 8 on H200s: TP 4 would hold it at 33 GiB per GPU, a latency choice, said at info
    step = only(scenario(_sub(tmp_path, "step"), vllm_log=TP_LOG.format(tp=8, gib="16.4605", gpu="139.72")), "perf.tp_mismatch")
    assert step.severity == "info" and step.fixes[0].command == "--tensor-parallel-size 4 --data-parallel-size 2"
    needed = scenario(_sub(tmp_path, "needed"), vllm_log=TP_LOG.format(tp=8, gib="16.4605", gpu="79.15"))
    assert "perf.tp_mismatch" not in codes(needed)
