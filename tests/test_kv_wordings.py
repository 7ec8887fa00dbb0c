"""The engines' memory refusals (KV-cache shortfall, too little free memory) as pastes deliver them:
wrapped over lines, cut before their numbers, retold without them. Each sample is the engine's own
message (source named), in the shape a public thread or the train corpus holds it."""

from __future__ import annotations

import pytest

from tests.analysis import assert_rank_one, findings_of

# (name, log lines, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # vllm v1/core/kv_cache_utils.py _check_enough_kv_cache_memory, wrapped in two as an Ascend report quotes it
    # (vllm-ascend OTP report, vLLM v0.20.2); 133072 * (4.01 - 0.005) / (5.11 + 0.005) = 104192.8 -> 6512 blocks of 16
    ("vllm-v1-wrapped-two", [
        "ValueError: To serve at least one request with the model's max seq len (133072),",
        "(5.11 GiB KV cache is needed, which is larger than the available KV cache memory (4.01 GiB).",
    ], "max seq len (133072)", "--max-model-len 104192"),
    # the same message wrapped in three, the estimate on the last line (a deployment guide's quote of it)
    ("vllm-v1-wrapped-three", [
        "ValueError: To serve at least one request with the model's max seq len (131072),",
        "9.5 GiB KV cache is needed, which is larger than the available KV cache memory",
        "(6.91 GiB). Based on the available memory, the estimated maximum model length is 91520.",
    ], "9.5 GiB KV cache is needed", "--max-model-len 91520"),
    # vllm/worker/worker.py raise_if_cache_size_invalid (V0), the paste cut before the capacity (corpus i006);
    # the engine logged its blocks before: V0 compares max_model_len with num_gpu_blocks * block_size = 953 * 16
    ("vllm-v0-cut-before-capacity", [
        "INFO 04-16 10:01:02 llm_engine.py:337] # GPU blocks: 953, # CPU blocks: 512",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (",
    ], "max seq len (32768)", "--max-model-len 15248"),
    # the V0 refusal retold without its numbers (a tutorial's troubleshooting note)
    ("vllm-v0-no-numbers", [
        "Error: max seq len is larger than the maximum number of tokens that can be stored in KV cache",
    ], "stored in KV cache", None),
]


@pytest.mark.parametrize(("name", "lines", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_kv_shortfall_wording(tmp_path, name: str, lines: list[str], evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, "load.kv_cache_insufficient", evidence, command)


def test_separate_attempts_are_not_joined(tmp_path) -> None:
    """Three refusals of three attempts, one per line (vllm-project/vllm#10517, corpus x021): the last
    attempt's own numbers count, not a join with the attempts before it."""
    assert_rank_one(tmp_path, "vllm-v0-attempts", [
        "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in "
        "KV cache (23968). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        "ValueError: The model's max seq len (20000) is larger than the maximum number of tokens that can be stored in "
        "KV cache (10944). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ], "load.kv_cache_insufficient", "(10944)", "--max-model-len 10944")


def test_sglang_refusal_within_its_input_reserve_is_the_context(tmp_path) -> None:
    """SGLang since v0.5 allows min(context - 1, pool - 1) - 5 input tokens (scheduler.py): 32762 under a
    --context-length 32768 is the context's own limit, not a smaller KV pool."""
    log = tmp_path / "sglang.log"
    log.write_text("python -m sglang.launch_server --model-path /models/qwen --context-length 32768\n"
                   "[2025-09-03 06:49:28 TP0] Input length (40000 tokens) exceeds the maximum allowed length (32762 tokens). "
                   "Use a shorter input or enable --allow-auto-truncate.\n")
    assert "load.kv_cache_insufficient" not in [f.code for f in findings_of(log)]


def test_vllm_free_memory_refusal_wrapped_over_two_lines(tmp_path) -> None:
    """vllm/v1/worker/gpu_worker.py's start-up refusal as a pull request quotes it, wrapped after "less
    than" (corpus i070): other processes hold the GPU, and what is free is the share to ask for
    (67.92 / 121.69 - 0.02 = 0.538 -> 0.53)."""
    assert_rank_one(tmp_path, "vllm-free-memory-wrapped", [
        "ValueError: Free memory on device cuda:0 (67.92/121.69 GiB) on startup is less than",
        "desired GPU memory utilization (0.7, 85.18 GiB).",
    ], "load.gpu_memory_occupied", "it asked for 85.18 GiB (utilization 0.7)", None)
    top = findings_of(tmp_path / "vllm-free-memory-wrapped.log")[0]
    assert top.fixes[1].command == "--gpu-memory-utilization 0.53"


@pytest.mark.parametrize(("model", "gpus", "tp", "wider", "note"), [
    # 8 KV heads (the table's config.json): 4 per GPU at TP 2, 1 at TP 8: a token's KV takes a quarter per GPU
    ("meta-llama/Llama-3.1-70B-Instruct", 8, 2, 8, "at least 63872 tokens: each GPU holds 1/4 of a token's KV"),
    # one KV head per GPU at TP 8 already, replicated at TP 16 (ModelConfig.get_num_kv_heads)
    ("meta-llama/Llama-3.1-70B-Instruct", 16, 8, 16, "a token's KV does not shrink per GPU"),
    # MLA: the latent is stored whole on every GPU
    ("deepseek-ai/DeepSeek-R1", 8, 4, 8, "a token's KV does not shrink per GPU"),
    # 28 heads, 4 KV heads: of 8 GPUs only TP 4 divides both; no wider split to offer
    ("Qwen/Qwen2-7B-Instruct", 8, 4, None, ""),
])
def test_a_wider_split_grows_the_kv_cache_by_vllms_head_split(tmp_path, model: str, gpus: int, tp: int, wider: int | None,
                                                              note: str) -> None:
    """The wider-TP fix is a split vLLM accepts (the heads divide over it) and says what it does to a
    token's KV per GPU, from the model's KV heads, not TP's ratio alone (vllm/config
    ModelConfig.get_num_kv_heads; MLA's latent is replicated)."""
    visible = ",".join(str(i) for i in range(gpus))
    lines = [f"CUDA_VISIBLE_DEVICES={visible} vllm serve {model} --tensor-parallel-size {tp}",
             "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored "
             "in KV cache (15968). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."]
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    kv = next(f for f in findings_of(log) if f.code == "load.kv_cache_insufficient")
    splits = [f for f in kv.fixes if (f.command or "").startswith("--tensor-parallel-size")]
    if wider is None:
        assert not splits, [f.command for f in splits]
        return
    assert [f.command for f in splits] == [f"--tensor-parallel-size {wider}"] and note in splits[0].summary, \
        [f.summary for f in kv.fixes]
