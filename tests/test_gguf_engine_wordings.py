"""Failure wordings of llama.cpp and Ollama, mined from their sources (doctor/data/catalogue/llamacpp.jsonl,
ollama.jsonl), at rank 1 with the line they rest on and the fix each engine needs. Every log line is
verbatim from the public issue thread named beside it."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

OLLAMA_UPGRADE = "curl -fsSL https://ollama.com/install.sh | sh"
LLAMACPP_UPGRADE = "docker pull ghcr.io/ggml-org/llama.cpp:server"

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # ollama/ollama#9429: phi4-mini needs a newer runner than this Ollama ships
    ("ollama-missing-tensor", [
        "Error: llama runner process has terminated: error loading model: missing tensor 'output.weight'",
    ], "load.engine_outdated", "missing tensor 'output.weight'", OLLAMA_UPGRADE),
    ("ollama-missing-tensor-server-log", [
        'time=2025-02-28T13:08:37.862-08:00 level=ERROR source=server.go:421 msg="llama runner terminated" error="exit status 2"',
        'time=2025-02-28T13:08:38.052-08:00 level=ERROR source=sched.go:456 msg="error loading llama server" '
        'error="llama runner process has terminated: error loading model: missing tensor \'output.weight\'"',
    ], "load.engine_outdated", "missing tensor 'output.weight'", OLLAMA_UPGRADE),
    # ggml-org/llama.cpp#23033: a Qwen3.6 GGUF on a build without its tensors
    ("llamacpp-missing-tensor", [
        "srv    load_model: loading model '/models/qwen36/Qwen_Qwen3.6-35B-A3B-Q8_0.gguf'",
        "llama_model_load: error loading model: missing tensor 'blk.40.ssm_conv1d.weight'",
        "llama_model_load_from_file_impl: failed to load model",
    ], "load.engine_outdated", "missing tensor 'blk.40.ssm_conv1d.weight'", LLAMACPP_UPGRADE),
    # oobabooga/textgen#7257: llama-server's 400 quotes the prompt's length and one slot's context; this is its answer as the
    # client got it (no access code names a prompt too long: access.unrecognized_failure, checks/access/client_log.py)
    ("llamacpp-context-exceeded-sizes", [
        '{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size '
        'or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}',
    ], "access.unrecognized_failure", '"n_prompt_tokens":14429', "--ctx-size 15360"),
    # ggml-org/llama.cpp#28524 and tmac1973/llama-toolchest#165: a quantized V cache with flash attention off
    ("llamacpp-quantized-v-cache-fa-off", [
        "failed to initialize the context: quantized V cache was requested, but this requires Flash Attention",
    ], "load.config_invalid", "quantized V cache was requested", "-fa on"),
    ("llamacpp-quantized-v-cache-fa-off-new-wording", [
        "E llama_init_from_model: quantized V cache requires flash_attn to be enabled",
    ], "load.config_invalid", "quantized V cache requires flash_attn", "-fa on"),
    # NixOS/nixpkgs#320145: the toolkit's libcuda stub instead of the driver
    ("llamacpp-cuda-stub-library", [
        "ggml_cuda_init: failed to initialize CUDA: CUDA driver is a stub library",
    ], "load.gpu_not_visible", "CUDA driver is a stub library", None),
    # meta-llama/llama3#215 (Ollama on Ubuntu 18.04 with a T4)
    ("llamacpp-cuda-initialization-error", [
        "ggml_cuda_init: failed to initialize CUDA: initialization error",
    ], "load.gpu_not_visible", "initialization error", None),
    # ollama/ollama#5573
    ("llamacpp-cuda-driver-combination", [
        "ggml_cuda_init: failed to initialize CUDA: system has unsupported display driver / cuda driver combination",
    ], "load.cuda_mismatch", "unsupported display driver / cuda driver combination", None),
    # mostlygeek/llama-swap#247: the Vulkan build in a container sees no GPU
    ("llamacpp-vulkan-no-devices", [
        "ggml_vulkan: No devices found.",
    ], "load.gpu_not_visible", "ggml_vulkan: No devices found.", None),
    # ollama/ollama#1992: Ollama 0.1.20 skips a compute-5.2 card
    ("ollama-cuda-gpu-too-old", [
        "2024/01/14 19:50:06 gpu.go:138: CUDA GPU is too old. Falling back to CPU mode. Compute Capability detected: 5.2",
        "2024/01/14 19:50:06 routes.go:953: no GPU detected",
    ], "load.cuda_mismatch", "CUDA GPU is too old", None),
    # ollama/ollama#4131: llama3:70b-instruct-q8_0 does not load within Ollama's load timeout
    ("ollama-runner-start-timeout", [
        "$ ollama run llama3:70b-instruct-q8_0",
        "Error: timed out waiting for llama runner to start - progress 0.00 -",
    ], "load.startup_timeout", "timed out waiting for llama runner to start", "OLLAMA_LOAD_TIMEOUT=15m"),
    # ollama/ollama#8065: the server's DNS cannot resolve the registry
    ("ollama-registry-dns", [
        'Error: pull model manifest: Get "https://registry.ollama.ai/v2/library/mxbai-embed-large/manifests/latest": '
        "dial tcp: lookup registry.ollama.ai on 127.0.0.53:53: server misbehaving",
    ], "load.model_files", "lookup registry.ollama.ai", None),
    # ollama/ollama#2402
    ("ollama-registry-blob-dns", [
        'Error: Head "https://registry.ollama.ai/v2/library/llama2/blobs/sha256:8934d96d3f08982e95922b2b7a2c626a1fe873d7c3b06e8e56d7bc0a1fef9246": '
        "dial tcp: lookup registry.ollama.ai on 192.168.0.1:53: no such host",
    ], "load.model_files", "no such host", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_an_ollama_registry_failure_is_fixed_on_the_server_not_with_the_hub(tmp_path) -> None:
    """ollama pull runs in the server process: the proxy or DNS it needs is the server's (ollama/ollama#3434)."""
    log = tmp_path / "pull.log"
    log.write_text('Error: pull model manifest: Get "https://registry.ollama.ai/v2/library/qwen/manifests/0.5b": '
                   "dial tcp: lookup registry.ollama.ai: i/o timeout\n")
    top = findings_of(log)[0]
    assert top.code == "load.model_files"
    assert "Ollama server" in top.fixes[0].summary and "HTTPS_PROXY" in top.fixes[0].summary
    assert not any("huggingface" in (f.command or "") for f in top.fixes)


def test_a_prompt_longer_than_the_micro_batch_sizes_both_batches(tmp_path) -> None:
    """An embedding input above -ub (examples/server/server.cpp: "input (N tokens) is too large to process")."""
    log = tmp_path / "embed.log"
    log.write_text('{"error":{"code":500,"message":"input (11257 tokens) is too large to process. increase the physical '
                   'batch size (current batch size: 8192)","type":"server_error"}}\n')
    top = findings_of(log)[0]
    assert top.code == "load.config_invalid"
    assert top.title == "an input of 11257 tokens is longer than the micro-batch (8192)"
    assert top.fixes[0].command == "-b 11264 -ub 11264"


def test_an_ollama_load_the_client_abandoned_names_the_client_first(tmp_path) -> None:
    """The warning ollama/ollama#4638 added (llm/server.go): the client's timeout ran out before the load finished."""
    log = tmp_path / "ollama.log"
    log.write_text('time=2024-06-01T10:00:00.000Z level=WARN source=server.go:594 '
                   'msg="client connection closed before server finished loading, aborting load"\n')
    top = findings_of(log)[0]
    assert top.code == "load.startup_timeout"
    assert top.fixes[0].summary.startswith("The client gave up first")
    assert top.fixes[1].command == "OLLAMA_LOAD_TIMEOUT=15m"


def test_an_ollama_runtime_oom_is_relieved_with_ollamas_own_settings(tmp_path) -> None:
    """The scheduler's warning as server/sched.go (v0.32) prints it: fewer parallel slots, not llama.cpp's -b/-ub."""
    log = tmp_path / "ollama.log"
    log.write_text('time=2026-05-01T10:00:00.000Z level=WARN source=sched.go:1648 msg="runtime OOM detected; expiring loaded '
                   'models to clear memory before next request" model=qwen3:32b error="cudaMalloc failed: out of memory"\n')
    top = findings_of(log)[0]
    assert top.code == "load.runtime_oom"
    assert [f.command for f in top.fixes][:1] == ["OLLAMA_NUM_PARALLEL=1"]


def test_a_model_too_large_for_ollama_is_a_memory_finding_with_gguf_fixes(tmp_path) -> None:
    """Since the llama-server runner (v0.30) Ollama logs "model is too large for system memory" (server/sched.go) and
    answers "unable to load full model on GPU": the host-memory finding comes first, without vLLM's --load-format."""
    log = tmp_path / "ollama.log"
    log.write_text('time=2026-06-01T10:00:01.000Z level=INFO source=sched.go:632 msg="model is too large for system memory" '
                   'requireFull=false\nError: 500 Internal Server Error: unable to load full model on GPU\n')
    findings = findings_of(log)
    assert [f.code for f in findings][:2] == ["load.host_oom", "load.weights_oom"]
    assert findings[0].title == "the model does not fit in system memory (RAM and the GPUs together)"
    assert not any(f.command == "--load-format safetensors" for f in findings[0].fixes)
