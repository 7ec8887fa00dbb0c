"""Load failures whose message families the engines', libraries' and platforms' sources write, read from those
sources: model files (GGUF/GGML magic and format refusals, hf_transfer, tokenizers, sentencepiece, torch checkpoints,
Ollama's create), quantization (transformers' FP8 and bitsandbytes quantizers, a GPU below a method's kernels), start-up
deadlines (SageMaker's ping health check, vLLM's engine-core handshake), the phase of an out-of-memory (TurboMind's
allocation site, TensorRT-LLM's PyTorch backend), TurboMind's power-of-two TP, TGI's router and launcher. Each log is
the source's message with its placeholders filled, the source named beside each case."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of, written

SAGEMAKER_PING = ("The primary container for production variant AllTraffic did not pass the ping health check. Please check "
                  "CloudWatch logs for this endpoint.")

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # llama.cpp@6381d4e ggml.c gguf_init_from_file (2023-08-21..2023-10-20): an old GGJT .bin given to a GGUF build
    ("gguf-invalid-magic-number", [
        "gguf_init_from_file: invalid magic number 67676a74",
        "error loading model: llama_model_loader: failed to load model from /models/llama-2-7b-chat.bin",
        "llama_load_model_from_file: failed to load model",
    ], "load.model_files", "invalid magic number 67676a74", None),
    # aws/sagemaker-python-sdk local_container_mode.py and the hosted endpoint's FailureReason: /ping never answered
    ("sagemaker-ping-health-check", [SAGEMAKER_PING], "load.startup_timeout", "did not pass the ping health check", None),
    # the same words under the SDK's waiter: the cause is the echo's until the container's log says more
    ("sagemaker-ping-in-sdk-exception", [
        "sagemaker.exceptions.UnexpectedStatusException: Error hosting endpoint llm-endpoint: Failed. Reason: " + SAGEMAKER_PING,
    ], "load.startup_timeout", "ping health check", None),
    # a transformers error the container logged before SageMaker gave up is the cause; the health check is its echo
    ("sagemaker-ping-after-missing-config", [
        "OSError: /opt/ml/model does not appear to have a file named config.json. Checkout "
        "'https://huggingface.co//opt/ml/model/tree/None' for available files.",
        SAGEMAKER_PING,
    ], "load.model_files", "does not appear to have a file named config.json", None),
    # lmdeploy@v0.4.0 src/turbomind/utils/memory_utils.cu:32 deviceMalloc: the weights' allocation (LlamaWeight.cc)
    ("turbomind-device-malloc-weights", [
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32",
    ], "load.weights_oom", "memory_utils.cu:32", None),
    # the same from a Windows wheel, the path printed with backslashes
    ("turbomind-device-malloc-windows", [
        r"RuntimeError: [TM][ERROR] CUDA runtime error: out of memory D:\a\lmdeploy\lmdeploy\src\turbomind\utils\memory_utils.cu:32",
    ], "load.weights_oom", "memory_utils.cu:32", None),
    # lmdeploy@v0.4.0 src/turbomind/utils/allocator.h:231 (cudaMallocAsync): KV blocks and batch buffers, after the weights
    ("turbomind-allocator-after-weights", [
        "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231",
    ], "load.runtime_oom", "allocator.h:231", None),
    # transformers@c823c56 quantizers/quantizer_finegrained_fp8.py (and quantizer_fbgemm_fp8.py): an FP8 checkpoint below Hopper
    ("transformers-fp8-below-hopper", [
        "ValueError: FP8 quantized models is only supported on GPUs with compute capability >= 9.0 (e.g H100)",
    ], "load.quantization_unsupported", "compute capability >= 9.0", None),
    # the earlier fine-grained quantizer's raise, with the GPU's own capability
    ("transformers-fp8-actual-capability", [
        "ValueError: FP8 quantized models is only supported on GPUs with compute capability >= 8.9 (e.g 4090/H100), actual = `8.6`",
    ], "load.quantization_unsupported", "actual = `8.6`", None),
    # transformers@01cdf1a quantizers/quantizer_awq.py validate_environment: torch.cuda.is_available() is False
    ("transformers-awq-needs-a-gpu", [
        "RuntimeError: GPU is required to run AWQ quantized model. You can use IPEX version AWQ if you have an Intel CPU",
    ], "load.gpu_not_visible", "GPU is required to run AWQ quantized model", None),
    # transformers@009ba7c quantizers/quantizer_bnb_4bit.py: bitsandbytes below 0.39.0, below 0.41.3 for a 4-bit checkpoint
    ("transformers-bnb-too-old-for-4bit", [
        "ValueError: You have a version of `bitsandbytes` that is not compatible with 4bit inference and training make sure you "
        "have the latest version of `bitsandbytes` installed",
    ], "load.quantization_unsupported", "not compatible with 4bit inference", None),
    ("transformers-bnb-int4-serialization", [
        "ValueError: Detected int4 weights but the version of bitsandbytes is not compatible with int4 serialization. Make sure "
        "to download the latest `bitsandbytes` version. `pip install --upgrade bitsandbytes`.",
    ], "load.quantization_unsupported", "int4 serialization", "pip install --upgrade bitsandbytes"),
    # huggingface_hub@v0.24.0 file_download.py http_get: the hf_transfer downloader failed, or the environment asks for it
    ("hub-hf-transfer-failed", [
        "RuntimeError: An error occurred while downloading using `hf_transfer`. Consider disabling HF_HUB_ENABLE_HF_TRANSFER "
        "for better error handling.",
    ], "load.model_files", "downloading using `hf_transfer`", "HF_HUB_ENABLE_HF_TRANSFER=0"),
    ("hub-hf-transfer-missing", [
        "ValueError: Fast download using 'hf_transfer' is enabled (HF_HUB_ENABLE_HF_TRANSFER=1) but 'hf_transfer' package is "
        "not available in your environment. Try `pip install hf_transfer`.",
    ], "load.model_files", "package is not available", "HF_HUB_ENABLE_HF_TRANSFER=0"),
    # transformers@v4.44.0 tokenization_utils_base.py get_chat_template: a base model without a chat template
    ("transformers-no-chat-template", [
        "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template argument "
        "was passed! For information about writing templates and setting the tokenizer.chat_template attribute, please see the "
        "documentation at https://huggingface.co/docs/transformers/main/en/chat_templating",
    ], "load.config_invalid", "tokenizer.chat_template is not set", None),
    # transformers@v4.40.0 tokenization_utils_fast.py: no tokenizer.json and nothing to convert a slow tokenizer from
    ("transformers-backend-tokenizer", [
        "ValueError: Couldn't instantiate the backend tokenizer from one of: (1) a `tokenizers` library serialization file, (2) "
        "a slow tokenizer instance to convert or (3) an equivalent slow tokenizer class to instantiate and convert. You need to "
        "have sentencepiece installed to convert a slow tokenizer to a fast one.",
    ], "load.model_files", "backend tokenizer", None),
    # sentencepiece@v0.1.99 sentencepiece_processor.cc LoadFromSerializedProto: tokenizer.model is no SentencePiece model
    ("sentencepiece-parse-windows-path", [
        r"RuntimeError: Internal: a\sentencepiece\sentencepiece\src\sentencepiece_processor.cc(1102) "
        "[model_proto->ParseFromArray(serialized.data(), serialized.size())]",
    ], "load.model_files", "ParseFromArray", None),
    # pytorch@v2.4.0 caffe2/serialize/inline_container.cc PyTorchStreamReader::valid: any miniz error on the checkpoint
    ("torch-stream-reader-corrupt", [
        "RuntimeError: PytorchStreamReader failed reading file data/2: invalid header or archive is corrupted",
    ], "load.model_files", "invalid header or archive is corrupted", None),
    # ollama@v0.12.6 discover/types.go LogDetails: no GPU device, the CPU line is all discovery logs since v0.12
    ("ollama-inference-compute-cpu", [
        'time=2025-10-01T10:00:00.000Z level=INFO source=types.go:60 msg="inference compute" id=cpu library=cpu compute="" '
        'name=cpu description=cpu libdirs=ollama driver="" pci_id="" type="" total="31.3 GiB" available="28.1 GiB"',
    ], "load.gpu_not_visible", "library=cpu", "--gpus all"),
    # vllm@00080ee v1/engine/core.py startup_handshake: the engine core waited HANDSHAKE_TIMEOUT_MINS for its front-end
    ("vllm-engine-core-handshake", [
        "(EngineCore_DP1 pid=412) RuntimeError: Did not receive response from front-end process within 5 minutes",
    ], "load.startup_timeout", "front-end process within 5 minutes", None),
    # text-generation-inference@v3.2.3 router/src/server.rs: serde's error for a model_type the router's Config enum lacks
    ("tgi-router-unknown-model-type", [
        "2025-04-29T08:58:39.544459Z  WARN text_generation_router::server: router/src/server.rs:1698: Could not parse config "
        'Error("unknown variant `qwen3`, expected one of `qwen2_5_vl`, `qwen2_vl`, `mistral`, `llama`", line: 0, column: 0)',
        "2025-04-29T08:58:39.544487Z  INFO text_generation_router::server: router/src/server.rs:1716: Using config None",
    ], "load.engine_outdated", "unknown variant `qwen3`", "docker pull ghcr.io/huggingface/text-generation-inference:latest"),
    # lmdeploy@v0.6.0 turbomind/deploy/converter.py: `assert (tp & (tp - 1)) == 0, 'tp should be 2^n'`, five GPUs asked for
    ("turbomind-tp-power-of-two", [
        "lmdeploy serve api_server internlm/internlm2_5-7b-chat --tp 5",
        "AssertionError: tp should be 2^n",
    ], "load.tp_invalid", "tp should be 2^n", "--tp 4"),
    # ollama@v0.12.6 parser/parser.go ErrModelNotFound: `ollama create` given a folder with neither
    ("ollama-create-nothing-to-import", ["Error: no Modelfile or safetensors files found"], "load.model_files",
     "no Modelfile or safetensors files found", None),
    # llama.cpp@dadbed9 llama.cpp (the last loader before GGUF): a GGUF file (magic 'GGUF') given to a GGML-era build
    ("ggml-era-build-reads-gguf", [
        "llama.cpp: loading model from models/7B/Phi-3-mini-4k-instruct-q4.gguf",
        "error loading model: unknown (magic, version) combination: 46554747, 00000003; is this really a GGML file?",
        "llama_load_model_from_file: failed to load model",
    ], "load.engine_outdated", "is this really a GGML file", None),
    # the same loader refusing a GGJT file quantized before its format changed (PR 1405: Q4_2/Q4_3 removed; PR 1508)
    ("ggjt-format-no-longer-supported", [
        "llama.cpp: loading model from models/7B/ggml-model-q4_2.bin",
        "error loading model: this format is no longer supported (see https://github.com/ggerganov/llama.cpp/pull/1405)",
        "llama_init_from_file: failed to load model",
    ], "load.model_files", "this format is no longer supported", None),
]

FP8_DEQUANTIZED = ("FP8 quantized models is only supported on GPUs with compute capability >= 8.9 (e.g 4090/H100), actual = "
                   "`8.0`. We will default to dequantizing the model to bf16. Feel free to use a different quantization method "
                   "like bitsandbytes or torchao")


@pytest.mark.parametrize("name,lines,code,evidence,command", CASES, ids=[c[0] for c in CASES])
def test_rank_one(tmp_path, name, lines, code, evidence, command) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_sagemaker_health_check_fix_names_the_deploy_timeout(tmp_path) -> None:
    """The fix is SageMaker's own setting, sized from the default wait, not a Kubernetes probe."""
    top = findings_of(written(tmp_path, SAGEMAKER_PING + "\n"))[0]
    assert top.code == "load.startup_timeout"
    assert "CloudWatch" in top.fixes[0].summary
    assert "container_startup_health_check_timeout=1800" in top.fixes[1].summary


def test_a_gpu_below_the_methods_kernels_is_told_so(tmp_path) -> None:
    """vLLM's capability refusal (quantization/__init__ get_min_capability: 80 for 8.0) names both numbers: the fix says
    the GPU is below the method's floor, before the generic fixes of a method the engine lacks."""
    log = written(tmp_path, "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: "
                            "80. Current capability: 75.\n")
    top = findings_of(log)[0]
    assert top.code == "load.quantization_unsupported"
    assert top.fixes[0].summary.startswith("The method's kernels need compute capability 8.0+ and this GPU's compute capability 7.5")


def test_an_fp8_checkpoint_dequantized_is_a_warning_beside_the_oom_it_causes(tmp_path) -> None:
    """transformers@7b21bdb quantizers/quantizer_finegrained.py warns and loads bf16 weights: the OOM that follows is the error."""
    log = written(tmp_path, "[transformers] " + FP8_DEQUANTIZED + "\n" + "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                  "allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 10.00 MiB is free.\n")
    findings = findings_of(log)
    assert findings[0].code == "load.runtime_oom"
    quant = next(f for f in findings if f.code == "load.quantization_unsupported")
    assert quant.severity == "warn"
    assert "8.9+" in quant.fixes[0].summary


def test_ollama_reporting_a_gpu_is_no_finding(tmp_path) -> None:
    """The same line for a CUDA device (ollama@v0.5.7 discover/types.go: id=GPU-... library=cuda) is a healthy start."""
    log = written(tmp_path, 'time=2025-01-10T10:00:00.000Z level=INFO source=types.go:131 msg="inference compute" '
                            'id=GPU-452cac9f-6960-839c-4fb3-0cec83699196 library=cuda variant=v12 compute=6.1 driver=12.7 '
                            'name="NVIDIA GeForce GT 1030" total="3.9 GiB" available="3.9 GiB"\n')
    assert [f.code for f in findings_of(log)] == []


TRT_ESTIMATE_OOM = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/_util.py", line 180, in estimate_max_tokens',
    "    raise RuntimeError(response.error_msg)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "3.00 GiB is free.",
]


@pytest.mark.parametrize("lines", [
    TRT_ESTIMATE_OOM,
    # the milestone TensorRT-LLM@v0.20.0 _torch/pyexecutor/_util.py logs once the weights are in, before the estimate
    ["[TensorRT-LLM][INFO] Memory used after loading model weights (inside torch) in memory usage profiling: 60.12 GiB",
     TRT_ESTIMATE_OOM[-1]],
], ids=["kv-cache-creator-frame", "weights-loaded-milestone"])
def test_tensorrt_llm_pytorch_backend_oom_after_the_weights_is_placed(tmp_path, lines) -> None:
    """KvCacheCreator's estimate runs after PyTorchModelEngine._load_model: an OOM there is past the weights."""
    top = findings_of(written(tmp_path, "\n".join(lines) + "\n"))
    assert top[0].code == "load.runtime_oom"
    assert any(line.startswith("phase: profiling") for line in top[0].evidence), top[0].evidence
    assert "load.weights_oom" not in [f.code for f in top]


def test_tgi_launcher_lines_after_a_sigkill_report_the_kill(tmp_path) -> None:
    """text-generation-inference@v0.9.4 launcher/src/main.rs: the shard's SIGKILL, then 'Shard 0 failed to start' and
    ShardCannotStart, which only report that death: the kill (the host's OOM killer) is the cause."""
    log = written(tmp_path, "\n".join([
        "2023-07-05T19:55:21.347050Z ERROR text_generation_launcher: Shard process was signaled to shutdown with signal 9",
        "2023-07-05T19:55:21.447050Z ERROR text_generation_launcher: Shard 0 failed to start",
        "Error: ShardCannotStart",
    ]) + "\n")
    assert findings_of(log)[0].code == "load.host_oom"


def test_tgi_launcher_lines_after_a_shard_exception_are_not_a_kill(tmp_path) -> None:
    """Without a kill the launcher's lines stay the cascade of what the shard raised."""
    log = written(tmp_path, "\n".join([
        "2023-07-05T19:55:20.000000Z ERROR shard-manager: text_generation_launcher: Error when initializing model",
        "RuntimeError: weight model.layers.0.self_attn.q_proj.weight does not exist",
        "2023-07-05T19:55:21.447050Z ERROR text_generation_launcher: Shard 0 failed to start",
        "Error: ShardCannotStart",
    ]) + "\n")
    assert findings_of(log)[0].code == "load.model_files"


@pytest.mark.parametrize("text", [
    "HTTP startup and liveness probes call port 8000 before that happens. They fail until Kubernetes restarts the container.",
    "The readiness probe starts checking /health before vLLM has finished loading the 70B model.",
])
def test_probes_said_to_run_before_the_load_are_a_startup_timeout(tmp_path, text) -> None:
    """A report that the kubelet's probes run too early (they start after initialDelaySeconds, whatever the load) states
    the start-up deadline, in words."""
    top = findings_of(written(tmp_path, text + "\n"))[0]
    assert top.code == "load.startup_timeout"
    assert top.tier == "statement"


def test_advice_to_order_the_probe_states_no_failure(tmp_path) -> None:
    """Advice is no statement of a failure (failure_prose.ADVICE)."""
    codes = [f.code for f in findings_of(written(tmp_path, "You should configure the readiness probe to start checking "
                                                          "before sending traffic.\n"))]
    assert "load.startup_timeout" not in codes


def test_cuda_said_not_detected_is_the_gpu_not_visible(tmp_path) -> None:
    """torch.cuda.is_available() False told in words ("CUDA not detected when running without --gpus all")."""
    top = findings_of(written(tmp_path, "CUDA not detected when running the container without --gpus all\n"))[0]
    assert top.code == "load.gpu_not_visible"
    assert top.tier == "statement"
