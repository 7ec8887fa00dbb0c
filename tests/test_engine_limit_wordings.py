"""vLLM's, SGLang's and llama.cpp's own messages for a setting below what the engine needs, a prompt
above the context it was started with, a checkpoint the model class cannot fill, and a scheduler
killed by its watchdog: rank 1, the line it rests on, and a first fix in the engine's own flag with
the value the message names. Each message is formatted the way its source prints it (the entry in
doctor/data/catalogue/{vllm,sglang,llamacpp}.jsonl cites owner/repo@ref:path); the numbers are the
ones public threads quote for these messages."""

from __future__ import annotations

import pytest

from tests.test_load_wordings import assert_rank_one

VLLM = "(APIServer pid=1) INFO 10-01 12:00:00 [api_server.py:1885] vLLM API server version 0.10.2"
V1_CORE = "(EngineCore_0 pid=310) ERROR 10-01 12:00:09 [core.py:700]"
SGLANG = "[2025-09-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, watchdog_timeout=300)"
LLAMA = "build: 6045 (4c7103b9) with cc (Ubuntu 13.3.0) 13.3.0 for x86_64-linux-gnu"

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # vllm-project/vllm@v0.6.0:vllm/config.py (SchedulerConfig; vllm/config/scheduler.py from v0.10 on)
    ("vllm-batched-tokens-below-max-model-len", [VLLM,
        "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively limits the "
        "maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
        "max_num_batched_tokens or decrease max_model_len."],
     "load.config_invalid", "max_num_batched_tokens (2048)", "--max-num-batched-tokens 32768"),
    # the same check in v0.10+, inside pydantic's ValidationError
    ("vllm-batched-tokens-below-max-num-seqs", [VLLM,
        "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
        "(APIServer pid=1)   Value error, max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256). "
        "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]"],
     "load.config_invalid", "max_num_seqs (256)", "--max-num-batched-tokens 256"),
    # vllm-project/vllm@v0.6.0:vllm/lora/worker_manager.py: an adapter trained at rank 32, the default cap 16
    ("vllm-lora-rank-above-max", [VLLM, f"{V1_CORE} ValueError: LoRA rank 32 is greater than max_lora_rank 16."],
     "load.config_invalid", "LoRA rank 32", "--max-lora-rank 32"),
    # vllm-project/vllm@v0.9.0:vllm/v1/engine/processor.py: text plus image tokens above --max-model-len
    ("vllm-v1-prompt-above-max-model-len", [VLLM,
        "ValueError: The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens."],
     "load.config_invalid", "(length 12324)", "--max-model-len 13312"),
    # vllm-project/vllm@v0.8.5:vllm/model_executor/model_loader/loader.py
    ("vllm-weights-not-initialized", [VLLM,
        f"{V1_CORE} ValueError: Following weights were not initialized from checkpoint: "
        "{'model.layers.0.mlp.experts.w13_weight', 'model.layers.0.mlp.experts.w2_weight'}"],
     "load.engine_outdated", "were not initialized from checkpoint", "pip install -U vllm transformers"),
    # sgl-project/sglang@v0.4.3:python/sglang/srt/managers/scheduler.py (older) and the newer wording
    ("sglang-watchdog-timeout", [SGLANG, "[2025-09-01 10:20:00] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"],
     "load.unrecognized_failure", "watchdog_timeout=300", None),
    ("sglang-watchdog-timeout-v04", [SGLANG, "[2025-02-01 10:20:00 TP0] Watchdog timeout (self.watchdog_timeout=300)"],
     "load.unrecognized_failure", "Watchdog timeout", None),
    # ggml-org/llama.cpp@4c7103b9:src/llama-context.cpp: the KV cache has no room for the batch
    ("llamacpp-no-memory-slot", [LLAMA, "decode: failed to find a memory slot for batch of size 1024"],
     "load.config_invalid", "failed to find a memory slot", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_engine_limit_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)
