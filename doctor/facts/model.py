"""Architecture facts of the served model: what the memory arithmetic needs (doctor/memory.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModelFacts:
    name: str = ""
    source: str = ""  # "local config.json", "hub", "builtin table"
    num_layers: int | None = None
    hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    torch_dtype: str = ""
    params: int | None = None
    weight_bytes: int | None = None
