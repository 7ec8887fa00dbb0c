"""Load failures in the words the engines' and libraries' own sources raise them (vLLM, SGLang,
PyTorch/CUDA, transformers, NCCL), at rank 1 with the line they rest on and the fix's exact value.
Each log is the source's message with its placeholders filled, pasted the way issue threads show
them (quotes or backticks lost, a launch line before); the source is named beside each case."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # vllm@v0.6.3 config.py: a model class without SupportsPP; its GPUs all go to tensor parallelism
    ("vllm-pp-unsupported", [
        "vllm serve /models/Qwen2-VL-72B-Instruct --tensor-parallel-size 2 --pipeline-parallel-size 2",
        "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the "
        "`SupportsPP` interface.",
    ], "load.tp_invalid", "Pipeline parallelism is not supported for this model", "--tensor-parallel-size 4 --pipeline-parallel-size 1"),
    # vllm@v0.4.0 config.py: 61 layers do not split into 2 stages; 1 is the largest stage count below 2 that does
    ("vllm-pp-layers", [
        "ValueError: Total number of hidden layers (61) must be divisible by pipeline parallel size (2).",
    ], "load.tp_invalid", "Total number of hidden layers (61)", "--pipeline-parallel-size 1"),
    # vllm@v0.6.3 multiproc_gpu_executor.py: TP above the GPUs this node shows
    ("vllm-tp-above-local-gpus", [
        "python -m vllm.entrypoints.openai.api_server --model /models/llama-70b --tensor-parallel-size 8",
        "RuntimeError: please set tensor_parallel_size (8) to less than max local gpu count (4)",
    ], "load.tp_invalid", "max local gpu count (4)", "--tensor-parallel-size 4"),
    # vllm marlin_utils.py: a TP=4 rank's slice of a GPTQ layer the Marlin tiles cannot cover
    ("vllm-marlin-output-partition", [
        "python -m vllm.entrypoints.openai.api_server --model /models/qwen-gptq --tensor-parallel-size 4",
        "ValueError: Weight output_size_per_partition = 6848 is not divisible by  min_thread_n = 64. Consider reducing "
        "tensor_parallel_size or running with --quantization gptq.",
    ], "load.tp_invalid", "output_size_per_partition = 6848", "--tensor-parallel-size 2"),
    # vllm awq.py: an 8-bit AWQ checkpoint
    ("vllm-awq-bits", [
        "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits.",
    ], "load.quantization_unsupported", "only 4-bit weight quantization is supported for AWQ", None),
    # vllm kernels/mixed_precision/__init__.py: no weight-only kernel for this GPU
    ("vllm-wna16-no-kernel", [
        "ValueError: Failed to find a kernel that can implement the WNA16 linear layer. Reasons: MacheteLinearKernel "
        "requires capability 90, current compute capability is 75",
    ], "load.quantization_unsupported", "Failed to find a kernel", None),
    # vllm/sglang compressed_tensors.py
    ("compressed-tensors-no-scheme", [
        "NotImplementedError: No compressed-tensors compatible scheme was found.",
    ], "load.quantization_unsupported", "No compressed-tensors compatible scheme", None),
    # vllm registry.py: neither vLLM nor the installed transformers implements the architecture
    ("vllm-no-model-module", [
        "ValueError: Cannot find model module. 'Gemma3nForConditionalGeneration' is not a registered model in the "
        "Transformers library (only relevant if the model is meant to be in Transformers) and 'AutoModel' is not present "
        "in the model config's 'auto_map' (relevant if the model is custom).",
    ], "load.engine_outdated", "Gemma3nForConditionalGeneration", "pip install -U vllm transformers"),
    # transformers@v4.40.0 configuration_auto.py, the backticks eaten by markdown
    ("transformers-model-type-no-backticks", [
        "ValueError: The checkpoint you are trying to load has model type qwen3 but Transformers does not recognize this "
        "architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is "
        "out of date.",
    ], "load.engine_outdated", "model type qwen3", "pip install -U vllm transformers"),
    # transformers@v4.40.0 configuration_llama.py reading a Llama 3.1 config (rope_type llama3)
    ("transformers-rope-llama3", [
        "ValueError: rope_scaling must be a dictionary with with two fields, type and factor, got {'factor': 8.0, "
        "'rope_type': 'llama3'}",
    ], "load.engine_outdated", "rope_scaling must be a dictionary", "pip install -U vllm transformers"),
    # transformers@v4.30.0 configuration_auto.py: before 4.31 an unknown model type is a bare KeyError under this line
    ("transformers-old-config-mapping-keyerror", [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py", line 957, in from_pretrained',
        '    config_class = CONFIG_MAPPING[config_dict["model_type"]]',
        '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py", line 671, in __getitem__',
        "    raise KeyError(key)",
        "KeyError: 'qwen2'",
    ], "load.engine_outdated", "CONFIG_MAPPING[config_dict", "pip install -U vllm transformers"),
    # CPython's ImportError for a class the installed transformers does not have yet
    ("transformers-class-missing", [
        "ImportError: cannot import name 'Qwen2_5_VLForConditionalGeneration' from 'transformers' "
        "(/usr/local/lib/python3.10/dist-packages/transformers/__init__.py)",
    ], "load.engine_outdated", "Qwen2_5_VLForConditionalGeneration", "pip install -U vllm transformers"),
    # cudaGetErrorString behind torch's "CUDA error: " (c10/cuda/CUDAException.cpp)
    ("torch-nvlink-uncorrectable", [
        "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
    ], "load.gpu_fault", "uncorrectable NVLink error", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
    # nccl@v2.30.7-1 checks.h: NCCL only relays the GPU's ECC fault
    ("nccl-cuda-failure-ecc", [
        "node1:1234:1300 [0] NCCL WARN Cuda failure 214 'uncorrectable ECC error encountered'",
    ], "load.gpu_fault", "uncorrectable ECC error encountered", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
    # NVIDIA/k8s-device-plugin internal/rm/health.go: the plugin's own report of a critical Xid
    ("k8s-device-plugin-xid", [
        "I1203 10:00:01.123456       1 health.go:152] XidCriticalError: Xid=79 on Device=GPU-5f3f3a2b-8c1e-4f1a-9a0b-2c1d3e4f5a6b; "
        "marking device as unhealthy.",
    ], "load.gpu_fault", "XidCriticalError: Xid=79", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
    ("nvml-driver-library-mismatch", [
        "Failed to initialize NVML: Driver/library version mismatch",
    ], "load.cuda_mismatch", "Driver/library version mismatch", "cat /proc/driver/nvidia/version; nvidia-smi"),
    # pynvml's exception classes (pynvml/nvml.py) for NVML's own error codes
    ("pynvml-driver-not-loaded", [
        "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded",
    ], "load.gpu_not_visible", "NVMLError_DriverNotLoaded", "--gpus all"),
    ("pynvml-rm-version-mismatch", [
        "pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.",
    ], "load.cuda_mismatch", "NVMLError_LibRmVersionMismatch", "cat /proc/driver/nvidia/version; nvidia-smi"),
    # vllm@v0.4.0 quantization/__init__.py get_quantization_config
    ("vllm-invalid-quantization-method", [
        "ValueError: Invalid quantization method: mxfp4",
    ], "load.quantization_unsupported", "Invalid quantization method: mxfp4", None),
    # a CUDA library torch (torch/__init__.py) or the engine's kernels were built against, missing
    ("torch-cusparselt-missing", [
        "ImportError: libcusparseLt.so.0: cannot open shared object file: No such file or directory",
    ], "load.cuda_mismatch", "libcusparseLt.so.0", None),
    ("torch-forward-compat", [
        "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
    ], "load.cuda_mismatch", "forward compatibility was attempted", "ldconfig -p | grep libcuda.so"),
    ("torch-fabric-manager-down", [
        "RuntimeError: CUDA error: system not yet initialized",
    ], "load.gpu_not_visible", "system not yet initialized", "sudo systemctl enable --now nvidia-fabricmanager"),
    # triton@v3.0.0 runtime/driver.py: Triton found no GPU driver to compile for
    ("triton-no-active-driver", [
        "RuntimeError: 0 active drivers ([]). There should only be one.",
    ], "load.gpu_not_visible", "0 active drivers", "--gpus all"),
    # sglang utils.py get_device()
    ("sglang-no-accelerator", [
        "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU) is available.",
    ], "load.gpu_not_visible", "No accelerator (CUDA, XPU, HPU, NPU) is available", "--gpus all"),
    # vllm@v0.8.5 fp8.py Fp8MoEMethod: a block-FP8 MoE whose experts TP=8 cuts below one 128-wide block
    ("vllm-fp8-moe-block", [
        "vllm serve /models/Qwen3-235B-A22B-FP8 --tensor-parallel-size 8",
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128.",
    ], "load.tp_invalid", "gate's and up's weight = 192", "--tensor-parallel-size 4"),
    # sglang@v0.4.6 quantization/__init__.py: the method's kernels come from a vLLM that is not installed
    ("sglang-quant-needs-vllm", [
        "ValueError: awq quantization requires some operators from vllm. Please install vllm by `pip install vllm==0.8.4`",
    ], "load.quantization_unsupported", "requires some operators from vllm", "pip install vllm==0.8.4"),
    # transformers@v4.44.0 quantizer_bnb_4bit.py
    ("transformers-bnb-missing", [
        "ImportError: Using `bitsandbytes` 4-bit quantization requires the latest version of bitsandbytes: "
        "`pip install -U bitsandbytes`",
    ], "load.quantization_unsupported", "requires the latest version of bitsandbytes", "pip install -U bitsandbytes"),
    # serde's untagged-enum error from tokenizers: a tokenizer.json newer than the installed tokenizers
    ("tokenizers-untagged-enum", [
        "Exception: data did not match any variant of untagged enum ModelWrapper at line 1251003 column 3",
    ], "load.engine_outdated", "untagged enum ModelWrapper", "pip install -U vllm transformers"),
    # vllm registry.py: the config read has no architectures (an adapter's or another format's folder)
    ("vllm-no-architectures", [
        "ValueError: No model architectures are specified",
    ], "load.model_files", "No model architectures are specified", None),
    # sglang@v0.2.0 model_runner.py: an architecture this SGLang has no model class for
    ("sglang-unsupported-architecture", [
        "ValueError: Unsupported architectures: Qwen2MoeForCausalLM. Supported list: ['LlamaForCausalLM', 'QWenLMHeadModel']",
    ], "load.engine_outdated", "Qwen2MoeForCausalLM", "pip install -U sglang transformers"),
    # nccl@v2.30.7-1 nvmlwrap.cc: NVML says the GPU is gone, whichever call NCCL made
    ("nccl-nvml-gpu-lost", [
        "node1:1234:1300 [0] misc/nvmlwrap.cc:166 NCCL WARN nvmlDeviceGetHandleByIndex(3) failed: GPU is lost",
    ], "load.gpu_fault", "failed: GPU is lost", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
    # transformers@v4.40.0 configuration_utils.py: a config.json that is not JSON (an LFS pointer, a cut download)
    ("transformers-config-not-json", [
        "OSError: It looks like the config file at '/models/llama/config.json' is not a valid JSON file.",
    ], "load.model_files", "is not a valid JSON file", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_source_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_a_submodule_import_is_not_an_outdated_transformers(tmp_path) -> None:
    """Remote model code importing a private helper from a transformers submodule (vllm-project/vllm#15844):
    the model's code is older than the library, not the engine older than the model."""
    log = tmp_path / "vllm.log"
    log.write_text("ImportError: cannot import name '_flash_supports_window_size' from "
                   "'transformers.modeling_flash_attention_utils' (/usr/lib/python3/transformers/modeling_flash_attention_utils.py)\n")
    assert findings_of(log)[0].code != "load.engine_outdated"


def test_sglang_refusing_a_request_below_its_context_length_is_the_kv_pool(tmp_path) -> None:
    """SGLang's allowed input length is min(context length, KV pool tokens) - 1 (managers/utils.py
    validate_input_length): below the --context-length asked for, it is the KV pool's size."""
    assert_rank_one(tmp_path, "sglang-pool-capped", [
        "python -m sglang.launch_server --model-path /models/deepseek-r1 --tp 8 --context-length 163840",
        "[2025-03-03 06:49:28 TP5] Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens). "
        "Use a shorter input or enable --allow-auto-truncate.",
    ], "load.kv_cache_insufficient", "the KV pool holds 59863 tokens", "--context-length 59863")


def test_sglang_refusing_a_request_at_its_context_length_is_no_kv_shortfall(tmp_path) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("python -m sglang.launch_server --model-path /models/qwen --context-length 32768\n"
                   "[2025-03-03 06:49:28 TP0] Input length (40000 tokens) exceeds the maximum allowed length (32767 tokens). "
                   "Use a shorter input or enable --allow-auto-truncate.\n")
    assert "load.kv_cache_insufficient" not in [f.code for f in findings_of(log)]
