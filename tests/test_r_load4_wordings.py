"""Load failures whose engine's source decides the code: which memory a ggml buffer type allocates (the CPU and
CUDA/ROCm host buffer types are host RAM, not the GPU's), a TGI warning after which the engine goes on without
flash attention (what fails next is the cause), an expert count above llama.cpp's compiled cap, a CUDA backend
that counted no device. Each log is written the way the cited source prints it."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.report import build_report


def findings(tmp_path: Path, text: str):
    path = tmp_path / "engine.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(60))
    return build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts).findings


@pytest.mark.parametrize("log", [
    # ggml-backend.cpp ggml_backend_cpu_buffer_type_alloc_buffer (ggml_aligned_malloc), then ggml-alloc.c
    # alloc_tensor_range naming the CUDA host buffer type, then llama-model.cpp load_tensors
    "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 9925767168\n"
    "alloc_tensor_range: failed to allocate CUDA_Host buffer of size 9925767168\n"
    "llama_model_load: error loading model: unable to allocate CUDA_Host buffer\n",
    # the CPU repack buffer type of a CPU-only run (ggml-cpu repack.cpp names it CPU_REPACK)
    "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 1941258240\n"
    "llama_model_load: error loading model: unable to allocate CPU_REPACK buffer\n",
])
def test_a_host_buffer_that_cannot_be_allocated_is_host_ram(tmp_path: Path, log: str) -> None:
    top = findings(tmp_path, log)[0]
    assert top.code == "load.host_oom"
    assert "failed to allocate buffer of size" in top.evidence[0] or "unable to allocate" in top.evidence[0]


def test_a_device_buffer_stays_the_gpus(tmp_path: Path) -> None:
    log = ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.00 MiB on device 0: cudaMalloc failed: out of memory\n"
           "alloc_tensor_range: failed to allocate CUDA0 buffer of size 21474836480\n"
           "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n")
    codes = [f.code for f in findings(tmp_path, log)]
    assert codes[0] == "load.weights_oom"
    assert "load.host_oom" not in codes


def test_a_kv_cache_in_host_memory_is_the_context_asked_for(tmp_path: Path) -> None:
    # llama-context / llama_kv_cache_init: the KV cache of n_ctx tokens in the CPU buffer type
    log = ("llama_new_context_with_model: n_ctx      = 1048576\n"
           "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 137438953504\n"
           "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
           "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache\n")
    got = findings(tmp_path, log)
    assert got[0].code == "load.kv_cache_insufficient"
    assert got[0].fixes[0].command == "-c 32768"
    assert "4.0 GiB" in got[0].fixes[0].summary  # 32768 tokens at 131072 bytes each


def test_tgi_going_on_without_flash_attention_is_not_the_cause(tmp_path: Path) -> None:
    # utils/flash_attn.py logger.warning (v1.4.0), then models/__init__.py get_model's AutoModel path
    log = ("2024-02-19T04:30:51.102385Z  WARN text_generation_launcher: Unable to use Flash Attention V2: GPU with CUDA "
           "capability 7 5 is not supported for Flash Attention V2\n"
           "2024-02-19T04:30:52.000000Z ERROR text_generation_launcher: Error when initializing model\n"
           'NotImplementedError: awq quantization is not supported for AutoModel\n')
    got = findings(tmp_path, log)
    assert got[0].code == "load.quantization_unsupported"
    cuda = next(f for f in got if f.code == "load.cuda_mismatch")
    assert cuda.severity == "warn"


def test_tgi_capability_error_alone_stays_a_cuda_mismatch(tmp_path: Path) -> None:
    top = findings(tmp_path, "ImportError: GPU with CUDA capability 7 0 is not supported\n")[0]
    assert top.code == "load.cuda_mismatch" and top.severity == "error"


def test_more_experts_than_the_build_supports_is_an_old_llamacpp(tmp_path: Path) -> None:
    # src/llama-model.cpp load_hparams
    top = findings(tmp_path, "/llama.cpp/src/llama-model.cpp:452: GGML_ASSERT(hparams.n_expert <= LLAMA_MAX_EXPERTS) failed\n")[0]
    assert top.code == "load.engine_outdated"


def test_a_cuda_backend_with_no_device(tmp_path: Path) -> None:
    # ggml-cuda.cu ggml_cuda_init
    top = findings(tmp_path, "ggml_cuda_init: found 0 CUDA devices (Total VRAM: 0 MiB):\n")[0]
    assert top.code == "load.gpu_not_visible"


def test_hip_without_a_code_object_for_the_gpu(tmp_path: Path) -> None:
    # ROCm clr hipamd/src/hip_code_object.cpp
    top = findings(tmp_path, '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n')[0]
    assert top.code == "load.cuda_mismatch"
    assert top.fixes[0].command == "HSA_OVERRIDE_GFX_VERSION=10.3.0"


def test_triton_trtllm_engine_config_from_another_version(tmp_path: Path) -> None:
    # tensorrtllm_backend model_instance_state.cc wrapping the engine config reader's nlohmann exception
    log = ('E0703 14:20:40.781912 368 backend_model.cc:692] "ERROR: Failed to create instance: unexpected error when '
           "creating modelInstanceState: [json.exception.out_of_range.403] key 'use_context_fmha_for_generation' not found\"\n")
    top = findings(tmp_path, log)[0]
    assert top.code == "load.cuda_mismatch"
    assert top.fixes[0].summary.startswith("Rebuild the TensorRT engine here")


def test_ollama_dropping_a_gpu_its_cuda_backend_has_no_kernels_for(tmp_path: Path) -> None:
    # discover/llama_server.go
    log = ('time=2026-08-01T10:00:00.000Z level=INFO source=llama_server.go:299 msg="skipping CUDA device — compute '
           'capability not in compiled architectures" device="Tesla K80" cc=37 archs="50;61;70;75;80;86;89;90;100;120"\n')
    assert findings(tmp_path, log)[0].code == "load.cuda_mismatch"
