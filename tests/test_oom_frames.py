"""Runtime vs weights out-of-memory from the traceback's own frames and from what the server did
before, when no start-up line places it. The frames are each engine's call path as its source
names it (doctor/data/oom_frames.jsonl cites loader and runner per engine); the TGI and LMDeploy
lines are verbatim from the issue threads named per case."""

from __future__ import annotations

import pytest

from llm_doctor.logparse import frames
from tests.analysis import assert_rank_one, findings_of

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 488.00 MiB. GPU 0 has a total capacity of 79.21 GiB "
        "of which 425.56 MiB is free.")


def _tb(*frames_: tuple[str, int, str]) -> list[str]:
    return ["Traceback (most recent call last):"] + [f'  File "/usr/local/lib/python3.10/dist-packages/{p}", line {n}, in {fn}'
                                                     for p, n, fn in frames_] + [_OOM]


CASES = [
    # vLLM V1: EngineCoreProc.run_busy_loop -> _process_engine_step -> step -> execute_model (vllm/v1/engine/core.py)
    ("vllm-v1-busy-loop", _tb(("vllm/v1/engine/core.py", 654, "run_busy_loop"), ("vllm/v1/engine/core.py", 679, "_process_engine_step"),
                              ("vllm/v1/engine/core.py", 268, "step"), ("vllm/v1/executor/abstract.py", 87, "execute_model"),
                              ("vllm/v1/worker/gpu_model_runner.py", 1470, "execute_model")),
     "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
    # vLLM V0: Worker.load_model -> ModelRunner.load_model -> get_model -> loader.load_model -> load_weights -> weight_loader
    ("vllm-v0-weight-loader", _tb(("vllm/worker/worker.py", 183, "load_model"), ("vllm/worker/model_runner.py", 1015, "load_model"),
                                  ("vllm/model_executor/model_loader/__init__.py", 19, "get_model"),
                                  ("vllm/model_executor/models/llama.py", 560, "load_weights"),
                                  ("vllm/model_executor/layers/linear.py", 400, "weight_loader")),
     "load.weights_oom", "phase: weights", None),
    # SGLang: a served batch replays a captured graph (CudaGraphRunner.replay): serving, not graph capture
    ("sglang-graph-replay", _tb(("sglang/srt/managers/scheduler.py", 1300, "event_loop_normal"),
                                ("sglang/srt/managers/scheduler.py", 1634, "run_batch"),
                                ("sglang/srt/managers/tp_worker.py", 180, "forward_batch_generation"),
                                ("sglang/srt/model_executor/model_runner.py", 1100, "forward"),
                                ("sglang/srt/model_executor/cuda_graph_runner.py", 540, "replay")),
     "load.runtime_oom", "phase: serving", None),
    # transformers: generate -> _sample -> the model's forward (generation/utils.py)
    ("transformers-generate", _tb(("transformers/generation/utils.py", 2215, "generate"), ("transformers/generation/utils.py", 3206, "_sample"),
                                  ("torch/nn/modules/module.py", 1553, "_wrapped_call_impl")),
     "load.runtime_oom", "phase: serving", None),
    # transformers: from_pretrained -> _load_pretrained_model -> accelerate's set_module_tensor_to_device
    ("transformers-from-pretrained", _tb(("transformers/modeling_utils.py", 4014, "from_pretrained"),
                                         ("transformers/modeling_utils.py", 4502, "_load_pretrained_model"),
                                         ("accelerate/utils/modeling.py", 400, "set_module_tensor_to_device")),
     "load.weights_oom", "phase: weights", None),
    # huggingface/text-generation-inference#653: "Method Prefill encountered an error." then the shard's traceback
    ("tgi-prefill", ["2023-07-19T21:02:09.363221Z ERROR text_generation_launcher: Method Prefill encountered an error.",
                     *_tb(("text_generation_server/cli.py", 67, "serve"), ("text_generation_server/server.py", 169, "serve_inner"),
                          ("grpc_interceptor/server.py", 159, "invoke_intercept_method"),
                          ("text_generation_server/server.py", 151, "Prefill"),
                          ("text_generation_server/models/flash_causal_lm.py", 839, "generate_token"))],
     "load.runtime_oom", "phase: serving", None),
    # InternLM/lmdeploy#1515: the engine's request loop logs the error before its traceback (request.py)
    ("lmdeploy-engine-loop", ["2024-05-08 16:16:10,360 - lmdeploy - ERROR - Engine loop failed with error: CUDA out of memory. Tried "
                              "to allocate 488.00 MiB. GPU 0 has a total capacty of 79.21 GiB of which 425.56 MiB is free.",
                              "Traceback (most recent call last):",
                              '  File "/home/u/miniconda3/envs/v4/lib/python3.10/site-packages/lmdeploy/pytorch/engine/request.py", line 17, '
                              "in _raise_exception_on_finish"],
     "load.runtime_oom", "phase: serving", None),
    # MLX's Metal allocator (mlx/backend/metal/allocator.cpp) under mlx_lm.server's generation thread: the GPU's OOM, while serving
    ("mlx-metal-malloc", ["2026-09-24 03:12:44,101 - ERROR - mlx_lm.server generation thread died: [metal::malloc] Attempting to "
                          "allocate 21474836480 bytes which is greater than the maximum allowed buffer size of 17179869184 bytes."],
     "load.runtime_oom", "phase: serving", None),
    # the CUDA driver API's name for it, as a binding prints it (cudarc's DriverError Debug format), under a generate call
    ("driver-api-oom", ["ERROR generate failed: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")"],
     "load.runtime_oom", "phase: serving", None),
    # the report says what the server was doing before the bare OOM it pastes: requests were being served
    ("report-says-under-load", ["The server starts fine, but it crashes after sending 50 concurrent requests:", _OOM],
     "load.runtime_oom", "phase: serving", None),
    # Ollama's gin access line for an answered POST, then llama.cpp's compute-pool abort: the runner ran out while serving
    ("ollama-served-then-oom", ['[GIN] 2024/06/01 - 12:00:00 | 200 |  5.123456s |       127.0.0.1 | POST     "/api/chat"',
                                "CUDA error: out of memory"], "load.runtime_oom", "phase: serving", None),
    # the server had answered requests (uvicorn's access line) before a bare OOM: it ran out while serving
    ("served-then-oom", ['INFO:     127.0.0.1:53122 - "POST /generate HTTP/1.1" 200 OK', _OOM], "load.runtime_oom", "phase: serving", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_oom_phase_from_frames(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_every_frame_sample_names_its_phase() -> None:
    """Each entry's sample frame (Python, C++ `frame #`) parses to a function the table gives that entry's phase."""
    import json

    for line in frames.PATH.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        assert frames.phase(entry["sample"]) == entry["phase"], entry["sample"]


@pytest.mark.parametrize(("frame", "phase"), [
    ('File "/opt/venv/lib/python3.10/site-packages/torch/optim/optimizer.py", line 80, in step', ""),  # no engine file: no phase
    ("libllama.so(llama_decode+0x1c) [0x7f3a2b]", "serving"),
    ("#3  0x00007f3a2b in llm_load_tensors (ml=...) at src/llama.cpp:7001", "weights"),
    ("/opt/venv/lib/python3.10/site-packages/vllm/engine/llm_engine.py:1386 in step", "serving"),
])
def test_frame_shapes(frame: str, phase: str) -> None:
    assert frames.phase(frame) == phase


_HELD = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of "
         "which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.10 GiB memory in use.")


@pytest.mark.parametrize(("command", "code", "evidence"), [
    # an 8B model's bf16 shard is 15 GiB: a process holding 78 GiB had loaded it and was allocating something else
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 1", "load.runtime_oom", "more than its 15.0 GiB weight shard"),
    # a 70B model's shard (131 GiB) never fit a 79 GiB card: that is positive evidence for the weights
    ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 1", "load.weights_oom",
     "phase: weights (its 131.4 GiB weight shard (meta-llama/Llama-3.1-70B-Instruct, TP 1) and a CUDA context exceed the 79.15 GiB GPU)"),
    # online FP8 loads the bf16 weights first: the quantized shard's size places nothing, so nothing does
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --quantization fp8", "load.runtime_oom", "phase: not placed"),
])
def test_memory_held_against_the_weight_shard(tmp_path, command: str, code: str, evidence: str) -> None:
    """PyTorch's OOM says what the process holds; with the model's size known, holding well over its
    weight shard means the weights had loaded (the profiling run or the KV cache ran out)."""
    log = tmp_path / "engine.log"
    log.write_text(command + "\n" + _HELD + "\n")
    top = findings_of(log)[0]
    assert top.code == code, [f.code for f in findings_of(log)]
    assert any(evidence in line for line in top.evidence), top.evidence


_SGLANG_KV = ["[2025-03-08 12:29:21 TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB",
              "[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=6.09 GB"]


@pytest.mark.parametrize(("lines", "phase", "command"), [
    # SGLang sized its KV pool (memory_pool.py, model_runner.init_memory_pool): CUDA graph capture is next ...
    (["python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct", *_SGLANG_KV], "cuda_graph",
     "--disable-cuda-graph"),
    # ... unless graphs are off, then it was serving
    (["python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disable-cuda-graph", *_SGLANG_KV], "serving",
     None),
    # vLLM V1's engine core finished its start-up (core.py): what ran out next was a served step
    (["(EngineCore_0 pid=1309) INFO 04-27 07:55:18 [core.py:283] init engine (profile, create kv cache, warmup model) took 136.57 seconds"],
     "serving", "--max-num-seqs 128"),
])
def test_start_up_milestones_place_a_bare_oom(tmp_path, lines: list[str], phase: str, command: str | None) -> None:
    log = tmp_path / "engine.log"
    log.write_text("\n".join([*lines, _OOM]) + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.runtime_oom", [f.code for f in findings_of(log)]
    assert f"phase: {phase}" in top.evidence
    if command:
        assert top.fixes[0].command == command
