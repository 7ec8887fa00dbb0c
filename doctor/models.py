"""Model facts from a config.json: a local folder, the standard Hugging Face cache (where the engine
that served the model downloaded it: `HF_HUB_CACHE`, `HF_HOME/hub`, `~/.cache/huggingface/hub`), the
hub (doctor/collect/hub.py), or the table shipped in doctor/data/models.json, so `plan` works offline.

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

from llm_doctor.facts.model import ModelFacts

# the config.json keys each ModelFacts field is read from, in the order tried
KEYS: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "intermediate_size": ("intermediate_size", "ffn_hidden_size"),
    "num_kv_heads": ("num_key_value_heads", "num_kv_heads", "multi_query_group_num"),
    "head_dim": ("head_dim", "kv_channels"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "seq_length"),
    "num_experts": ("num_local_experts", "n_routed_experts", "num_experts"),
    "num_experts_per_tok": ("num_experts_per_tok", "experts_per_token", "moe_topk"),
}
# sizes the memory arithmetic divides by: a config that gives 0 or a negative one is broken
POSITIVE = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "vocab_size")


def from_config(
    config: dict[str, Any], name: str = "", source: str = "", weight_bytes: int | None = None
) -> ModelFacts:
    """Raises ValueError naming the field when the config is not a model config (a list, a field
    of the wrong type, zero heads): `plan` turns that into a usage error naming the input."""
    if not isinstance(config, dict):
        raise ValueError(f"config.json is not a model config: expected a JSON object, got {type(config).__name__}")
    outer = config
    inner = config.get("text_config") or config.get("llm_config")
    cfg = inner if isinstance(inner, dict) else config
    get = lambda *keys: next((cfg[k] for k in keys if cfg.get(k) is not None), None)  # noqa: E731
    layers = get(*KEYS["num_layers"])
    heads = get(*KEYS["num_attention_heads"])
    quant = outer.get("quantization_config") or cfg.get("quantization_config") or {}
    quant = quant if isinstance(quant, dict) else {}
    archs = outer.get("architectures")
    facts = ModelFacts(
        name=name or str(outer.get("_name_or_path", "")),
        source=source,
        architecture=str(archs[0]) if isinstance(archs, list) and archs else "",
        model_type=str(cfg.get("model_type") or outer.get("model_type") or ""),
        num_layers=layers,
        hidden_size=get(*KEYS["hidden_size"]),
        intermediate_size=get(*KEYS["intermediate_size"]),
        num_attention_heads=heads,
        num_kv_heads=get(*KEYS["num_kv_heads"]) or heads,
        head_dim=get(*KEYS["head_dim"]),
        vocab_size=get(*KEYS["vocab_size"]) or outer.get("vocab_size"),
        max_position_embeddings=get(*KEYS["max_position_embeddings"]),
        torch_dtype=str(get("torch_dtype", "dtype") or outer.get("torch_dtype") or ""),
        tie_word_embeddings=outer.get("tie_word_embeddings", cfg.get("tie_word_embeddings")),
        num_experts=get(*KEYS["num_experts"]),
        num_experts_per_tok=get(*KEYS["num_experts_per_tok"]),
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
    facts = _checked(facts)
    _sliding(cfg, facts)
    return facts


def _checked(facts: ModelFacts) -> ModelFacts:
    """The facts re-read through their own type hints, so a string where a count belongs fails here,
    naming the field, instead of deep inside the memory arithmetic."""
    from llm_doctor.facts import SchemaError, from_dict, to_dict

    try:
        checked = from_dict(ModelFacts, to_dict(facts))
    except SchemaError as exc:
        raise ValueError(f"config.json field {_keys(exc.field)}: {str(exc).split(': ', 1)[1]}") from None
    for field in POSITIVE:
        value = getattr(checked, field)
        if value is not None and value <= 0:
            raise ValueError(f"config.json field {_keys(field)}: {value} is not a size (must be above 0)")
    return checked


def _keys(field: str) -> str:
    return " / ".join(KEYS.get(field, (field,)))


def _sliding(cfg: dict[str, Any], facts: ModelFacts) -> None:
    """How many layers use a sliding window: `layer_types` (gpt-oss, Gemma 3, Qwen3-Next),
    `sliding_window_pattern` (Gemma 3: every Nth layer is full), Gemma 2's alternation, or a
    window on all layers (Mistral v0.1); Qwen2 ships a window it does not use unless
    `use_sliding_window` is true."""
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return
    layers = facts.num_layers or 0
    facts.sliding_window = _count("sliding_window", window)
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        facts.num_sliding_layers = sum(1 for t in types if "sliding" in str(t))
    elif cfg.get("sliding_window_pattern"):
        pattern = _count("sliding_window_pattern", cfg["sliding_window_pattern"])
        facts.num_sliding_layers = layers - layers // pattern
    elif facts.model_type == "gemma2":
        facts.num_sliding_layers = layers // 2
    else:
        facts.num_sliding_layers = layers


def _count(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        raise ValueError(f"config.json field {field}: expected a count of 1 or more, got {value!r}")
    return int(value)


def from_folder(path: str | Path, name: str | None = None, source: str = "local config.json") -> ModelFacts:
    """A local model folder: config.json, and the safetensors index's metadata.total_size."""
    folder = Path(path)
    config = _read_json(folder / "config.json")
    total = None
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        meta = _read_json(index)
        meta = meta.get("metadata") if isinstance(meta, dict) else None
        total = meta.get("total_size") if isinstance(meta, dict) else None
        total = total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None
    elif (folder / "model.safetensors").is_file():
        total = (folder / "model.safetensors").stat().st_size
    try:
        return from_config(config, name=name or folder.name, source=source, weight_bytes=total)
    except ValueError as exc:
        raise ValueError(f"{folder}: {exc}") from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes()[: 16 * 1024 * 1024].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not a JSON file ({type(exc).__name__}: {str(exc)[:120]})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, Any]]:
    text = resources.files("llm_doctor").joinpath("data/models.json").read_text()
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


def hf_cache_root(env: dict[str, str] | None = None) -> Path:
    """Where huggingface_hub keeps downloads: HF_HUB_CACHE, else HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub (default ~/.cache/huggingface/hub)."""
    import os

    env = dict(os.environ) if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path(env.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser()) / "huggingface" / "hub"


def hf_cache_snapshot(repo_id: str, revision: str = "main", env: dict[str, str] | None = None) -> Path | None:
    """The cached snapshot folder of a repo that holds its config.json: the one `refs/<revision>`
    names, else the most recently written one; None when the repo is not in the cache."""
    if repo_id.count("/") != 1 or ".." in repo_id:
        return None
    repo = hf_cache_root(env) / f"models--{repo_id.replace('/', '--')}"
    ref = repo / "refs" / revision
    try:
        named = repo / "snapshots" / ref.read_text().strip() if ref.is_file() else None
        if named is not None and (named / "config.json").is_file():
            return named
        snapshots = [p for p in (repo / "snapshots").iterdir() if (p / "config.json").is_file()]
    except OSError:
        return None
    return max(snapshots, key=lambda p: (p / "config.json").lstat().st_mtime, default=None)


def from_hf_cache(repo_id: str, env: dict[str, str] | None = None) -> ModelFacts | None:
    """The model's own config.json from the Hugging Face cache; None when not cached or unreadable."""
    snapshot = hf_cache_snapshot(repo_id, env=env)
    if snapshot is None:
        return None
    try:
        return from_folder(snapshot, name=repo_id, source=f"Hugging Face cache {snapshot}/config.json")
    except ValueError:
        return None


def known(name: str) -> ModelFacts | None:
    """The model's facts from what is on this machine: the Hugging Face cache, else the shipped table."""
    return from_hf_cache(name) or from_table(name)


def builtin_names() -> list[str]:
    return sorted(_table())


# the parameter count a checkpoint's name states: "Llama-3.2-11B-Vision", "gpt-oss-120b", "Qwen2.5-0.5B",
# "SmolLM-135M"; "Mixtral-8x7B" as 8 x 7 (an upper bound: the experts share attention); "Qwen3-30B-A3B"
# reads 30 (the active "A3B" follows a letter); "128k" contexts and "v0.6" versions are no counts
_PARAMS = re.compile(r"(?<![\w.])(?:(?P<experts>\d+)x)?(?P<n>\d+(?:\.\d+)?)(?P<unit>[bm])(?![a-z0-9])", re.I)
# Meta's MoE naming (Llama-4-Scout-17B-16E: 109B in all, Maverick-17B-128E: 400B) states the active count and the
# experts: taken as the model's size it would call a shard that cannot fit one that "fits with room to spare"
_ACTIVE_OF_EXPERTS = re.compile(r"(?<![\w.])\d+(?:\.\d+)?B-\d+E(?![a-z0-9])", re.I)
# the weight format a name states: 4-bit AWQ/GPTQ/bitsandbytes/W4A16, 8-bit FP8/INT8/W8A8
_NAME_QUANT = (("awq", re.compile(r"awq|gptq|int4|\b4bit|-4bit|w4a16|\bnf4", re.I)), ("fp8", re.compile(r"fp8|int8|w8a8|8bit", re.I)))


def from_name(name: str) -> ModelFacts | None:
    """The parameter count (and weight format) a model's name states, when nothing else describes
    it: the doctor.memory arithmetic then sizes its weights. Only the last path part is read (a
    folder above it may hold any digits); None when the name states no count."""
    base = name.rstrip("/").split("/")[-1]
    if _ACTIVE_OF_EXPERTS.search(base):
        return None  # "17B-16E": 17B active in each of 16 experts' paths, the total is not in the name
    counts = []
    for m in _PARAMS.finditer(base):
        scale = 1e9 if m.group("unit").lower() == "b" else 1e6
        counts.append(float(m.group("n")) * scale * int(m.group("experts") or 1))
    if not counts:
        return None
    quant = next((q for q, rx in _NAME_QUANT if rx.search(base)), "")
    return ModelFacts(name=base, source=f"the parameter count in its name ({base})", params=int(max(counts)), quant_method=quant)
