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
from dataclasses import dataclass

from llm_doctor import fp8
from llm_doctor.engine_args import (
    apply_hardware_defaults,
    configured_share,
    memory_share,
    sglang_mem_fraction,
    tgi_shards,
)
from llm_doctor.engine_flags import KV_HALF, flag
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.model import ModelFacts
from llm_doctor.facts.plan import Change, MemoryPlan

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

# --- what the engine measures at run time -----------------------------------------------------
# vLLM `memory_profiling` (vllm/utils/mem_utils.py, called by Worker.determine_available_memory in
# vllm/v1/worker/gpu_worker.py) splits the non-KV memory into weights ("Model loading took X GiB"),
# the torch peak increase of `profile_run`, and the *non-torch increase*: what cudaMemGetInfo says
# is used beyond torch.cuda.memory_reserved(), from the start snapshot to after profiling. That is
# CUDA kernel images loaded lazily, cuBLAS/cuBLASLt handles and, where the snapshot precedes
# `init_worker_distributed_environment` (v0.10 and older; newer versions snapshot after it), the
# NCCL communicators and custom all-reduce buffers. None of it can be computed offline: the
# numbers below are what real engines PRINTED, used only when the log at hand prints nothing.
# A plan built from a log (facts.logs.setup) takes the printed figures instead (`Printed`).
MODELLED_VLLM = "0.10"  # the release whose memory profiling this module copies (see the docstring)
NON_TORCH_PROCESS = int(0.18 * GIB)
"""One process, TP=1: vLLM 0.10.1.1, Qwen2-7B on A100-80GB at util 0.25 and 0.5 (real/vllm-startup/
v0.10.1.1-v1-1xA100-*.txt): total x util - "Model loading took 14.2488 GiB" - "Available KV cache
memory" = 0.555 / 0.549 GiB, of which the sampler peak computed below is 0.363 GiB."""
NON_TORCH_COMM = int(0.12 * GIB)
"""NCCL + custom all-reduce buffers at TP>1 without NVLS: the same model at TP=2 on one A100 node
(v0.10.1.1-v1-tp2-a100-*.txt) leaves 0.672 / 0.676 GiB, 0.12 GiB more than TP=1 once the TP=2
sampler peak is taken out; vLLM 0.8.0rc3 printed 'non_torch_memory takes 0.40-0.52GiB' at TP=4 on
PCIe A100-40GB (v0.8.0rc3-v0-fallback-tp4-pcie-custom-allreduce-disabled.txt)."""
NON_TORCH_NVLS = int(5.68 * GIB)
"""TP>1 on Hopper HGX boards (NVSwitch: H100 SXM, H200, H800, H20), where NCCL sets up NVLink
SHARP (NVLS) buffers: vLLM 0.6.4 printed 'non_torch_memory=5.68GiB' on 6 of 8 ranks (5.21 and
7.71 on the others) for Llama-3.1-70B TP=8 on H200 (v0.6.4.post1-v0-tp-llama70b-k8s-slow-load.txt)."""
NVLS_GPUS = ("H100 80GB HBM3", "H100 SXM", "H200", "H800", "H20")

# Outside the profiled budget (they come out of total x (1 - utilization)): vLLM captures CUDA
# graphs after the KV cache is allocated (gpu_worker.compile_or_warm_up_model -> capture_model) and
# prints "Graph capturing finished in N secs, took X GiB"; the CUDA context predates the start
# snapshot. Only the headroom figure uses these; a log's printed graph size replaces the default.
CUDA_GRAPHS = int(0.5 * GIB)
"""v0.10.1.1 printed 'Graph capturing finished in 3 secs, took 0.50 GiB' for Qwen2-7B TP=1
(0.65 GiB at TP=2; real/vllm-startup/v0.10.1.1-v1-*.txt)."""
CUDA_CONTEXT = int(0.5 * GIB)
"""Not printed by vLLM. SGLang's 'Load weight begin. avail mem=76.94 GB' on 79.14 GiB H800s
(real/other-engines/sglang-0.4.3-deepseek-r1-tp8-startup-decode-batches.txt) bounds context +
NCCL at 2.2 GiB for TP=16; 0.5 GiB is the single-GPU share assumed when nothing is printed."""

# vLLM's Sampler (vllm/v1/sample/sampler.py) on the dummy sampler run: the model dtype logits from
# compute_logits, their float32 copy (`logits.to(torch.float32)`), and the float32 probabilities
# FlashInfer's top-k/top-p sampler (or the random sampler) makes of them: 2 + 4 + 4 bytes a logit.
SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4


@dataclass
class Printed:
    """What an engine log printed about this deployment (facts.logs.setup): each figure given
    replaces the doctor's estimate of the same thing."""

    gpu_total_gib: float | None = None  # vLLM "total_gpu_memory (X GiB)" / "Free memory on device (a/X GiB)"
    weights_gib: float | None = None  # "Model loading took X GiB"
    available_kv_gib: float | None = None  # "Available KV cache memory: X GiB"
    cuda_graph_gib: float | None = None  # "Graph capturing finished in N secs, took X GiB"


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


def sampler_rows(cfg: EngineConfig) -> int:
    """Rows of the dummy sampler run: `min(max_num_seqs, max_num_batched_tokens)`
    (GPUModelRunner.profile_run -> _dummy_run(max_num_tokens) -> _dummy_sampler_run)."""
    seqs = cfg.max_num_seqs or 256
    return min(seqs, cfg.max_num_batched_tokens or seqs)


def activation_bytes(model: ModelFacts, cfg: EngineConfig) -> int:
    """The torch peak increase of vLLM's `profile_run`, from the tensors it allocates.

    The profile run is one forward of max_num_batched_tokens dummy tokens with no attention
    metadata (the attention kernels return at once), then the dummy sampler run; the forward's
    activations are freed before the sampler runs, so the peak is the larger of the two:
    - forward, dense MLP (MergedColumnParallelLinear gate_up -> SiluAndMul -> down): the residual,
      the normed hidden state and the all-reduce output (3 x hidden) plus gate_up (2 x I / TP) and
      its activation (I / TP), all in the model dtype;
    - forward, fused MoE (vllm/model_executor/layers/fused_moe/fused_moe.py fused_experts_impl):
      one `cache13` buffer of M x topk x max(2N, hidden) and `intermediate_cache2` of
      M x topk x N, with N = moe_intermediate_size / TP, on top of the 3 x hidden stream;
    - sampler: rows x vocab x 10 bytes (SAMPLER_BYTES_PER_LOGIT), plus each rank's vocab / TP
      shard of the logits before the all-gather.
    SGLang keeps its activations out of the mem_fraction_static share, so this is vLLM's only."""
    tp = max(1, cfg.tensor_parallel_size or 1)
    tokens = cfg.max_num_batched_tokens or cfg.max_model_len or 2048
    dt = model_dtype_bytes(model, cfg)
    h = model.hidden_size or 0
    stream = 3 * h
    if model.num_experts and model.num_experts_per_tok:
        n = (model.moe_intermediate_size or model.intermediate_size or 4 * h) / tp
        topk = model.num_experts_per_tok
        forward = tokens * dt * (stream + topk * (max(2 * n, h) + n))
    else:
        inter = model.intermediate_size or 4 * h
        forward = tokens * dt * (stream + 3 * inter / tp)
    vocab = model.vocab_size or 0
    sampler = sampler_rows(cfg) * vocab * (SAMPLER_BYTES_PER_LOGIT + (dt / tp if tp > 1 else 0))
    return int(max(forward, sampler))


def uses_nvls(gpu_name: str) -> bool:
    """Hopper HGX boards, where NCCL builds NVLink SHARP buffers for a TP group."""
    name = (gpu_name or "").upper()
    return any(n.upper() in name for n in NVLS_GPUS) and "PCIE" not in name


def non_torch_bytes(cfg: EngineConfig, gpu_name: str = "") -> int:
    """The non-torch increase vLLM's profiling measures (see NON_TORCH_PROCESS and the others):
    per process, plus the communicators when TP x PP > 1 (NVLS buffers on Hopper HGX boards)."""
    world = max(1, cfg.tensor_parallel_size or 1) * max(1, cfg.pipeline_parallel_size or 1)
    if world == 1:
        return NON_TORCH_PROCESS
    return NON_TORCH_PROCESS + (NON_TORCH_NVLS if uses_nvls(gpu_name) else NON_TORCH_COMM)


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
    model: ModelFacts,
    gpu_total_bytes: int,
    gpu_count: int,
    cfg: EngineConfig,
    gpu_name: str = "",
    printed: Printed | None = None,
) -> MemoryPlan:
    """The memory plan of one deployment: budget, weights, activations, KV cache, verdict, changes.

    `gpu_total_bytes` is the total the engine sees (cudaMemGetInfo), per GPU; `gpu_name` picks
    vLLM's hardware-dependent defaults (A100s keep the small batch defaults) and whether NCCL
    uses NVLS buffers; `printed` carries what a log printed, which beats every estimate."""
    cfg = apply_hardware_defaults(cfg, gpu_name, gpu_total_bytes) if cfg.engine else cfg
    cfg = tgi_shards(cfg, gpu_count)
    notes: list[str] = []
    measured = _Measured()
    if printed:
        if printed.gpu_total_gib:
            gpu_total_bytes = int(printed.gpu_total_gib * GIB)
            notes.append(f"GPU total {printed.gpu_total_gib} GiB as the engine printed it")
        if printed.weights_gib:
            measured.weights = int(printed.weights_gib * GIB)
            notes.append(f"weights {printed.weights_gib} GiB per GPU as the engine printed them")
        if printed.available_kv_gib is not None and cfg.engine in ("vllm", "") and measured.weights:
            util = cfg.gpu_memory_utilization or 0.9
            measured.overhead = int(
                gpu_total_bytes * util - measured.weights - printed.available_kv_gib * GIB
            )
            notes.append(
                f"activations + non-torch {measured.overhead / GIB:.2f} GiB from the printed available KV memory"
            )
        if printed.cuda_graph_gib is not None:
            measured.graphs = int(printed.cuda_graph_gib * GIB)
    plan_ = _plan_once(model, gpu_total_bytes, gpu_count, cfg, gpu_name, measured)
    if not plan_.fits:
        plan_.changes = _changes(model, gpu_total_bytes, gpu_count, cfg, plan_, gpu_name, measured)
    plan_.assumptions[:0] = notes
    if cfg.engine == "sglang" and not cfg.is_set("gpu_memory_utilization"):
        plan_.assumptions.append(
            f"mem_fraction_static {sglang_mem_fraction(cfg.tensor_parallel_size or 1)} (SGLang's default at TP={cfg.tensor_parallel_size or 1})"
        )
    return plan_


def valid_tp_sizes(heads: int, gpus: int | None, kv_heads: int | None = None) -> list[int]:
    """TP sizes that divide the heads (KV heads may also be replicated when fewer than TP)."""
    limit = gpus or heads
    return [n for n in range(1, min(heads, limit) + 1) if heads % n == 0 and (not kv_heads or kv_heads % n == 0 or n % kv_heads == 0)]


def layout_problem(model: ModelFacts, tp: int, pp: int) -> str:
    """Why vLLM would refuse this TP/PP split of the model, or "": attention heads must divide
    over TP ranks, KV heads divide or be replicated, and each PP stage needs a layer."""
    heads, kv = model.num_attention_heads, model.num_kv_heads
    if heads and (heads % tp or (kv and kv % tp and tp % kv)):
        valid = ", ".join(map(str, valid_tp_sizes(heads, None, kv)))
        kv_note = f" and {kv} KV heads" if kv and kv != heads else ""
        return f"TP={tp} does not divide the {heads} attention heads{kv_note} evenly; valid TP sizes: {valid}"
    if model.num_layers and pp > model.num_layers:
        return f"PP={pp} is more pipeline stages than the model's {model.num_layers} layers"
    return ""


@dataclass
class _Measured:
    """Printed figures in bytes, dropped by a trial change that would make them stale."""

    weights: int | None = None
    overhead: int | None = None  # activation peak + non-torch, as the engine measured them
    graphs: int | None = None

    def after(self, change: dict[str, object]) -> _Measured:
        layout = {"tensor_parallel_size", "pipeline_parallel_size", "quantization", "dtype"} & set(change)
        batch = {"max_num_seqs", "max_num_batched_tokens"} & set(change)
        return _Measured(
            None if layout else self.weights,
            None if layout or batch else self.overhead,
            None if layout or batch else self.graphs,
        )


def _plan_once(
    model: ModelFacts,
    gpu_total_bytes: int,
    gpu_count: int,
    cfg: EngineConfig,
    gpu_name: str = "",
    measured: _Measured | None = None,
) -> MemoryPlan:
    measured = measured or _Measured()
    tp, pp = max(1, cfg.tensor_parallel_size or 1), max(1, cfg.pipeline_parallel_size or 1)
    util = memory_share(cfg)
    given_len = cfg.max_model_len if (cfg.max_model_len or 0) > 0 else None  # vLLM -1: the model's maximum
    max_len = given_len or model.max_position_embeddings or 0
    cfg = dataclasses.replace(cfg, max_model_len=max_len)
    weights = measured.weights if measured.weights is not None else weights_bytes_per_gpu(model, cfg)
    assumptions: list[str] = []
    if not given_len and max_len:
        assumptions.append(f"context length not given: the model's maximum, {max_len} tokens (max_position_embeddings)")
    if cfg.engine in ("vllm", "") and not cfg.engine_version:
        assumptions.append(f"engine version not given: vLLM {MODELLED_VLLM}'s memory profile (V1)")
    if cfg.engine == "sglang":
        # ModelRunner.profile_max_num_token: rest = free-after-weights - free-at-start x (1 - fraction),
        # i.e. free-at-start x fraction - weights; the start is after the CUDA context is up, and
        # the activations live outside the fraction.
        start = gpu_total_bytes - CUDA_CONTEXT
        act, non_torch = 0, 0
        budget = start * util
        kv_avail = budget - weights
        headroom = start * (1 - util)
        assumptions.append(
            f"SGLang's free memory at start: GPU total less {CUDA_CONTEXT / GIB:.1f} GiB CUDA context"
        )
    else:
        act = activation_bytes(model, cfg)
        if measured.overhead is not None:
            non_torch = max(0, measured.overhead - act)
            act = min(act, measured.overhead)
        else:
            non_torch = non_torch_bytes(cfg, gpu_name)
            assumptions.append(
                f"non-torch memory {non_torch / GIB:.2f} GiB: what vLLM printed for "
                + (
                    "TP>1 with NCCL NVLS"
                    if tp * pp > 1 and uses_nvls(gpu_name)
                    else "TP>1"
                    if tp * pp > 1
                    else "TP=1"
                )
                + " (doctor/memory.py NON_TORCH_*)"
            )
        if cfg.kv_cache_memory_bytes:
            kv_avail = cfg.kv_cache_memory_bytes
            budget = weights + act + non_torch + kv_avail
            assumptions.append(
                "--kv-cache-memory-bytes fixes the KV budget; gpu_memory_utilization is ignored"
            )
        else:
            budget = gpu_total_bytes * util
            kv_avail = budget - weights - act - non_torch
        graphs = 0 if cfg.enforce_eager else (measured.graphs if measured.graphs is not None else CUDA_GRAPHS)
        headroom = gpu_total_bytes - budget - CUDA_CONTEXT - graphs
    tokens = kv_tokens_from_available(model, cfg, kv_avail)
    conc = max_concurrency(model, cfg, tokens, max_len)
    reasons: list[str] = []
    verdict = "ok"
    split = layout_problem(model, tp, pp)
    if split:
        verdict = "tp_invalid"
        reasons.append(split)
    elif tp * pp > gpu_count:
        verdict = "gpu_count"
        reasons.append(f"TP x PP = {tp * pp} needs {tp * pp} GPUs; {gpu_count} given")
    elif weights + CUDA_CONTEXT > gpu_total_bytes:
        verdict = "weights_oom"
        reasons.append(
            f"the weights need {weights / GIB:.1f} GiB per GPU at TP={tp}"
            + (f" PP={pp}" if pp > 1 else "")
            + f"; {gpu_count} GPU(s) of {gpu_total_bytes / GIB:.1f} GiB at {util:g} give {budget / GIB:.1f} GiB each"
        )
    elif weights > budget and not cfg.kv_cache_memory_bytes:
        # the share is not a limit on loading: vLLM (determine_available_memory) and SGLang (profile_max_num_token)
        # load weights that fit the GPU, then find the budget less the weights negative and refuse to start
        # ("No available memory for the cache blocks", "Not enough memory. Please try to increase
        # --mem-fraction-static"): nothing is left for the KV cache, the weights themselves fit
        verdict = "no_kv_cache_memory"
        reasons.append(
            f"the weights take {weights / GIB:.1f} GiB per GPU at TP={tp}" + (f" PP={pp}" if pp > 1 else "")
            + f": they fit the {gpu_total_bytes / GIB:.1f} GiB GPU but fill the {budget / GIB:.1f} GiB that {util:g} of it "
            "budgets, so nothing is left for the KV cache"
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


def _changes(
    model: ModelFacts,
    total: int,
    gpu_count: int,
    cfg: EngineConfig,
    base: MemoryPlan,
    gpu_name: str = "",
    measured: _Measured | None = None,
) -> list[Change]:
    """The smallest single changes that make the plan fit, each checked by re-planning."""
    engine = cfg.engine
    out: list[Change] = []

    def fits(**kw: object) -> MemoryPlan | None:
        kept = (measured or _Measured()).after(kw)
        trial = _plan_once(model, total, gpu_count, dataclasses.replace(cfg, **kw), gpu_name, kept)
        return trial if trial.fits else None

    tp = base.tensor_parallel_size
    if base.verdict == "tp_invalid" and model.num_attention_heads:
        best = max(valid_tp_sizes(model.num_attention_heads, gpu_count, model.num_kv_heads))
        trial = _plan_once(model, total, gpu_count, dataclasses.replace(cfg, tensor_parallel_size=best), gpu_name)
        result = "fits" if trial.fits else f"then: {trial.verdict}"
        out.append(Change(f"a TP size that divides the heads, on {gpu_count} GPU(s)", flag("tp", engine), str(best), result))
    if base.verdict == "kv_cache_insufficient" and base.kv_cache_tokens > 0:
        block = cfg.block_size or 16
        longest = _largest_len(model, cfg, base)
        if longest >= block:
            out.append(
                Change(
                    "a shorter context",
                    flag("ctx", engine),
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
                        flag("mem", engine),
                        f"{step / 100:.2f}",
                        f"{trial.kv_cache_tokens} KV tokens",
                    )
                )
                break
        no_fp8 = fp8.supported([], [gpu_name]) is False  # an A100 (8.0) is not offered FP8
        fp8_kv = KV_HALF.get(engine or "vllm", "")  # llama.cpp's 8-bit cache is q8_0, not planned here
        if fp8_kv.startswith("fp8") and kv_cache_dtype_bytes(model, cfg) > 1 and base.verdict != "weights_oom" and not no_fp8:
            trial = fits(kv_cache_dtype=fp8_kv)
            if trial:
                out.append(
                    Change(
                        "an fp8 KV cache", flag("kv_dtype", engine), fp8_kv, f"{trial.kv_cache_tokens} KV tokens"
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
                gpu_name,
            )
            if trial.fits:
                out.append(
                    Change(
                        f"more GPUs ({bigger * base.pipeline_parallel_size} needed)",
                        flag("tp", engine),
                        str(bigger),
                        f"{trial.weights_gib_per_gpu} GiB weights and {trial.kv_cache_tokens} KV tokens per GPU",
                    )
                )
                break
        if not model.quant_method and not cfg.quantization:
            for method, what in (
                *([] if no_fp8 else [("fp8", "fp8 weights (Ada/Hopper or newer)")]),
                ("awq", "a 4-bit AWQ checkpoint"),
            ):
                trial = fits(quantization=method)
                if trial:
                    out.append(
                        Change(
                            what, flag("quant", engine), method, f"{trial.weights_gib_per_gpu} GiB weights per GPU"
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
                        flag("max_seqs", engine),
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


def explain_weights(model: ModelFacts, cfg: EngineConfig, gpu_total_bytes: int, gpu_count: int) -> str:
    """One sentence a crash diagnosis can quote: what the weights need per GPU at the configured
    TP x PP, against what each GPU gives at the memory share, and the smallest TP that fits.

    e.g. "the weights need 131.4 GiB per GPU at TP=1; 4 GPUs give 71.3 GiB each at
    gpu_memory_utilization 0.9 (79.3 GiB total); TP=2 needs 65.7 GiB per GPU and fits"."""
    tp, pp = max(1, cfg.tensor_parallel_size or 1), max(1, cfg.pipeline_parallel_size or 1)
    util = configured_share(cfg)
    share = "mem_fraction_static" if cfg.engine == "sglang" else "gpu_memory_utilization"
    need = weights_bytes_per_gpu(model, cfg)
    give = gpu_total_bytes * util
    layout = f"TP={tp}" + (f" PP={pp}" if pp > 1 else "")
    text = (
        f"the weights need {need / GIB:.1f} GiB per GPU at {layout}; {gpu_count} GPU(s) give "
        f"{give / GIB:.1f} GiB each at {share} {util:g} ({gpu_total_bytes / GIB:.1f} GiB total)"
    )
    if need <= give:
        return text + f"; {(give - need) / GIB:.1f} GiB is left for activations and the KV cache"
    bigger = smallest_fitting_tp(model, cfg, give)
    if bigger is None:
        return text + "; no tensor-parallel size up to 32 fits: a quantized checkpoint is needed"
    trial = weights_bytes_per_gpu(model, dataclasses.replace(cfg, tensor_parallel_size=bigger))
    gpus = bigger * pp
    room = "" if gpus <= gpu_count else f", which needs {gpus} GPUs ({gpu_count} given)"
    return text + f"; TP={bigger} needs {trial / GIB:.1f} GiB per GPU and fits{room}"


def smallest_fitting_tp(model: ModelFacts, cfg: EngineConfig, give_bytes: float) -> int | None:
    """The smallest TP above the configured one (a power of two dividing the attention heads)
    whose weights per GPU fit in `give_bytes`; None when none up to 32 does."""
    tp = max(1, cfg.tensor_parallel_size or 1)
    heads = model.num_attention_heads or 0
    for bigger in (2, 4, 8, 16, 32):
        if bigger <= tp or (heads and heads % bigger):
            continue
        if weights_bytes_per_gpu(model, dataclasses.replace(cfg, tensor_parallel_size=bigger)) < give_bytes:
            return bigger
    return None
