"""Quantization, kernel and version failures in the words the engines' and libraries' sources raise them
(vLLM/SGLang compressed-tensors, torch's FP8 GEMM, TGI's quantized layers, LMDeploy's TurboMind converter,
bitsandbytes' native library, transformers' auto-class registry, TensorRT-LLM's benchmark), at rank 1 with
the line they rest on and the fix the message's values give. The source is named beside each case."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # vllm@v0.6.3 compressed_tensors.py _check_scheme_supported: RuntimeError of three strings, printed as a tuple
    ("vllm-ct-scheme-capability-tuple", [
        "(EngineCore_DP0 pid=585) ERROR 09-16 17:46:22 [core.py:718] RuntimeError: ('Quantization scheme is not supported for ', "
        "'the current GPU. Min capability: 80. ', 'Current capability: 75.')",
    ], "load.quantization_unsupported", "Min capability: 80", None),
    # the joined form of later releases (and SGLang's copy), as a markdown paste shows it
    ("ct-scheme-capability-joined", [
        "RuntimeError: Quantization scheme is not supported for the current GPU. Min capability: 89. Current capability: 86.",
    ], "load.quantization_unsupported", "Min capability: 89", None),
    # pytorch@v2.4.0 aten/src/ATen/native/cuda/Blas.cpp: the FP8 GEMM an fp8 checkpoint runs, on an Ampere GPU
    ("torch-scaled-mm-fp8", [
        "vllm serve /models/Llama-3.1-8B-FP8 --quantization fp8",
        "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+",
    ], "load.quantization_unsupported", "torch._scaled_mm", None),
    # vllm modelopt.py / config.py: a ModelOpt checkpoint whose quant_algo this vLLM has no path for
    ("vllm-modelopt-algo", [
        "ValueError: ModelOpt currently only supports: ['FP8', 'NVFP4'] quantizations in vLLM. Please check the "
        "`hf_quant_config.json` file for your model's quant configuration.",
    ], "load.quantization_unsupported", "ModelOpt currently only supports", None),
    ("vllm-modelopt-static-fp8-joined", [
        "ValueError: ModelOpt currently only supports static FP8quantization in vLLM.",
    ], "load.quantization_unsupported", "static FP8quantization", None),
    ("vllm-modelopt-unknown-algo", [
        "ValueError: Unknown ModelOpt quant algo: W4A8_AWQ",
    ], "load.quantization_unsupported", "Unknown ModelOpt quant algo", None),
    # vllm compressed_tensors_moe.py: the expert layers' scheme has no fused-MoE method
    ("vllm-fused-moe-scheme", [
        "RuntimeError: Unsupported FusedMoe scheme: W4A16, None",
    ], "load.quantization_unsupported", "Unsupported FusedMoe scheme", None),
    # vllm@5a6541d quantization/gguf.py: a GGUF tensor type its ggml kernels lack
    ("vllm-gguf-type", [
        "NotImplementedError: Unsupported GGUF quantization type: WeightType.IQ4_NL",
    ], "load.quantization_unsupported", "Unsupported GGUF quantization type", None),
    # TGI@v3.3.7 layers/compressed_tensors: a checkpoint's scheme the loader has no kernel for
    ("tgi-w8a8-asymmetric", [
        "ValueError: Checkpoints with asymmetric weights are not supported",
    ], "load.quantization_unsupported", "asymmetric weights", None),
    ("tgi-ct-group-config", [
        "ValueError: Group 'group_0' has unsupported compressed-tensors configurtion",
    ], "load.quantization_unsupported", "compressed-tensors configurtion", None),
    ("tgi-exllamav2-bits", [
        "ValueError: Exllamav2 kernel supports only bits=4, requested bits=8. Something is wrong in the model initialization.",
    ], "load.quantization_unsupported", "requested bits=8", None),
    # lmdeploy@v0.16.0 turbomind/converter.py and messages.py
    ("lmdeploy-group-size", [
        "ValueError: Unsupported group_size=64 for model_format=\"awq\". Supported group_size values: 128.",
    ], "load.quantization_unsupported", "group_size=64", None),
    ("lmdeploy-pack-quantized-bits", [
        "AssertionError: pack-quantized requires 4-bit int, but got 8-bit int",
    ], "load.quantization_unsupported", "pack-quantized requires 4-bit int", None),
    ("lmdeploy-turbomind-fp8-kv", [
        "AssertionError: invalid quant_policy for TurboMind, FP8 quantization is not supported",
    ], "load.quantization_unsupported", "FP8 quantization is not supported", None),
    # transformers@v4.49.0 configuration_auto.py / auto_factory.py: the engine registers what this transformers ships
    ("vllm-aimv2-registered-twice", [
        "pip install -U transformers",
        "ValueError: 'aimv2' is already used by a Transformers config, pick another name.",
    ], "load.engine_outdated", "already used by a Transformers config", "pip install -U vllm transformers"),
    ("sglang-config-class-registered-twice", [
        "python -m sglang.launch_server --model-path google/gemma-3-27b-it",
        "ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is already used by a Transformers model.",
    ], "load.engine_outdated", "already used by a Transformers model", "pip install -U sglang transformers"),
    # bitsandbytes@0.43.0 / 0.45.0 / 0.49.0 cextension.py: no native library for this CUDA runtime
    ("bnb-cuda-setup-failed", [
        "RuntimeError:",
        "        CUDA Setup failed despite GPU being available. Please run the following command to get more information:",
    ], "load.cuda_mismatch", "CUDA Setup failed", "pip install -U bitsandbytes"),
    ("bnb-native-library", [
        "ERROR Could not load bitsandbytes native library: libcusparse.so.11: cannot open shared object file: No such file or directory",
    ], "load.cuda_mismatch", "bitsandbytes native library", "pip install -U bitsandbytes"),
    ("bnb-not-available", [
        "RuntimeError: Attempted to use bitsandbytes native library functionality but it's not available.",
    ], "load.cuda_mismatch", "bitsandbytes native library functionality", "pip install -U bitsandbytes"),
    # vllm@4694df5 csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu: a wheel without the GPU's arch, the capability named
    ("vllm-no-compiled-cutlass", [
        "NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: 121",
    ], "load.cuda_mismatch", "No compiled cutlass_scaled_mm", None),
    # llama.cpp@22c7f85 ggml-cuda/common.cuh: the build's CUDA architectures are all above this GPU's
    ("ggml-no-cuda-arch", [
        "/app/ggml/src/ggml-cuda/common.cuh:112: ggml was not compiled with any CUDA arch <= 610",
    ], "load.cuda_mismatch", "any CUDA arch <= 610", "cmake -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=61"),
    # pytorch@v2.1.0 OperatorEntry.cpp: torchvision's op has no CUDA kernel registered
    ("torchvision-nms-cuda", [
        "NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend.",
    ], "load.cuda_mismatch", "torchvision::nms", "pip install --force-reinstall torchvision"),
    # pytorch@v2.1.0 torch/utils/cpp_extension.py: an extension build for an arch this torch does not know
    ("torch-unknown-cuda-arch", [
        "ValueError: Unknown CUDA arch (12.0+PTX) or GPU not supported",
    ], "load.cuda_mismatch", "Unknown CUDA arch (12.0+PTX)", "python -c 'import torch; print(torch.__version__, torch.cuda.get_arch_list())'"),
    # flash-attention@ea6443c setup.py: the nvcc it builds with is too old
    ("flash-attn-nvcc-too-old", [
        "RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.  Note: make sure nvcc has a supported version "
        "by running nvcc -V.",
    ], "load.cuda_mismatch", "only supported on CUDA 11.7", "nvcc -V"),
    # llvm-project@llvmorg-17.0.6 MCSubtargetInfo.cpp / SelectionDAGISel.cpp inside Triton: its LLVM has no target for the GPU
    ("triton-llvm-cannot-select", [
        "'sm_120' is not a recognized processor for this target (ignoring processor)",
        "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32",
    ], "load.cuda_mismatch", "Cannot select: intrinsic", "pip install -U torch triton"),
    # TensorRT-LLM@3c44cb97 benchmarks/cpp/gptSessionBenchmark.cpp: the engine's token budget below the run's batch
    ("trtllm-max-num-tokens", [
        "[TensorRT-LLM][ERROR] Assertion failed: The engine is built with remove_input_padding=True and max_num_tokens=128, "
        "while trying to benchmark on 8192 tokens (/src/tensorrt_llm/benchmarks/cpp/gptSessionBenchmark.cpp:140)",
    ], "load.config_invalid", "max_num_tokens=128", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_r_quant_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


@pytest.mark.parametrize(("line", "floor"), [
    ("RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
     "'Current capability: 75.')", "compute capability 8.0+ and this GPU's compute capability 7.5"),
    ("RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+",
     "compute capability 9.0+"),
])
def test_a_scheme_below_the_gpu_names_the_capability_floor(tmp_path, line: str, floor: str) -> None:
    """The numbers in the message are the fix: the scheme's kernels start at a GPU generation no flag lowers."""
    log = tmp_path / "engine.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.quantization_unsupported"
    assert any(floor in f.summary for f in top.fixes), [f.summary for f in top.fixes]


def test_a_wheel_without_the_gpus_arch_names_the_arch_from_the_message(tmp_path) -> None:
    """vLLM's csrc dispatch names the GPU's capability (121): the fix names the sm_ to build for, with no GPU facts."""
    log = tmp_path / "engine.log"
    log.write_text("NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: 121\n")
    top = findings_of(log)[0]
    assert top.code == "load.cuda_mismatch"
    assert "sm_121" in top.fixes[0].summary and "TORCH_CUDA_ARCH_LIST=12.1" in top.fixes[0].summary


def test_mxfp4_without_its_kernels_is_a_warning_with_the_install(tmp_path) -> None:
    """transformers@787b952 quantizer_mxfp4.py: a gpt-oss checkpoint without triton >= 3.4 and `kernels` loads dequantized
    to bf16 (a warning), and the fix installs what the message names."""
    log = tmp_path / "engine.log"
    log.write_text("MXFP4 quantization requires triton >= 3.4.0 and kernels installed, we will default to dequantizing the model to bf16\n")
    (found,) = [f for f in findings_of(log) if f.code == "load.quantization_unsupported"]
    assert found.severity == "warn"
    assert found.fixes[0].command == "pip install -U 'triton>=3.4' kernels"


def test_bitsandbytes_cpu_build_warning_alone_is_a_warning(tmp_path) -> None:
    """bitsandbytes' CPU-only build is a warning at import (cextension.py): the load goes on until a bnb layer needs it."""
    log = tmp_path / "engine.log"
    log.write_text("UserWarning: The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, "
                   "8-bit multiplication, and GPU quantization are unavailable.\n")
    found = [f for f in findings_of(log) if f.code == "load.cuda_mismatch"]
    assert found and found[0].fixes[0].command == "pip install -U bitsandbytes"
