"""Load failures that sit between two neighbour codes, decided the way the codes' definitions and the
engines' sources decide them: a GPU below every kernel of the build before its bfloat16 refusal, an
architecture no llama.cpp build implements (model_files) against one a newer build knows
(engine_outdated), LMDeploy's TurboMind fallback as a warning or as the first step of a failure,
SGLang's scheduler death by its signal (SIGBUS, SIGKILL or the cascade of the child's own error), a
wrapper's words against the cause it quotes on the same line. Each log line is the source's message
as it prints it (the source is named beside each case)."""

from __future__ import annotations

import pytest

from llm_doctor.logparse import events as ev
from tests.analysis import assert_rank_one, findings_of

# sglang/srt/entrypoints/engine.py _scheduler_died_error, whatever the exit code
SGLANG_DIED = ("RuntimeError: Rank 0 scheduler died during initialization (exit code: {}). If exit code is -9 (SIGKILL), "
               "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.")
LLAMA_CPP_HEAD = [
    "ggml_cuda_init: found 1 CUDA devices:",
    "  Device 0: NVIDIA A10G, compute capability 8.6, VMM: yes",
    "build: 6019 (8ad7b3e6) with cc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0 for x86_64-linux-gnu",
]


def test_a_gpu_below_every_kernel_comes_before_its_bfloat16_refusal(tmp_path) -> None:
    # vllm@v0.6.3 worker.py (the bfloat16 check), vllm@v0.2.0 setup.py (the compute capability floor)
    log = tmp_path / "p100.log"
    log.write_text("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla P100-PCIE-16GB GPU "
                   "has compute capability 6.0.\nRuntimeError: GPUs with compute capability below 7.0 are not supported.\n")
    codes = [f.code for f in findings_of(log)]
    assert codes[:2] == ["load.cuda_mismatch", "load.dtype_unsupported"], codes
    assert "needs 7.0 or newer" in findings_of(log)[0].fixes[0].summary


def test_a_bfloat16_refusal_alone_stays_the_dtype(tmp_path) -> None:
    assert_rank_one(tmp_path, "t4", [
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
        "compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: "
        "--dtype=half.",
    ], "load.dtype_unsupported", "Tesla T4", "--dtype float16")


def test_an_architecture_no_llama_cpp_build_implements_is_the_model_file(tmp_path) -> None:
    # src/llama-model-loader.cpp; mllama (Llama 3.2 Vision) is in no LLM_ARCH_NAMES (src/llama-arch.cpp, master)
    assert_rank_one(tmp_path, "mllama", [*LLAMA_CPP_HEAD,
                    "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'mllama'"],
                    "load.model_files", "unknown model architecture: 'mllama'", None)


def test_an_architecture_master_knows_is_an_outdated_llama_cpp(tmp_path) -> None:
    assert_rank_one(tmp_path, "gemma4", [*LLAMA_CPP_HEAD,
                    "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'gemma4'"],
                    "load.engine_outdated", "'gemma4'", "docker pull ghcr.io/ggml-org/llama.cpp:server")


def test_ollama_printing_llama_cpp_words_for_mllama_is_an_outdated_ollama(tmp_path) -> None:
    # Ollama's vendored llama.cpp prints the loader's words, but Ollama's own engine runs mllama: a newer Ollama may
    assert_rank_one(tmp_path, "ollama-mllama", [
        "time=2024-10-01T10:00:00.000Z level=INFO source=server.go:388 msg=\"starting llama server\" cmd=\"/usr/lib/ollama/runners/"
        "cuda_v12/ollama_llama_server --model /root/.ollama/models/blobs/sha256-11f2 --ctx-size 8192 --port 33421\"",
        "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'mllama'",
        "time=2024-10-01T10:00:01.000Z level=ERROR source=sched.go:455 msg=\"error loading llama server\" error=\"llama runner "
        "process has terminated: error loading model: error loading model architecture: unknown model architecture: 'mllama'\"",
    ], "load.engine_outdated", "'mllama'", "curl -fsSL https://ollama.com/install.sh | sh")


# lmdeploy@19669b3 archs.py autoget_backend
FALLBACK = ("2025-07-08 14:12:38,320 - lmdeploy - WARNING - archs.py:51 - Fallback to pytorch engine because "
            "`/models/Qwen3.5-35B-A3B` not supported by turbomind engine.")


def test_the_turbomind_fallback_alone_is_a_warning(tmp_path) -> None:
    log = tmp_path / "fallback.log"
    log.write_text(FALLBACK + "\n")
    top = findings_of(log)[0]
    assert (top.code, top.severity) == ("load.engine_outdated", "warn")
    assert top.fixes[0].command == "pip install -U lmdeploy transformers"


def test_the_turbomind_fallback_before_an_unknown_crash_is_its_first_cause(tmp_path) -> None:
    log = tmp_path / "fallback-crash.log"
    log.write_text("\n".join([
        FALLBACK,
        "Traceback (most recent call last):",
        '  File "/opt/py3/lib/python3.10/site-packages/lmdeploy/pytorch/engine/engine.py", line 120, in __init__',
        "    self.model_agent = build_model_agent(model_path)",
        "AttributeError: 'NoneType' object has no attribute 'rope_theta'",
    ]) + "\n")
    top = findings_of(log)[0]
    assert (top.code, top.severity) == ("load.engine_outdated", "error")


def test_the_turbomind_fallback_does_not_hide_a_known_cause(tmp_path) -> None:
    log = tmp_path / "fallback-oom.log"
    log.write_text(FALLBACK + "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                   "capacity of 23.55 GiB of which 1.06 GiB is free.\n")
    findings = findings_of(log)
    assert findings[0].code != "load.engine_outdated", [f.code for f in findings]
    assert ("load.engine_outdated", "warn") in [(f.code, f.severity) for f in findings]


def test_sglang_scheduler_dead_of_sigbus_is_dev_shm(tmp_path) -> None:
    assert_rank_one(tmp_path, "sigbus", [SGLANG_DIED.format(-7)], "load.shm_insufficient", "exit code: -7", None)


def test_sglang_scheduler_dead_of_sigkill_is_a_kill(tmp_path) -> None:
    assert_rank_one(tmp_path, "sigkill", [SGLANG_DIED.format(-9)], "load.host_oom", "exit code: -9", None)


def test_sglang_advice_about_sigkill_is_not_the_exit_it_reports(tmp_path) -> None:
    """-3 is the SIGQUIT SGLang sends a child after the child's own error: the advice appended about -9 states no kill."""
    log = tmp_path / "sigquit.log"
    log.write_text("[2025-04-05 00:01:19] Received sigquit from a child process. It usually means the child failed.\n"
                   + SGLANG_DIED.format(-3) + "\n")
    assert "load.host_oom" not in [f.code for f in findings_of(log)]


def test_sglang_scheduler_death_is_the_cascade_of_the_childs_error(tmp_path) -> None:
    assert_rank_one(tmp_path, "child-oom", [
        "[2025-04-05 00:01:18 TP0] Scheduler hit an exception: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "1.50 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.",
        SGLANG_DIED.format(-3),
    ], "load.runtime_oom", "CUDA out of memory", None)  # the OOM, not the death it caused; nothing places it, so runtime leads


def test_a_wrappers_words_lose_to_the_cause_on_its_line() -> None:
    # TGI launcher: "Download encountered an error: <the download's traceback>" (an echo), with huggingface_hub's 401 inside
    rule, _ = ev.match("ERROR download: text_generation_launcher: Download encountered an error: requests.exceptions.HTTPError: "
                       "401 Client Error: Unauthorized for url: https://huggingface.co/api/models/meta-llama/Meta-Llama-3-8B")
    assert rule.kind == "hf_access"


def test_a_tensorrt_plan_from_another_version_is_rebuilt(tmp_path) -> None:
    # TensorRT's IRuntime::deserializeCudaEngine (triton-inference-server/tensorrtllm_backend#531)
    assert_rank_one(tmp_path, "trt-serialization", [
        "[TRT] [E] IRuntime::deserializeCudaEngine: Error Code 1: Serialization (Serialization assertion stdVersionRead == "
        "kSERIALIZATION_VERSION failed.Version tag does not match. Note: Current Version: 228, Serialized Engine Version: 237)",
    ], "load.cuda_mismatch", "kSERIALIZATION_VERSION", None)
    log = tmp_path / "trt-serialization.log"
    assert "Rebuild the TensorRT engine here" in findings_of(log)[0].fixes[0].summary


def test_tensorrt_llm_ranks_below_the_engines_tp_get_mpirun(tmp_path) -> None:
    # TensorRT-LLM@65b31db cpp/tensorrt_llm/runtime/worldConfig.cpp WorldConfig::mpi
    assert_rank_one(tmp_path, "mpi-size", [
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 1 != TP size 2 * PP size 1 "
        "(/home/jenkins/agent/workspace/LLM/main/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:104)",
    ], "load.tp_invalid", "MPI size 1 != TP size 2", None)
    top = findings_of(tmp_path / "mpi-size.log")[0]
    assert "put `mpirun -n 2 --allow-run-as-root` before the same command" in top.fixes[0].summary


def test_flash_attention_below_ampere_is_the_kernels_not_the_dtype(tmp_path) -> None:
    # Dao-AILab/flash-attention@v2.5.8 csrc/flash_attn/flash_api.cpp: no float16 fixes it, another attention backend does
    assert_rank_one(tmp_path, "fa2-t4", ["RuntimeError: FlashAttention only supports Ampere GPUs or newer."],
                    "load.cuda_mismatch", "only supports Ampere", None)
    assert "attn_implementation" in findings_of(tmp_path / "fa2-t4.log")[0].fixes[0].summary


def test_tgi_refusing_the_gpus_capability_is_the_kernels(tmp_path) -> None:
    # huggingface/text-generation-inference@v3.3.7 layers/attention/cuda.py
    assert_rank_one(tmp_path, "tgi-cc", ["ImportError: GPU with CUDA capability 7 0 is not supported"],
                    "load.cuda_mismatch", "CUDA capability 7 0", None)


def test_marlin_needing_ampere_is_the_quantization(tmp_path) -> None:
    # huggingface/text-generation-inference@v3.3.7 layers/marlin/util.py
    assert_rank_one(tmp_path, "tgi-marlin", [
        "NotImplementedError: Using quantized Marlin models requires a GPU with CUDA capability 8.0 or later.",
    ], "load.quantization_unsupported", "quantized Marlin models", None)


def test_a_compute_capability_refused_without_a_dtype_is_the_build(tmp_path) -> None:
    assert_rank_one(tmp_path, "cc-refused", ["RuntimeError: GPU compute capability 6.1 is not supported by this build"],
                    "load.cuda_mismatch", "compute capability 6.1", None)
    assert_rank_one(tmp_path, "cc-fp8", ["ValueError: fp8 e4m3 needs a newer GPU: compute capability 8.6 is not supported"],
                    "load.dtype_unsupported", "compute capability 8.6", None)


def test_a_title_retelling_transformers_unknown_architecture_is_outdated(tmp_path) -> None:
    # transformers configuration_auto.py "... but Transformers does not recognize this architecture", as an issue title puts it
    assert_rank_one(tmp_path, "title", [
        "[Bug]: The lower version of Transformers does not recognize this architecture like `qwen3_vl`",
    ], "load.engine_outdated", "does not recognize this architecture", "pip install -U vllm transformers")


def test_nccl_failing_on_the_cuda_driver_is_the_cuda_stack(tmp_path) -> None:
    # NVIDIA/nccl include/checks.h CUDACHECK inside torch's ProcessGroupNCCL error
    assert_rank_one(tmp_path, "nccl-driver", [
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled cuda "
        "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
    ], "load.cuda_mismatch", "CUDA driver version is insufficient", None)


def test_a_custom_code_error_in_other_words_is_remote_code(tmp_path) -> None:
    assert_rank_one(tmp_path, "remote", ["RuntimeError: trust_remote_code must be set to True to load this model"],
                    "load.remote_code", "trust_remote_code must be set", "--trust-remote-code")


def test_missing_quantization_kernels_are_the_quantization(tmp_path) -> None:
    # casper-hansen/AutoAWQ awq/modules/linear/gemm.py imports its CUDA module awq_ext
    assert_rank_one(tmp_path, "awq-ext", ["ModuleNotFoundError: No module named 'awq_ext'"],
                    "load.quantization_unsupported", "awq_ext", None)


def test_launcher_flag_errors_of_clap_3_and_go(tmp_path) -> None:
    # clap-rs/clap v3 error/kind.rs UnknownArgument; spf13/pflag flag.go (Ollama's cobra CLI)
    assert_rank_one(tmp_path, "clap3", ["error: Found argument '--max-input-tokens' which wasn't expected, or isn't valid in "
                                        "this context"], "load.config_invalid", "--max-input-tokens", None)
    assert_rank_one(tmp_path, "pflag", ["Error: unknown flag: --ngl"], "load.config_invalid", "unknown flag: --ngl", None)


def test_docker_without_the_nvidia_runtime_sees_no_gpu(tmp_path) -> None:
    # moby/moby daemon/runtime_unix.go
    assert_rank_one(tmp_path, "runtime", ["docker: Error response from daemon: unknown or invalid runtime name: nvidia."],
                    "load.gpu_not_visible", "invalid runtime name: nvidia", "--gpus all")
    assert_rank_one(tmp_path, "entrypoint", [
        "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.",
        "   Use the NVIDIA Container Toolkit to start this container with GPU support; see",
        "RuntimeError: Failed to infer device type",
    ], "load.gpu_not_visible", "NVIDIA Driver was not detected", "--gpus all")


def test_an_extension_built_for_another_torch_is_reinstalled(tmp_path) -> None:
    # the dynamic loader's message for vLLM's _C built against another torch (vllm-project/vllm issues)
    assert_rank_one(tmp_path, "vllm-abi", [
        "ImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSs",
    ], "load.cuda_mismatch", "undefined symbol", "pip install --force-reinstall --no-cache-dir vllm")
    assert_rank_one(tmp_path, "fa-abi", [
        "ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined "
        "symbol: _ZN3c104cuda9SetDeviceEi",
    ], "load.cuda_mismatch", "flash_attn_2_cuda", "pip install --force-reinstall --no-cache-dir flash-attn")


def test_an_image_needing_a_newer_cuda_than_the_driver(tmp_path) -> None:
    # NVIDIA/libnvidia-container src/cli/configure.c: the image's NVIDIA_REQUIRE_CUDA against the host driver
    assert_rank_one(tmp_path, "require-cuda", [
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer "
        "version, or use an earlier cuda container: unknown",
    ], "load.cuda_mismatch", "cuda>=12.4", "nvidia-smi")
    top = findings_of(tmp_path / "require-cuda.log")[0]
    assert top.fixes[1].command == "-e NVIDIA_DISABLE_REQUIRE=1"


def test_cuda_runtime_names_for_a_binary_without_this_gpu(tmp_path) -> None:
    # cudaGetErrorString(cudaErrorJitCompilerNotFound) as ggml-cuda.cu and c10's CUDA_CHECK print it
    assert_rank_one(tmp_path, "ptxjit", ["ggml_cuda_init: failed to initialize CUDA: PTX JIT compiler library not found"],
                    "load.cuda_mismatch", "PTX JIT compiler library not found", None)


def test_a_bfloat16_gemm_cublas_refuses_is_the_dtype(tmp_path) -> None:
    # torch's CUDA_CHECK around cublasGemmStridedBatchedEx with CUDA_R_16BF (aten/src/ATen/cuda/CUDABlas.cpp) on a V100
    assert_rank_one(tmp_path, "bf16-gemm", [
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, opb, m, n, "
        "k, (void*)(&falpha), a, CUDA_R_16BF, lda, stridea, b, CUDA_R_16BF, ldb, strideb, (void*)(&fbeta), c, CUDA_R_16BF, ldc, "
        "stridec, num_batches, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
    ], "load.dtype_unsupported", "CUBLAS_STATUS_NOT_SUPPORTED", "--dtype float16")


def test_inductor_on_a_gpu_below_triton(tmp_path) -> None:
    # pytorch@v2.4.0 torch/_inductor/scheduler.py; vLLM V1 compiles the model with it by default
    assert_rank_one(tmp_path, "inductor-p100", [
        "[rank0]: torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
        "[rank0]: RuntimeError: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU compiler, which is "
        "used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.0",
    ], "load.cuda_mismatch", "too old to be supported by the triton GPU compiler", None)
    assert "older than every kernel" in findings_of(tmp_path / "inductor-p100.log")[0].fixes[0].summary


def test_a_wheel_built_on_a_newer_glibc(tmp_path) -> None:
    assert_rank_one(tmp_path, "glibcxx", [
        "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
        "/opt/conda/lib/python3.10/site-packages/vllm/_C.abi3.so)",
    ], "load.cuda_mismatch", "GLIBCXX_3.4.30", "conda install -c conda-forge libstdcxx-ng")


# --- helper load2: the neighbours' decision rules (doctor/logparse/chains.py OWNERS, checks/load/cuda.py, dtype.py,
# gpu_visibility.py, model_files.py), each against the neighbour it is told apart from
@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), [
    # NVIDIA/TensorRT-LLM#1515 (RTX 2080 Ti): fmhaRunner.cpp's check of the GPU's SM; the kernel path says whose architecture
    ("trtllm-fmha-gpu-arch", ["Assertion failed: Unsupported architecture (/tensorrt_llm/cpp/tensorrt_llm/kernels/"
                              "contextFusedMultiHeadAttention/fmhaRunner.cpp:89)"], "load.cuda_mismatch", "fmhaRunner.cpp", None),
    # sglang srt/models/registry.py _raise_for_unsupported: the model's architecture, no GPU word beside it
    ("sglang-model-arch", ["ValueError: Model architectures ['DeepseekV3ForCausalLM'] are not supported for now. Supported "
                           "architectures: dict_keys(['LlamaForCausalLM'])"], "load.engine_outdated", "DeepseekV3ForCausalLM",
     "pip install -U vllm transformers"),
    # TensorRT-LLM 05316d3 cutlass_kernels/cutlass_preprocessors.cpp: TLLM_CHECK_WITH_INFO(false, "Unsupported Arch")
    ("trtllm-cutlass-arch", ["RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Unsupported Arch (/opt/tritonserver/"
                             "TensorRT-LLM/cpp/tensorrt_llm/kernels/cutlass_kernels/cutlass_preprocessors.cpp:147)"],
     "load.cuda_mismatch", "Unsupported Arch", None),
    # opendatalab/MinerU#3416: the SGLang build's floor, as the user pasted it (double space kept)
    ("sglang-sm-floor", ["SGlang only supports sm 75 and  above"], "load.cuda_mismatch", "sm 75", None),
    # InternLM/lmdeploy fa0cd95 src/turbomind/python/bind.cpp: a TurboMind built without ENABLE_FP32
    ("turbomind-no-fp32", ["RuntimeError: Error: turbomind has not been built with fp32 support."], "load.dtype_unsupported",
     "fp32 support", "--dtype float16"),
    # huggingface/text-generation-inference 00e0d2d utils/flash_attn.py raises "CUDA is not available", models/__init__.py
    # warns with it, then the sharded model refuses: the missing GPU is the first cause (corpus h042's shape, TGI 1.4)
    ("tgi-flash-no-cuda", ["2024-03-13T15:34:11.255262Z  WARN text_generation_launcher: Could not import Flash Attention "
                           "enabled models: CUDA is not available",
                           "2024-03-13T15:34:11.256844Z ERROR text_generation_launcher: Error when initializing model",
                           "NotImplementedError: Sharded Qwen2(Qwen1.5-72B-Chat) requires Flash Attention enabled models."],
     "load.gpu_not_visible", "CUDA is not available", "--gpus all"),
    # the flash requirement alone: the kernels do not fit this GPU (or are not installed), no missing GPU said
    ("tgi-flash-alone", ["NotImplementedError: Sharded Llama requires Flash Attention enabled models."], "load.cuda_mismatch",
     "requires Flash Attention enabled models", None),
    # a llama.cpp build newer than the architecture list's snapshot (doctor/data/architectures.jsonl build_after) that does
    # not know the name: the list cannot say no build implements it; the same name from an older build is the file's
    ("llama-cpp-newer-than-snapshot", [*LLAMA_CPP_HEAD[:2], LLAMA_CPP_HEAD[2].replace("6019", "9721"),
                                       "llama_model_load: error loading model: error loading model architecture: unknown model "
                                       "architecture: 'nemotron5'"], "load.engine_outdated", "'nemotron5'",
     "docker pull ghcr.io/ggml-org/llama.cpp:server"),
    ("llama-cpp-older-than-snapshot", [*LLAMA_CPP_HEAD, "llama_model_load: error loading model: error loading model "
                                       "architecture: unknown model architecture: 'nemotron5'"], "load.model_files", "'nemotron5'", None),
], ids=lambda v: v if isinstance(v, str) and "-" in v and " " not in v else "")
def test_neighbour_decision(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_tgi_flash_models_missing_for_no_gpu_keeps_the_kernel_finding_second(tmp_path) -> None:
    log = tmp_path / "tgi.log"
    log.write_text("WARN text_generation_launcher: Could not import Flash Attention enabled models: CUDA is not available\n"
                   "NotImplementedError: Sharded Qwen2 requires Flash Attention enabled models.\n")
    assert [f.code for f in findings_of(log)][:2] == ["load.gpu_not_visible", "load.cuda_mismatch"]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), [
    # vllm/model_executor/models/registry.py: a listed architecture whose module failed to import; the import error says why
    ("vllm-inspection-after-undefined-symbol", [
        "ImportError: /usr/local/lib/python3.12/dist-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
        "ValueError: Model architectures ['Qwen3ForCausalLM'] failed to be inspected. Please check the logs for more details."],
     "load.cuda_mismatch", "undefined symbol", "pip install --force-reinstall --no-cache-dir vllm"),
    # transformers utils/import_utils.py _get_module: the import error follows the wrapper on the next line
    ("transformers-lazy-import-then-cause", [
        "RuntimeError: Failed to import transformers.models.qwen2.modeling_qwen2 because of the following error (look up to see "
        "its traceback):",
        "/usr/local/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi"], "load.cuda_mismatch", "flash_attn_2_cuda", "pip install --force-reinstall --no-cache-dir flash-attn"),
    # transformers v4.40.0 modeling_utils.py _check_and_enable_flash_attn_2
    ("transformers-flash-attn-missing", [
        "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn "
        "seems to be not installed. Please refer to the documentation of https://huggingface.co/docs/transformers/"
        "perf_infer_gpu_one#flashattention-2 to install Flash Attention 2."], "load.cuda_mismatch", "flash_attn seems to be not installed",
     "pip install flash-attn --no-build-isolation"),
    # flash-attn v2.5.8 csrc/flash_attn/flash_api.cpp TORCH_CHECK on the query dtype
    ("flash-attn-float32", ["RuntimeError: FlashAttention only support fp16 and bf16 data type"], "load.dtype_unsupported",
     "fp16 and bf16", "--dtype float16"),
    # pytorch v2.4.0 aten/src/ATen/cuda/CUDAContext.cpp getDeviceProperties' AT_ASSERT, raised lazily by torch/cuda/__init__.py
    ("torch-device-beyond-num-gpus", [
        "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && device < num_gpus "
        "INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\":50, please report a bug to PyTorch."],
     "load.gpu_not_visible", "device < num_gpus", None),
    # pytorch aten/src/ATen/Dispatch.h: a CPU matmul asked for float16 -- the model is on the CPU
    ("torch-cpu-kernel-half", ["RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'"], "load.gpu_not_visible",
     "addmm_impl_cpu_", "--gpus all"),
    # transformers v4.40.0 modeling_utils.py load_state_dict: a Git LFS pointer where the weights should be
    ("transformers-git-lfs-pointer", [
        "OSError: You seem to have cloned a repository without having git-lfs installed. Please install git-lfs and run `git lfs "
        "install` followed by `git lfs pull` in the folder you cloned."], "load.model_files", "git-lfs", None),
    # pytorch caffe2/serialize/inline_container.cc: a checkpoint zip without its central directory (a cut download)
    ("torch-truncated-checkpoint", ["RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory"],
     "load.model_files", "central directory", None),
    # torch.nn.Module.load_state_dict: shapes the config does not build
    ("torch-state-dict-size-mismatch", [
        "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:",
        "\tsize mismatch for model.embed_tokens.weight: copying a param with shape torch.Size([128256, 4096]) from checkpoint, the "
        "shape in current model is torch.Size([32000, 4096])."], "load.model_files", "size mismatch", None),
    # flashinfer 13289e8 flashinfer/jit/core.py check_cuda_arch: every target arch below sm75
    ("flashinfer-sm75-floor", ["RuntimeError: FlashInfer requires GPUs with sm75 or higher"], "load.cuda_mismatch", "sm75", None),
    # TGI's Marlin floor is the quantization's, not the build's (a floor stated for a quantization)
    ("tgi-marlin-floor", ["NotImplementedError: Using quantized Marlin models requires a GPU with CUDA capability 8.0 or later."],
     "load.quantization_unsupported", "Marlin", None),
    # pytorch v2.4.0 torch/_ops.py: an op of vLLM's compiled extension that never registered
    ("torch-op-namespace", ["AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'"], "load.cuda_mismatch",
     "_OpNamespace", None),
    # vllm bb435db model_executor/layers/mamba/mamba_mixer2.py: the divisibility said the other way round, no sizes in it
    ("vllm-mamba-tp-divide", ["AssertionError: Tensor parallel world size must divide num heads."], "load.tp_invalid",
     "must divide num heads", None),
    # huggingface_hub v0.20.3 file_download.py http_get: the downloaded weights are shorter than the Hub says
    ("hub-download-cut-short", ["OSError: Consistency check failed: file should be of size 4227858712 but has size 2290365199 "
                                "(model-00045-of-00061.safetensors)."], "load.model_files", "Consistency check failed", None),
    # kubernetes v1.29.0 apimachinery wait.ErrWaitTimeout, as `kubectl wait` / `helm --wait` print it
    ("kubectl-wait-timeout", ["error: timed out waiting for the condition on deployments/vllm"], "load.startup_timeout",
     "timed out waiting for the condition", None),
    # vllm v0.6.3 tests/utils.py RemoteOpenAIServer: the harness's /health poll gave up
    ("harness-start-in-time", ["RuntimeError: Server failed to start in time."], "load.startup_timeout", "failed to start in time",
     None),
    # torch's NVRTC older than the GPU (jiterator kernels on Blackwell with a cu128 wheel)
    ("torch-nvrtc-arch", ["RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)"], "load.cuda_mismatch",
     "--gpu-architecture", None),
], ids=lambda v: v if isinstance(v, str) and "-" in v and " " not in v else "")
def test_source_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_a_wrapper_alone_names_no_cause(tmp_path) -> None:
    """vLLM's inspection failure says only that an import failed: with nothing above it the doctor cannot place it."""
    log = tmp_path / "inspect.log"
    log.write_text("ValueError: Model architectures ['Qwen3ForCausalLM'] failed to be inspected. Please check the logs for more details.\n")
    assert findings_of(log)[0].code == "load.unrecognized_failure"


def test_tgi_download_error_reads_the_downloaders_own_error(tmp_path) -> None:
    # text-generation-inference db931fc launcher/src/main.rs: "Download encountered an error: {err}" quotes the downloader's
    # stderr; huggingface_hub's GatedRepoError in it is the cause, LauncherError::DownloadError (tgi.jsonl, echo) only repeats it
    assert_rank_one(tmp_path, "tgi-download", [
        "2024-05-01T10:00:00.000000Z ERROR download: text_generation_launcher: Download encountered an error: "
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
        "https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json.",
        "Error: DownloadError"], "load.model_files", "GatedRepoError", "huggingface-cli login")


def test_vllm_attention_refused_for_the_dtype_alone_is_the_dtype(tmp_path) -> None:
    # vllm 002db49 platforms/cuda.py get_attn_backend_cls, reasons from v1/attention/backend.py validate_configuration
    assert_rank_one(tmp_path, "vllm-attn-dtype", [
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, dtype=torch.float32, "
        "kv_cache_dtype=auto, block_size=None, use_mla=False). Reasons: {FLASH_ATTN: [dtype not supported], FLASHINFER: [dtype "
        "not supported]}."], "load.dtype_unsupported", "dtype not supported", "--dtype float16")


def test_vllm_attention_refused_for_a_setting_stays_the_configuration(tmp_path) -> None:
    assert_rank_one(tmp_path, "vllm-attn-kv-dtype", [
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, dtype=torch.float16, "
        "kv_cache_dtype=fp8, block_size=None, use_mla=False). Reasons: {FLASH_ATTN: [dtype not supported, kv_cache_dtype not "
        "supported], FLASHINFER: [kv_cache_dtype not supported]}."], "load.config_invalid", "kv_cache_dtype not supported", None)


def test_a_disk_quota_is_no_api_quota(tmp_path) -> None:
    """errno EDQUOT (glibc errlist.h "Disk quota exceeded") while the engine writes: the filesystem's limit, which no code
    names, so it stays an unplaced load failure instead of the API's access.quota_exceeded."""
    log = tmp_path / "quota.log"
    log.write_text("OSError: [Errno 122] Disk quota exceeded\n")
    assert [f.code for f in findings_of(log)][:1] == ["load.unrecognized_failure"]
