"""Every load code at rank 1 on a real log (fixtures/logs/*.log, sources in the sidecars), with the
evidence line it rests on and the exact fix value computed from the log's numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.collect.files import load_paths
from llm_doctor.engine import Deadline, load_checks, run_checks, select
from llm_doctor.report import build_report

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def diagnose(name: str) -> list:
    return findings_of(LOGS / name)


def findings_of(path: Path) -> list:
    facts = load_paths([str(path)], Deadline(30))
    return build_report(run_checks(facts, select(load_checks()), Deadline(30)), facts).findings


# (fixture, rank-1 code, a substring of the evidence, an exact fix command or None)
CASES = [
    ("vllm-0.4.1-a10g-mistral7b-kv-cache-insufficient.log", "load.kv_cache_insufficient",
     "max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (16864)", "--max-model-len 16864"),
    ("vllm-v1-kv-cache-needed-gib.log", "load.kv_cache_insufficient", "2.63 GiB KV cache is needed", "--max-model-len 5088"),
    ("vllm-0.5.4-tp2-llama70b-kv-cache-three-attempts.log", "load.kv_cache_insufficient", "KV cache (10944)", "--max-model-len 10944"),
    ("llamacpp-n-ctx-1m-kv-alloc-failed.log", "load.kv_cache_insufficient", "failed to allocate buffer of size 137438953504", "-c 32768"),
    ("vllm-0.8.5-v1-no-cache-blocks.log", "load.no_kv_cache_memory", "No available memory for the cache blocks", None),
    ("vllm-0.9.1-tp2-free-memory-below-utilization.log", "load.gpu_memory_occupied", "Free memory on device (31.44/47.38 GiB)",
     "--gpu-memory-utilization 0.64"),
    ("vllm-0.8.3-second-instance-nvidia-smi.log", "load.gpu_memory_occupied", "No available memory for the cache blocks", None),
    ("vllm-a800-qwen2vl72b-weights-oom.log", "load.weights_oom", "Tried to allocate 462.00 MiB", None),
    ("sglang-mixtral-tp1-weights-oom.log", "load.weights_oom", "Tried to allocate 112.00 MiB", None),
    ("vllm-mllama-tp4-profile-run-oom.log", "load.runtime_oom", "Tried to allocate 19.63 GiB", "--max-num-batched-tokens 4096"),
    ("vllm-0.8.4-v1-ray-tp16-cgraph-channel-timeout.log", "load.unrecognized_failure",
     "ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object available to read",
     'gh search issues --repo vllm-project/vllm "ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for"'),
    ("sglang-a10g-prefill-oom.log", "load.runtime_oom", "Tried to allocate 764.00 MiB", "--mem-fraction-static 0.84"),  # 0.88 - 764 MiB / A10G
    ("ollama-system-memory.log", "load.host_oom", "model requires more system memory (164.8 GiB)", None),
    ("kernel-oom-killer-killed-process.log", "load.host_oom", "Out of memory: Killed process 930269 (python3)", None),
    ("sglang-tp2-dev-shm-nccl.log", "load.shm_insufficient", "/dev/shm/nccl-vzIpS6 (size 9637888)", "--ipc=host"),
    ("vllm-llama2-13b-heads-not-divisible-tp3.log", "load.tp_invalid", "attention heads (40) must be divisible by tensor parallel size (3)",
     "--tensor-parallel-size 2"),
    ("localai-vllm-bf16-cc75.log", "load.dtype_unsupported", "Bfloat16 is only supported", "--dtype float16"),
    ("vllm-quantization-hqq-invalid-choice.log", "load.quantization_unsupported", "invalid choice: 'hqq'", None),
    ("vllm-0.2.3-pascal-no-kernel-image.log", "load.cuda_mismatch", "no kernel image is available", None),
    ("sglang-dist-store-timeout.log", "load.nccl_failed", "1/4 clients joined", None),
    ("vllm-model-path-hf-validation.log", "load.model_files", "'/app/bge_m3'", None),
    ("vllm-max-model-len-above-derived.log", "load.config_invalid", "User-specified max_model_len (204800)", "--max-model-len 4096"),
    ("sglang-tp8-ecc-error.log", "load.gpu_fault", "uncorrectable ECC error", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
    ("vllm-mpt-trust-remote-code.log", "load.remote_code", "requires you to execute the configuration file", "--trust-remote-code"),
    ("vllm-0.7.2-qwen2.5-vl-unknown-model-type.log", "load.engine_outdated", "model type `qwen2_5_vl`", None),
    ("vllm-k8s-no-cuda-gpus.log", "load.gpu_not_visible", "No CUDA GPUs are available", None),
    ("vllm-ray-mapworker-ansi-prefixes-no-gpu.log", "load.gpu_not_visible", "No CUDA GPUs are available", None),
    ("sglang-router-worker-startup-timeout.log", "load.startup_timeout", "Timeout 300s waiting for workers",
     "--router-worker-startup-timeout-secs 900"),
    ("client-openai-connection-refused.log", "access.connect_failed", "[Errno 111] Connection refused", None),
    ("sglang-decode-retract.log", "perf.kv_cache_pressure", "Decode out of memory happened", None),
    ("llamacpp-mi50-zero-layers-offloaded.log", "perf.low_gpu_util", "offloaded 0/33 layers to GPU", "-ngl 34"),
]


@pytest.mark.parametrize(("name", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_rank_one(name: str, code: str, evidence: str, command: str | None) -> None:
    findings = diagnose(name)
    assert findings, "no finding at all"
    top = findings[0]
    assert top.code == code, [f.code for f in findings]
    assert any(evidence in line for line in top.evidence), top.evidence
    if command is not None:
        assert command in [f.command for f in top.fixes], [f.command for f in top.fixes]


def test_every_load_code_has_a_case() -> None:
    from llm_doctor.codes import _TABLE

    covered = {c[1] for c in CASES}
    load_codes = {code for code, _, _ in _TABLE if code.startswith("load.")}
    assert load_codes <= covered, sorted(load_codes - covered)


def test_free_memory_finding_explains_the_symptoms() -> None:
    top = diagnose("vllm-0.9.1-tp2-free-memory-below-utilization.log")[0]
    assert "load.no_kv_cache_memory" in top.explains and "load.kv_cache_insufficient" in top.explains
    assert any("15.94 GiB of 47.38 GiB is in use before the engine starts" in line for line in top.evidence), top.evidence


def test_valid_tp_sizes_for_heads() -> None:
    from llm_doctor.checks.load.parallel import valid_tp_sizes

    assert valid_tp_sizes(40, 3) == [1, 2]
    assert valid_tp_sizes(64, 8, kv_heads=8) == [1, 2, 4, 8]
    assert valid_tp_sizes(71, 2) == [1]


def test_turbomind_tp_not_a_power_of_two_is_the_tp_size(tmp_path: Path) -> None:
    """lmdeploy/turbomind/deploy/converter.py asserts a power-of-two TP (the corpus labels it load.tp_invalid): the fix is
    the largest power of two below the TP asked for."""
    log = tmp_path / "lmdeploy.log"
    log.write_text("lmdeploy serve api_server internlm/internlm2_5-7b-chat --tp 5\n"
                   "Traceback (most recent call last):\n"
                   '  File "/opt/lmdeploy/lmdeploy/turbomind/deploy/converter.py", line 280, in get_tm_model\n'
                   "    assert ((tp & (tp - 1) == 0) and tp != 0), 'tp should be 2^n'\n"
                   "AssertionError: tp should be 2^n\n")
    top = findings_of(log)[0]
    assert (top.code, top.title) == ("load.tp_invalid", "tensor parallel size 5 does not fit the model/GPUs")
    assert top.fixes[0].command == "--tp 4"


# client-side output in a log: the access code at rank 1, with the base URL computed from what the log shows
CLIENT_CASES = [
    ("client-openai-sdk-ollama-base-url-no-v1.log", "access.base_url_invalid", "404 page not found", "OPENAI_BASE_URL=http://127.0.0.1:11434/v1"),
    ("client-nemo-ollama-base-url-endpoint-path.log", "access.base_url_invalid", "status code 404", "OPENAI_BASE_URL=http://localhost:11434"),
    ("client-httpx-404-chat-completions-no-v1.log", "access.base_url_invalid", "/chat/completions \"HTTP/1.1 404 Not Found\"",
     "OPENAI_BASE_URL=http://127.0.0.1:11434/v1"),
    ("client-httpx-localhost-502-proxy.log", "access.proxy_failed", "502 Bad Gateway", None),
    ("client-ellama-422-model-object.log", "access.model_id_missing", "422 Unprocessable Entity", None),
]


@pytest.mark.parametrize(("name", "code", "evidence", "command"), CLIENT_CASES, ids=[c[0] for c in CLIENT_CASES])
def test_client_log_rank_one(name: str, code: str, evidence: str, command: str | None) -> None:
    test_rank_one(name, code, evidence, command)


def test_base_url_correction() -> None:
    from llm_doctor.checks.access.client_log import _corrected

    assert _corrected("http://127.0.0.1:11434") == "http://127.0.0.1:11434/v1"
    assert _corrected("http://h:8000/v1/chat/completions") == "http://h:8000/v1"
    assert _corrected("http://h:8000/v1/v1") == "http://h:8000/v1"
    assert _corrected("http://localhost:11434/api/generate.") == "http://localhost:11434"  # Ollama's own API: the root
    assert _corrected("http://h:8000/v1") is None


def test_no_kv_cache_memory_fix_carries_no_invented_numbers() -> None:
    """vllm#17431-like log with no memory figures: no utilization value is made up."""
    top = diagnose("vllm-0.8.5-v1-no-cache-blocks.log")[0]
    assert top.code == "load.no_kv_cache_memory"
    assert [x.command for x in top.fixes] == [None]
    assert "prints no memory figures" in top.fixes[0].summary


def test_weights_oom_sizes_the_split_from_the_model_when_known() -> None:
    """vllm#11560 (Qwen2-VL-72B, TP=1, one 80 GB A800) with the language model's architecture known
    (Qwen2-72B from the shipped table): the evidence says what the weights need per GPU, and the TP
    fix is the smallest split whose weights fit, from doctor.memory, not a doubling."""
    from llm_doctor.models import from_table

    facts = load_paths([str(LOGS / "vllm-a800-qwen2vl72b-weights-oom.log")], Deadline(30))
    facts.model = from_table("Qwen/Qwen2-72B-Instruct")
    findings = build_report(run_checks(facts, select(load_checks(), ["load.gpu_oom"]), Deadline(30)), facts).findings
    top = findings[0]
    assert top.code == "load.weights_oom"
    sized = [line for line in top.evidence if line.startswith("the weights need ")]
    assert sized and "per GPU at TP=1" in sized[0] and "TP=2 needs" in sized[0], top.evidence
    assert top.fixes[0].command == "--tensor-parallel-size 2"
    assert "smallest split" in top.fixes[0].summary


def test_a_404_on_v1_embeddings_is_not_model_not_found(tmp_path) -> None:
    """uvicorn's access line for a generation model asked for embeddings: the server has no such
    API (vLLM serves /v1/embeddings only for pooling models); the model ID may be right."""
    log = tmp_path / "server.log"
    log.write_text('INFO:     127.0.0.1:53422 - "POST /v1/embeddings HTTP/1.1" 404 Not Found\n')
    codes = [f.code for f in findings_of(log)]
    assert "access.model_not_found" not in codes
    assert codes[0] == "access.protocol_mismatch", codes
    log.write_text('INFO:     127.0.0.1:53422 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found\n')
    assert findings_of(log)[0].code == "access.model_not_found"


# Ollama 0.11.3's GPU discovery as a journal shows it (discover/gpu.go: each libcuda found is tried in turn, a failed cuInit
# logged and the next one tried; types.go logs the result as "inference compute")
OLLAMA_PROBE = ('time=2025-09-01T16:44:15.156Z level=WARN source=gpu.go:605 msg="unknown error initializing cuda driver library '
                '/usr/lib/x86_64-linux-gnu/libcuda.so.575.64.03: cuda driver library init failure: 999. see '
                'https://github.com/ollama/ollama/blob/main/docs/troubleshooting.md for more information"\n')


@pytest.mark.parametrize(("after", "code"), [
    # no library worked: Ollama serves on the CPU
    ('time=2025-09-01T16:44:15.158Z level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"\n'
     'time=2025-09-01T16:44:15.158Z level=INFO source=types.go:130 msg="inference compute" id=0 library=cpu variant="" compute="" '
     'driver=0.0 name="" total="31.0 GiB" available="17.0 GiB"\n', "load.gpu_not_visible"),
    # another libcuda worked: the GPU is in use, nothing failed
    ('time=2025-09-01T16:44:15.301Z level=INFO source=types.go:130 msg="inference compute" id=GPU-5a3f2c1e library=cuda variant=v12 '
     'compute=8.6 driver=12.9 name="NVIDIA GeForce RTX 3090" total="23.6 GiB" available="23.3 GiB"\n', None),
])
def test_a_cuda_library_ollama_could_not_init_is_a_failure_only_if_no_gpu_followed(tmp_path: Path, after: str, code: str | None) -> None:
    log = tmp_path / "ollama.log"
    log.write_text(OLLAMA_PROBE + after)
    found = findings_of(log)
    assert [f.code for f in found][:1] == ([code] if code else [])


def test_tgi_warmup_out_of_kv_room_is_fixed_with_tgis_own_budget(tmp_path: Path) -> None:
    """TGI 0.9's warmup (server/text_generation_server/models/flash_causal_lm.py) names the budget that did not fit: the
    fix is TGI's --max-batch-total-tokens below it, never vLLM's flags (corpus y003's line)."""
    log = tmp_path / "tgi.log"
    log.write_text("Not enough memory to handle 16000 total tokens with 2 prefill tokens. You need to decrease "
                   "`--max-batch-total-tokens` or `--max-batch-prefill-tokens`\n")
    top = findings_of(log)[0]
    assert (top.code, top.title) == ("load.kv_cache_insufficient", "--max-batch-total-tokens 16000 does not fit the GPU memory next to the weights")
    assert top.fixes[0].summary.startswith("Lower --max-batch-total-tokens below 16000")
    assert not any("gpu-memory-utilization" in f.summary for f in top.fixes)
