"""vLLM's, SGLang's and llama.cpp's own messages for a setting below what the engine needs, a prompt
above the context it was started with, a checkpoint the model class cannot fill, and a scheduler
killed by its watchdog: rank 1, the line it rests on, and a first fix in the engine's own flag with
the value the message names. Each message is formatted the way its source prints it (the entry in
doctor/data/catalogue/{vllm,sglang,llamacpp}.jsonl cites owner/repo@ref:path); the numbers are the
ones public threads quote for these messages."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

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
    ("vllm-v1-prompt-length-of", [VLLM, "ValueError: Prompt length of 40000 is longer than the maximum model length of 32768."],
     "load.config_invalid", "Prompt length of 40000", "--max-model-len 40960"),
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
    # sgl-project/sglang@v0.4.3:python/sglang/srt/model_executor/model_runner.py: a negative profiled KV pool
    ("sglang-negative-profiled-kv-pool", [SGLANG,
        "[2025-07-02 07:41:59 DP0 TP0] max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead."],
     "load.no_kv_cache_memory", "the profiled value -561981", None),
    # vllm-project/vllm@v0.7.3:vllm/multimodal/processing.py, and the later "You set or defaulted to '{...}'" opening
    ("vllm-mm-items-above-limit", [VLLM, "ValueError: You set image=1 (or defaulted to 1) in `--limit-mm-per-prompt`, "
                                         "but passed 3 image items in the same prompt."],
     "load.config_invalid", "passed 3 image items", """--limit-mm-per-prompt '{"image": 3}'"""),
    ("vllm-mm-items-above-limit-json", [VLLM, "ERROR: You set or defaulted to '{\"video\": 1}' in `--limit-mm-per-prompt`, "
                                              "but passed 2 video items in the same prompt."],
     "load.config_invalid", "passed 2 video items", """--limit-mm-per-prompt '{"video": 2}'"""),
    # vllm-project/vllm@v0.6.3:vllm/lora/worker_manager.py and @v0.6.0:vllm/model_executor/model_loader/loader.py
    ("vllm-lora-adapter-not-found", [VLLM, "vllm.exceptions.LoRAAdapterNotFoundError: Loading lora samp-123 failed: "
                                           "No adapter found for /tmp/peft/samp-123/adapter_config.json"],
     "load.model_files", "No adapter found for", None),
    ("vllm-model-without-lora", [VLLM, "ValueError: Model Qwen2MoeForCausalLM does not support LoRA, but LoRA is enabled. Support for "
                                       "this model may be added in the future. If this is important to you, please open an issue on github."],
     "load.config_invalid", "does not support LoRA", None),
    # vllm-project/vllm@v0.6.3:vllm/entrypoints/openai/serving_chat.py, the 400 a client prints
    ("vllm-auto-tool-choice-not-enabled", [
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': '\"auto\" tool choice requires "
        "--enable-auto-tool-choice and --tool-call-parser to be set', 'type': 'BadRequestError', 'param': None, 'code': 400}"],
     "load.config_invalid", "tool choice requires", None),
    # vllm-project/vllm@v0.6.0:vllm/entrypoints/chat_utils.py: a tokenizer without a chat template
    ("vllm-no-chat-template", ["openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'As of transformers v4.44, "
                               "default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not "
                               "define one. None', 'type': 'BadRequestError', 'param': None, 'code': 400}"],
     "load.config_invalid", "default chat template is no longer allowed", None),
    # vllm-project/vllm@v0.6.3:vllm/entrypoints/openai/api_server.py
    ("vllm-unknown-tool-parser", [VLLM,
        "KeyError: 'invalid tool call parser: qwen3_coder (chose from { deepseek_v3,hermes,llama3_json,mistral })'"],
     "load.config_invalid", "invalid tool call parser: qwen3_coder", None),
    # vllm-project/vllm@1c0d9ecf:vllm/platforms/cuda.py: a forced backend, and no backend at all
    ("vllm-forced-attention-backend-refused", [VLLM, f"{V1_CORE} ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN "
        "is not valid for this configuration. Reason: ['kv_cache_dtype not supported']"],
     "load.config_invalid", "Selected backend AttentionBackendEnum.FLASH_ATTN", None),
    ("vllm-no-attention-backend", [VLLM, f"{V1_CORE} ValueError: No valid attention backend found for cuda with "
        "AttentionSelectorConfig(head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8, use_mla=True, use_sparse=True). "
        "Reasons: {FLASH_ATTN_MLA: [compute capability not supported], FLASHMLA: [compute capability not supported]}."],
     "load.config_invalid", "No valid attention backend found", None),
    # ggml-org/llama.cpp@aa6192d3:tools/server/server.cpp: the last line names no cause; the line before it does
    # (gemma4 is in llama.cpp master's LLM_ARCH_NAMES, doctor/data/architectures.jsonl: a build too old for it)
    ("llamacpp-exiting-after-unknown-arch", [LLAMA,
        "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'gemma4'",
        "llama_model_load_from_file_impl: failed to load model", "srv  llama_server: exiting due to model loading error"],
     "load.engine_outdated", "unknown model architecture: 'gemma4'", None),
    # ggml-org/llama.cpp@3679b65d:tools/mtmd/clip.cpp: an --mmproj projector newer than the build (no build line pasted)
    ("llamacpp-unknown-projector-type", [
        "clip_init: failed to load model '/models/mmproj-F16.gguf': load_hparams: unknown projector type: qwen3vl_merger",
        "mtmd_init_from_file: error: Failed to load CLIP model from /models/mmproj-F16.gguf",
        "srv    load_model: failed to load multimodal model, '/models/mmproj-F16.gguf'", "main: exiting due to model loading error"],
     "load.engine_outdated", "unknown projector type: qwen3vl_merger", "docker pull ghcr.io/ggml-org/llama.cpp:server"),
    # ggml-org/llama.cpp@aa6192d3:tools/server/{server-common.cpp,server.cpp}: requests that need a start-up flag, as clients print them
    ("llamacpp-tools-need-jinja", ['{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}'],
     "load.config_invalid", "tools param requires --jinja flag", None),
    ("llamacpp-image-needs-mmproj", ["openai.InternalServerError: Error code: 500 - {'error': {'code': 500, 'message': 'image input "
                                     "is not supported - hint: if this is unexpected, you may need to provide the mmproj', 'type': 'server_error'}}"],
     "load.config_invalid", "image input is not supported", None),
    ("llamacpp-embeddings-not-enabled", ['{"error":{"code":501,"message":"This server does not support embeddings. Start it with '
                                         '`--embeddings`","type":"not_supported_error"}}'],
     "load.config_invalid", "does not support embeddings", None),
    ("llamacpp-exiting-alone-is-a-finding", [LLAMA, "main: exiting due to model loading error"],
     "load.unrecognized_failure", "exiting due to model loading error", None),
    # sgl-project/sglang@v0.4.3:python/sglang/srt/managers/detokenizer_manager.py: the traceback's last error is quoted
    ("sglang-detokenizer-died", [SGLANG, "[2025-01-01 10:00:00] DetokenizerManager hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/detokenizer_manager.py", line 250, in run_detokenizer_process',
        "    manager.event_loop()", "OverflowError: out of range integral type conversion attempted"],
     "load.unrecognized_failure", "OverflowError: out of range integral type conversion attempted", None),
    # sgl-project/sglang@v0.4.6:python/sglang/srt/entrypoints/http_server.py: a stuck engine, not silence
    ("sglang-health-check-no-detokenizer", [SGLANG,
        "[2026-09-08 04:05:00] ERROR: Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: 04:04:40. last_heartbeat time: 04:00:01"],
     "load.unrecognized_failure", "couldn't get a response from detokenizer", None),
    # ggml-org/llama.cpp@4c7103b9:src/llama-context.cpp: the KV cache has no room for the batch
    ("llamacpp-no-memory-slot", [LLAMA, "decode: failed to find a memory slot for batch of size 1024"],
     "load.config_invalid", "failed to find a memory slot", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_engine_limit_wording(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def _top(tmp_path, lines: list[str]):
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    return findings_of(log)[0]


def test_a_forced_backend_is_named_with_its_reason(tmp_path) -> None:
    top = _top(tmp_path, [VLLM, "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. "
                                "Reason: ['head_size not supported']"])
    assert "AttentionBackendEnum.FLASHINFER" in top.title and "head_size not supported" in top.title
    assert "--attention-backend" in top.fixes[0].summary
    assert top.fixes[1].command == "pip install -U vllm"


def test_an_unknown_parser_lists_the_accepted_names(tmp_path) -> None:
    top = _top(tmp_path, [VLLM, "KeyError: 'invalid reasoning parser: qwen3x (chose from { deepseek_r1,granite,qwen3 })'"])
    assert top.code == "load.config_invalid"
    assert "deepseek_r1,granite,qwen3" in top.fixes[0].summary and "qwen3x" in top.title


def test_a_prompt_over_vllms_max_model_len_is_not_fixed_with_llamacpps_flag(tmp_path) -> None:
    """The prompt-overrun fix speaks the engine's flag: --max-model-len for vLLM (never llama.cpp's --ctx-size)."""
    top = _top(tmp_path, [VLLM, "ValueError: The decoder prompt (length 8825) is longer than the maximum model length of 8192."])
    assert top.fixes[0].command == "--max-model-len 9216"
    assert "--ctx-size" not in " ".join(f.summary + (f.command or "") for f in top.fixes)


def test_a_negative_sglang_pool_is_fixed_with_sglangs_flag(tmp_path) -> None:
    top = _top(tmp_path, [SGLANG, "[2026-02-11 06:45:01] max_total_tokens=20480 is larger than the profiled value -89624. "
                                  "Use the profiled value instead."])
    assert top.code == "load.no_kv_cache_memory"
    assert "--mem-fraction-static" in top.fixes[0].summary and "--gpu-memory-utilization" not in top.fixes[0].summary


def test_a_positive_profiled_pool_is_no_failure(tmp_path) -> None:
    """Only a negative profiled value means no KV memory; a positive one just caps --max-total-tokens."""
    log = tmp_path / "engine.log"
    log.write_text(SGLANG + "\n[2026-02-11 06:45:01] max_total_tokens=131072 is larger than the profiled value 50756. "
                   "Use the profiled value instead.\n")
    assert "load.no_kv_cache_memory" not in [f.code for f in findings_of(log)]


def test_sglangs_stated_share_is_the_one_raised(tmp_path) -> None:
    """sgl-project/sglang pool_configurator.py names the share it was given: the fix raises that one, in SGLang's
    flag, even when the pasted message is all there is."""
    top = _top(tmp_path, ["RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                          "Current value: mem_fraction_static=0.25"])
    assert top.code == "load.no_kv_cache_memory"
    assert top.fixes[0].summary.startswith("Raise --mem-fraction-static above 0.25")


def test_a_missing_start_up_flag_is_named_as_a_flag(tmp_path) -> None:
    top = _top(tmp_path, ['{"error":{"code":500,"message":"audio input is not supported - hint: if this is unexpected, '
                          'you may need to provide the mmproj","type":"server_error"}}'])
    assert top.title == "the engine needs --mmproj"
    top = _top(tmp_path, ['{"error":{"code":501,"message":"This server does not support reranking. Start it with `--reranking`"}}'])
    assert top.fixes[0].summary.startswith("Start the engine with --reranking")


def test_a_missing_chat_template_is_fixed_with_the_flag(tmp_path) -> None:
    top = _top(tmp_path, [VLLM, "ERROR 10-01 12:00:00 [serving_chat.py:222] As of transformers v4.44, default chat template is no "
                                "longer allowed, so you must provide a chat template if the tokenizer does not define one."])
    assert top.title == "the engine needs --chat-template"
