"""Memory arithmetic, done the way the engines do it: model + GPUs + engine args -> bytes.

vLLM (V1, v0.10): `Worker.determine_available_memory` (vllm/v1/worker/gpu_worker.py) asks for
`total_memory x gpu_memory_utilization` and subtracts what the profiling run used:
weights + the torch activation peak of one dummy step of `max_num_batched_tokens` tokens and a
dummy sampler run over `max_num_seqs` rows + the non-torch growth (NCCL, cuBLAS workspaces).
What is left is cut into blocks by `get_kv_cache_config` (vllm/v1/core/kv_cache_utils.py):
`num_blocks = available // page_size // layers_per_group`, and the log line
"GPU KV cache size: N tokens" is `num_blocks // num_groups * block_size`. The per-layer page
comes from the layer's KV cache spec (vllm/v1/kv_cache_interface.py): FullAttentionSpec /
SlidingWindowSpec `2 x block_size x kv_heads_per_gpu x head_size x dtype bytes`, MLAAttentionSpec
one latent `block_size x (kv_lora_rank + qk_rope_head_dim) x dtype bytes`, not split over TP.
KV heads per GPU are `max(1, kv_heads // tp)` (ModelConfig.get_num_kv_heads: replicated when
fewer than TP). V0 (`Worker.determine_num_available_blocks`) is the same budget with all layers
in one uniform group. CUDA graphs are captured after the KV cache is allocated, so they come
out of the `1 - gpu_memory_utilization` remainder, as does the CUDA context.

SGLang: `ModelRunner.profile_max_num_token` (python/sglang/srt/model_executor/model_runner.py):
`rest = available_after_weights - total_at_start x (1 - mem_fraction_static)`, tokens =
`rest // cell_size`, cell = `kv_heads_per_gpu x head_dim x layers x 2 x dtype bytes`, or for MLA
`(kv_lora_rank + qk_rope_head_dim) x layers x dtype bytes`; capped by --max-total-tokens.

Everything here is a pure function of ModelFacts and EngineConfig, so checks can use it.
"""

from __future__ import annotations

import dataclasses
import math

from doctor.facts.deployment import EngineConfig
from doctor.facts.model import ModelFacts
from doctor.facts.plan import Change, MemoryPlan

GIB = 1024**3
MIB = 1024**2

DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4,
    "float16": 2, "fp16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1, "float8_e4m3fn": 1, "int8": 1,
    "q8_0": 1, "q4_0": 0.5,
}  # fmt: skip

# Bytes per parameter of the quantized linear layers, scales included: GPTQ/AWQ int4 with one
# fp16 scale and a packed 4-bit zero per group of 128 -> 4 bits + (16 + 4) / 128 bits.
QUANT_BYTES_PER_PARAM = {
    "awq": 0.5 + 2.5 / 128, "awq_marlin": 0.5 + 2.5 / 128, "gptq": 0.5 + 2.5 / 128, "gptq_marlin": 0.5 + 2.5 / 128,
    "marlin": 0.5 + 2.5 / 128, "fp8": 1.0, "modelopt": 1.0, "fbgemm_fp8": 1.0, "compressed-tensors": 1.0,
    "mxfp4": 4.25 / 8, "bitsandbytes": 0.5 + 0.5 / 64, "bitsandbytes-8bit": 1.0, "eetq": 1.0,
    "experts_int8": 1.0, "gguf": 0.5 + 0.5 / 32,
}  # fmt: skip

# Non-torch memory growth during profiling (cuBLAS/cuDNN workspaces, allocator slack), and the
# extra for NCCL and custom all-reduce buffers once TP > 1. Measured from the real v0.10.1.1
# logs in tests/test_memory.py (0.5 GiB at TP=1, 0.65 GiB at TP=2 for Qwen2-7B), not guessed.
NON_TORCH_BASE = int(0.15 * GIB)
NON_TORCH_PER_TP = int(0.15 * GIB)
# NVML's framebuffer total minus what cudaMemGetInfo reports (the driver's reservation): A100-40GB
# 40.0 -> 39.38 GiB, H200 140.4 -> 139.72 GiB in the real logs; applied to --gpu / NVML totals.
DRIVER_RESERVED = int(0.65 * GIB)
CUDA_CONTEXT = int(0.5 * GIB)  # outside the profiled budget: comes out of the remainder
CUDA_GRAPHS = int(
    0.5 * GIB
)  # vLLM's own warning: "CUDA graphs can take additional 1~3 GiB"; typical small models


def dtype_bytes(name: str, default: float = 2) -> float:
    name = (name or "").lower().removeprefix("torch.")
    if name in ("", "auto"):
        return default
    return DTYPE_BYTES.get(name, default)


def model_dtype_bytes(model: ModelFacts, cfg: EngineConfig) -> float:
    """The activation/KV dtype: --dtype, else the checkpoint's torch_dtype (fp32 served as fp16)."""
    if cfg.dtype and cfg.dtype != "auto":
        return dtype_bytes(cfg.dtype)
    return min(2, dtype_bytes(model.torch_dtype))


def kv_cache_dtype_bytes(model: ModelFacts, cfg: EngineConfig) -> float:
    kv = (cfg.kv_cache_dtype or "auto").lower()
    return model_dtype_bytes(model, cfg) if kv == "auto" else dtype_bytes(kv)


def kv_heads_per_gpu(model: ModelFacts, tp: int) -> int:
    """ModelConfig.get_num_kv_heads: KV heads are split over TP, replicated when fewer than TP."""
    total = model.num_kv_heads or model.num_attention_heads or 1
    return max(1, total // max(1, tp))


def head_dim(model: ModelFacts) -> int:
    if model.head_dim:
        return model.head_dim
    if model.hidden_size and model.num_attention_heads:
        return model.hidden_size // model.num_attention_heads
    raise ValueError("the model facts give neither head_dim nor hidden_size and heads")


def is_mla(model: ModelFacts) -> bool:
    return bool(model.kv_lora_rank)


def layer_kv_bytes_per_token(model: ModelFacts, cfg: EngineConfig) -> float:
    """KV bytes one attention layer stores per token on one GPU."""
    kv = kv_cache_dtype_bytes(model, cfg)
    if is_mla(model):
        return (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * kv  # one latent, replicated over TP
    return 2 * kv_heads_per_gpu(model, cfg.tensor_parallel_size or 1) * head_dim(model) * kv


def layers_per_gpu(model: ModelFacts, cfg: EngineConfig) -> int:
    """Layers on the fullest pipeline stage."""
    return math.ceil((model.num_layers or 0) / max(1, cfg.pipeline_parallel_size or 1))


def kv_bytes_per_token(model: ModelFacts, cfg: EngineConfig) -> int:
    """KV cache bytes per token per GPU, after the TP split (all layers of the fullest PP stage)."""
    return int(layer_kv_bytes_per_token(model, cfg) * layers_per_gpu(model, cfg))


def _kv_groups(model: ModelFacts, cfg: EngineConfig) -> tuple[int, int, int]:
    """(layers_per_group, num_groups, full_layers) for vLLM V1's hybrid allocator.

    `_get_kv_cache_config_uniform_page_size`: layers of each attention type are cut into groups
    of the smallest type's layer count (or the largest's, when within 1.25x); a partial group
    is padded. Uniform models are one group of all layers."""
    layers = layers_per_gpu(model, cfg)
    pp = max(1, cfg.pipeline_parallel_size or 1)
    sliding = math.ceil((model.num_sliding_layers or 0) / pp)
    if cfg.engine != "vllm" or cfg.engine_generation == "V0" or not sliding or sliding >= layers:
        return layers, 1, layers
    full = layers - sliding
    small, large = min(full, sliding), max(full, sliding)
    group = large if large < small * 1.25 else small
    groups = math.ceil(full / group) + math.ceil(sliding / group)
    return group, groups, full


def weights_bytes_per_gpu(model: ModelFacts, cfg: EngineConfig) -> int:
    """Weight bytes on one GPU: the checkpoint's bytes (or params x bytes per param for the dtype or
    quantization), split over TP x PP; KV projections are replicated when KV heads < TP."""
    tp, pp = max(1, cfg.tensor_parallel_size or 1), max(1, cfg.pipeline_parallel_size or 1)
    total = total_weight_bytes(model, cfg)
    per_gpu = total / (tp * pp)
    heads = model.num_kv_heads or 0
    if heads and tp > heads and model.hidden_size and not is_mla(model):
        # k_proj and v_proj of each layer are copied, not split, on the GPUs beyond the KV heads
        kv_proj = 2 * model.hidden_size * heads * head_dim(model) * _weight_bytes_per_param(model, cfg)
        per_gpu += kv_proj * (model.num_layers or 0) / pp * (1 / heads - 1 / tp)
    return int(per_gpu)


def _weight_bytes_per_param(model: ModelFacts, cfg: EngineConfig) -> float:
    quant = (cfg.quantization or model.quant_method or "").lower()
    if quant and quant in QUANT_BYTES_PER_PARAM:
        if quant == "bitsandbytes" and model.quant_bits == 8:
            return QUANT_BYTES_PER_PARAM["bitsandbytes-8bit"]
        return QUANT_BYTES_PER_PARAM[quant]
    return model_dtype_bytes(model, cfg)


def total_weight_bytes(model: ModelFacts, cfg: EngineConfig) -> int:
    """The whole model's weight bytes as the engine holds them."""
    online_quant = (cfg.quantization or "").lower() not in ("", "none", (model.quant_method or "").lower())
    if model.weight_bytes and not online_quant:
        ckpt_bytes = dtype_bytes(model.torch_dtype)
        if not model.quant_method and ckpt_bytes > model_dtype_bytes(model, cfg):
            return int(model.weight_bytes * model_dtype_bytes(model, cfg) / ckpt_bytes)  # fp32 served as bf16
        return int(model.weight_bytes)
    params = model.params or estimate_params(model)
    if not params:
        raise ValueError("the model facts give neither weight bytes nor parameters nor an architecture")
    return int(params * _weight_bytes_per_param(model, cfg))


def estimate_params(model: ModelFacts) -> int:
    """Parameters from the architecture, for a model whose checkpoint size is unknown."""
    h, layers = model.hidden_size or 0, model.num_layers or 0
    if not h or not layers:
        return 0
    hd = head_dim(model)
    attn = (
        h
        * hd
        * (2 * (model.num_attention_heads or 0) + 2 * (model.num_kv_heads or model.num_attention_heads or 0))
    )
    if model.num_experts and model.moe_intermediate_size:
        mlp = model.num_experts * 3 * h * model.moe_intermediate_size
    else:
        mlp = 3 * h * (model.intermediate_size or 4 * h) * (model.num_experts or 1)
    embed = (model.vocab_size or 0) * h * (1 if model.tie_word_embeddings else 2)
    return layers * (attn + mlp) + embed


def activation_bytes(model: ModelFacts, cfg: EngineConfig) -> int:
    """The torch peak of vLLM's profiling run beyond the weights.

    `profile_run` runs one forward of max_num_batched_tokens tokens (MLP gate_up + activation,
    residual stream, QKV) and `_dummy_sampler_run` over max_num_seqs rows of full-vocabulary
    logits (bf16 logits, fp32 copy, fp32 probabilities: ~10 bytes per entry); the peak is the
    larger of the two. SGLang reserves its activations inside 1 - mem_fraction_static. The MoE
    workspace factor is set from the DeepSeek-R1 TP=16 log in tests/test_memory.py."""
    tp = max(1, cfg.tensor_parallel_size or 1)
    tokens = cfg.max_num_batched_tokens or cfg.max_model_len or 2048
    dt = model_dtype_bytes(model, cfg)
    h = model.hidden_size or 0
    inter = model.intermediate_size or 4 * h
    forward = tokens * dt * (4 * h + 3 * inter / tp)
    if model.num_experts and model.num_experts_per_tok:
        # fused_moe's workspaces hold every (token, expert) pair at the hidden width: the
        # (M, topk, K) intermediate cache and its reduction; they dwarf the dense MLP's share.
        expert_inter = (model.moe_intermediate_size or inter) * model.num_experts_per_tok
        forward = tokens * dt * (4 * h + 3 * expert_inter / tp + 2 * model.num_experts_per_tok * h)
    sampler = (cfg.max_num_seqs or 256) * (model.vocab_size or 0) * 10
    return int(max(forward, sampler))


def non_torch_bytes(cfg: EngineConfig) -> int:
    tp = max(1, cfg.tensor_parallel_size or 1)
    return NON_TORCH_BASE + (NON_TORCH_PER_TP if tp > 1 else 0)


def kv_tokens_from_available(model: ModelFacts, cfg: EngineConfig, available_bytes: float) -> int:
    """KV cache tokens the engine makes of `available_bytes` per GPU (its own rounding)."""
    per_layer = layer_kv_bytes_per_token(model, cfg)
    if available_bytes <= 0 or per_layer <= 0:
        return 0
    if cfg.engine == "sglang":
        tokens = int(available_bytes // (per_layer * layers_per_gpu(model, cfg)))
        return min(tokens, cfg.max_total_tokens) if cfg.max_total_tokens else tokens
    block = cfg.block_size or 16
    group, groups, _ = _kv_groups(model, cfg)
    page = block * per_layer
    blocks = int(available_bytes // page // group)
    if cfg.num_gpu_blocks_override:
        blocks = cfg.num_gpu_blocks_override
    return blocks // groups * block


def max_concurrency(model: ModelFacts, cfg: EngineConfig, kv_tokens: int, max_model_len: int) -> float:
    """Requests of max_model_len tokens the cache holds at once. Sliding-window layers need only
    their window per request (SlidingWindowSpec.max_memory_usage_bytes), so hybrids hold more."""
    if max_model_len <= 0:
        return 0.0
    block = cfg.block_size or 16
    group, groups, full = _kv_groups(model, cfg)
    if groups == 1:
        return kv_tokens / max_model_len
    blocks_total = kv_tokens // block * groups
    full_groups = math.ceil(full / group)
    window = model.sliding_window or max_model_len
    batched = cfg.max_num_batched_tokens or 2048
    sliding_blocks = min(math.ceil((window - 1 + batched) / block) + 1, math.ceil(max_model_len / block))
    per_request = full_groups * math.ceil(max_model_len / block) + (groups - full_groups) * sliding_blocks
    return blocks_total / per_request


def plan(
    model: ModelFacts, gpu_total_bytes: int, gpu_count: int, cfg: EngineConfig, gpu_name: str = ""
) -> MemoryPlan:
    """The memory plan of one deployment: budget, weights, activations, KV cache, verdict, changes.

    `gpu_total_bytes` is the total the engine sees (cudaMemGetInfo), per GPU; `gpu_name` picks
    vLLM's hardware-dependent defaults (A100s keep the small batch defaults)."""
    from doctor.engine_args import apply_hardware_defaults, sglang_mem_fraction

    cfg = apply_hardware_defaults(cfg, gpu_name, gpu_total_bytes) if cfg.engine else cfg
    if cfg.engine == "tgi" and not cfg.is_set("tensor_parallel_size"):
        cfg = dataclasses.replace(cfg, tensor_parallel_size=gpu_count)  # TGI shards over every visible GPU
    plan_ = _plan_once(model, gpu_total_bytes, gpu_count, cfg)
    if not plan_.fits:
        plan_.changes = _changes(model, gpu_total_bytes, gpu_count, cfg, plan_)
    if cfg.engine == "sglang" and not cfg.is_set("gpu_memory_utilization"):
        plan_.assumptions.append(
            f"mem_fraction_static {sglang_mem_fraction(cfg.tensor_parallel_size or 1)} (SGLang's default at TP={cfg.tensor_parallel_size or 1})"
        )
    return plan_


def _plan_once(model: ModelFacts, gpu_total_bytes: int, gpu_count: int, cfg: EngineConfig) -> MemoryPlan:
    tp, pp = max(1, cfg.tensor_parallel_size or 1), max(1, cfg.pipeline_parallel_size or 1)
    util = cfg.gpu_memory_utilization or (0.88 if cfg.engine == "sglang" else 0.9)
    max_len = cfg.max_model_len or model.max_position_embeddings or 0
    cfg = dataclasses.replace(cfg, max_model_len=max_len)
    weights = weights_bytes_per_gpu(model, cfg)
    assumptions: list[str] = []
    if cfg.engine == "sglang":
        # SGLang measures the total after the CUDA context is up; the activations live outside the fraction.
        start = gpu_total_bytes - CUDA_CONTEXT
        act, non_torch = 0, 0
        budget = start * util
        kv_avail = budget - weights
        headroom = start * (1 - util)
    else:
        act, non_torch = activation_bytes(model, cfg), non_torch_bytes(cfg)
        if cfg.kv_cache_memory_bytes:
            kv_avail = cfg.kv_cache_memory_bytes
            budget = weights + act + non_torch + kv_avail
            assumptions.append(
                "--kv-cache-memory-bytes fixes the KV budget; gpu_memory_utilization is ignored"
            )
        else:
            budget = gpu_total_bytes * util
            kv_avail = budget - weights - act - non_torch
        graphs = 0 if cfg.enforce_eager else CUDA_GRAPHS
        headroom = gpu_total_bytes - budget - CUDA_CONTEXT - graphs
    tokens = kv_tokens_from_available(model, cfg, kv_avail)
    conc = max_concurrency(model, cfg, tokens, max_len)
    reasons: list[str] = []
    verdict = "ok"
    if tp * pp > gpu_count:
        verdict = "gpu_count"
        reasons.append(f"TP x PP = {tp * pp} needs {tp * pp} GPUs; {gpu_count} given")
    elif weights > budget and not cfg.kv_cache_memory_bytes:
        verdict = "weights_oom"
        reasons.append(
            f"the weights need {weights / GIB:.1f} GiB per GPU at TP={tp}"
            + (f" PP={pp}" if pp > 1 else "")
            + f"; {gpu_count} GPU(s) of {gpu_total_bytes / GIB:.1f} GiB at {util:g} give {budget / GIB:.1f} GiB each"
        )
    elif tokens <= 0:
        verdict = "no_kv_cache_memory"
        reasons.append(
            f"nothing is left for the KV cache: {kv_avail / GIB:.2f} GiB after weights and activations"
        )
    elif max_len and conc < 1:
        verdict = "kv_cache_insufficient"
        reasons.append(f"max_model_len {max_len} needs more KV cache than the {tokens} tokens that fit")
    return MemoryPlan(
        engine=cfg.engine or "vllm",
        model=model.name,
        gpu_total_gib=round(gpu_total_bytes / GIB, 2),
        gpu_count=gpu_count,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        budget_gib=round(budget / GIB, 2),
        weights_gib_per_gpu=round(weights / GIB, 2),
        activation_gib=round(act / GIB, 2),
        non_torch_gib=round(non_torch / GIB, 2),
        kv_cache_gib=round(kv_avail / GIB, 2),
        kv_bytes_per_token=kv_bytes_per_token(model, cfg),
        kv_cache_tokens=tokens,
        max_model_len=max_len,
        max_concurrency=round(conc, 2),
        headroom_gib=round(headroom / GIB, 2),
        fits=verdict == "ok",
        verdict=verdict,
        reasons=reasons,
        assumptions=assumptions,
    )


FLAG_NAMES = {
    "vllm": {
        "max_model_len": "--max-model-len", "util": "--gpu-memory-utilization", "kv": "--kv-cache-dtype",
        "kv_fp8": "fp8", "tp": "--tensor-parallel-size", "quant": "--quantization", "seqs": "--max-num-seqs",
    },
    "sglang": {
        "max_model_len": "--context-length", "util": "--mem-fraction-static", "kv": "--kv-cache-dtype",
        "kv_fp8": "fp8_e5m2", "tp": "--tp", "quant": "--quantization", "seqs": "--max-running-requests",
    },
    "tgi": {
        "max_model_len": "--max-total-tokens", "util": "--cuda-memory-fraction", "kv": "--kv-cache-dtype",
        "kv_fp8": "fp8_e5m2", "tp": "--num-shard", "quant": "--quantize", "seqs": "--max-batch-size",
    },
}  # fmt: skip


def _changes(
    model: ModelFacts, total: int, gpu_count: int, cfg: EngineConfig, base: MemoryPlan
) -> list[Change]:
    """The smallest single changes that make the plan fit, each checked by re-planning."""
    flags = FLAG_NAMES.get(cfg.engine, FLAG_NAMES["vllm"])
    out: list[Change] = []

    def fits(**kw: object) -> MemoryPlan | None:
        trial = _plan_once(model, total, gpu_count, dataclasses.replace(cfg, **kw))
        return trial if trial.fits else None

    tp = base.tensor_parallel_size
    if base.verdict == "kv_cache_insufficient" and base.kv_cache_tokens > 0:
        block = cfg.block_size or 16
        longest = _largest_len(model, cfg, base)
        if longest >= block:
            out.append(
                Change(
                    "a shorter context",
                    flags["max_model_len"],
                    str(longest),
                    f"fits {base.kv_cache_tokens} KV tokens",
                )
            )
    if base.verdict in ("kv_cache_insufficient", "no_kv_cache_memory", "weights_oom"):
        current = cfg.gpu_memory_utilization or 0.9
        for step in range(int(round(current * 100)) + 1, 96):
            trial = fits(gpu_memory_utilization=step / 100)
            if trial:
                out.append(
                    Change(
                        "a larger memory share",
                        flags["util"],
                        f"{step / 100:.2f}",
                        f"{trial.kv_cache_tokens} KV tokens",
                    )
                )
                break
        if kv_cache_dtype_bytes(model, cfg) > 1 and base.verdict != "weights_oom":
            trial = fits(kv_cache_dtype=flags["kv_fp8"])
            if trial:
                out.append(
                    Change(
                        "an fp8 KV cache", flags["kv"], flags["kv_fp8"], f"{trial.kv_cache_tokens} KV tokens"
                    )
                )
        for bigger in (2, 4, 8, 16):
            if bigger <= tp or (model.num_attention_heads and model.num_attention_heads % bigger):
                continue
            trial = _plan_once(
                model,
                total,
                bigger * base.pipeline_parallel_size,
                dataclasses.replace(cfg, tensor_parallel_size=bigger),
            )
            if trial.fits:
                out.append(
                    Change(
                        f"more GPUs ({bigger * base.pipeline_parallel_size} needed)",
                        flags["tp"],
                        str(bigger),
                        f"{trial.weights_gib_per_gpu} GiB weights and {trial.kv_cache_tokens} KV tokens per GPU",
                    )
                )
                break
        if not model.quant_method and not cfg.quantization:
            for method, what in (
                ("fp8", "fp8 weights (Ada/Hopper or newer)"),
                ("awq", "a 4-bit AWQ checkpoint"),
            ):
                trial = fits(quantization=method)
                if trial:
                    out.append(
                        Change(
                            what, flags["quant"], method, f"{trial.weights_gib_per_gpu} GiB weights per GPU"
                        )
                    )
                    break
    if base.verdict in ("kv_cache_insufficient", "no_kv_cache_memory") and cfg.engine != "sglang":
        seqs = cfg.max_num_seqs or 256
        while seqs > 1:
            seqs //= 2
            trial = fits(max_num_seqs=seqs)
            if trial:
                out.append(
                    Change(
                        "fewer concurrent sequences",
                        flags["seqs"],
                        str(seqs),
                        f"{trial.kv_cache_tokens} KV tokens",
                    )
                )
                break
    return out


def _largest_len(model: ModelFacts, cfg: EngineConfig, base: MemoryPlan) -> int:
    """vLLM's estimate_max_model_len: the longest context one request's KV cache can hold."""
    block = cfg.block_size or 16
    _, groups, _ = _kv_groups(model, cfg)
    if groups == 1:
        return base.kv_cache_tokens // block * block
    lo, hi = 0, base.max_model_len
    while lo < hi:  # a request's need is monotone in its length
        mid = (lo + hi + 1) // 2
        if max_concurrency(model, cfg, base.kv_cache_tokens, mid) >= 1:
            lo = mid
        else:
            hi = mid - 1
    return lo
