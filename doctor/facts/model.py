"""Architecture facts of the served model: what the memory arithmetic needs (doctor/memory.py).

Filled from a local config.json (+ the safetensors index's `metadata.total_size`), the Hugging
Face hub, or the table shipped in doctor/data/models.json; `source` says which.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModelFacts:
    name: str = ""
    source: str = ""  # "local config.json", "hub", "builtin table"
    architecture: str = ""  # config.json architectures[0]
    model_type: str = ""
    num_layers: int | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    torch_dtype: str = ""
    tie_word_embeddings: bool | None = None
    # Mixture of experts
    num_experts: int | None = None
    num_experts_per_tok: int | None = None
    moe_intermediate_size: int | None = None
    # Multi-head latent attention (DeepSeek V2/V3/R1): one latent of kv_lora_rank + qk_rope_head_dim per layer
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    # Sliding-window attention: the window, and how many of num_layers use it (the rest are full)
    sliding_window: int | None = None
    num_sliding_layers: int | None = None
    # Quantization as the checkpoint declares it (config.json quantization_config)
    quant_method: str = ""
    quant_bits: int | None = None
    quant_group_size: int | None = None
    params: int | None = None
    weight_bytes: int | None = None  # safetensors index metadata.total_size: the checkpoint's real bytes
