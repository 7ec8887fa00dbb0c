"""Runtime vs weights out-of-memory when the log has no phase line: the engine's own numbers and
wording place it. Every log here is verbatim lines from a public issue thread (named per case)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command)
CASES = [
    # sgl-project/sglang#5212: memory in PyTorch's private pools means CUDA graphs were captured: past the weights
    ("sglang-oom-private-pools", [
        "python sglang.launch_server --model meta-llama/Llama-4-Scout-17B-16E-Instruct --tp-size 8 --mem-fraction-static=0.8",
        "[2025-04-09 17:19:56 TP5] Scheduler hit an exception: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.43 GiB. GPU 5 has a total capacity of 79.44 GiB of "
        "which 2.64 GiB is free. Process 679812 has 76.79 GiB memory in use. Of the allocated memory 72.76 GiB is allocated "
        "by PyTorch, with 26.38 MiB allocated in private pools (e.g., CUDA Graphs), and 293.55 MiB is reserved by PyTorch "
        "but unallocated.",
    ], "load.runtime_oom", "phase: cuda_graph", "--disable-cuda-graph"),
    # huggingface/text-generation-inference#755: the warm-up prefill, not the weights
    ("tgi-warmup-prefill", [
        'Error: Warmup(Generation("Not enough memory to handle 4096 prefill tokens. You need to decrease '
        '`--max-batch-prefill-tokens`"))',
    ], "load.runtime_oom", "phase: profiling", None),
    # runpod-workers/worker-vllm#40, printed newest first: the KV cache was sized (# GPU blocks) before the OOM
    ("vllm-newest-first-after-kv", [
        "engine.py :190 2024-02-03 03:44:03,976 Error initializing vLLM engine: CUDA out of memory. Tried to allocate "
        "112.00 MiB. GPU 0 has a total capacty of 44.35 GiB of which 53.38 MiB is free. Process 3663367 has 44.28 GiB "
        "memory in use.",
        "INFO 02-03 03:43:48 llm_engine.py:316] # GPU blocks: 7754, # CPU blocks: 2048",
    ], "load.runtime_oom", "phase: cuda_graph", "--enforce-eager"),
    # ggml-org/llama.cpp#5848: the Vulkan allocation after the KV buffers were placed is a compute buffer
    ("llamacpp-vulkan-after-kv", [
        "Vulkan0 KV buffer size =    80.00 MiB",
        "Vulkan1 KV buffer size =    40.00 MiB",
        "ggml_vulkan: Device memory allocation of size 120422400 failed.",
        "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
    ], "load.runtime_oom", "phase: profiling", "-b 1024 -ub 256"),
    # ggml-org/llama.cpp#7885 (Ollama): CUDA_CHECK's abort is the compute pool; weight buffers report "cudaMalloc failed"
    ("ollama-cuda-check-oom", [
        "CUDA error: out of memory",
        'GGML_ASSERT: C:\\a\\ollama\\ollama\\llm\\llama.cpp\\ggml-cuda.cu:100: !"CUDA error"',
    ], "load.runtime_oom", "phase: serving", "OLLAMA_NUM_PARALLEL=1"),
    # NVIDIA/TensorRT-LLM#260: the engine (its weights) was deserialized before the execution context
    ("trtllm-after-execution-context", [
        "[TensorRT-LLM][INFO] [MemUsageChange] TensorRT-managed allocation in IExecutionContext creation: CPU +0, GPU +0, "
        "now: CPU 0, GPU 12569 (MiB)",
        "E1103 02:59:01.152656 81041 backend_model.cc:553] ERROR: Failed to create instance: unexpected error when creating "
        "modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out "
        "of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)",
    ], "load.runtime_oom", "phase: profiling", None),
    # ggml-cuda.cu's allocator line is the same for every buffer; llama.cpp's load_tensors prints "model buffer size"
    # once every weight buffer is allocated (src/llama-model.cpp): what fails after it is the KV cache or the compute
    # buffers, not the weights (lines from ollama/ollama#8144, corpus h078, and ggml-org/llama.cpp's allocator)
    ("llamacpp-alloc-after-model-buffers", [
        "llm_load_tensors: offloaded 17/81 layers to GPU",
        "llm_load_tensors:        CUDA0 model buffer size =  8585.63 MiB",
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1200.00 MiB on device 0: cudaMalloc failed: out of memory",
    ], "load.runtime_oom", "phase: profiling", "-b 1024 -ub 256"),
    # vllm-project/vllm#16712 (corpus i009): a Helm values list whose comments explain the flags ("Number of
    # concurrent requests") is configuration, not the server at work: nothing places the OOM, so the weights stay
    # the alternative instead of "while serving"
    ("vllm-config-comment-not-serving", [
        'extraArgs: [',
        '  # "--max_num_seqs=1",  # # Number of concurrent requests. reduce kv cache size.',
        '  "--gpu-memory-utilization=0.99", ',
        ' ]',
        "VllmWorker rank=1 pid=254) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 1 has a total "
        "capacity of 93.02 GiB of which 1.18 GiB is free. Process 2752205 has 91.82 GiB memory in use. Of the allocated "
        "memory 90.63 GiB is allocated by PyTorch, and 120.54 MiB is reserved by PyTorch but unallocated.",
    ], "load.runtime_oom", "phase: not placed", None),
    # the allocator line alone (corpus w092's first line): llama.cpp allocates the weights first, and a bare ggml
    # failure names llama.cpp's fixes, not vLLM's --quantization
    ("llamacpp-bare-alloc", [
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 35533.34 MiB on device 0: cudaMalloc failed: out of memory",
    ], "load.weights_oom", "llama.cpp allocates the weight buffers first", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_oom_phase(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_a_bare_oom_names_both_and_leads_with_runtime(tmp_path) -> None:
    """A bare PyTorch OOM with no milestone, frame or allocation words (vllm-project/vllm#11560's wording)
    shows nothing of the weights loading: both codes, runtime first, each saying it is not placed."""
    log = tmp_path / "bare.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 462.00 MiB. GPU 0 has a total capacity "
                   "of 79.15 GiB of which 370.62 MiB is free.\n")
    found = findings_of(log)
    assert [f.code for f in found[:2]] == ["load.runtime_oom", "load.weights_oom"]
    assert any(line.startswith("phase: not placed (the weights, if the model alone") for line in found[1].evidence), found[1].evidence


def test_vllm_v1_busy_loop_frame_is_serving() -> None:
    """vllm-ascend#4082: the engine core's traceback runs through run_busy_loop (V1's serving loop),
    so the worker's OOM happened under load, not while loading the weights."""
    log = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "chains" / "vllm-ascend-v1-worker-failed-npu-oom.log"
    top = findings_of(log)[0]
    assert top.code == "load.runtime_oom"
    assert "phase: serving" in top.evidence
    assert [f.command for f in top.fixes][:2] == ["--max-num-seqs 128", "--max-num-batched-tokens 4096"]


# the line each engine prints when a start-up step ends, in its source's format (vLLM V1
# gpu_model_runner.py, V0 model_runner.py, SGLang model_runner.py, V0 llm_engine.py), before a bare OOM
_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.59 GiB. GPU 0 has a total capacity of 31.73 GiB "
        "of which 3.11 GiB is free. Including non-PyTorch memory, this process has 28.62 GiB memory in use.")


@pytest.mark.parametrize(("step_line", "phase", "command"), [
    ("INFO 05-01 10:00:00 [gpu_model_runner.py:1200] Model loading took 14.9951 GiB and 12.3 seconds", "profiling",
     "--max-num-seqs 128"),
    ("INFO 05-01 10:00:00 model_runner.py:1000] Loading model weights took 14.9951 GB", "profiling", "--max-num-seqs 128"),
    ("[2025-01-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB, "
     "mem usage=14.99 GB.", "profiling", "--max-num-seqs 128"),
    ("INFO 05-01 10:00:00 model_runner.py:1000] Loading model weights took 14.9951 GB\n"
     "INFO 05-01 10:00:09 llm_engine.py:316] # GPU blocks: 7754, # CPU blocks: 2048", "cuda_graph", "--enforce-eager"),
])
def test_the_step_an_engine_finished_places_the_oom_after_it(tmp_path, step_line: str, phase: str, command: str) -> None:
    """Weights -> profiling run -> KV sizing -> CUDA graphs: an OOM after the engine reported the
    weights loaded is not a weights OOM, and one after the KV cache was sized is the graph capture."""
    log = tmp_path / "engine.log"
    log.write_text(step_line + "\n" + _OOM + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.runtime_oom"
    assert f"phase: {phase}" in top.evidence
    assert top.fixes[0].command == command


_KV_TOO_SMALL = ("ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is "
                 "needed, which is larger than the available KV cache memory (4.21 GiB). Based on the available memory, the "
                 "estimated maximum model length is 34480.")
_NO_KV = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."


@pytest.mark.parametrize(("lines", "code", "command"), [
    ([_OOM, _KV_TOO_SMALL], "load.kv_cache_insufficient", "--max-model-len 34480"),
    ([_KV_TOO_SMALL, _OOM], "load.kv_cache_insufficient", "--max-model-len 34480"),
    (["WARNING 01-01 [gpu_worker.py:200] CUDA out of memory occurred when warming up sampler with 256 dummy requests.", _NO_KV],
     "load.no_kv_cache_memory", None),
])
def test_a_kv_sizing_failure_ends_the_start_up_an_oom_beside_it_did_not(tmp_path, lines: list[str], code: str, command) -> None:
    """KV cache sizing is the last start-up step before graphs and serving: when it failed, the
    start-up never served, so the out-of-memory beside it is not the cause (nor the weights')."""
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    findings = findings_of(log)
    assert findings[0].code == code, [f.code for f in findings]
    if lines[0] != _KV_TOO_SMALL:  # an OOM the engine went on from to size its KV cache was not the weights'
        assert "load.weights_oom" not in [f.code for f in findings]
    assert findings[0].fixes[0].command == command


def test_the_sampler_warm_up_is_the_profiling_run(tmp_path) -> None:
    """vLLM's "CUDA out of memory occurred when warming up sampler" (gpu_worker.py) comes from the
    profiling run's dummy sampler pass, not from serving."""
    log = tmp_path / "engine.log"
    log.write_text("WARNING 01-01 [gpu_worker.py:200] CUDA out of memory occurred when warming up sampler with 256 dummy "
                   "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n")
    top = findings_of(log)[0]
    assert top.code == "load.runtime_oom"
    assert "phase: profiling" in top.evidence


def test_a_bare_ggml_failure_gets_llamacpp_fixes(tmp_path) -> None:
    """A ggml allocator line names no engine, but only llama.cpp and the servers built on it print it:
    their fixes (-ngl), never vLLM's --quantization (corpus w092)."""
    log = tmp_path / "ollama.log"
    log.write_text("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 35533.34 MiB on device 0: cudaMalloc failed: "
                   "out of memory\n")
    top = findings_of(log)[0]
    assert top.code == "load.weights_oom"
    assert [f.command for f in top.fixes] == [None, None], [(f.summary, f.command) for f in top.fixes]
    assert "-ngl" in top.fixes[0].summary


# mistral.rs's and FreeToken's own milestones, in their sources' words and their loggers' formats (tracing_subscriber:
# time, level, target): mistral.rs pipeline/normal.rs "Loading model `%s` on %s.", mistralrs-server "Model loaded.",
# mistralrs-core utils/mod.rs handle_pipeline_forward_error! "{stage} - Model failed with error: {e:?}" (the engine
# loop's "step"); FreeToken models/*/weight.py desc="Loading weights", server/api_server.py "API server is ready to
# serve on %s:%d"
_BARE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.59 GiB. GPU 0 has a total capacity of 31.73 GiB of which 3.11 GiB is free."


@pytest.mark.parametrize(("lines", "code", "phase", "command"), [
    (["2025-01-12T10:38:01.102345Z  INFO mistralrs_server: Model loaded.",
      '2025-01-12T10:40:23.640332Z ERROR mistralrs_core::engine: step - Model failed with error: '
      'Cuda(Cuda(DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")))'], "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
    (['2025-01-12T10:40:23.640332Z ERROR mistralrs_core::engine: prompt step - Model failed with error: '
      'Cuda(Cuda(DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")))'], "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
    (["2025-01-12T10:38:01.102345Z  INFO mistralrs_server: Model loaded.", _BARE], "load.runtime_oom", "phase: profiling",
     "--max-num-seqs 128"),
    (["2025-01-12T10:37:01.102345Z  INFO mistralrs_core::pipeline::normal: Loading model `mistralai/Mistral-7B-Instruct-v0.1` "
      "on cuda[0].", 'Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")'], "load.weights_oom",
     "phase: weights (weights), tensor_parallel_size 1", "--tensor-parallel-size 2"),
    (["INFO:     API server is ready to serve on 0.0.0.0:8000", _BARE], "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
    (["Loading weights (FTW): 100%|##########| 17.2G/17.2G", _BARE], "load.weights_oom",
     "phase: weights (weights), tensor_parallel_size 1", "--tensor-parallel-size 2"),
])
def test_other_engines_milestones_place_the_oom(tmp_path, lines: list[str], code: str, phase: str, command: str) -> None:
    """An engine the tracker knew no milestone of left its OOM unplaced (runtime by default, the weights beside it):
    its own load and serve lines place it."""
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    found = findings_of(log)
    assert found[0].code == code, [f.code for f in found]
    assert phase in found[0].evidence
    assert found[0].fixes[0].command == command
    assert len([f for f in found if f.code in ("load.runtime_oom", "load.weights_oom")]) == 1
