"""Is there KV cache for the context length asked for? (engine logs)

vLLM refuses to start when one request of max_model_len tokens does not fit the KV cache it could
allocate: V0 prints the capacity in tokens ("max seq len (32768) ... KV cache (16864)"), V1 the
bytes ("2.63 GiB KV cache is needed ... available KV cache memory (1.64 GiB)"). The fixes are
computed from those numbers: the largest --max-model-len that fits (the capacity itself: vLLM
compares max_model_len with num_gpu_blocks * block_size), the --gpu-memory-utilization that
would fit the asked length (KV bytes per token = available / capacity), fp8 KV cache where the
GPU has it, and a wider tensor-parallel split when GPUs sit idle. llama.cpp allocates the KV
cache for the whole n_ctx up front and fails the same way.
"""

from __future__ import annotations

import math

from llm_doctor import engine_flags, fp8
from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.model import ModelFacts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

MAX_UTIL = 0.95
# vLLM prints the KV bytes it needs and has in GiB with two decimals (v1/core/kv_cache_utils.py format_gib)
GIB_ROUNDING = 0.005
KV_PERCENTS = 0.02  # of the GPU for the KV pool above a minimum share the engine computed (two whole percent)
# SGLang's max_req_input_len is min(context, pool) - 1, and 5 less since v0.5 (scheduler.py): at most 6 below the context
SGLANG_INPUT_RESERVE = 6
# sizing the KV cache is the last step of a start-up before CUDA graphs and serving (vLLM
# initialize_kv_cache, SGLang init_memory_pool): a start-up it stopped never served, so an out-of-memory
# quoted beside it (the profiling run's, an earlier attempt's) is not what ended this one
KV_EXPLAINS = ["load.runtime_oom", *le.CLIENT_SYMPTOMS]


@check("load.kv_cache", "load", codes=["load.kv_cache_insufficient", "load.no_kv_cache_memory"], events=["kv_cache_too_small", "no_kv_memory", "kv_cache_alloc_failed", "ggml_alloc_failed", "host_oom"])
def kv_cache(facts: Facts, log: LogView) -> Outcome:
    """The KV cache the engine could allocate holds at least one request of max_model_len."""
    too_small = log.events("kv_cache_too_small")
    no_memory = log.events("no_kv_memory")
    llama = log.events("kv_cache_alloc_failed")
    findings: list[Finding] = []
    rejected = [e for e in too_small if "allowed" in e.values]  # a request refused for length, not the start-up
    too_small = [e for e in too_small if "allowed" not in e.values]
    if too_small:
        findings.append(_too_small(facts, log, too_small))
    elif rejected and (capped := _pool_capped(facts, log, rejected[-1])):
        findings.append(capped)
    elif llama:
        findings.append(_llama_ctx(facts, log, llama))
    if no_memory and not findings:
        findings.append(_no_memory(facts, log, no_memory))
    return Outcome(findings, "" if findings else "no KV cache shortfall in the log")


def _util(facts: Facts) -> float:
    """The memory share the engine ran with: as set, else as its memory profile printed it, else its default."""
    printed = facts.logs.setup.memory_share if facts.logs else None
    if isinstance(printed, (int, float)) and not (facts.deployment and facts.deployment.is_set("gpu_memory_utilization")):
        return float(printed)
    value = le.deployment_value(facts, "gpu_memory_utilization")
    return float(value) if isinstance(value, (int, float)) else 0.9


def _too_small(facts: Facts, log: LogView, found: list) -> Finding:
    pieces = le.wrapped(found)  # several attempts in one log: the last one's numbers count
    v = le.joined_values(pieces)
    asked = int(v.get("max_seq_len") or le.first_value(found, "max_seq_len") or 0)  # type: ignore[call-overload]
    # V0's scheduler ignoring one prompt the whole KV cache cannot hold ("Input prompt (N tokens) is too long and exceeds
    # the capacity of block_manager"): that prompt is what asked for the room
    prompt = int(v.get("request") or 0) if not asked else 0  # type: ignore[call-overload]
    asked = asked or prompt
    evidence = le.evidence(pieces) + log.earlier_runs()
    fixes: list[Fix] = []
    util = _util(facts)
    total = le.gpu_total_gib(facts)
    block = int(le.deployment_value(facts, "block_size") or 16)
    capacity: int | None = None
    per_token_gib: float | None = None
    if "kv_tokens" in v:  # V0: capacity in tokens
        capacity = int(v["kv_tokens"])  # type: ignore[call-overload]
        available = facts.logs.setup.available_kv_gib if facts.logs else None
        if available:
            per_token_gib = available / capacity
        else:
            per_token_gib = _model_kv_gib_per_token(facts)
    elif "available" in v and "needed" in v:  # V1: bytes
        needed, available = float(v["needed"]), float(v["available"])  # type: ignore[arg-type]
        per_token_gib = needed / asked if asked else None
        if "estimated_max_len" in v:
            capacity = int(v["estimated_max_len"])  # type: ignore[call-overload]
        elif asked:
            # vLLM rounds both figures to 0.01 GiB (format_gib): the least available over the most needed is a
            # share of the asked length that surely fits; then whole blocks, as vLLM allocates them
            share = max(0.0, available - GIB_ROUNDING) / (needed + GIB_ROUNDING)
            capacity = int(share * asked) // block * block or None
    elif "estimated_max_len" in v:
        capacity = int(v["estimated_max_len"])  # type: ignore[call-overload]
    elif ("max_seq_len" in v or prompt) and facts.logs and facts.logs.setup.gpu_blocks and le.engine(facts) in ("", "vllm"):
        # V0's refusal cut before its number: it compares max_model_len with num_gpu_blocks * block_size
        # (worker.py raise_if_cache_size_invalid), and the engine logged the blocks ("# GPU blocks: N")
        capacity = int(facts.logs.setup.gpu_blocks) * block
    title = f"a {prompt}-token prompt does not fit the KV cache" if prompt else f"max_model_len {asked or '?'} does not fit the KV cache"
    if capacity:
        title += f" (room for {capacity} tokens)"
        evidence.append(f"largest context that fits: {capacity} tokens (KV cache capacity)")
        fixes.append(Fix(f"Lower the context length to what fits ({capacity} tokens)", f"{le.flag(facts, 'ctx')} {capacity}"))
    share = le.FREE_MEMORY_SHARE.get(le.engine(facts))
    if capacity and asked and share is not None:
        fixes += _larger_free_share(facts, share, capacity, asked)
    elif capacity and asked and per_token_gib and total:
        extra_gib = (asked - capacity) * per_token_gib
        wanted = math.ceil((util + extra_gib / total) * 100) / 100
        evidence.append(
            f"KV cache per token ~{per_token_gib * 1024**2:.0f} KiB; {asked} tokens need {extra_gib:.2f} GiB more "
            f"on a {total:.2f} GiB GPU at gpu_memory_utilization {util:g}"
        )
        if wanted <= MAX_UTIL:
            fixes.append(Fix(f"Or give the KV cache more of the GPU so {asked} tokens fit", f"{le.flag(facts, 'kv_share')} {wanted:.2f}"))
        else:
            evidence.append(f"no gpu_memory_utilization up to {MAX_UTIL} fits {asked} tokens (it would need {wanted:.2f})")
    kv_dtype = le.flag(facts, "kv_dtype")
    if capacity and asked and kv_dtype and fp8.from_facts(facts) and _kv_dtype_is_default(facts):
        doubled = capacity * 2
        gives = "enough" if doubled >= asked else "not enough"
        fixes.append(Fix(f"Or store the KV cache in 8 bits: about {doubled} tokens, {gives} for {asked}", kv_dtype))
    fixes += _more_tp(facts, capacity, asked)
    if not fixes and "total" in v and le.template_engine(found[-1]) == "tgi":
        # TGI's warmup (server/.../flash_causal_lm.py) sized the KV cache for --max-batch-total-tokens and ran out: the
        # launcher's own two budgets, smaller; left unset (TGI 1.0+), the launcher sizes it from the memory left
        title = f"--max-batch-total-tokens {v['total']} does not fit the GPU memory next to the weights"
        fixes.append(Fix(f"Lower --max-batch-total-tokens below {v['total']}, or leave it unset (TGI 1.0+ sizes it from the "
                         "memory the warmup leaves)"))
        evidence.append(f"TGI's warmup: {v['total']} total tokens with a {v.get('prefill')}-token prefill")
    if not fixes:  # the message gives no numbers (LMDeploy's and TensorRT-LLM's block pools): the engine's two levers
        fixes.append(Fix(f"Give the KV cache a larger share of the GPU memory ({le.flag(facts, 'kv_share')}) "
                         f"or ask for a shorter context ({le.flag(facts, 'ctx')})"))
    return Finding("load.kv_cache_insufficient", title, evidence, fixes, explains=KV_EXPLAINS)


def _pool_capped(facts: Facts, log: LogView, e) -> Finding | None:
    """SGLang refuses a request longer than max_req_input_len = min(context_len - 1, the KV pool's tokens - 1)
    (managers/utils.py validate_input_length; the scheduler takes 5 more off since v0.5): an allowed length
    below the configured context length by more than that is the KV pool's size, so the context asked for
    does not fit the KV cache; the pool holds at least allowed + 1 tokens in every version. Without the
    configured context length, or at it, the request is simply longer than the context: no KV finding."""
    context = le.deployment_value(facts, "max_model_len")
    allowed = int(e.values["allowed"])  # type: ignore[call-overload]
    pool = allowed + 1
    if not isinstance(context, int) or allowed + SGLANG_INPUT_RESERVE >= context:
        return None
    flag = "--context-length" if le.engine(facts) == "sglang" else "--max-model-len"
    evidence = le.evidence([e]) + [f"context length {context} configured; the KV pool holds {pool} tokens"] + log.earlier_runs()
    fixes = [Fix(f"Lower the context length to what the KV pool holds ({pool} tokens)", f"{flag} {pool}"),
             Fix("Or give the KV pool more of the GPU (a higher --mem-fraction-static) or an fp8 KV cache (--kv-cache-dtype fp8_e5m2)")]
    fixes += _more_tp(facts, pool, context)
    return Finding("load.kv_cache_insufficient", f"context length {context} does not fit the KV cache (room for {pool} tokens)",
                   evidence, fixes, explains=KV_EXPLAINS)


def _model_kv_gib_per_token(facts: Facts) -> float | None:
    """KV bytes per token from the model's architecture (when the log names a known model)."""
    if facts.model is None or facts.deployment is None:
        return None
    from llm_doctor import memory

    try:
        return memory.kv_bytes_per_token(facts.model, facts.deployment) / le.GIB
    except (ValueError, ZeroDivisionError, TypeError):
        return None


def _kv_dtype_is_default(facts: Facts) -> bool:
    value = str(le.deployment_value(facts, "kv_cache_dtype") or "auto")
    return value in ("auto", "")


def _more_tp(facts: Facts, capacity: int | None, asked: int) -> list[Fix]:
    tp = int(le.deployment_value(facts, "tensor_parallel_size") or 1)
    gpus = le.gpu_count(facts)
    if not gpus or gpus <= tp:
        return []
    from llm_doctor import memory

    model = _served_model(facts)
    if model is not None and model.num_attention_heads and not memory.is_mla(model):
        # a TP the engine accepts: it divides the attention heads, and the KV heads divide it or it them
        wider = max(memory.valid_tp_sizes(model.num_attention_heads, gpus, model.num_kv_heads))
    else:
        wider = tp
        while wider * 2 <= gpus:
            wider *= 2
    if wider <= tp:
        return []
    shrink = _kv_split(model, tp, wider)
    if not capacity:
        note = ""
    elif shrink is None:  # the model's KV heads are not known: they split with TP unless too few
        note = f" (roughly {capacity * wider // tp}+ tokens if its KV heads split {wider} ways)"
    elif shrink > 1:
        note = f" (at least {int(capacity * shrink)} tokens: each GPU holds 1/{shrink:g} of a token's KV; the weights free more)"
    else:
        note = " (a token's KV does not shrink per GPU: an MLA latent or too few KV heads is replicated; only the memory the weights free grows it)"
    return [Fix(f"Or split the model over {wider} of the {gpus} GPUs: weights shrink per GPU, KV grows{note}",
                f"{le.flag(facts, 'tp')} {wider}")]


def _served_model(facts: Facts) -> ModelFacts | None:
    """The model's facts: its config, else the shipped table by the logged model name."""
    from llm_doctor.models import from_table

    cfg = facts.deployment
    return facts.model or (from_table(cfg.model) if cfg is not None and cfg.model else None)


def _kv_split(model: ModelFacts | None, tp: int, wider: int) -> float | None:
    """How many times less KV a token takes per GPU at TP=wider than at TP=tp, by vLLM's split
    (ModelConfig.get_num_kv_heads: the KV heads divided over TP, one replicated per GPU when fewer;
    an MLA latent is replicated on every GPU), or None when the model is not known."""
    from llm_doctor import memory

    if model is None or not (model.num_kv_heads or model.num_attention_heads or memory.is_mla(model)):
        return None
    if memory.is_mla(model):
        return 1.0
    return memory.kv_heads_per_gpu(model, tp) / memory.kv_heads_per_gpu(model, wider)


def _larger_free_share(facts: Facts, share: float, capacity: int, asked: int) -> list[Fix]:
    """LMDeploy and TensorRT-LLM give the KV cache a share of the memory the weights leave free, so
    its capacity grows in proportion to that share: the share that holds `asked` tokens."""
    value = le.deployment_value(facts, "gpu_memory_utilization")
    current = float(value) if isinstance(value, (int, float)) else share
    wanted = math.ceil(current * asked / capacity * 100) / 100
    if wanted > MAX_UTIL:
        return []
    return [Fix(f"Or give the KV cache {wanted:.2f} of the free memory (now {current:g}) so {asked} tokens fit",
                f"{le.flag(facts, 'kv_share')} {wanted:.2f}")]


def _llama_ctx(facts: Facts, log: LogView, found: list) -> Finding:
    """llama.cpp: the KV cache for n_ctx tokens could not be allocated."""
    logs = facts.logs
    assert logs is not None
    n_ctx = logs.setup.n_ctx
    # a KV cache kept in host memory fails in the CPU buffer type (ggml-backend.cpp), a host_oom line: the same
    # allocation, sized by n_ctx, so the context asked for is the cause and the host RAM it ran out of its symptom
    allocs = [e for e in log.events("ggml_alloc_failed", "host_oom") if "alloc_bytes" in e.values]
    alloc = le.first_value(allocs, "alloc_bytes")
    evidence = le.evidence(allocs[:1] + found[:1])
    fixes: list[Fix] = []
    if n_ctx:
        evidence.append(f"n_ctx = {n_ctx}" + (f" (the model's training context is {logs.setup.n_ctx_train})" if logs.setup.n_ctx_train else ""))
    if n_ctx and isinstance(alloc, int) and alloc > 0:
        per_token = alloc / n_ctx
        for ctx in (32768, 16384, 8192, 4096):
            if ctx < n_ctx:
                fixes.append(Fix(f"Ask for a smaller context: {ctx} tokens need {ctx * per_token / le.GIB:.1f} GiB of KV cache "
                                 f"({per_token:.0f} bytes/token; {n_ctx} needed {alloc / le.GIB:.1f} GiB)", f"-c {ctx}"))
                break
    elif n_ctx:
        fixes.append(Fix("Ask for a smaller context", f"-c {max(2048, n_ctx // 4)}"))
    fixes.append(Fix("Or quantize the KV cache", "--cache-type-k q8_0 --cache-type-v q8_0"))
    return Finding("load.kv_cache_insufficient", f"the KV cache for n_ctx {n_ctx or '?'} could not be allocated", evidence,
                   fixes, explains=[*KV_EXPLAINS, *(["load.host_oom"] if any(e.kind == "host_oom" for e in allocs) else [])])


def _no_memory(facts: Facts, log: LogView, found: list) -> Finding:
    """Only numbers the log gives: the weights must fit inside the budget, so the utilization must
    exceed weights / total. The activation peak and non-torch memory are measured by the engine at
    start-up; when the log does not print them, `llm-doctor plan` computes them (and
    load.memory_fit does so here when the model and GPUs are known)."""
    stated = found[-1].values.get("util")  # SGLang's message names the share it was given
    util = float(stated) if isinstance(stated, (int, float)) else _util(facts)
    logs = facts.logs
    assert logs is not None
    evidence = le.evidence(found[-1:]) + log.earlier_runs()
    total = le.gpu_total_gib(facts)
    weights = logs.setup.weights_gib
    # a pasted message alone names no engine, but its wording is one engine's own (SGLang's --mem-fraction-static)
    flag = le.flag(facts, "kv_share") if le.engine(facts) else engine_flags.flag("mem", le.template_engine(found[-1]))
    fixes: list[Fix] = []
    short = next((e for e in reversed(found) if isinstance(e.values.get("kv_deficit"), (int, float))), None)
    if short is not None and short is not found[-1]:
        evidence += le.evidence([short])
    minimum = found[-1].values.get("needed_util")  # SGLang (v0.5.2x) computes the share at which the KV pool is empty
    if isinstance(minimum, (int, float)):
        fixes.append(_share_above(float(minimum), flag))
    elif short is not None and total and le.engine(facts) not in le.FREE_MEMORY_SHARE:
        fixes.append(_share_for_deficit(facts, float(short.values["kv_deficit"]), util, total, flag))
    elif le.engine(facts) in le.FREE_MEMORY_SHARE:  # a share of what the weights leave: the weights' size does not bound it
        fixes.append(Fix(f"The weights leave (almost) no free GPU memory: free the GPU of other processes, split the model "
                         f"over more GPUs ({le.flag(facts, 'tp')}) or quantize it; {flag} only shares out what is left"))
    elif total and weights:
        floor = weights / total
        evidence.append(f"weights take {weights:g} GiB of a {total:.2f} GiB GPU ({floor:.0%}); {flag.lstrip('-')} "
                        f"{util:g} gives a budget of {util * total:.2f} GiB for weights, activations and KV cache")
        if floor >= MAX_UTIL:
            fixes.append(Fix(f"The weights alone need {floor:.0%} of the GPU: split them over more GPUs or quantize"))
        else:
            fixes.append(Fix(f"Raise {flag} well above {floor:.2f} (the weights' share) and below {MAX_UTIL}: "
                             "the rest must hold the activation peak and the KV cache"))
    else:
        fixes.append(Fix(f"Raise {flag} above {util:g} (the log prints no memory figures to compute how far)"))
    model = le.deployment_value(facts, "model")
    if model:
        fixes.append(Fix("Compute the budget, the activation peak and what fits for this model and GPU",
                         f"llm-doctor plan --model {model} --gpu-memory-utilization {util:g}"))
    return Finding("load.no_kv_cache_memory", "no GPU memory is left for the KV cache after weights and activations",
                   evidence, fixes, explains=KV_EXPLAINS)


def _share_above(minimum: float, flag: str) -> Fix:
    """SGLang's KV configurator names the static share at which the loaded weights leave the KV pool empty
    (1 - available / pre-load memory, rounded up to 0.001): the pool gets what the share adds above it, so
    the fix is the next whole percent above that minimum plus two more for a pool that holds requests."""
    share = math.ceil(minimum * 100 + 1e-9) / 100 + KV_PERCENTS
    if share > MAX_UTIL:
        return Fix(f"The weights alone need {minimum:.1%} of the GPU (the engine's minimum share): split the model over more "
                   "GPUs (--tp-size) or quantize it")
    return Fix(f"Raise {flag} above {minimum:g}, the share at which the engine computed the KV pool would be empty: "
               f"{share:.2f} gives the pool {share - minimum:.1%} of the GPU", f"{flag} {share:.2f}")


def _share_for_deficit(facts: Facts, deficit: float, util: float, total: float, flag: str) -> Fix:
    """vLLM printed how far below zero the KV budget fell ("the rest of the memory reserved for KV Cache
    is -1.05GiB"): the share must grow by that much of the GPU to leave the KV cache empty, and by one
    request of max_model_len more (its KV bytes from the model, when known) to start."""
    empty = util + deficit / total
    per_token, asked = _model_kv_gib_per_token(facts), le.deployment_value(facts, "max_model_len")
    one_request = per_token * asked if per_token and isinstance(asked, int) and asked > 0 else None
    need = empty + (one_request or 0.0) / total
    share = math.ceil(need * 100 + 1e-9) / 100 + (0.0 if one_request else 0.01)
    why = (f"at {util:g} of the {total:.2f} GiB GPU the budget is {deficit:g} GiB short of the weights, activation peak "
           f"and non-torch memory: {empty:.3f} leaves the KV cache empty")
    why += f", one {asked}-token request needs {one_request:.2f} GiB more" if one_request else ""
    if share > MAX_UTIL:
        return Fix(f"The weights and activations need {need:.0%} of the GPU ({why}): split the model over more GPUs "
                   f"({le.flag(facts, 'tp')}) or quantize it, or lower --max-num-seqs / --max-num-batched-tokens to shrink the activation peak")
    return Fix(f"Raise {flag} to {share:.2f} ({why})", f"{flag} {share:.2f}")
