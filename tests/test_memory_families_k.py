"""Memory and start-up failures as the engines' own sources word them, and the arithmetic their fixes rest on:
vLLM's memory profile with a negative KV remainder (V0 v0.6.3 / v0.7 worker.py, V1 gpu_worker.py), its
device-named block count, and the memory plan's line between weights that do not fit the GPU and weights
that fit it but fill the memory share (the engine loads them, then has nothing for the KV cache)."""

from __future__ import annotations

import pytest

from llm_doctor import memory
from llm_doctor.engine_args import parse_command
from llm_doctor.models import from_table
from tests.analysis import assert_rank_one, findings_of

GIB = 1024**3

# (name, log lines, a substring of the evidence, the first fix's exact command or None)
NO_KV = [
    # vllm/worker/worker.py v0.7.3 determine_num_available_blocks, executor_base.py initialize_cache ("# cuda blocks"):
    # the traceback is cut before raise_if_cache_size_invalid's ValueError (vllm-project/vllm#13882).
    # 0.70 x 8.00 = 5.60 GiB; 5.20 + 0.03 + 1.42 = 6.65 GiB -> 0.70 + 1.05 / 8.00 = 0.831 empties the KV cache;
    # rounded up to 0.84, and 0.01 more for a first block
    ("vllm-v07-negative-rest", [
        "INFO 02-26 09:54:02 model_runner.py:1115] Loading model weights took 5.2032 GB",
        "INFO 02-26 09:54:05 worker.py:267] Memory profiling takes 3.25 seconds",
        "INFO 02-26 09:54:05 worker.py:267] the current vLLM instance can use total_gpu_memory (8.00GiB) x gpu_memory_utilization (0.70) = 5.60GiB",
        "INFO 02-26 09:54:05 worker.py:267] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch activation peak "
        "memory takes 1.42GiB; the rest of the memory reserved for KV Cache is -1.05GiB.",
        "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 0, # CPU blocks: 4681",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "<frozen runpy>", line 88, in _run_code',
    ], "reserved for KV Cache is -1.05GiB", "--gpu-memory-utilization 0.85"),
    # v0.6.3's one-line profile: 0.90 x 23.64 = 21.28 GiB, 0.91 GiB short -> 0.90 + 0.91 / 23.64 = 0.9385 -> 0.94 + 0.01
    ("vllm-v063-negative-kv-size", [
        "INFO 11-20 08:12:01 worker.py:232] Memory profiling results: total_gpu_memory=23.64GiB initial_memory_usage=15.23GiB "
        "peak_torch_memory=22.01GiB memory_usage_post_profile=15.40GiB non_torch_memory=0.18GiB kv_cache_size=-0.91GiB "
        "gpu_memory_utilization=0.90",
        "INFO 11-20 08:12:01 gpu_executor.py:122] # GPU blocks: 0, # CPU blocks: 2048",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    ], "kv_cache_size=-0.91GiB", "--gpu-memory-utilization 0.95"),
    # a ROCm build names its platform in the block count (executor_base.py logs current_platform.device_name)
    ("vllm-rocm-zero-blocks", [
        "INFO 03-02 11:00:00 executor_base.py:110] # rocm blocks: 0, # CPU blocks: 1310",
    ], "# rocm blocks: 0", None),
]


@pytest.mark.parametrize(("name", "lines", "evidence", "command"), NO_KV, ids=[c[0] for c in NO_KV])
def test_no_kv_cache_memory_from_the_profile(tmp_path, name: str, lines: list[str], evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, "load.no_kv_cache_memory", evidence, command)


def test_share_past_the_ceiling_asks_for_a_split(tmp_path) -> None:
    # 0.90 x 16.00 = 14.40 GiB, 1.60 GiB short: 0.90 + 0.10 = 1.00 of the GPU, above any share vLLM can run with
    lines = [
        "INFO 05-30 06:40:55 worker.py:267] the current vLLM instance can use total_gpu_memory (16.00GiB) x gpu_memory_utilization (0.90) = 14.40GiB",
        "INFO 05-30 06:40:55 worker.py:267] model weights take 14.50GiB; non_torch_memory takes 0.10GiB; PyTorch activation peak "
        "memory takes 1.40GiB; the rest of the memory reserved for KV Cache is -1.60GiB.",
    ]
    assert_rank_one(tmp_path, "vllm-no-share-fits", lines, "load.no_kv_cache_memory", "-1.60GiB", None)


def test_weights_that_fit_the_gpu_but_fill_the_share_leave_no_kv_cache() -> None:
    # Llama-3.1-8B in bf16: 14.96 GiB of weights load on a 22.5 GiB L4, but 0.6 of it budgets 13.5 GiB. At 0.74:
    # 16.65 - 14.96 weights - 0.31 activations - 0.18 non-torch = 1.21 GiB = 9888 tokens of 128 KiB, >= 8192 asked
    llama = from_table("meta-llama/Llama-3.1-8B-Instruct")
    cfg = parse_command("vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.6 --max-model-len 8192")
    result = memory.plan(llama, int(22.5 * GIB), 1, cfg, "NVIDIA L4")
    assert (result.fits, result.verdict) == (False, "no_kv_cache_memory")
    assert "fit the 22.5 GiB GPU" in result.reasons[0]
    assert [c.command for c in result.changes][0] == "--gpu-memory-utilization 0.74"


def test_weights_larger_than_the_gpu_stay_weights_oom() -> None:
    llama = from_table("meta-llama/Llama-3.1-70B-Instruct")
    cfg = parse_command("vllm serve m -tp 1 --gpu-memory-utilization 0.5 --max-model-len 8192")
    result = memory.plan(llama, 80 * GIB, 4, cfg, "A100")
    assert result.verdict == "weights_oom"


def test_online_quantization_loads_the_16_bit_weights_first(tmp_path) -> None:
    # SGLang's --quantization fp8 of a 16-bit checkpoint quantizes in process_weights_after_loading, after the load:
    # gemma-3-12b-it at 2 bytes a parameter is 12e9 x 2 / 2**30 = 22.4 GiB, past a 15.58 GiB card (sgl-project/sglang#5580)
    lines = [
        "python3 -m sglang.launch_server --model-path google/gemma-3-12b-it --dtype=float16 --quantization fp8 --context-length 7000",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 226.00 MiB. GPU 0 has a total capacity of 15.58 GiB of which "
        "71.25 MiB is free. Including non-PyTorch memory, this process has 13.94 GiB memory in use.",
    ]
    assert_rank_one(tmp_path, "sglang-online-fp8", lines, "load.weights_oom", "Tried to allocate 226.00 MiB", None)
    top = findings_of(tmp_path / "sglang-online-fp8.log")[0]
    assert any("22.4 GiB weight shard" in line and "loaded unquantized" in line for line in top.evidence), top.evidence
    assert all(fix.command != "--quantization fp8" for fix in top.fixes)


HOST = [
    # zsh's job messages for SIGKILL, lower case (Src/jobs.c printjob): the shell's words for the OOM killer's kill
    ("zsh-foreground-killed", ["zsh: killed     vllm serve Qwen/Qwen2.5-72B-Instruct --tensor-parallel-size 4"], "zsh: killed", None),
    ("zsh-background-killed", ["[1]  + 12345 killed     python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-72B"],
     "12345 killed", None),
    # the NVIDIA kernel driver failing its own allocation (NVRM, NV_ERR_NO_MEMORY) while the kernel's OOM killer runs:
    # on unified memory (DGX Spark GB10) that is host RAM; the GPU-side out-of-memory is its symptom (vllm-project/vllm#41027)
    ("nvrm-with-oom-killer", [
        "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]",
        "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359",
        "VLLM::Worker_TP invoked oom-killer: gfp_mask=0x102cc2(GFP_HIGHUSER)",
        "sysmemAllocResources+0xa8/0x2a0 [nvidia]",
    ], "invoked oom-killer", None),
]


@pytest.mark.parametrize(("name", "lines", "evidence", "command"), HOST, ids=[c[0] for c in HOST])
def test_host_oom_wordings(tmp_path, name: str, lines: list[str], evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, "load.host_oom", evidence, command)


def test_a_gpu_oom_of_the_allocator_is_not_explained_by_a_host_kill(tmp_path) -> None:
    # torch's caching allocator ran out on the GPU; a later OOM-killer line does not make it host RAM
    lines = [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which "
        "1.10 GiB is free. Including non-PyTorch memory, this process has 22.50 GiB memory in use.",
        "python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP)",
    ]
    path = tmp_path / "gpu-then-host.log"
    path.write_text("\n".join(lines) + "\n")
    host = next(f for f in findings_of(path) if f.code == "load.host_oom")
    assert "load.runtime_oom" not in host.explains


OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 1 has a total capacity of 93.02 GiB of which 1.18 GiB is free."


@pytest.mark.parametrize(("said", "code"), [
    ("I get CUDA out of memory while loading the model on 2x H100.", "load.weights_oom"),
    ("The server crashes with CUDA OOM during model loading.", "load.weights_oom"),
    ("加载模型时显存不足", "load.weights_oom"),
    # both said: the load went through, the serving is where it ran out
    ("The model loads fine but OOMs during inference with long prompts.", "load.runtime_oom"),
    ("It runs out of memory during weight loading and again during inference.", "load.runtime_oom"),
])
def test_the_phase_a_report_states_places_the_oom(tmp_path, said: str, code: str) -> None:
    assert_rank_one(tmp_path, "said-phase", [said, OOM], code, "Tried to allocate 1.25 GiB", None)


def test_a_pinned_host_buffer_that_falls_back_is_no_failure(tmp_path) -> None:
    # ggml-cuda.cu ggml_cuda_host_malloc: cudaMallocHost failed, the caller takes a pageable CPU buffer and goes on
    path = tmp_path / "llama-pinned.log"
    path.write_text("ggml_cuda_host_malloc: failed to allocate 512.00 MiB of pinned memory: out of memory\n"
                    "llama_new_context_with_model: KV self size  = 1024.00 MiB\n"
                    "main: server is listening on 127.0.0.1:8080 - starting the main loop\n")
    assert [f.code for f in findings_of(path)] == []


@pytest.mark.parametrize(("line", "code"), [
    # torch's XPU and MPS allocators raise torch.OutOfMemoryError, whose name ends in Python's MemoryError
    ("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 15.11 GiB.",
     "load.runtime_oom"),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.95 GB, other allocations: 1.20 GB, max allowed: 18.13 GB). "
     "Tried to allocate 256.00 MB on private pool.", "load.runtime_oom"),
    # Python's own MemoryError is the host's
    ("MemoryError: Unable to allocate 3.00 GiB for an array with shape (805306368,) and data type float32", "load.host_oom"),
])
def test_gpu_allocators_apart_from_pythons_memory_error(tmp_path, line: str, code: str) -> None:
    assert_rank_one(tmp_path, "allocator", [line], code, line[:40], None)


def test_a_prompt_the_whole_kv_cache_cannot_hold(tmp_path) -> None:
    # vLLM V0 scheduler: AllocStatus.NEVER, the prompt ignored; 60 blocks x 16 tokens = 960 tokens of KV cache
    lines = [
        "INFO 12-19 10:20:50 llm_engine.py:337] # GPU blocks: 60, # CPU blocks: 2048",
        "WARNING 12-19 10:21:05 scheduler.py:161] Input prompt (1217 tokens) is too long and exceeds the capacity of block_manager",
        "INFO 12-19 10:21:05 async_llm_engine.py:111] Finished request cmpl-b8c7b3b2eb7a4de488ef870004648708.",
    ]
    assert_rank_one(tmp_path, "vllm-block-manager", lines, "load.kv_cache_insufficient", "capacity of block_manager",
                    "--max-model-len 960")


def test_sglang_truncation_below_the_context_is_the_kv_pool(tmp_path) -> None:
    # validate_input_length: max_req_input_len 20000 < --context-length 32768, so the pool holds 20001 tokens
    lines = [
        "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --context-length 32768 --allow-auto-truncate",
        "[2025-05-02 11:04:12 TP0] Request length is longer than the KV cache pool size or the max context length. Truncated. "
        "len(origin_input_ids)=25000, max_req_input_len=20000",
    ]
    assert_rank_one(tmp_path, "sglang-truncated", lines, "load.kv_cache_insufficient", "Truncated", "--context-length 20001")


def test_a_prompt_past_the_limit_is_the_context(tmp_path) -> None:
    lines = ["WARNING 01-17 08:12:00 scheduler.py:1057] Input prompt (9000 tokens) is too long and exceeds limit of 8192"]
    assert_rank_one(tmp_path, "vllm-prompt-limit", lines, "load.config_invalid", "exceeds limit of 8192", "--max-model-len 9216")


NCCL = [
    # torch c10d socket.cpp: rank 0's store cannot bind its port; the fix finds who holds it
    ("c10d-port-in-use", ["torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
                          "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"],
     "port: 29500", "ss -ltnp 'sport = :29500'"),
    # cudaErrorPeerAccessUnsupported, under torch's check and under NCCL's (transport/shm.cc "Cuda failure 217 '...'")
    ("torch-peer-access", ["RuntimeError: CUDA error: peer access is not supported between these two devices"], "peer access",
     "NCCL_P2P_DISABLE=1"),
    ("nccl-peer-access", ["transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two devices'"],
     "Cuda failure 217", "NCCL_P2P_DISABLE=1"),
]


@pytest.mark.parametrize(("name", "lines", "evidence", "command"), NCCL, ids=[c[0] for c in NCCL])
def test_distributed_init_wordings(tmp_path, name: str, lines: list[str], evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, "load.nccl_failed", evidence, command)


@pytest.mark.parametrize("said", [
    "vLLM pods are consistently killed by liveness probes before model loading completes.",
    "The container gets restarted by the startup probe while the 70B model is still loading.",
    "Kubernetes terminates the pod before the model finishes loading.",
])
def test_a_probe_kill_told_in_words_is_a_startup_timeout(tmp_path, said: str) -> None:
    assert_rank_one(tmp_path, "probe-said", [said], "load.startup_timeout", said[:30], None)


def test_a_kill_by_the_oom_killer_is_not_a_probe(tmp_path) -> None:
    assert_rank_one(tmp_path, "oom-said", ["The pod was killed by the OOM killer."], "load.host_oom", "OOM killer", None)


def test_tgi_waiting_for_its_shard_is_progress_not_a_timeout(tmp_path) -> None:
    # launcher/src/main.rs logs "Waiting for shard to be ready..." every 10 s of a load, healthy ones included
    path = tmp_path / "tgi-healthy.log"
    path.write_text(
        "2024-05-01T10:00:00.000000Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=0\n"
        "2024-05-01T10:00:10.000000Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=0\n"
        "2024-05-01T10:00:20.000000Z  INFO shard-manager: text_generation_launcher: Shard ready in 25.1s rank=0\n"
        "2024-05-01T10:00:22.000000Z  INFO text_generation_router::server: router/src/server.rs:1500: Connected\n")
    assert [f.code for f in findings_of(path)] == []


def test_nvidia_smi_q_ecc_header_is_no_fault(tmp_path) -> None:
    # nvidia-smi -q's "ECC Errors" section over zero counts (shared/real smi/nvidia-smi-q-1x-h200-driver550.txt)
    path = tmp_path / "smi-q.txt"
    path.write_text("    ECC Errors\n        Volatile\n            SRAM Correctable              : 0\n"
                    "            SRAM Uncorrectable            : 0\n            DRAM Correctable              : 0\n")
    assert "load.gpu_fault" not in [f.code for f in findings_of(path)]


@pytest.mark.parametrize("said", ["We keep getting uncorrectable ECC errors on GPU 3.",
                                  "ECC errors were detected on two of the A100s after the crash."])
def test_ecc_errors_said_to_happen_are_a_gpu_fault(tmp_path, said: str) -> None:
    assert_rank_one(tmp_path, "ecc-said", [said], "load.gpu_fault", "ECC", None)


def test_the_kernels_oom_killer_line_is_no_gpu_oom_statement(tmp_path) -> None:
    # mm/oom_kill.c, pasted without its dmesg timestamp (shared/real k8s/kernel-oom-killer-killed-process-line.txt)
    path = tmp_path / "kernel.txt"
    path.write_text("Out of memory: Killed process 930269 (python3) total-vm:15643332kB, anon-rss:13201980kB, file-rss:4kB\n")
    assert [f.code for f in findings_of(path)] == ["load.host_oom"]
