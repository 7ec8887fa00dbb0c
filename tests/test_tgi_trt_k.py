"""TGI's, TensorRT-LLM's and the other servers' own failure messages, covered from their sources (the entries at the
end of doctor/data/catalogue/{tgi,trtllm,...}.jsonl cite owner/repo@ref:path): rank 1, the line it rests on, and a
first fix with the value the message names. Each message is formatted the way its source prints it."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one

TGI = "2024-05-02T10:11:00.000000Z  INFO text_generation_launcher: Args { model_id: \"meta-llama/Llama-2-7b-hf\", num_shard: Some(3) }"
ROUTER = "2024-05-02T10:11:12.000000Z ERROR compat_generate{default_return_full_text=true}:generate_stream: text_generation_router::infer: router/src/infer.rs:123:"
TRT = "[TensorRT-LLM] TensorRT-LLM version: 0.7.1"
SHARD = "2024-05-02T10:11:05.000000Z ERROR text_generation_launcher: Error when initializing model"

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # router/src/validation.rs (v0.9.4 .. v3.3.7): prompt + max_new_tokens above --max-total-tokens
    ("tgi-max-total-tokens", [TGI, f"{ROUTER} `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 3900 `inputs` tokens and 1024 `max_new_tokens`"],
     "load.config_invalid", "must be <= 4096", "--max-total-tokens 4924"),
    # the prompt alone above --max-input-tokens
    ("tgi-input-length", [TGI, f"{ROUTER} `inputs` must have less than 1024 tokens. Given: 1523"],
     "load.config_invalid", "less than 1024 tokens", "--max-input-tokens 1523"),
    # v1.1.0: no fast tokenizer, max_total_tokens - max_input_length leaves 1 token
    ("tgi-max-new-tokens", [TGI, f"{ROUTER} Input validation error: `max_new_tokens` must be <= 1. Given: 20"],
     "load.config_invalid", "must be <= 1", None),
    # v0.8.2 utils/layers.py: a bare assert, as the traceback prints its source line
    ("tgi-row-linear-split", [TGI, SHARD, "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/utils/layers.py", line 106, in __init__',
        "    assert in_features % self.tp_world_size == 0", "AssertionError"],
     "load.tp_invalid", "in_features % self.tp_world_size", None),
    # models/__init__.py: an architecture TGI cannot shard
    ("tgi-automodel-unsharded", [TGI, SHARD, "NotImplementedError: sharded is not supported for AutoModel"],
     "load.tp_invalid", "sharded is not supported", "--num-shard 1"),
    ("tgi-marlin-group-size", [TGI, SHARD, "RuntimeError: Repacking GPTQ weights with group size 32 as Marlin is not supported, must be one of: [-1, 128]"],
     "load.quantization_unsupported", "group size 32", None),
    ("tgi-cpu-system", [TGI, SHARD, "NotImplementedError: Cannot reshape and cache for paged attention, system 'cpu' not supported"],
     "load.gpu_not_visible", "system 'cpu' not supported", None),
    # utils/hub.py: a weight file the download step did not leave (read as a missing model file, not a client 404)
    ("tgi-weight-file-missing", [TGI, SHARD, "FileNotFoundError: File model-00001-of-00002.safetensors of model /data/models--bigscience--bloom "
        "not found in /data. Please run `text-generation-server download-weights bigscience/bloom` first."],
     "load.model_files", "model-00001-of-00002.safetensors", None),
    # NVIDIA/TensorRT-LLM 027cd518 runtime/gptDecoderBatch.cpp (the later '+ draft tokens' wording): prompt + output budget
    ("trtllm-max-seq-len", [TRT, "[TensorRT-LLM][ERROR] Assertion failed: Input length (3900) + max new tokens (512) + draft tokens (0) "
        "must be less than max sequence length (4096). (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/gptDecoderBatched.cpp:199)"],
     "load.config_invalid", "Input length (3900)", "--max_seq_len 5120"),
    # runtime/gptJsonConfig.cpp: an engine built for another TP size
    ("trtllm-tp-mismatch", [TRT, "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: tensor parallelism mismatch "
        "(/src/tensorrt_llm/cpp/tensorrt_llm/runtime/gptJsonConfig.cpp:123)"],
     "load.tp_invalid", "tensor parallelism mismatch", None),
    ("trtllm-engine-config-missing", [TRT, "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: File does not exist: /engines/llama/config.json"],
     "load.model_files", "/engines/llama/config.json", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_source_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)
