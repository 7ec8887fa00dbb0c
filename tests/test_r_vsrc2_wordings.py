"""SGLang's (and vLLM's) own failure messages, mined from their sources into the catalogue (sglang.jsonl,
vllm.jsonl): each log is the message as the engine's source formats it (sglang v0.4.6 / v0.5.5 / v0.5.23
python/sglang/srt/...), in the shape the engine prints it; the test reads the finding's code and the
exact value its fix computes from the numbers the message quotes, and that the launcher's wrapper
lines ("Rank N scheduler is dead", "TpModelWorkerClient hit an exception") never win over the cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analyze_json import first_finding, fix_commands

SGLANG_HEAD = "[2025-05-01 10:00:00] server_args=ServerArgs(model_path='{model}', tp_size={tp}{extra})\n"
SCHEDULER = ("[2025-05-01 10:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
             '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2900, in run_scheduler_process\n')


def _head(model: str = "Qwen/Qwen3-8B", tp: int = 1, extra: str = "") -> str:
    return SGLANG_HEAD.format(model=model, tp=tp, extra=extra)




def test_the_share_sglang_computes_for_an_empty_kv_pool_sizes_the_fix(tmp_path: Path) -> None:
    # kv_cache_configurator.py (v0.5.23): the weights leave no KV pool at 0.8; the engine's minimum is 0.873,
    # the fix is the next whole percent above it (0.88) plus two for a pool that holds requests
    finding = first_finding(tmp_path, _head("Qwen/Qwen3-32B", extra=", mem_fraction_static=0.8") + SCHEDULER
                     + "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. Raise "
                     "--mem-fraction-static above 0.873 (minimum viable = 1 - available/pre = 0.8726). If using speculative "
                     "decoding, draft weights are now counted.\n\n"
                     "[2025-05-01 10:00:31] Received sigquit from a child process. It usually means the child failed.\n")
    assert finding["code"] == "load.no_kv_cache_memory"
    assert "--mem-fraction-static 0.90" in fix_commands(finding)


def test_a_kv_pool_below_the_context_length_is_kv_cache_insufficient(tmp_path: Path) -> None:
    # tp_worker.py (v0.5.23) warns once the pool is sized: the pool's tokens are the largest context that fits
    finding = first_finding(tmp_path, _head("Qwen/Qwen3-30B-A3B", 8, ", context_length=131072")
                     + "[2025-05-01 10:03:00 TP0] KV pool holds 30208 tokens, fewer than --context-length 131072. One full-length "
                     "request cannot fit, so long requests will be refused or truncated at serving time. Lower --context-length, "
                     "raise --mem-fraction-static, or free memory taken before the pool is sized.\n"
                     "[2025-05-01 10:03:10] The server is fired up and ready to roll!\n")
    assert finding["code"] == "load.kv_cache_insufficient"
    assert "--context-length 30208" in fix_commands(finding)


def test_an_expert_split_sglang_cannot_shard_gets_the_ep_size_that_divides_it(tmp_path: Path) -> None:
    # model_runner.py (v0.5.5): 1408 rows over tp 6 / ep 2 = 3 ranks do not divide; ep 3 gives 2 ranks, which do
    finding = first_finding(tmp_path, _head("Qwen/Qwen3-30B-A3B", 6, ", ep_size=2") + SCHEDULER
                     + "ValueError: moe_intermediate_size 1408 must be divisible by moe_tp_size (3) which is tp_size (6) divided "
                     "by moe_ep_size (2).\n\n"
                     "[2025-05-01 10:00:31] Rank 2 scheduler is dead. Please check if there are relevant logs.\n")
    assert finding["code"] == "load.tp_invalid"
    assert fix_commands(finding)[0] == "--ep-size 3"


@pytest.mark.parametrize(("line", "code", "flag"), [
    # tokenizer_manager.py: an embeddings request to a server started for generation
    ("[2025-05-01 10:02:00] Error in request: This model does not appear to be an embedding model by default. Please add "
     "`--is-embedding` when launching the server or try another model.", "load.config_invalid", "--is-embedding"),
    ("[2025-05-01 10:02:00] Error in request: input_embeds is provided while disable_radix_cache is False. Please add "
     "`--disable-radix-cache` when you launch the server if you want to use input_embeds as inputs.", "load.config_invalid",
     "--disable-radix-cache"),
])
def test_a_request_the_server_was_not_started_for_names_the_flag(tmp_path: Path, line: str, code: str, flag: str) -> None:
    finding = first_finding(tmp_path, _head() + "[2025-05-01 10:01:00] The server is fired up and ready to roll!\n" + line + "\n")
    assert finding["code"] == code
    assert any(flag in f["summary"] for f in finding["fixes"])


@pytest.mark.parametrize(("cause", "code"), [
    ("AssertionError: Memory pool size is too small", "load.no_kv_cache_memory"),
    ("AssertionError: tp_size must be divisible by number of nodes", "load.tp_invalid"),
    ("RuntimeError: nvidia-smi not found. Ensure NVIDIA drivers are installed and accessible.", "load.gpu_not_visible"),
    ("ValueError: Prequant BitsAndBytes models with TP is not supported.Please try with PP.", "load.quantization_unsupported"),
])
def test_the_cause_wins_over_the_launchers_wrappers(tmp_path: Path, cause: str, code: str) -> None:
    # the overlap thread's and the launcher's lines (tp_worker_overlap_thread.py, engine.py) only repeat the failure
    finding = first_finding(tmp_path, _head(tp=2)
                     + "[2025-05-01 10:00:30 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
                     + cause + "\n\n"
                     "[2025-05-01 10:00:31] Scheduler or DataParallelController 4123 terminated with 255\n"
                     "[2025-05-01 10:00:31] Rank 1 scheduler is dead. Please check if there are relevant logs.\n")
    assert finding["code"] == code


VLLM_HEAD = "INFO 03-01 10:00:00 [api_server.py:1000] vLLM API server version 0.14.0\n"


@pytest.mark.parametrize(("line", "title", "command"), [
    # renderers/params.py _token_len_check: the prompt alone is past --max-model-len (40211 + 1 -> 40960)
    ("vllm.exceptions.VLLMValidationError: This model's maximum context length is 32768 tokens. However, your prompt contains "
     "40211 input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt.",
     "a prompt of 40211 tokens", "--max-model-len 40960"),
    # the tokenizer cut the prompt at max_model_len + 1: "at least" that many
    ("vllm.exceptions.VLLMValidationError: This model's maximum context length is 32768 tokens. However, your prompt contains at "
     "least 32769 input tokens, which exceeds this limit even without any output tokens.", "a prompt of 32769 tokens", "--max-model-len 33792"),
    # max_tokens alone above max_model_len (40000 + 1 -> 40960)
    ("vllm.exceptions.VLLMValidationError: max_tokens=40000 cannot be greater than max_model_len=32768. Please request fewer "
     "output tokens.", "a request for 40000 output tokens", "--max-model-len 40960"),
])
def test_vllms_renderer_refusals_size_the_context(tmp_path: Path, line: str, title: str, command: str) -> None:
    finding = first_finding(tmp_path, VLLM_HEAD + "ERROR 03-01 10:00:05 [serving_chat.py:222] " + line + "\n")
    assert finding["code"] == "load.config_invalid"
    assert finding["title"].startswith(title)
    assert command in fix_commands(finding)


def test_more_sequences_than_mamba_blocks_caps_max_num_seqs(tmp_path: Path) -> None:
    # config/compilation.py: a hybrid model's full decode graphs need one Mamba block per sequence
    finding = first_finding(tmp_path, VLLM_HEAD + "(EngineCore pid=196) ERROR 03-01 10:02:00 [core.py:866] ValueError: max_num_seqs (256) "
                     "exceeds available Mamba cache blocks (73). Each decode sequence requires one Mamba cache block, so CUDA graph "
                     "capture cannot proceed. Please lower max_num_seqs to at most 73 or increase gpu_memory_utilization.\n"
                     "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    assert finding["code"] == "load.config_invalid"
    assert fix_commands(finding)[0] == "--max-num-seqs 73"


@pytest.mark.parametrize(("gpu", "command"), [("Tesla T4, compute capability 7.5", "--dtype float32"),
                                              ("NVIDIA A10G, compute capability 8.6", "--dtype bfloat16")])
def test_a_model_unstable_in_float16_gets_the_dtype_the_gpu_runs(tmp_path: Path, gpu: str, command: str) -> None:
    # config/model.py _FLOAT16_NOT_SUPPORTED_MODELS: Gemma 2/3 and GLM-4 refuse float16
    finding = first_finding(tmp_path, VLLM_HEAD + f"INFO 03-01 10:00:01 [cuda.py:100] GPU: {gpu}\n"
                     "ValueError: The model type 'gemma3' does not support float16. Reason: Numerical instability. Please use "
                     "bfloat16 or float32 instead.\n")
    assert finding["code"] == "load.dtype_unsupported"
    assert fix_commands(finding) == [command]


def test_a_multimodal_prompt_past_the_kv_pool_sizes_the_context_to_the_pool(tmp_path: Path) -> None:
    # scheduler.py: image tokens pushed the prompt past max_req_input_len (32762), far below --context-length 128000:
    # the KV pool, not the context, is the limit, and it holds at least 32763 tokens
    finding = first_finding(tmp_path, _head("Qwen/Qwen2.5-VL-7B-Instruct", extra=", context_length=128000")
                     + "[2025-05-01 10:01:00] The server is fired up and ready to roll!\n"
                     "[2025-05-02 11:04:12 TP0] Multimodal prompt is too long after expanding multimodal tokens. After expanding "
                     "len(req.origin_input_ids_unpadded)=1200 => 40000 >= 32762.\n")
    assert finding["code"] == "load.kv_cache_insufficient"
    assert "--context-length 32763" in fix_commands(finding)


def test_a_scheduler_killed_during_start_up_is_host_memory(tmp_path: Path) -> None:
    # engine.py _scheduler_died_error (v0.5.2x): exit -9 is a SIGKILL, the OOM killer while the weights load
    finding = first_finding(tmp_path, _head("Qwen/Qwen3-235B-A22B", 8)
                     + "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a "
                     "common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n")
    assert finding["code"] == "load.host_oom"
    assert any("recognised by: template" in line for line in finding["evidence"])


@pytest.mark.parametrize(("line", "title", "command"), [
    # input_processor.py _validate_prompt_len: a prompt exactly max_model_len long leaves no room for an output token
    ("vllm.exceptions.VLLMValidationError: The decoder prompt (length 32768) plus the number of requested output tokens (at "
     "least 1) is longer than the maximum model length of 32768. Make sure that `max_model_len` is no smaller than the number "
     "of text tokens (prompt + requested output tokens).", "a prompt of 32768 tokens", "--max-model-len 33792"),
    # _validate_model_input: one image's embeddings above the encoder cache (sized from max_num_batched_tokens)
    ("vllm.exceptions.VLLMValidationError: The decoder prompt contains a(n) image item with 16384 embedding tokens, which "
     "exceeds the pre-allocated encoder cache size 8192. Please reduce the input size or increase the encoder cache size by "
     "setting --limit-mm-per-prompt at startup.", "one image item embeds into 16384 tokens", "--max-num-batched-tokens 16384"),
])
def test_vllms_input_processor_refusals_name_the_setting(tmp_path: Path, line: str, title: str, command: str) -> None:
    finding = first_finding(tmp_path, VLLM_HEAD + "ERROR 03-01 10:00:05 [serving_chat.py:222] " + line + "\n")
    assert finding["code"] == "load.config_invalid"
    assert finding["title"].startswith(title)
    assert command in fix_commands(finding)


def test_an_architecture_sglang_cannot_serve_upgrades_sglang(tmp_path: Path) -> None:
    # model_loader/utils.py (v0.5): neither a native class nor a compatible Transformers fallback
    finding = first_finding(tmp_path, _head("zai-org/GLM-4.5V", 4) + "ValueError: Glm4vMoeForConditionalGeneration has no SGlang "
                     "implementation and the Transformers implementation is not compatible with SGLang.\n")
    assert finding["code"] == "load.engine_outdated"
    assert fix_commands(finding)[0] == "pip install -U sglang transformers"


@pytest.mark.parametrize(("warning", "command", "severity"), [
    # server_args.py: SGLang turns the graphs off itself for these settings and says which
    ("Cuda graph is disabled because of using torch native attention backend", "--attention-backend triton", "warn"),
    ("Cuda graph is disabled because deepep_mode=`normal`", "--deepep-mode auto", "warn"),
    ("Cuda graph is disabled for prefill server", None, "info"),
])
def test_sglangs_own_reason_for_eager_mode_names_its_fix(tmp_path: Path, warning: str, command: str | None, severity: str) -> None:
    finding = first_finding(tmp_path, _head() + f"[2025-05-01 10:00:41] {warning}\n"
                     "[2025-05-01 10:01:00] The server is fired up and ready to roll!\n"
                     "[2025-05-01 10:02:00 TP0] Decode batch. #running-req: 32, #token: 20480, token usage: 0.10, "
                     "gen throughput (token/s): 450.21, #queue-req: 0\n")
    assert finding["code"] == "perf.eager_mode"
    assert finding["severity"] == severity
    assert fix_commands(finding) == ([command] if command else [])
