"""Perf codes from what real threads attach, read as `llm-doctor analyze` reads them: llama.cpp's thread count
against the host's hardware threads in every version's wording, and LMDeploy's pre-0.2 `--instance_num` against
the TurboMind batch cap. Each test asserts the code, the figure it rests on and the fix value."""

from __future__ import annotations

import pytest

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
