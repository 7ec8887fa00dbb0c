"""Model facts from a local folder (config.json + safetensors index + quantization_config) and
the shipped table's hybrid/MLA/MoE shapes, each checked against the numbers the engines use."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor import memory
from llm_doctor.engine_args import parse_command
from llm_doctor.facts.model import ModelFacts
from llm_doctor.models import builtin_names, from_folder, from_table

AWQ = Path(__file__).parent.parent / "fixtures/models/qwen2-7b-instruct-awq"


def test_local_folder_reads_config_index_and_quantization() -> None:
    m = from_folder(AWQ)
    assert (m.source, m.quant_method, m.quant_bits, m.quant_group_size) == (
        "local config.json",
        "awq",
        4,
        128,
    )
    assert (m.num_layers, m.num_kv_heads, m.head_dim, m.sliding_window) == (28, 4, None, None)
    cfg = parse_command(f"vllm serve {AWQ} -tp 2")
    # the index's metadata.total_size is the checkpoint's real bytes: split over TP=2
    assert memory.weights_bytes_per_gpu(m, cfg) == 5579320320 // 2
    # fp16 KV, 4 KV heads over TP=2 -> 2 per GPU: 2 x 28 x 2 x 128 x 2 bytes
    assert memory.kv_bytes_per_token(m, cfg) == 28672


def test_local_folder_without_index_estimates_awq_weights_with_group_scales(tmp_path) -> None:
    (tmp_path / "config.json").write_text((AWQ / "config.json").read_text())
    m = from_folder(tmp_path)
    assert m.weight_bytes is None
    per_param = memory.QUANT_BYTES_PER_PARAM["awq"]  # 4 bits + fp16 scale and 4-bit zero per 128
    assert per_param == 0.5 + 2.5 / 128
    got = memory.weights_bytes_per_gpu(m, parse_command("vllm serve x"))
    assert got == int(memory.estimate_params(m) * per_param)


def test_gemma3_hybrid_layers_from_sliding_window_pattern() -> None:
    g = from_table("google/gemma-3-27b-it")
    # sliding_window_pattern 6: every 6th of 62 layers is full attention -> 10 full, 52 sliding
    assert (g.num_layers, g.num_sliding_layers, g.sliding_window, g.head_dim) == (62, 52, 1024, 128)


def test_qwen3_moe_and_deepseek_mla_shapes() -> None:
    q = from_table("Qwen/Qwen3-30B-A3B")
    assert (q.num_experts, q.num_experts_per_tok, q.moe_intermediate_size, q.head_dim) == (128, 8, 768, 128)
    # explicit head_dim 128 (not 2048 / 32 = 64): 2 x 48 x 4 x 128 x 2 bytes per token
    assert memory.kv_bytes_per_token(q, parse_command("vllm serve q")) == 98304
    r1 = from_table("deepseek-ai/DeepSeek-R1")
    assert (r1.kv_lora_rank, r1.qk_rope_head_dim, r1.quant_method) == (512, 64, "fp8")


def test_every_table_entry_says_where_it_was_verified() -> None:
    import json
    from importlib import resources

    table = json.loads(resources.files("llm_doctor").joinpath("data/models.json").read_text())["models"]
    for name in builtin_names():
        entry = table[name]
        assert "same_as" in entry or entry.get("verified_from"), name


@pytest.mark.parametrize("name", builtin_names())
def test_every_table_entry_loads_into_model_facts(name: str) -> None:
    m = from_table(name)
    assert isinstance(m, ModelFacts) and m.name == name and m.source == "builtin table"
    assert m.num_layers and m.hidden_size and m.num_attention_heads and m.num_kv_heads and m.vocab_size
    assert m.num_attention_heads % m.num_kv_heads == 0
    assert memory.kv_bytes_per_token(m, parse_command(f"vllm serve {name}")) > 0
    if m.sliding_window:
        assert 0 < (m.num_sliding_layers or 0) <= m.num_layers


# spot values read from each model's config.json copy (see the entry's verified_from)
SPOT = {
    "meta-llama/Llama-2-7b-hf": dict(num_layers=32, num_attention_heads=32, num_kv_heads=32, vocab_size=32000),
    "meta-llama/Llama-2-13b-hf": dict(num_layers=40, hidden_size=5120, num_kv_heads=40, intermediate_size=13824),
    "meta-llama/Llama-2-70b-hf": dict(num_layers=80, num_attention_heads=64, num_kv_heads=8, max_position_embeddings=4096),
    "meta-llama/Llama-3.2-1B-Instruct": dict(num_layers=16, num_kv_heads=8, head_dim=64, tie_word_embeddings=True),
    "google/gemma-2-9b": dict(num_layers=42, sliding_window=4096, num_sliding_layers=21, head_dim=256, num_kv_heads=8),
    "google/gemma-2-27b": dict(num_layers=46, sliding_window=4096, num_sliding_layers=23, head_dim=128, num_kv_heads=16),
    "meta-llama/Llama-3.2-3B": dict(num_layers=28, num_attention_heads=24, num_kv_heads=8, head_dim=128),
    "Qwen/Qwen2.5-7B": dict(num_layers=28, num_kv_heads=4, sliding_window=None, vocab_size=152064),
    "Qwen/Qwen2.5-14B": dict(num_layers=48, num_attention_heads=40, num_kv_heads=8, intermediate_size=13824),
    "Qwen/Qwen2.5-32B": dict(num_layers=64, num_attention_heads=40, num_kv_heads=8, intermediate_size=27648),
    "Qwen/Qwen3-8B": dict(num_layers=36, num_kv_heads=8, head_dim=128, max_position_embeddings=40960),
    "Qwen/Qwen3-32B": dict(num_layers=64, num_attention_heads=64, num_kv_heads=8, head_dim=128),
    "microsoft/Phi-3-mini-4k-instruct": dict(num_layers=32, num_kv_heads=32, sliding_window=2047, num_sliding_layers=32),
    "microsoft/Phi-3-medium-4k-instruct": dict(num_layers=40, num_attention_heads=40, num_kv_heads=10),
    "microsoft/phi-4": dict(num_layers=40, num_kv_heads=10, vocab_size=100352, sliding_window=None),
    "deepseek-ai/DeepSeek-V2-Lite": dict(num_layers=27, kv_lora_rank=512, qk_rope_head_dim=64, num_experts=64, num_experts_per_tok=6),
    "mistralai/Mixtral-8x22B-v0.1": dict(num_layers=56, num_attention_heads=48, num_kv_heads=8, num_experts=8),
}


@pytest.mark.parametrize("name", sorted(SPOT))
def test_table_spot_values_match_the_real_configs(name: str) -> None:
    m = from_table(name)
    assert m is not None
    assert {k: getattr(m, k) for k in SPOT[name]} == SPOT[name]


def test_instruct_tune_falls_back_to_its_base_checkpoint() -> None:
    from llm_doctor.models import from_table

    tuned = from_table("Qwen/Qwen2.5-7B-Instruct")
    assert tuned is not None and tuned.name == "Qwen/Qwen2.5-7B"
    assert "same architecture as Qwen/Qwen2.5-7B-Instruct" in tuned.source
    assert tuned.max_position_embeddings is None  # the base's 131072 is not the Instruct's 32768
    assert from_table("google/gemma-2-9b-it").name == "google/gemma-2-9b"
    assert from_table("Qwen/Qwen2.5-7B").source == "builtin table"
    assert from_table("acme/unknown-model-instruct") is None


def test_glm_field_names_are_read() -> None:
    """ChatGLM configs spell the KV groups, head size and vocab their own way."""
    from llm_doctor import memory
    from llm_doctor.facts.deployment import EngineConfig
    from llm_doctor.models import from_table

    glm = from_table("THUDM/chatglm3-6b")
    assert (glm.num_layers, glm.num_attention_heads, glm.num_kv_heads, glm.head_dim, glm.vocab_size) == (28, 32, 2, 128, 65024)
    # 2 x 28 layers x 2 KV groups x 128 x 2 bytes (fp16)
    assert memory.kv_bytes_per_token(glm, EngineConfig(engine="vllm", tensor_parallel_size=1)) == 28672
