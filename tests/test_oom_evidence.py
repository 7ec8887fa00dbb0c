"""An out-of-memory is load.weights_oom only on positive evidence that the weights were loading, and
load.runtime_oom on evidence of anything later; with none, both are named, runtime first.

The evidence is what the engines print around the error (their own stage markers, mined from their
sources) and the frames of the traceback. Every log line is verbatim from the public source named
above it; the fix asserted is the exact command the finding gives."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# vllm-project/vllm#12529: vLLM V1's engine core logs the OOM with no traceback frame that places it
_V1_OOM = ("ERROR 03-13 09:00:43 [core.py:330] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has a "
           "total capacity of 7.75 GiB of which 1.17 GiB is free. Including non-PyTorch memory, this process has 5.02 GiB memory in use. "
           "Of the allocated memory 4.81 GiB is allocated by PyTorch, and 18.97 MiB is reserved by PyTorch but unallocated.")
# huggingface/text-generation-inference#866: the shard's OOM, then the launcher's verdict on it
_TGI_OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 15.77 GiB total capacity; "
            "15.37 GiB already allocated; 13.62 MiB free; 15.77 GiB allowed; 15.40 GiB reserved in total by PyTorch)")
_TGI_NEVER_STARTED = ["2023-08-17T10:23:27.032737Z ERROR text_generation_launcher: Shard 0 failed to start", "Error: ShardCannotStart"]
# a TGI 2.x launcher's milestones (a public TGI log): the shard server is up once its model loaded
_TGI_READY = ["2024-05-07T12:39:20.593317Z  INFO shard-manager: text_generation_launcher: Shard ready in 10.308899699s rank=0"]


def _frames(*frames: tuple[str, int, str]) -> list[str]:
    return ["Traceback (most recent call last):"] + [f'  File "/usr/local/lib/python3.10/site-packages/{path}", line {no}, in {fn}'
                                                     for path, no, fn in frames]


CASES = [
    # vLLM V0/V1 model_runner "Graph capturing finished in %.0f secs, took %.2f GiB" (a public vLLM 0.11 log): graphs are
    # captured, so what ran out next was a served step, and skipping graph capture is no longer the fix
    ("vllm-after-graph-capture", ["(EngineCore_DP0 pid=212) INFO 10-06 12:00:40 [gpu_model_runner.py:3480] Graph capturing finished in "
                                  "8 secs, took 0.31 GiB", _V1_OOM], "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
    # vLLM's model loaders log "Loading weights took %.2f seconds" once load_weights returned: the profiling run is next
    ("vllm-after-loading-weights", ["(VllmWorker rank=0 pid=123) INFO 05-01 10:00:00 [default_loader.py:262] Loading weights took "
                                    "5.36 seconds", _V1_OOM], "load.runtime_oom", "phase: profiling", "--max-num-seqs 128"),
    # TurboMind allocated its KV blocks (src/turbomind/models/llama/BlockManager.cc) and started its batch loop (a public
    # LMDeploy 0.x log): what ran out next was a served batch
    ("lmdeploy-turbomind-after-kv-blocks", ["[TM][INFO] [BlockManager] block_size = 64 MB", "[TM][INFO] [BlockManager] max_block_count = 159",
                                            "[TM][INFO] LlamaBatch<T>::Start()",
                                            "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/core/allocator.cc:49"],
     "load.runtime_oom", "phase: serving", None),
    # vLLM V1 kv_cache_utils "Maximum concurrency for %s tokens per request: %.2fx": the KV cache is sized, graphs come next
    ("vllm-after-kv-sizing", ["Maximum concurrency for 240,000 tokens per request: 1.00x", _V1_OOM], "load.runtime_oom",
     "phase: cuda_graph", "--enforce-eager"),
    # the launcher's "Shard N failed to start" after the OOM: the shard died in get_model, before it was ready
    ("tgi-shard-never-started", [_TGI_OOM, " rank=0", *_TGI_NEVER_STARTED], "load.weights_oom",
     "phase: weights (TGI's shard never started (line 3: ", "--num-shard 2"),
    # ... even after another shard's "Shard ready in": one shard's milestone does not place another shard's OOM
    ("tgi-one-shard-ready-another-never-started", [*_TGI_READY, _TGI_OOM, *_TGI_NEVER_STARTED], "load.weights_oom",
     "phase: weights (TGI's shard never started", "--num-shard 2"),
    # a shard that reported ready has its model: the router's warm-up is what runs out next
    ("tgi-after-shard-ready", [*_TGI_READY, _TGI_OOM], "load.runtime_oom", "phase: profiling", None),
    # vllm-project/vllm#636: vLLM 0.1.2 builds LlamaModel's decoder layers in their constructors (models/llama.py __init__,
    # ColumnParallelLinear's Parameter(torch.empty(...))): the model being built is its weights
    ("vllm-model-constructor", [*_frames(("vllm/model_executor/models/llama.py", 200, "__init__"),
                                         ("vllm/model_executor/models/llama.py", 201, "<listcomp>"),
                                         ("vllm/model_executor/models/llama.py", 146, "__init__")),
                                "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 160.00 MiB (GPU 0; 79.35 GiB total "
                                "capacity; 78.58 GiB already allocated; 145.19 MiB free; 78.58 GiB reserved in total by PyTorch)"],
     "load.weights_oom", "phase: weights (weights)", "--tensor-parallel-size 2"),
    # vllm-project/vllm#15598: the traceback runs through a model's forward (models/deepseek_v2.py) and Module.__call__:
    # activations, never the weight loading
    ("vllm-model-forward", [*_frames(("vllm/compilation/decorators.py", 172, "__call__"),
                                     ("vllm/model_executor/models/deepseek_v2.py", 646, "forward"),
                                     ("torch/nn/modules/module.py", 1739, "_wrapped_call_impl")),
                            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 56.00 MiB. GPU 6 has a total capacity of "
                            "44.53 GiB of which 448.00 KiB is free."], "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_oom_evidence(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_no_phase_evidence_names_both_runtime_first(tmp_path) -> None:
    """vllm-project/vllm#12529's engine-core line alone: nothing places it, so runtime leads and the
    weights follow, each saying it is not placed; the runtime fix halves vLLM's default 256 sequences."""
    log = tmp_path / "core.log"
    log.write_text(_V1_OOM + "\n")
    found = findings_of(log)
    assert [f.code for f in found[:2]] == ["load.runtime_oom", "load.weights_oom"]
    assert "phase: not placed (no loader frame, start-up milestone or serving line around it)" in found[0].evidence
    assert found[0].fixes[0].command == "--max-num-seqs 128"


def test_a_shard_larger_than_the_gpu_is_the_weights(tmp_path) -> None:
    """The same line with the served model named: Llama-3.1-70B's bf16 shard (131.4 GiB at TP 1) exceeds
    the 7.75 GiB GPU, positive evidence for the weights, and the split that fits is computed."""
    log = tmp_path / "core.log"
    log.write_text("vllm serve meta-llama/Llama-3.1-70B-Instruct\n" + _V1_OOM + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.weights_oom"
    assert any("its 131.4 GiB weight shard (meta-llama/Llama-3.1-70B-Instruct, TP 1) and a CUDA context exceed the 7.75 GiB GPU" in line
               for line in top.evidence), top.evidence


# --- /dev/shm and host RAM, as the engines and people word them ----------------------------------------------------

@pytest.mark.parametrize(("line", "code"), [
    # vllm-project/vllm issues (Ray workers in a docker container, TP 2): Ray's logging.cc installs absl's failure
    # signal handler, which names the signal: SIGBUS is a write past what the container's /dev/shm backs
    ("(RayWorker pid=4711) *** SIGBUS received at time=1692322557 on cpu 5 ***", "load.shm_insufficient"),
    # vLLM V1's API server reports its engine core's exit code (v1/engine/utils.py): -7 is SIGBUS, -9 SIGKILL
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': -7}",
     "load.shm_insufficient"),
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': -9}", "load.host_oom"),
    # NVIDIA/nccl#342: NCCL 2.7 (include/shm.h) names the segment without its /dev/shm/ directory
    ("include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-250a7cc850ba9298-0-1-3 (size 9637888)",
     "load.shm_insufficient"),
    # tenstorrent/vllm#161: a server killed by the host for its RAM, not a CUDA OOM
    ("If we try to run 4 concurrent Llama-70B servers on a single Galaxy the 4th server will be killed by the host due to OOM.",
     "load.host_oom"),
    # vllm-project/vllm#3895 and #4786 (titles): the host's memory, in words
    ("[Bug]: killed due to high memory usage", "load.host_oom"),
    ("[Bug]: RAM OOM Error Loading 480GB MoE Model Despite Fix in PR #1395", "load.host_oom"),
])
def test_shm_and_host_memory_wordings(tmp_path, line: str, code: str) -> None:
    log = tmp_path / "case.log"
    log.write_text(line + "\n")
    found = findings_of(log)
    assert found[0].code == code, [f.code for f in found]
    if code == "load.shm_insufficient":  # Docker's fix: the host's IPC namespace, whose /dev/shm is not capped at 64 MB
        assert found[0].fixes[0].command == "--ipc=host"


def test_a_gpu_oom_that_killed_a_worker_stays_the_gpu(tmp_path) -> None:
    """"killed due to CUDA OOM" names the GPU's memory: the host's wording must not take it."""
    log = tmp_path / "case.log"
    log.write_text("the worker was killed due to CUDA OOM\n")
    assert findings_of(log)[0].code == "load.runtime_oom"


# --- the KV cache sized around the OOM ------------------------------------------------------------------------------

# a TensorRT-LLM server's start-up as a public deployment guide quotes it (its KV cache holds 5248 tokens)
_TRT_KV = ["[TensorRT-LLM][INFO] Memory usage when calculating max tokens in paged kv cache: total: 22.18 GiB, available: 1.42 GiB",
           "[TensorRT-LLM][INFO] Number of blocks in KV cache primary pool: 82",
           "[TensorRT-LLM][WARNING] maxAttentionWindow and maxSequenceLen are too large for at least one sequence to fit in kvCache. "
           "they are reduced to 5185"]


def test_trtllm_cutting_the_sequence_to_its_kv_cache_is_kv_insufficient(tmp_path) -> None:
    """trtGptModelInflightBatching.cpp warns and serves on with max_seq_len cut to what one sequence's
    KV blocks hold: the build's length needs more KV cache than fits, and the fix is that number."""
    log = tmp_path / "trt.log"
    log.write_text("\n".join(_TRT_KV) + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.kv_cache_insufficient"
    assert "largest context that fits: 5185 tokens (KV cache capacity)" in top.evidence
    assert top.fixes[0].command == "--max_seq_len 5185"


def test_trtllm_oom_while_sizing_its_kv_cache_is_past_the_weights(tmp_path) -> None:
    """TensorRT-LLM prints its KV sizing from the memory the engine left, then allocates: an OOM after
    it is the runtime's (the KV pool), not the engine's weights."""
    log = tmp_path / "trt.log"
    log.write_text(_TRT_KV[0] + "\nRuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory\n")
    found = findings_of(log)
    assert [f.code for f in found] == ["load.runtime_oom"]
    assert "phase: profiling" in found[0].evidence


def test_an_oom_after_the_kv_cache_was_sized_is_past_the_weights(tmp_path) -> None:
    """vLLM sized its KV cache (its capacity message) before the OOM: the weights were in, so the OOM
    names no weights alternative."""
    log = tmp_path / "engine.log"
    log.write_text("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV "
                   "cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
                   + _V1_OOM + "\n")
    codes = [f.code for f in findings_of(log)]
    assert codes[0] == "load.kv_cache_insufficient" and "load.runtime_oom" in codes and "load.weights_oom" not in codes, codes


@pytest.mark.parametrize(("line", "command"), [
    # ggml-org/llama.cpp ggml/src/ggml-alloc.c: the graph allocator reserving the compute buffers (Ollama issues quote it)
    ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 2365587456", "-b 1024 -ub 256"),
    # src/llama.cpp (b4000) and src/llama-context.cpp: the context's compute buffers, after the weights and the KV cache
    ("llama_new_context_with_model: failed to allocate compute buffers", "-b 1024 -ub 256"),
    # a line that names no engine the doctor knows gets the generic runtime fix
    ("llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers", None),
])
def test_llamacpp_compute_buffers_are_a_runtime_oom(tmp_path, line: str, command: str | None) -> None:
    """The compute buffers fail only when the backend cannot allocate them: an OOM past the weights,
    whose fix for llama.cpp is a smaller batch (its defaults -b 2048 -ub 512, halved)."""
    log = tmp_path / "llama.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.runtime_oom", [f.code for f in findings_of(log)]
    assert "phase: profiling" in top.evidence
    if command:
        assert top.fixes[0].command == command


@pytest.mark.parametrize(("line", "occupied"), [
    # a MinerU 2.0 error report in a public GitHub file (find_string id 23273126410): torch lists every process on
    # the GPU (CUDACachingAllocator.cpp reportProcessMemoryInfo); this one is one of them, so the others hold at
    # least the sum less the largest, 44.48 - 14.52 = 29.96 GiB
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 136.00 MiB. GPU 0 has a total capacity of 44.53 GiB "
     "of which 32.62 MiB is free. Process 899595 has 14.52 GiB memory in use. Process 1039101 has 3.03 GiB memory in use. "
     "Process 1603024 has 6.96 GiB memory in use. Process 2007660 has 9.48 GiB memory in use. Process 785200 has 8.47 GiB "
     "memory in use. Process 795316 has 2.02 GiB memory in use. Of the allocated memory 1.50 GiB is allocated by PyTorch, "
     "and 167.00 MiB is reserved by PyTorch but unallocated.", "29.96 GiB of 44.53 GiB is held by other processes"),
    # a TP peer's context beside this rank (corpus d085, sgl-project/sglang): 946 MiB is no other tenant
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 174.00 MiB. GPU 3 has a total capacity of 79.44 GiB "
     "of which 137.00 MiB is free. Process 235237 has 946.00 MiB memory in use. Process 235597 has 78.37 GiB memory in use. "
     "Of the allocated memory 76.04 GiB is allocated by PyTorch, and 1.35 GiB is reserved by PyTorch but unallocated.", ""),
])
def test_other_processes_torch_lists_in_an_oom(tmp_path, line: str, occupied: str) -> None:
    log = tmp_path / "oom.log"
    log.write_text(line + "\n")
    findings = findings_of(log)
    held = [f for f in findings if f.code == "load.gpu_memory_occupied"]
    if not occupied:
        assert not held, [f.evidence for f in held]
        return
    assert findings[0].code == "load.gpu_memory_occupied" and any(occupied in x for x in findings[0].evidence), findings[0].evidence


def test_rays_worker_exit_type_out_of_memory_is_host_memory(tmp_path) -> None:
    """Ray's memory monitor kills a worker with exit type NODE_OUT_OF_MEMORY (src/ray/protobuf common.proto
    WorkerExitType; core_worker_shutdown_executor.cc names it); the sentence is corpus i407's (NVIDIA forum)."""
    assert_rank_one(tmp_path, "ray-node-oom", [
        "After a fully successful warmup the head sits at ~96 percent RAM, which is normal on unified memory. Ray's 95 "
        "percent memory monitor then false-kills the rank-0 worker (NODE_OUT_OF_MEMORY) even though there is no real OOM.",
    ], "load.host_oom", "NODE_OUT_OF_MEMORY", None)
