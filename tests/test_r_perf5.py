"""Perf codes from what real threads attach, read as `llm-doctor analyze` reads them. First the decision between
perf.memory_overcommitted and load.runtime_oom (checks/perf/memory_headroom.py): an OOM while serving, after
start-up had fitted, with the memory share raised above the engine's default to 0.9 or more, is the share's
overcommit; an OOM in start-up, or at the engine's default share, stays load.runtime_oom. Each test asserts the
code, the figure it rests on and the fix value."""

from __future__ import annotations

from tests.analysis import codes, only, scenario

# SGLang's serving lines (scheduler.py log_decode_stats / log_prefill_stats) and PyTorch's OOM message
# (c10/cuda/CUDACachingAllocator.cpp), in the shape sglang 0.4.6 prints them
SGLANG_SERVING_OOM = """python3 -m sglang.launch_server --model meta-llama/Llama-3.1-8B-Instruct --mem-fraction-static={share}
[2025-06-05 14:56:29 TP0] Decode batch. #running-req: 62, #token: 167777, token usage: 0.81, cuda graph: True, gen throughput (token/s): 896.73, #queue-req: 2
[2025-06-05 14:56:30 TP0] Prefill batch. #new-seq: 1, #new-token: 2489, #cached-token: 0, token usage: 0.83, #running-req: 63, #queue-req: 0
[2025-06-05 14:56:30 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried}. GPU 0 has a total capacity of 79.44 GiB of which 137.00 MiB is free. Of the allocated memory 74.79 GiB is allocated by PyTorch, and 811.92 MiB is reserved by PyTorch but unallocated.
[2025-06-05 14:56:30] Received sigquit from a child process. It usually means the child failed.
"""

VLLM_SERVING_OOM = """vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization {share} --max-model-len 32768
INFO 05-02 10:00:01 [loggers.py:118] Engine 000: Avg prompt throughput: 2048.3 tokens/s, Avg generation throughput: 310.2 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 61.0%, Prefix cache hit rate: 0.0%
INFO:     127.0.0.1:50412 - "POST /v1/chat/completions HTTP/1.1" 200 OK
ERROR 05-02 10:00:07 [core.py:588] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 79.19 GiB of which 600.00 MiB is free. Including non-PyTorch memory, this process has 78.58 GiB memory in use. Of the allocated memory 75.10 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated.
"""


def test_a_serving_oom_at_a_raised_sglang_share_is_the_overcommit_and_explains_the_oom(tmp_path):
    found = scenario(tmp_path, engine_log=SGLANG_SERVING_OOM.format(share=0.95, tried="174.00 MiB"))
    assert codes(found)[:2] == ["perf.memory_overcommitted", "load.runtime_oom"]
    top = found[0]
    assert top.explains == ["load.runtime_oom"]
    assert "mem_fraction_static=0.95" in top.evidence[0]
    assert any("share 0.94 leaves it free" in line for line in top.evidence), top.evidence
    # 0.94 leaves the failed allocation free; SGLang's safe range (0.85) is lower, so it is the fix
    assert top.fixes[0].command == "--mem-fraction-static 0.85"


def test_the_fix_is_the_share_that_leaves_a_large_failed_allocation_free(tmp_path):
    found = scenario(tmp_path, engine_log=SGLANG_SERVING_OOM.format(share=0.95, tried="12.00 GiB"))
    top = found[0]
    assert top.code == "perf.memory_overcommitted"
    # (12 GiB - 0.134 GiB free) / 79.44 GiB = 0.149 of the GPU: 0.95 - 0.149 -> 0.80, below the safe 0.85
    assert top.fixes[0].command == "--mem-fraction-static 0.80"


def test_a_serving_oom_at_sglangs_default_share_stays_a_runtime_oom(tmp_path):
    found = scenario(tmp_path, engine_log=SGLANG_SERVING_OOM.format(share=0.88, tried="174.00 MiB"))
    assert codes(found)[0] == "load.runtime_oom"
    assert "perf.memory_overcommitted" not in codes(found)


def test_a_vllm_serving_oom_above_the_default_share_is_the_overcommit(tmp_path):
    found = scenario(tmp_path, engine_log=VLLM_SERVING_OOM.format(share=0.93))
    top = found[0]
    assert top.code == "perf.memory_overcommitted" and "gpu_memory_utilization=0.93" in top.evidence[0]
    assert top.fixes[0].command == "--gpu-memory-utilization 0.90"


def test_a_vllm_serving_oom_at_the_default_share_stays_a_runtime_oom(tmp_path):
    found = scenario(tmp_path, engine_log=VLLM_SERVING_OOM.format(share=0.9))
    assert codes(found)[0] == "load.runtime_oom"


def test_an_oom_the_log_does_not_place_in_serving_stays_a_runtime_oom_beside_the_share(tmp_path):
    # the OOM line and the command only (vllm#26863's shape): nothing shows start-up had succeeded
    log = VLLM_SERVING_OOM.format(share=0.95).splitlines()
    found = scenario(tmp_path, engine_log="\n".join([log[0], log[3]]) + "\n")
    assert codes(found)[0] == "load.runtime_oom"
    share = only(found, "perf.memory_overcommitted")
    assert share.explains == [] and share.fixes[0].command == "--gpu-memory-utilization 0.90"
