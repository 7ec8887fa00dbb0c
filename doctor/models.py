"""Model facts from a config.json: a local folder, the hub (doctor/collect/hub.py), or the table
shipped in doctor/data/models.json, so `plan` works offline.

`from_config` is a pure function of the config dict (what the engines read too): it resolves
multimodal wrappers (`text_config`), explicit `head_dim`, GQA/MQA KV heads, MLA latents,
sliding-window layers (`layer_types`, `sliding_window_pattern`, `use_sliding_window`), MoE and
the checkpoint's quantization_config.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from doctor.facts.model import ModelFacts


def from_config(
    config: dict[str, Any], name: str = "", source: str = "", weight_bytes: int | None = None
) -> ModelFacts:
    outer = config
    cfg = config.get("text_config") or config.get("llm_config") or config
    get = lambda *keys: next((cfg[k] for k in keys if cfg.get(k) is not None), None)  # noqa: E731
    layers = get("num_hidden_layers", "n_layer", "num_layers")
    heads = get("num_attention_heads", "n_head")
    quant = outer.get("quantization_config") or cfg.get("quantization_config") or {}
    facts = ModelFacts(
        name=name or str(outer.get("_name_or_path", "")),
        source=source,
        architecture=(outer.get("architectures") or [""])[0],
        model_type=str(cfg.get("model_type") or outer.get("model_type") or ""),
        num_layers=layers,
        hidden_size=get("hidden_size", "n_embd", "d_model"),
        intermediate_size=get("intermediate_size", "ffn_hidden_size"),
        num_attention_heads=heads,
        num_kv_heads=get("num_key_value_heads", "num_kv_heads", "multi_query_group_num") or heads,
        head_dim=get("head_dim", "kv_channels"),
        vocab_size=get("vocab_size", "padded_vocab_size") or outer.get("vocab_size"),
        max_position_embeddings=get("max_position_embeddings", "n_positions", "seq_length"),
        torch_dtype=str(get("torch_dtype", "dtype") or outer.get("torch_dtype") or ""),
        tie_word_embeddings=outer.get("tie_word_embeddings", cfg.get("tie_word_embeddings")),
        num_experts=get("num_local_experts", "n_routed_experts", "num_experts"),
        num_experts_per_tok=get("num_experts_per_tok", "experts_per_token", "moe_topk"),
        moe_intermediate_size=get("moe_intermediate_size"),
        kv_lora_rank=get("kv_lora_rank"),
        qk_rope_head_dim=get("qk_rope_head_dim"),
        quant_method=str(quant.get("quant_method") or quant.get("quantization") or "").lower(),
        quant_bits=quant.get("bits")
        or (8 if quant.get("load_in_8bit") else 4 if quant.get("load_in_4bit") else None),
        quant_group_size=quant.get("group_size"),
        params=cfg.get("num_parameters"),
        weight_bytes=weight_bytes or outer.get("weight_bytes"),
    )
    if facts.quant_method == "bitsandbytes" and facts.quant_bits is None:
        facts.quant_bits = 4
    _sliding(cfg, facts)
    return facts


def _sliding(cfg: dict[str, Any], facts: ModelFacts) -> None:
    """How many layers use a sliding window: `layer_types` (gpt-oss, Gemma 3, Qwen3-Next),
    `sliding_window_pattern` (Gemma 3: every Nth layer is full), Gemma 2's alternation, or a
    window on all layers (Mistral v0.1); Qwen2 ships a window it does not use unless
    `use_sliding_window` is true."""
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return
    layers = facts.num_layers or 0
    facts.sliding_window = int(window)
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        facts.num_sliding_layers = sum(1 for t in types if "sliding" in str(t))
    elif cfg.get("sliding_window_pattern"):
        pattern = int(cfg["sliding_window_pattern"])
        facts.num_sliding_layers = layers - layers // pattern
    elif facts.model_type == "gemma2":
        facts.num_sliding_layers = layers // 2
    else:
        facts.num_sliding_layers = layers


def from_folder(path: str | Path) -> ModelFacts:
    """A local model folder: config.json, and the safetensors index's metadata.total_size."""
    folder = Path(path)
    config = json.loads((folder / "config.json").read_text())
    total = None
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        total = (json.loads(index.read_text()).get("metadata") or {}).get("total_size")
    elif (folder / "model.safetensors").is_file():
        total = (folder / "model.safetensors").stat().st_size
    return from_config(config, name=folder.name, source="local config.json", weight_bytes=total)


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, Any]]:
    text = resources.files("doctor").joinpath("data/models.json").read_text()
    return json.loads(text)["models"]


def _key(name: str) -> str:
    base = name.rstrip("/").split("/")[-1].lower()
    return re.sub(r"^meta-(?=llama)", "", base)


# chat/instruct fine-tunes keep their base checkpoint's architecture (layers, heads, head_dim)
_TUNED = re.compile(r"-(?:instruct|it|chat)(?:-v?[\d.]+)?$")


def from_table(name: str) -> ModelFacts | None:
    """The shipped entry for a repo id, or for a path/served name whose last part matches one; an
    instruct/chat tune falls back to its base checkpoint's entry (same architecture; its context
    limit may differ, so it is left unknown)."""
    table = _table()
    wanted = _key(name)
    for repo in table:
        if repo.lower() == name.lower() or _key(repo) == wanted:
            return _resolved(table, repo, "builtin table")
    base = _TUNED.sub("", wanted)
    for repo in table:
        if base != wanted and _TUNED.sub("", _key(repo)) == base:
            facts = _resolved(table, repo, f"builtin table: {repo}, the same architecture as {name}")
            facts.max_position_embeddings = None  # tunes often change it (Qwen2.5 base 131072, Instruct 32768)
            return facts
    return None


def _resolved(table: dict[str, dict[str, Any]], repo: str, source: str) -> ModelFacts:
    entry = table[repo]
    while "same_as" in entry:
        entry = table[entry["same_as"]]
    return from_config(entry, name=repo, source=source)


def builtin_names() -> list[str]:
    return sorted(_table())
