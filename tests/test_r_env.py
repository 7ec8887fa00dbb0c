"""Environment and version failures whose engine's or driver's source decides the code: the NVIDIA driver's own
libcuda missing is a process given no GPU (unless the machine is AMD's, where a CUDA build asked for it). Each log is
written the way the cited source prints it, or is a real log's line."""

from __future__ import annotations

from pathlib import Path

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.report import build_report


def findings(tmp_path: Path, text: str):
    path = tmp_path / "engine.log"
    path.write_text(text)
    facts = load_paths([str(path)], Deadline(60))
    return build_report(run_checks(facts, select(load_checks()), Deadline(60)), facts).findings


def test_the_drivers_libcuda_missing_is_a_gpu_not_given(tmp_path: Path) -> None:
    # glibc ld.so for llama.cpp's server-cuda image run without the NVIDIA runtime; libcuda.so is the "CUDA driver
    # library" NVIDIA/libnvidia-container src/nvc_info.c (compute_libs) mounts only into a container given GPUs
    log = "/server: error while loading shared libraries: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    top = findings(tmp_path, log)[0]
    assert top.code == "load.gpu_not_visible"
    assert "libcuda.so.1: cannot open shared object file" in top.evidence[0]
    assert top.fixes[0].command == "--gpus all"


def test_the_cuda_runtime_missing_stays_a_build_mismatch(tmp_path: Path) -> None:
    # a wheel's CUDA runtime (libcudart), not the driver's library: the wheel was built for another CUDA
    log = "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
    top = findings(tmp_path, log)[0]
    assert top.code == "load.cuda_mismatch"
    assert "libcudart.so.12 is missing" in top.fixes[0].summary


def test_libcuda_missing_on_a_rocm_machine_is_a_cuda_build(tmp_path: Path) -> None:
    # SGLang on ROCm importing a CUDA sgl_kernel (real log, shared/corpus d030), with vLLM's platform detection
    # (vllm/platforms/__init__.py: "Automatically detected platform rocm.")
    log = ("INFO 03-26 11:12:30 __init__.py:207] Automatically detected platform rocm.\n"
           "[2025-03-26 11:03:17 TP0] Failed to import from custom_ar with ImportError('libcuda.so.1: cannot open shared "
           "object file: No such file or directory')\n")
    got = findings(tmp_path, log)
    assert got[0].code == "load.cuda_mismatch"
    assert "ROCm build" in got[0].fixes[0].summary
    assert "load.gpu_not_visible" not in [f.code for f in got]


def test_ollama_skipping_every_gpu_library_is_a_gpu_not_used(tmp_path: Path) -> None:
    # ollama v0.12.6 discover/runner.go: slog.Debug("skipping available library at users request", "requested", requested,
    # "libDir", dir) for each library folder OLLAMA_LLM_LIBRARY does not name; no "inference compute" GPU after it
    log = ('time=2025-10-20T10:00:00.000Z level=DEBUG source=runner.go:94 msg="skipping available library at users request" '
           'requested=cuda libDir=/usr/lib/ollama/cuda_v12\n'
           'time=2025-10-20T10:00:00.001Z level=DEBUG source=runner.go:94 msg="skipping available library at users request" '
           'requested=cuda libDir=/usr/lib/ollama/cuda_v13\n')
    top = findings(tmp_path, log)[0]
    assert top.code == "load.gpu_not_visible"
    assert "skipping available library at users request" in top.evidence[0]


def test_ollama_skipping_one_library_before_a_gpu_is_found_is_no_failure(tmp_path: Path) -> None:
    # the same skip, then discover/types.go LogDetails' "inference compute" line for the GPU it uses
    log = ('time=2025-10-20T10:00:00.000Z level=DEBUG source=runner.go:94 msg="skipping available library at users request" '
           'requested=cuda_v12 libDir=/usr/lib/ollama/cuda_v13\n'
           'time=2025-10-20T10:00:01.000Z level=INFO source=types.go:130 msg="inference compute" id=GPU-44f1701b library=cuda '
           'variant=v12 compute=8.6 driver=12.4 name="NVIDIA GeForce RTX 3090" total="23.7 GiB" available="23.4 GiB"\n')
    assert "load.gpu_not_visible" not in [f.code for f in findings(tmp_path, log)]


def test_a_reloaded_nvidia_uvm_names_a_gpu_not_seen(tmp_path: Path) -> None:
    # a person's cure for Ollama on the CPU (real log, corpus k046): the unified-memory module reloaded; beside Ollama's
    # discovery debug lines (discover/gpu.go "Detecting GPUs") that end before any GPU is found
    log = (">Try reloading the nvidia_uvm driver - `sudo rmmod nvidia_uvm` then `sudo modprobe nvidia_uvm`\n\n"
           'time=2024-06-04T21:36:06.363-06:00 level=DEBUG source=gpu.go:132 msg="Detecting GPUs"\n')
    got = findings(tmp_path, log)
    assert got[0].code == "load.gpu_not_visible"
    assert "nvidia_uvm" in got[0].evidence[0]


def test_packed_quantized_weights_the_layers_lack_are_the_quantization(tmp_path: Path) -> None:
    # vLLM v0.2 models/mistral.py load_weights (`param = state_dict[name]`) meeting AutoAWQ's WQLinear_GEMM qweight
    log = ("python -m vllm.entrypoints.api_server --model TheBloke/Mistral-7B-OpenOrca-AWQ\n"
           '  File "/usr/local/lib/python3.10/site-packages/vllm/model_executor/models/mistral.py", line 388, in load_weights\n'
           "    param = state_dict[name]\n"
           "KeyError: 'model.layers.0.mlp.down_proj.qweight'\n")
    top = findings(tmp_path, log)[0]
    assert top.code == "load.quantization_unsupported"
    assert "model.layers.0.mlp.down_proj.qweight" in top.evidence[0]
    assert top.fixes[0].command == "--quantization awq"


def test_an_unknown_plain_weight_stays_an_outdated_engine(tmp_path: Path) -> None:
    # a checkpoint tensor with no parameter in the engine's model class, not a quantized one
    top = findings(tmp_path, "KeyError: 'model.layers.0.self_attn.q_norm.weight'\n")[0]
    assert top.code == "load.engine_outdated"


def test_a_tensor_the_build_lays_out_otherwise_is_an_outdated_llamacpp(tmp_path: Path) -> None:
    # llama.cpp src/llama-model-loader.cpp check_tensor_dims ("%s: tensor '%s' has wrong shape; expected %s, got %s"), real
    # log (corpus l006): ik_llama.cpp reading a GGUF of mainline's later MLA layout
    log = ("llama_model_load: error loading model: check_tensor_dims: tensor 'blk.0.attn_q_b.weight' has wrong shape; "
           "expected  1536, 73728, got  1536, 24576,     1,     1\n"
           "llama_load_model_from_file: failed to load model\n")
    top = findings(tmp_path, log)[0]
    assert top.code == "load.engine_outdated"
    assert "blk.0.attn_q_b.weight" in top.title
    assert top.fixes[0].command == "docker pull ghcr.io/ggml-org/llama.cpp:server"


def test_tied_output_weights_an_older_build_asks_for_are_an_outdated_engine(tmp_path: Path) -> None:
    # older llama.cpp create_tensor ("%s: tensor '%s' not found") on Llama 3.2's GGUF, which has no output.weight
    top = findings(tmp_path, "error loading model: create_tensor: tensor 'output.weight' not found\n")[0]
    assert top.code == "load.engine_outdated"

