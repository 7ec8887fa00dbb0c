"""Load-failure wordings each engine (or Python under it) prints, at rank 1 with the line they rest
on. Every log line is verbatim from the public issue thread named beside it."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # vllm-project/vllm#16645: the model code reads a field the model's newer config class lacks
    ("vllm-config-class-no-attribute", [
        "ERROR 04-15 00:06:26 [core.py:343] AttributeError: 'Qwen2_5OmniConfig' object has no attribute 'num_attention_heads'",
    ], "load.engine_outdated", "'Qwen2_5OmniConfig' object has no attribute 'num_attention_heads'", "pip install -U vllm transformers"),
    # vllm-project/vllm#2422
    ("vllm-phi-config-renamed-field", [
        "AttributeError: 'PhiConfig' object has no attribute 'layer_norm_epsilon'. Did you mean: 'layer_norm_eps'?",
    ], "load.engine_outdated", "'PhiConfig' object has no attribute 'layer_norm_epsilon'", "pip install -U vllm transformers"),
    # vllm-project/vllm#12267: a CPU build of vllm._C has no Marlin kernel
    ("vllm-cpu-build-no-marlin-op", [
        "[rank0]: AttributeError: '_OpNamespace' '_C' object has no attribute 'gptq_marlin_repack'",
    ], "load.quantization_unsupported", "'gptq_marlin_repack'", None),
    # vllm-project/vllm#8654: Marlin 2:4 cannot tile a TP=4 rank's slice
    ("vllm-marlin-tile-tp4", [
        "$python -m vllm.entrypoints.api_server --model='/mntfn/yanyi/Qwen2-7B-Instruct_24_w4a16/stage_quantization' "
        "--max-model-len=16000 --tensor-parallel-size=4 --use-v2-block-manager  --enable-prefix-caching ",
        "[rank0]: RuntimeError: prob_m = 1152 is not divisible by thread_m = 512",
    ], "load.tp_invalid", "prob_m = 1152 is not divisible by thread_m = 512", "--tensor-parallel-size 2"),
    # vllm-project/vllm#1771: SIGBUS in a TP worker under Docker's 64 MB /dev/shm
    ("vllm-docker-bus-error", [
        "Fatal python error:Bus error",
    ], "load.shm_insufficient", "Fatal python error:Bus error", "--ipc=host"),
    # ollama/ollama#4226: the runner's last error inside Ollama's start-up wait, inside the API's error body
    ("ollama-runner-wait-quotes-ecc", [
        '{"error":{"message":"timed out waiting for llama runner to start:CUDA error:uncorrectable ECC error encountered\\',
    ], "load.gpu_fault", "uncorrectable ECC error", "nvidia-smi -q -d ECC,PAGE_RETIREMENT"),
    # the same wait with no runner error in it (ollama@v0.1.32 llm/server.go's own sample) stays a start-up timeout
    ("ollama-runner-wait-deadline", [
        "Error: timed out waiting for llama runner to start: context deadline exceeded",
    ], "load.startup_timeout", "timed out waiting for llama runner to start", None),
    # vllm-project/vllm#4989: Mistral-7B-v0.3's consolidated.safetensors read by the HF-format loader
    ("vllm-mistral-native-weights", [
        "---> 43 llm = LLM(",
        "KeyError: 'layers.0.attention.wk.weight'",
    ], "load.model_files", "KeyError: 'layers.0.attention.wk.weight'", "--load-format mistral --config-format mistral --tokenizer-mode mistral"),
    # InternLM/lmdeploy#1008 (lmdeploy@v0.2.1 turbomind.py): no chat template matches the folder's name
    ("lmdeploy-needs-model-name", [
        "model_source: hf_model",
        "Please input a model_name for hf_model",
        "Traceback (most recent call last):",
        '  File "/home/tangshi/miniconda3/envs/lmdeploy/bin/lmdeploy", line 8, in <module>',
        "    sys.exit(run())",
    ], "load.config_invalid", "Please input a model_name for hf_model", None),
    # ggml-org/llama.cpp#10103: LM Studio given an SD3.5 GGUF (an image model; no llama.cpp version runs it)
    ("llamacpp-image-model-gguf", [
        "llama.cpp error: 'error loading model architecture: unknown model architecture: 'sd3''",
    ], "load.model_files", "unknown model architecture: 'sd3'", None),
    # continuedev/continue#3464: Ollama's older refusal, quoted in the client's HTTP 500
    ("ollama-model-too-large-for-system", [
        '{"error":"requested model (18.4 GiB) is too large for this system (6.8 GiB)"}',
        "[2024-12-20T02:51:46] Error generating autocompletion:  Error: HTTP 500 Internal Server Error from "
        "http://xxxxxxxxxxx/api/generate",
    ], "load.host_oom", "requested model (18.4 GiB) is too large for this system (6.8 GiB)", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


@pytest.mark.parametrize("line", [
    "ModuleNotFoundError: No module named 'vllm.model_executor.input_metadata'",  # sgl-project/sglang#350
    "ModuleNotFoundError: No module named 'cuda.bindings'",  # sgl-project/sglang#6363
])
def test_a_missing_python_module_is_not_a_missing_model(tmp_path, line: str) -> None:
    """Python's ModuleNotFoundError is an install problem, never the API's model-not-found
    (openai.NotFoundError)."""
    log = tmp_path / "server.log"
    log.write_text(line + "\n")
    codes = [f.code for f in findings_of(log)]
    assert "access.model_not_found" not in codes
    assert codes[0] == "load.unrecognized_failure", codes


def test_an_argument_the_engine_asks_for_is_named_in_the_fix(tmp_path) -> None:
    log = tmp_path / "lmdeploy.log"
    log.write_text("Please input a model_name for hf_model\n")
    top = findings_of(log)[0]
    assert top.title == "the engine needs --model-name, which it could not infer"
    assert "Pass --model-name explicitly" in top.fixes[0].summary
