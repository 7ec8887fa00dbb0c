"""LMDeploy's, TensorRT-LLM's, TGI's and the independent servers' own failure messages, at rank 1
with the line they rest on and a first fix in the engine's own flags. Each message is formatted the
way its source prints it (owner/repo@ref:path beside it, the same wording the catalogue entry cites);
the lines around it are the engine's own start-up lines that tell which engine wrote the log."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

LMDEPLOY = "2024-06-01 10:00:00,000 - lmdeploy - INFO - async_engine.py:250 - input backend=turbomind"
TGI = '2024-06-10T10:00:00.000000Z  INFO text_generation_launcher: Args { model_id: "mistralai/Mistral-7B-Instruct-v0.2" }'
TRTLLM = "[TensorRT-LLM][INFO] Loaded engine size: 12852 MiB"
OLLAMA = 'time=2025-01-10T10:00:00.000Z level=INFO source=images.go:757 msg="total blobs: 5"'

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # InternLM/lmdeploy@v0.8.0:src/turbomind/models/llama/LlamaBatch.cc: the session is cut to what the blocks hold
    ("lmdeploy-session-len-truncated", [LMDEPLOY,
        "[TM][WARNING] No enough blocks for `session_len` (32768), `session_len` truncated to 12416."],
     "load.kv_cache_insufficient", "`session_len` truncated to 12416", "--session-len 12416"),
    # InternLM/lmdeploy@v0.16.0:lmdeploy/pytorch/models/gpt_oss.py
    ("lmdeploy-heads-not-divisible-by-tp", [LMDEPLOY, "AssertionError: num_attention_heads=64 should be divisible by TP=3"],
     "load.tp_invalid", "num_attention_heads=64 should be divisible by TP=3", "--tp 2"),
    # InternLM/lmdeploy@v0.9.2:src/turbomind/kernels/attention/attention.cu
    ("lmdeploy-turbomind-bf16-on-sm70", [LMDEPLOY,
        "[TM][ERROR] CUDA architecture sm70 does not support data type 'bfloat16'. Please specify dtype 'float16'"],
     "load.dtype_unsupported", "sm70 does not support data type 'bfloat16'", "--dtype float16"),
    # InternLM/lmdeploy@v0.16.0:lmdeploy/pytorch/paging/block_manager/base_block_manager.py (no numbers to compute from)
    ("lmdeploy-no-free-kv-blocks", [LMDEPLOY, "MemoryError: No enough free memory blocks."],
     "load.kv_cache_insufficient", "No enough free memory blocks", None),
    # InternLM/lmdeploy@v0.16.0:lmdeploy/serve/core/async_engine.py: a prompt above --session-len
    ("lmdeploy-prompt-above-session-len", [LMDEPLOY,
        "ValueError: Input length (40000) must be smaller than the model context length (32768)."],
     "load.config_invalid", "Input length (40000)", "--session-len 40001"),
    # huggingface/text-generation-inference@v3.3.7:server/.../flash_llama_modeling.py
    ("tgi-kv-heads-not-divisible-by-shards", [TGI,
        "ValueError: `num_key_value_heads` must be divisible by `num_shards` (got `num_key_value_heads`: 40 and `num_shards`: 3)",
        "2024-06-10T10:00:05.100000Z ERROR text_generation_launcher: Shard 0 failed to start", "Error: ShardCannotStart"],
     "load.tp_invalid", "`num_shards`: 3", "--num-shard 2"),
    # huggingface/text-generation-inference@v3.3.7:launcher/src/main.rs: a strict bound, so one below it
    ("tgi-max-input-not-below-max-total", [TGI,
        'Error: ArgumentValidation("`max_input_tokens`(4096) must be < `max_total_tokens`(4096)")'],
     "load.config_invalid", "`max_input_tokens`(4096)", "--max-input-tokens 4095"),
    # huggingface/text-generation-inference@v3.3.7:launcher/src/main.rs: the weights alone exceed the memory share
    ("tgi-not-enough-vram", [TGI,
        "2024-12-10T10:00:00.100000Z  WARN text_generation_launcher: Not enough VRAM to run the model: Available: 20.19GB - Model 28.62GB.",
        "2024-12-10T10:00:30.000000Z ERROR text_generation_launcher: Shard 0 failed to start", "Error: ShardCannotStart"],
     "load.weights_oom", "Not enough VRAM to run the model", "--num-shard 2"),
    # NVIDIA/TensorRT-LLM@3c44cb97:cpp/tensorrt_llm/runtime/worldConfig.cpp
    ("trtllm-mpi-world-not-tp-times-pp", [TRTLLM,
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:97)"],
     "load.tp_invalid", "mpiSize == tp * pp", None),
    # NVIDIA/TensorRT-LLM@v0.12.0:cpp/tensorrt_llm/runtime/tllmRuntime.cpp (TensorRT's own words)
    ("trtllm-plan-format-version", [TRTLLM,
        "[TensorRT-LLM][ERROR] 6: The engine plan file is not compatible with this version of TensorRT, expecting format version 239 got 236, please rebuild."],
     "load.cuda_mismatch", "expecting format version 239 got 236", None),
    # NVIDIA/TensorRT-LLM@v1.0.0:tensorrt_llm/llmapi/llm.py, the 400 body trtllm-serve answers (no engine line in it)
    ("trtllm-prompt-above-max-num-tokens", [
        '{"object":"error","message":"The sum of prompt length (38049.0), query length (0) should not exceed max_num_tokens (32768)",'
        '"type":"BadRequestError","param":null,"code":400}'],
     "load.config_invalid", "should not exceed max_num_tokens (32768)", "--max_num_tokens 38049"),
    # xorbitsai/inference@v1.5.0:xinference/core/worker.py: every GPU already holds a model
    ("xinference-no-gpu-slot", ["RuntimeError: No available slot found for the model"],
     "load.gpu_memory_occupied", "No available slot found for the model", None),
    # mlc-ai/mlc-llm@v0.18.1:cpp/serve/config.cc
    # InternLM/lmdeploy@v0.8.0:lmdeploy/pytorch/models/patch.py: no PyTorch-engine implementation of the architecture
    ("lmdeploy-no-rewrite-for-architecture", [LMDEPLOY, "RuntimeError: Can not found rewrite for architectures: ['DeepseekV3ForCausalLM']"],
     "load.engine_outdated", "Can not found rewrite for architectures", "pip install -U lmdeploy transformers"),
    # InternLM/lmdeploy@v0.16.0:lmdeploy/turbomind/checkpoint.py
    ("lmdeploy-no-weight-files", [LMDEPLOY, "RuntimeError: failed to locate weight files under '/models/Qwen2.5-7B-Instruct'"],
     "load.model_files", "failed to locate weight files under", None),
    # InternLM/lmdeploy@v0.4.2:lmdeploy/pytorch/check_env/__init__.py: the Triton kernels do not run here
    ("lmdeploy-triton-check-failed", [LMDEPLOY, "2024-06-01 10:00:01,000 - lmdeploy - ERROR - <Triton> check failed!",
                                      "Please ensure it has been installed correctly."],
     "load.cuda_mismatch", "<Triton> check failed!", None),
    # the engine loop's OOM (lmdeploy/pytorch/engine/request.py) is while serving, and the launch command's --tp is read
    ("lmdeploy-engine-loop-oom", [
        "CUDA_VISIBLE_DEVICES=0,1,2,3 lmdeploy serve api_server /models/Mixtral-8x22B --tp 4 --cache-max-entry-count 0.65",
        "2024-05-08 16:16:10,360 - lmdeploy - ERROR - Engine loop failed with error: CUDA out of memory. Tried to allocate "
        "488.00 MiB. GPU 0 has a total capacty of 79.21 GiB of which 425.56 MiB is free."],
     "load.runtime_oom", "phase: serving", None),
    # InternLM/lmdeploy@v0.6.0:lmdeploy/pytorch/engine/engine_instance.py: the PyTorch engine's input limit is --session-len
    ("lmdeploy-input-above-max-input-len", [LMDEPLOY, "RuntimeError: Expect input length<=32768 but get 40000"],
     "load.config_invalid", "Expect input length<=32768", "--session-len 40001"),
    # huggingface/text-generation-inference@v2.4.1:server/text_generation_server/models/__init__.py
    ("tgi-sliding-window-vs-max-input", [TGI,
        "ValueError: The backend cuda does not support sliding window attention that is used by the model type mistral. To use this "
        "model nonetheless with the cuda backend, please launch TGI with the argument `--max-input-tokens` smaller than "
        "sliding_window=4096 (got here max_input_tokens=8191).", "Error: ShardCannotStart"],
     "load.config_invalid", "sliding_window=4096", "--max-input-tokens 4095"),
    # huggingface/text-generation-inference@v2.4.1:server/text_generation_server/layers/marlin/gptq.py: Llama-2-7B's 11008
    # MLP features over 8 shards are 1376 a shard, not whole 128-groups
    ("tgi-gptq-shard-cuts-a-group", ["text-generation-launcher --model-id TheBloke/Llama-2-7B-GPTQ --quantize gptq --num-shard 8",
        "ValueError: Number of input features (1376) not divisible by group size (128)", "Error: ShardCannotStart"],
     "load.tp_invalid", "Number of input features (1376)", "--num-shard 4"),
    # huggingface/text-generation-inference@v2.4.1:server/text_generation_server/utils/quantization.py
    ("tgi-quantize-vs-checkpoint", [TGI, "ValueError: Quantize is set to `awq` but received a `GPTQConfig` config.", "Error: ShardCannotStart"],
     "load.quantization_unsupported", "Quantize is set to `awq`", None),
    # NVIDIA/TensorRT-LLM@0165bd7a:cpp/tensorrt_llm/runtime/tllmRuntime.cpp: an engine input this runtime does not feed
    # (built by another TensorRT-LLM) is a rebuild, not llama.cpp's missing GGUF tensor
    ("trtllm-engine-input-not-fed", [TRTLLM,
        "[TensorRT-LLM][ERROR] Encountered an error in forward function: [TensorRT-LLM][ERROR] Assertion failed: Input tensor "
        "'host_kv_cache_block_pointers_0' not found; expected shape: (1, -1, 2, -1) (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:149)"],
     "load.cuda_mismatch", "host_kv_cache_block_pointers_0", None),
    # NVIDIA/TensorRT-LLM@01bffee1:tensorrt_llm/_torch/models/modeling_auto.py
    ("trtllm-unknown-architecture", [TRTLLM, "ValueError: Unknown architecture for AutoModelForCausalLM: MiniMaxM2ForCausalLM"],
     "load.engine_outdated", "MiniMaxM2ForCausalLM", "pip install -U tensorrt_llm"),
    # ollama/ollama@v0.3.14:llm/server.go: the scheduler's estimate of the part that stays in RAM
    ("ollama-model-needs-more-system-memory", [OLLAMA, "Error: model requires more system memory (20.3 GiB) than is available (14.2 GiB)"],
     "load.host_oom", "model requires more system memory (20.3 GiB)", None),
    # ollama/ollama@v0.12.6:llama/llama.go, as the CLI prints the server's 500
    ("ollama-unable-to-load-model", [OLLAMA, "Error: 500 Internal Server Error: unable to load model: /root/.ollama/models/blobs/sha256-3a4a6b0c"],
     "load.engine_outdated", "unable to load model", "curl -fsSL https://ollama.com/install.sh | sh"),
    # ollama/ollama@v0.12.6:llm/server.go: the runner's error quoted in the answer to a request is a serving-time OOM
    ("ollama-error-while-running-the-model", [OLLAMA, "Error: an error was encountered while running the model: CUDA error: out of memory"],
     "load.runtime_oom", "phase: serving", "OLLAMA_NUM_PARALLEL=1"),
    # ollama/ollama@v0.33.0-rc2:llm/llama_server.go (the llama-server engine): SIGKILL
    ("ollama-llama-server-killed", [OLLAMA, "Error: 500 Internal Server Error: llama-server process has terminated: signal: killed"],
     "load.host_oom", "signal: killed", None),
    # Ascend/pytorch@v6.0.0-pytorch2.1.0:torch_npu/csrc/core/npu/NPUCachingAllocator.cpp (vLLM-Ascend, MindIE): read like CUDA's
    ("ascend-npu-out-of-memory", [
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; 57.59 GiB already allocated; "
        "57.59 GiB current active; 1.21 GiB free; 58.32 GiB reserved in total by PyTorch)"],
     "load.runtime_oom", "tried to allocate 2.0 GiB; GPU total 60.97 GiB; free 1.21 GiB", None),  # unplaced: runtime leads
    # vllm-project/vllm-ascend@v0.25.1rc1:vllm_ascend/utils.py
    ("vllm-ascend-no-npu", ["ValueError: No NPU devices found or specified in ASCEND_RT_VISIBLE_DEVICES."],
     "load.gpu_not_visible", "ASCEND_RT_VISIBLE_DEVICES", None),
    # triton-inference-server/core@73aad7c3:src/model_repository_manager/model_lifecycle.cc: the backend's error inside
    # Triton's load failure is the cause, not the wrapper nor "failed to load all models"; the cudaMallocAsync is
    # TensorRT-LLM's BufferManager (runtime/tllmBuffers.h), which allocates the execution context, runtime buffers
    # and KV cache after TensorRT deserialized the engine's weights (runtime/tllmRuntime.cpp): not the weights
    ("triton-load-failure-quotes-the-oom", [TRTLLM,
        "E1201 10:00:00.000000 1 model_lifecycle.cc:654] failed to load 'tensorrt_llm' version 1: Internal: unexpected error when "
        "creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory",
        "error: creating server: Internal - failed to load all models"],
     "load.runtime_oom", "cudaMallocAsync", None),
    # triton-inference-server/core@73aad7c3:src/model_repository_manager/model_repository_manager.cc
    ("triton-no-model-version", [
        "E1201 10:00:00.000000 1 model_repository_manager.cc:1234] Poll failed for model directory 'llama': failed to load 'llama', "
        "no version is available"],
     "load.model_files", "no version is available", None),
    # xorbitsai/inference@v3.2.1:xinference/core/worker.py
    ("xinference-gpu-index-occupied", [
        "RuntimeError: GPU index 0 has been occupied with models: ['qwen2.5-instruct'], and multi-replica-per-GPU is disabled."],
     "load.gpu_memory_occupied", "GPU index 0 has been occupied", None),
    # theroyallab/tabbyAPI@e632af41:common/model.py
    ("tabbyapi-exl2-no-longer-supported", [
        "ValueError: Models quantized with 'exl2' require the exllamav2 backend, which is no longer supported. Please use an exl3 or "
        "unquantized model."],
     "load.quantization_unsupported", "Models quantized with 'exl2'", None),
    # coreylowman/cudarc@v0.18.1:src/driver/result.rs: the Rust servers' (candle, mistral.rs) CUDA driver errors
    ("cudarc-ptx-newer-than-driver", [
        "thread 'main' panicked at src/main.rs:40:10: called `Result::unwrap()` on an `Err` value: "
        "DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, \"the provided PTX was compiled with an unsupported toolchain.\")"],
     "load.cuda_mismatch", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", None),
    # mostlygeek/llama-swap@v150:proxy/process.go: the proxy's health-check deadline ran out while the model loaded
    ("llama-swap-health-check-timed-out", ["[qwen3] unable to start process: health check timed out after 120s"],
     "load.startup_timeout", "health check timed out after 120s", None),
    # NVIDIA/TensorRT-LLM@00dbe288:cpp/tensorrt_llm/kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp (TLLM_CHECK_WITH_INFO
    # on the SM; the line as NVIDIA/TensorRT-LLM#1515 shows it): a Turing GPU below the fused kernels, not a model
    # architecture the engine is too old for
    ("trtllm-fmha-unsupported-architecture", [TRTLLM,
        "Assertion failed: Unsupported architecture (/tensorrt_llm/cpp/tensorrt_llm/kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp:89)"],
     "load.cuda_mismatch", "Unsupported architecture", None),
    # NVIDIA/TensorRT-LLM@05316d33:cpp/tensorrt_llm/kernels/cutlass_kernels/cutlass_preprocessors.cpp (Tlntin/Qwen-TensorRT-LLM#15)
    ("trtllm-cutlass-unsupported-arch", [
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Unsupported Arch (/opt/tritonserver/TensorRT-LLM/cpp/tensorrt_llm/kernels/"
        "cutlass_kernels/cutlass_preprocessors.cpp:147)"],
     "load.cuda_mismatch", "Unsupported Arch", None),
    # InternLM/lmdeploy@v0.4.2:lmdeploy/pytorch/check_env/__init__.py: v0.4-v0.6's word for the Triton self-test (InternLM/lmdeploy#2109)
    ("lmdeploy-triton-test-failed", [LMDEPLOY, "2024-07-23 14:18:00,452 - lmdeploy - ERROR - <Triton> test failed!",
                                     "Please ensure it has been installed correctly."],
     "load.cuda_mismatch", "<Triton> test failed!", None),
    # InternLM/lmdeploy@v0.6.1:src/turbomind/python/bind.cpp: the TurboMind build has no float32 kernels (InternLM/lmdeploy#3065)
    ("lmdeploy-turbomind-not-built-with-fp32", [LMDEPLOY, "RuntimeError: Error: turbomind has not been built with fp32 support."],
     "load.dtype_unsupported", "has not been built with fp32 support", "--dtype float16"),
    # ollama/ollama llm/server.go, as the CLI prints the server's 500 (ollama/ollama#11710, v0.11.2): the runner's own
    # error names no known cause, and the 500 is only how the CLI got it: the engine's unrecognised failure
    ("ollama-runner-terminated-unknown-cause", ["Error: 500 Internal Server Error: llama runner process has terminated: error:fault"],
     "load.unrecognized_failure", "error:fault", None),
    # ollama/ollama@v0.21.2:llm/server.go initModel: the load request to the runner failed, its cause is in the server log
    ("ollama-model-failed-to-load", ["Error: 500 Internal Server Error: model failed to load, this may be due to resource "
                                     "limitations or an internal error, check ollama server logs for details"],
     "load.unrecognized_failure", "model failed to load", None),
    # InternLM/lmdeploy@v0.16.0:src/turbomind/engine/scheduler.cc (TM_LOG_INFO, logger.cc's prefix): the scheduler's KV blocks ran
    # out for this pass, later requests wait: KV-cache pressure, not a CUDA out-of-memory
    ("lmdeploy-turbomind-scheduler-out-of-blocks", [LMDEPLOY,
        "[TM][INFO][0301.10:00:00.123456][scheduler.cc:1186] out of memory at 3/8",
        "[TM][INFO][0301.10:00:01.654321][scheduler.cc:1186] out of memory at 5/8"],
     "perf.kv_cache_pressure", "out of memory at 3/8", "--quant-policy 8"),
    # ray-project/ray python/ray/serve/_private/deployment_state.py (the line as RayLLM printed it, ray-project/ray-llm#143):
    # a replica's GPU share is on no node
    ("ray-serve-replica-not-scheduled", [
        "deployment_state.py:2152 - Deployment 'VLLMDeployment:amazon--LightGPT' in application 'ray-llm' 1 replicas that have taken "
        "more than 30s to be scheduled. This may be due to waiting for the cluster to auto-scale or for a runtime environment to be "
        "installed. Resources required for each replica: [{\"CPU\": 1.0, \"accelerator_type_a10\": 0.01, \"GPU\": 0.1}], total "
        "resources available: {}. Use `ray status` for more details."],
     "cluster.placement_infeasible", "to be scheduled", "ray status"),
    # InternLM/lmdeploy@v0.6.0:lmdeploy/serve/async_engine.py: steps + prompt + max_new_tokens above --session-len
    ("lmdeploy-run-out-of-tokens", [LMDEPLOY, "2024-09-01 10:00:05,000 - lmdeploy - ERROR - run out of tokens. session_id=3."],
     "load.config_invalid", "run out of tokens", None),
    # InternLM/lmdeploy@v0.8.0:lmdeploy/serve/openai/api_server.py (its spelling): tools sent to a server without a tool parser
    ("lmdeploy-no-tool-call-parser", [LMDEPLOY, "2025-03-01 10:00:00,000 - lmdeploy - ERROR - api_server.py:529 - Please lanuch the "
                                      "api_server with --tool-call-parser if you want to use tool."],
     "load.config_invalid", "--tool-call-parser", None),
    # turboderp-org/exllamav2@v0.3.2:exllamav2/model.py: past + new tokens above the cache (TabbyAPI's cache_size / max_seq_len)
    ("exllamav2-sequence-above-cache", ["AssertionError: Total sequence length exceeds cache size in model.forward"],
     "load.config_invalid", "exceeds cache size", None),
    # kvcache-ai/ktransformers@v0.2.4:ktransformers/server/backend/interfaces/ktransformers.py: the prompt above --cache_lens
    ("ktransformers-prompt-above-cache-lens", ["input_ids_length 9000 > cache_lens 8192"],
     "load.config_invalid", "cache_lens 8192", "--cache_lens 9216"),
    # theroyallab/tabbyAPI@e632af41:common/auth.py, the 401 body a client prints
    ("tabbyapi-no-key", ['{"detail":"The provided authentication key is missing."}'],
     "access.key_missing", "authentication key is missing", None),
    # Ascend/pytorch@0037c399:torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp NPU_CHECK_ERROR(c10_npu::SetDevice(device_id_)),
    # the line as vLLM-Ascend's Ray worker printed it: the NPU is not in the container, not NVIDIA's --gpus
    ("torch-npu-set-device-failed", [
        "(RayWorkerWrapper pid=120292) ERROR 02-26 15:54:06 worker_base.py:574] RuntimeError: Initialize:torch_npu/csrc/core/npu/"
        "sys_ctrl/npu_sys_ctrl.cpp:226 NPU function error: c10_npu::SetDevice(device_id_), error code is 107001"],
     "load.gpu_not_visible", "error code is 107001", None),
    ("mlc-insufficient-gpu-memory", [
        "TVMError: Insufficient GPU memory error: The available single GPU memory is 6553.600 MB, which is less than the sum "
        "of model weight size (7276.000 MB) and temporary buffer size (1213.000 MB)."],
     "load.weights_oom", "Insufficient GPU memory error", None),
]


def test_lmdeploy_session_overrun_names_its_session_len(tmp_path) -> None:
    """LMDeploy's context is --session-len, not llama.cpp's --ctx-size."""
    log = tmp_path / "lmdeploy.log"
    log.write_text(LMDEPLOY + "\n2024-09-01 10:00:05,000 - lmdeploy - ERROR - run out of tokens. session_id=3.\n")
    top = findings_of(log)[0]
    assert top.code == "load.config_invalid" and "--session-len" in top.fixes[0].summary, top.fixes


def test_tensorrt_llm_kernels_below_the_gpu_say_no_dtype_fixes_it(tmp_path) -> None:
    """TensorRT-LLM's "Unsupported Arch(itecture)" assertions are the GPU below its kernels' floor:
    the fix is another GPU or build, never a dtype or flag."""
    log = tmp_path / "trtllm.log"
    log.write_text(TRTLLM + "\nAssertion failed: Unsupported architecture (/tensorrt_llm/cpp/tensorrt_llm/kernels/"
                   "contextFusedMultiHeadAttention/fmhaRunner.cpp:89)\n")
    top = findings_of(log)[0]
    assert top.code == "load.cuda_mismatch"
    assert top.fixes[0].summary.startswith("This GPU is older than every kernel this build ships")


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_source_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def _top(tmp_path, lines: list[str]):
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    return findings_of(log)[0]


def test_lmdeploy_kv_share_grows_the_cache_in_proportion(tmp_path) -> None:
    """LMDeploy's --cache-max-entry-count is a share of the memory the weights leave (0.8 by default):
    16384 tokens where 14000 fit need 0.8 x 16384 / 14000 = 0.937 -> 0.94."""
    top = _top(tmp_path, [LMDEPLOY, "[TM][WARNING] No enough blocks for `session_len` (16384), `session_len` truncated to 14000."])
    assert [f.command for f in top.fixes[:2]] == ["--session-len 14000", "--cache-max-entry-count 0.94"]


def test_no_kv_memory_in_lmdeploy_names_its_flags_not_vllms(tmp_path) -> None:
    top = _top(tmp_path, [LMDEPLOY, "RuntimeError: No enough gpu memory for kv cache."])
    assert top.code == "load.no_kv_cache_memory"
    text = " ".join(f.summary + (f.command or "") for f in top.fixes)
    assert "--cache-max-entry-count" in text and "--tp" in text
    assert "--gpu-memory-utilization" not in text.replace("llm-doctor plan", "")


def test_a_kv_pool_without_numbers_names_the_engines_levers(tmp_path) -> None:
    """TensorRT-LLM's PyTorch backend: no numbers to compute from, so the fix names its two flags."""
    top = _top(tmp_path, [TRTLLM, "AssertionError: Impossible to fit in any sequence in kvCache"])
    assert top.code == "load.kv_cache_insufficient"
    assert "--kv_cache_free_gpu_memory_fraction" in top.fixes[0].summary and "--max_seq_len" in top.fixes[0].summary


@pytest.mark.parametrize("line", [
    "[TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:103)",
    "[TensorRT-LLM][ERROR] Assertion failed: Input tensor 'host_kv_cache_block_pointers_0' not found; expected shape: (1, -1, 2, -1)",
])
def test_a_trt_plan_mismatch_is_rebuilt_not_reinstalled(tmp_path, line: str) -> None:
    top = _top(tmp_path, [TRTLLM, line])
    assert top.code == "load.cuda_mismatch"
    assert top.fixes[0].summary.startswith("Rebuild the TensorRT engine here (trtllm-build")


def test_tgi_weights_oom_quantizes_with_tgis_flag(tmp_path) -> None:
    top = _top(tmp_path, [TGI, "2024-12-10T10:00:00.100000Z  WARN text_generation_launcher: Not enough VRAM to run the model: "
                               "Available: 20.19GB - Model 28.62GB.", "Error: ShardCannotStart"])
    assert "--quantize fp8" in [f.command for f in top.fixes]


def test_tgi_quantize_mismatch_speaks_tgi(tmp_path) -> None:
    """huggingface/text-generation-inference@v1.4.5:server/text_generation_server/utils/weights.py"""
    top = _top(tmp_path, [TGI, "RuntimeError: Cannot load `gptq` weight, make sure the model is already quantized, or quantize it "
                               "with `text-generation-server quantize ORIGINAL_MODEL_ID NEW_MODEL_ID`"])
    assert top.code == "load.quantization_unsupported"
    assert top.title == "quantization gptq is not supported here"
    assert [f.command for f in top.fixes[1:2]] == ["docker pull ghcr.io/huggingface/text-generation-inference:latest"]
    assert top.fixes[2].summary.endswith("drop --quantize")


@pytest.mark.parametrize(("header", "debug"), [(LMDEPLOY, "--log-level DEBUG"), (TRTLLM, "TLLM_LOG_LEVEL=DEBUG")])
def test_an_unrecognised_engine_failure_asks_for_that_engines_debug_log(tmp_path, header: str, debug: str) -> None:
    top = _top(tmp_path, [header, "RuntimeError: something no rule knows happened in the engine"])
    assert top.code == "load.unrecognized_failure"
    assert debug in [f.command for f in top.fixes]
