"""Round k: llama.cpp, Ollama and LMDeploy failure wordings read from their sources (doctor/data/catalogue/llamacpp.jsonl,
ollama.jsonl, lmdeploy.jsonl), at rank 1 with the line they rest on and the fix value the check computes. Lines are the
messages as the source formats them, with plausible values where no public thread quotes them."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # src/llama-vocab.cpp: a BPE GGUF written without tokenizer.ggml.merges (a broken conversion)
    ("llamacpp-no-merges", [
        "print_info: file type   = Q6_K",
        "llama_model_load: error loading model: error loading model vocabulary: cannot find tokenizer merges in model file",
        "llama_model_load_from_file_impl: failed to load model",
    ], "load.model_files", "cannot find tokenizer merges", None),
    # src/llama-model.cpp load_hparams: the rope dimension count disagrees with the head size
    ("llamacpp-invalid-n-rot", [
        "llama_model_load: error loading model: error loading model hyperparameters: invalid n_rot: 128, expected 160",
    ], "load.model_files", "invalid n_rot: 128, expected 160", None),
    # ggml-cuda.cu ggml_cuda_init: cudaErrorDevicesUnavailable (exclusive-process compute mode, a device the container cannot open)
    ("llamacpp-cuda-devices-busy", [
        "ggml_cuda_init: failed to initialize CUDA: CUDA-capable device(s) is/are busy or unavailable",
    ], "load.gpu_not_visible", "is/are busy or unavailable", "--gpus all"),
    # discover/gpu.go (v0.3): the bundled CUDA runtime refuses the driver (cudaErrorInsufficientDriver)
    ("ollama-cudart-insufficient-driver", [
        'time=2024-10-01T10:00:00.000Z level=INFO source=gpu.go:616 msg="Unable to load cudart library '
        '/usr/lib/ollama/libcudart.so.12.4.99: cudart init failure: 35"',
        'time=2024-10-01T10:00:00.000Z level=INFO source=gpu.go:386 msg="no compatible GPUs were discovered"',
    ], "load.cuda_mismatch", "cudart init failure: 35", None),
    # cmd/cmd.go RunServer: the installed service already holds 11434
    ("ollama-port-in-use", [
        "$ ollama serve",
        "Error: listen tcp 127.0.0.1:11434: bind: address already in use",
    ], "load.config_invalid", "bind: address already in use", None),
    # server/download.go: the pull writes its blobs under OLLAMA_MODELS
    ("ollama-pull-disk-full", [
        "pulling 6a0746a1ec1a...  43% 2.1 GB/4.7 GB",
        "Error: write /usr/share/ollama/.ollama/models/blobs/sha256-6a0746a1ec1aef3e7ec53868f220ff6e389f6f8ef87a01d77c96807de94ca2aa"
        "-partial-0: no space left on device",
    ], "load.model_files", "no space left on device", None),
    # lmdeploy/turbomind/turbomind.py imports the compiled extension
    ("lmdeploy-no-turbomind-extension", [
        "  File \"/work/lmdeploy/lmdeploy/turbomind/turbomind.py\", line 31, in <module>",
        "    import _turbomind as _tm  # noqa: E402",
        "ModuleNotFoundError: No module named '_turbomind'",
    ], "load.cuda_mismatch", "No module named '_turbomind'", None),
    # lmdeploy/serve/openai/launch_server.py
    ("lmdeploy-port-not-available", [
        "ValueError: Port 23333 is not available",
    ], "load.config_invalid", "Port 23333 is not available", None),
    # lmdeploy/pytorch/check_env/model.py: a bfloat16 checkpoint on a pre-Ampere GPU
    ("lmdeploy-no-bf16", [
        "2025-06-01 10:00:00,000 - lmdeploy - WARNING - model.py:61 - Device does not support bfloat16.",
    ], "load.dtype_unsupported", "Device does not support bfloat16.", "--dtype float16"),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


@pytest.mark.parametrize("line", [
    # src/turbomind/models/llama/LlamaBatch.cc (v0.4 .. v0.8)
    "[TM][WARNING] [ProcessInferRequests] [1] total sequence length (3000 + 2048) exceeds `session_len` (4096), "
    "`request_output_len` is truncated to 1095",
    # src/turbomind/engine/engine.cc (v0.16)
    "[TM][WARN] ID 3: total sequence length (3000 + 2048) exceeds `session_len` (4096), `max_new_tokens` is truncated to 1095",
])
def test_a_turbomind_session_len_cut_sizes_the_session_for_prompt_and_output(tmp_path, line: str) -> None:
    """TurboMind counts the requested output into session_len: the fix holds 3000 + 2048 tokens, not the prompt alone."""
    log = tmp_path / "lmdeploy.log"
    log.write_text(line + "\n")
    top = findings_of(log)[0]
    assert top.code == "load.config_invalid"
    assert top.title == "a prompt of 3000 tokens plus 2048 to generate does not fit the 4096-token context"
    assert top.fixes[0].command == "--session-len 5120"


def test_the_pytorch_engines_session_len_warning_is_a_context_finding(tmp_path) -> None:
    """lmdeploy/pytorch/engine/engine.py names only the limit: the finding says so, with no invented size."""
    log = tmp_path / "lmdeploy.log"
    log.write_text("2025-06-01 10:00:00,000 - lmdeploy - WARNING - engine.py:449 - session[1]: num tokens is larger than "
                   "max session len 4096. Update max_new_tokens=-904.\n")
    top = findings_of(log)[0]
    assert top.code == "load.config_invalid"
    assert any("max session len 4096" in line for line in top.evidence)
    assert top.fixes[0].command is None
