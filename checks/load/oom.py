"""CUDA out of memory: while loading the weights, or later (profiling, CUDA graphs, serving)?

The phase decides the fix. Weights that do not fit one GPU need a wider tensor-parallel split or
quantization (lowering gpu_memory_utilization cannot help); an OOM in the profiling run, CUDA
graph capture or under load needs fewer concurrent sequences, a smaller batch, eager mode or more
headroom. The phase comes from the traceback frames and the start-up milestones around the OOM.
"""

from __future__ import annotations

import dataclasses
import math
import re

from llm_doctor import fp8
from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

# an OOM that no frame, milestone, message word or number places: PhaseTracker's start value
UNPLACED = "startup"
NOT_PLACED = "phase: not placed (no loader frame, start-up milestone or serving line around it)"


GGML_ENGINES = ("llamacpp", "ollama")
GGML_KINDS = ("ggml_alloc_failed", "ggml_weights_failed", "ggml_compute_buffers")
# ggml's allocator fails in one wording for every buffer (ggml-cuda.cu "allocating %.2f MiB on device %d: cudaMalloc
# failed"); llama.cpp allocates the weights' buffers first and says so ("model buffer size = ", a milestone that
# places a later failure in the KV cache or the compute buffers): a failure no such line precedes is the weights'
GGML_FIRST = "llama.cpp allocates the weight buffers first; no 'model buffer size' line came before this failure"

# the flag that turns CUDA graphs off, where it is not vLLM's --enforce-eager (sglang server_args.py,
# TGI launcher --cuda-graphs: "Use `--cuda-graphs 0` to disable")
EAGER_FLAGS = {"sglang": "--disable-cuda-graph", "tgi": "--cuda-graphs 0"}

# SGLang's mem_fraction_static default for TP=1 (server_args.py)
SGLANG_DEFAULT_FRACTION = 0.88


@check("load.gpu_oom", "load", codes=["load.weights_oom", "load.runtime_oom"], events=["cuda_oom", "ggml_alloc_failed", "ggml_compute_buffers", "ggml_weights_failed", "kv_cache_alloc_failed", "enforce_eager",
                                      "kv_cache_too_small", "no_kv_memory", "load_failed"])
def gpu_oom(facts: Facts, log: LogView) -> Outcome:
    """The engine did not run out of GPU memory."""
    # llama.cpp's compute buffers fail only when the backend cannot allocate them (ggml-alloc.c returns NULL
    # from ggml_backend_buft_alloc_buffer): an out-of-memory of its own, after the weights and the KV cache
    ooms = log.events("cuda_oom", "ggml_alloc_failed", "ggml_weights_failed", "ggml_compute_buffers")
    kinds = log.fatal_kinds()
    if not ooms or "kv_cache_alloc_failed" in kinds:  # llama.cpp's KV allocation is judged by load.kv_cache
        return Outcome(detail="no out-of-memory error in the log")
    e = next((x for x in ooms if x.kind == "cuda_oom" and "tried" in x.values), ooms[0])
    phase = _phase(facts, log, e, kinds)
    if phase == "weights" and "ggml_compute_buffers" not in kinds:
        return Outcome([_weights(facts, log, e)])
    findings = [_runtime(facts, log, e, phase)]
    if phase == UNPLACED and "ggml_compute_buffers" not in kinds:
        # nothing in the log says the weights were loading: an OOM is load.weights_oom only on positive
        # evidence of it (codes.md: "the weights alone ... do not fit"); the rest of an engine's life
        # (profiling, graphs, every served request) is load.runtime_oom, so it leads and the weights follow,
        # as a warning: a possibility the log does not show, ranked after every error it does
        alternative = _weights(facts, log, e, alternative=True)
        alternative.severity = "warn"
        findings.append(alternative)
    # a share that leaves no headroom is perf.memory_headroom's finding, beside this OOM and not its cause
    # unless the input ties the two (its docstring: the decision between the codes)
    return Outcome(findings)


def _phase(facts: Facts, log: LogView, e, kinds: set[str]) -> str:
    """The phase of the out-of-memory: where the log placed it, else what the engine's own
    numbers and wording prove about it."""
    phase = e.phase or UNPLACED
    ggml = le.engine(facts) in GGML_ENGINES
    if e.kind in GGML_KINDS:  # llama.cpp: the model's buffers, else the compute buffers
        if "ggml_compute_buffers" in kinds:
            return "profiling"
        return phase if phase in ("profiling", "cuda_graph", "serving") else "weights"
    if phase == "cuda_graph" and (log.events("enforce_eager") or log.setup.cuda_graphs is False
                                  or le.deployment_value(facts, "enforce_eager") is True):
        return "serving"  # a KV-sized milestone places graph capture next, unless graphs are off
    if phase in (UNPLACED, "profiling") and _shard_never_started(log, e):
        return "weights"
    if phase not in ("weights", UNPLACED):
        return phase
    if ggml and e.kind == "cuda_oom":
        # ggml reports a weights buffer it cannot allocate ("cudaMalloc failed", ggml_alloc_failed) and goes
        # on; "CUDA error: out of memory" is CUDA_CHECK aborting in the compute pool (ggml-cuda.cu)
        return "serving"
    # every engine starts in one order: weights -> profiling run -> KV cache sizing -> CUDA graph capture
    # -> serving (vLLM load_model, profile_run/determine_available_memory, initialize_kv_cache,
    # capture_model; SGLang load weights, init_memory_pool, CudaGraphRunner); the line that ends a step
    # moves the start-up to the next one (doctor/logparse/events.py PHASES)
    s = log.setup
    if phase == UNPLACED and (s.gpu_blocks or s.kv_cache_tokens or s.available_kv_gib):
        # the KV cache was sized: what ran out next is CUDA graph capture (unless eager) or serving
        # (a log printed newest first places no milestone before it)
        return "serving" if log.events("enforce_eager") or s.cuda_graphs is False else "cuda_graph"
    sized = [k for k in log.events("kv_cache_too_small", "no_kv_memory") if k.run == e.run and k.source == e.source]
    if any(k.line_no > e.line_no for k in sized):
        # the engine went on to size its KV cache after this OOM: it was the profiling run's, not the weights'
        return "profiling"
    if sized:  # the KV cache was sized before it: the weights were in
        return "loaded"
    if _weights_loaded(facts, e, placed=phase == "weights"):
        return "loaded"
    if phase == UNPLACED and (_weights_too_large(facts, e) or _weights_outside_torch(facts, e)):
        return "weights"
    return phase


def _shard_never_started(log: LogView, e) -> str:
    """TGI's launcher saying, after the OOM, that a shard never started (launcher/src/main.rs "Shard N
    failed to start", ShardCannotStart), as evidence, or "": a shard is ready once server.py's
    serve_inner has its model from get_model ("Server started at unix://", "Shard ready in"); the
    warm-up comes later, from the router, and fails as "Method Warmup encountered an error". So a
    shard that never started died loading its weights, whatever another shard's milestones said."""
    for k in log.events("load_failed"):
        if k.run == e.run and k.line_no > e.line_no and k.values.get("cascade") == "TGI launcher" and \
                any(w in k.lines[0] for w in ("failed to start", "ShardCannotStart")):
            return f"TGI's shard never started (line {k.line_no}: {k.lines[0][-60:].strip()}): it died loading the model"
    return ""


def _weights_evidence(facts: Facts, log: LogView, e) -> str:
    """Positive evidence found after the OOM or in the numbers that the weights ran out, or ""."""
    return _shard_never_started(log, e) or _weights_too_large(facts, e) or _weights_outside_torch(facts, e)


def _weights_too_large(facts: Facts, e) -> str:
    """The model's weight shard (its config, the shipped table, else its name's parameter count) and
    a CUDA context exceed the GPU the OOM names: the weights alone cannot fit, whatever ran out."""
    from llm_doctor import memory

    total = e.values.get("total") or le.gpu_total_gib(facts)
    cfg, model = facts.deployment, _model(facts)
    if model is None or cfg is None or not isinstance(total, (int, float)):
        return ""
    online = (cfg.quantization or "").lower() not in ("", "none", (model.quant_method or "").lower())
    # online quantization (vLLM's and SGLang's fp8 of a 16-bit checkpoint) loads every weight at the checkpoint's
    # precision and quantizes them after the load (process_weights_after_loading): the full-precision shard must fit
    loading = dataclasses.replace(cfg, quantization=None) if online else cfg
    try:
        shard = memory.weights_bytes_per_gpu(model, loading) / memory.GIB
    except (ValueError, TypeError, ZeroDivisionError):
        return ""
    if shard + CUDA_CONTEXT_GIB <= total:
        return ""
    what = f"its {shard:.1f} GiB weight shard ({model.name}, TP {cfg.tensor_parallel_size or 1}"
    what += f", loaded unquantized before --quantization {cfg.quantization} converts it)" if online else ")"
    return f"{what} and a CUDA context exceed the {total:g} GiB GPU"


# While the weights load, the process holds at most its shard of them, the one tensor being copied in
# (the failed allocation) and its CUDA context; holding more than WEIGHTS_MARGIN x the shard plus those
# means the weights were in and something else (activations, the KV cache) was being allocated.
WEIGHTS_MARGIN = 1.25
CUDA_CONTEXT_GIB = 1.0  # a CUDA context with cuBLAS/NCCL workspaces: about 0.5-1 GiB per process
# A weights OOM fails on a weight tensor of a model at least as large as the card. Its bytes lie in the
# matrices of at most ~128 layers x ~8 (attention, MLP, fused experts) plus the embeddings: the tensor
# a load fails on (the one that crosses the limit, picked in proportion to its bytes) holds well over
# 1/1024 of the card. A smaller failed allocation is an activation, a workspace or a KV block.
SMALLEST_WEIGHT_SHARE = 1 / 1024


# PyTorch's OOM message since 2.1 (c10/cuda/CUDACachingAllocator.cpp): "Including non-PyTorch memory, this process has
# X memory in use. Of the allocated memory Y is allocated by PyTorch, and Z is reserved by PyTorch but unallocated."
_TORCH_HELD = re.compile(r"Of the allocated memory (?P<allocated>[\d.]+ ?(?:[KMGT]i?B|bytes)) is allocated by PyTorch"
                         r"(?:, and (?P<reserved>[\d.]+ ?(?:[KMGT]i?B|bytes)) is reserved by PyTorch but unallocated)?", re.I)
FILLS_CARD = 0.9  # the process itself holds nine tenths of the card or more: nothing else is what ran it out
_UNIT_GIB = {"b": 1 / 1024**3, "k": 1 / 1024**2, "m": 1 / 1024, "g": 1.0, "t": 1024.0}


def _gib(size: str | None) -> float:
    """'336.00 MiB' -> GiB; '0 bytes' and None -> 0."""
    if not size:
        return 0.0
    number, unit = re.match(r"([\d.]+) ?(\w)", size).groups()  # type: ignore[union-attr]
    return float(number) * _UNIT_GIB[unit.lower()]


def _weights_outside_torch(facts: Facts, e) -> str:
    """The process's memory held outside PyTorch's allocator, of the weights' size, as evidence, or "".
    A PyTorch engine's weights, KV cache and activations are all PyTorch tensors; an engine with its own
    allocator (LMDeploy's TurboMind deviceMalloc, TensorRT's engine deserialization) holds the weights
    outside it. The process filling the card (FILLS_CARD), PyTorch holding less than half the weight shard
    and the rest of the process at least half of it and no more than the weights take at load
    (WEIGHTS_MARGIN x the shard and a CUDA context) is the weights filling the card before any KV cache:
    a KV cache would hold more."""
    from llm_doctor import memory

    held, total = e.values.get("this_process"), e.values.get("total") or le.gpu_total_gib(facts)
    found = _TORCH_HELD.search(" ".join(e.lines))
    cfg, model = facts.deployment, _model(facts)
    if found is None or not isinstance(held, (int, float)) or model is None or cfg is None:
        return ""
    if (cfg.quantization or "").lower() not in ("", "none", (model.quant_method or "").lower()):
        return ""  # online quantization loads the full-precision weights first: the quantized shard says nothing
    try:
        shard = memory.weights_bytes_per_gpu(model, cfg) / memory.GIB
    except (ValueError, TypeError, ZeroDivisionError):
        return ""
    torch_held = _gib(found["allocated"]) + _gib(found["reserved"])
    outside = held - torch_held
    if not isinstance(total, (int, float)) or held < FILLS_CARD * total:
        return ""  # the process does not fill the card: what else holds it is load.gpu_memory_occupied's question
    if not (torch_held < shard / 2 and shard / 2 <= outside <= WEIGHTS_MARGIN * shard + CUDA_CONTEXT_GIB):
        return ""
    return (f"the process held {held:g} GiB of the {total:g} GiB GPU, {outside:.2f} GiB of it outside PyTorch "
            f"({torch_held * 1024:.0f} MiB in PyTorch): "
            f"the size of its {shard:.1f} GiB weight shard ({model.name}), loaded by the engine's own allocator")


def _weights_loaded(facts: Facts, e, placed: bool = False) -> str:
    """What the OOM's own numbers prove against the weights, as evidence, or "": a failed
    allocation too small for a weight tensor of a model that fills the card; or, with the model's
    size known (its config, the shipped table, else the parameter count its name states), the
    process holding more than its weight shard ("this process has 28.62 GiB memory in use"), or a
    shard that fits the card with room to spare when the OOM says nothing of what it holds.
    `placed`: the log put the OOM in the weights loading (a loader frame or milestone): then only
    what the process held can overrule it."""
    from llm_doctor import memory

    # PyTorch before 2.1 states what its allocator holds ("M GiB already allocated", CUDACachingAllocator.cpp), not the
    # process's total: the process held at least that
    held, tried = e.values.get("this_process", e.values.get("allocated")), e.values.get("tried")
    if tried is None and "alloc_mib" in e.values:
        tried = float(e.values["alloc_mib"]) / 1024
    total = e.values.get("total") or le.gpu_total_gib(facts)
    if not placed and isinstance(tried, (int, float)) and isinstance(total, (int, float)) and 0 < tried < total * SMALLEST_WEIGHT_SHARE:
        return (f"a {tried * 1024:.1f} MiB allocation is below 1/1024 of the {total:g} GiB GPU: an activation or workspace, "
                "not a weight tensor of a model that fills the card; the weights had loaded")
    cfg = facts.deployment
    model = _model(facts)
    if model is None or cfg is None or (cfg.quantization or "").lower() not in ("", "none", (model.quant_method or "").lower()):
        return ""  # online quantization loads the full-precision weights first: the quantized shard says nothing
    try:
        shard = memory.weights_bytes_per_gpu(model, cfg) / memory.GIB
    except (ValueError, TypeError, ZeroDivisionError):
        return ""
    whose = f"its {shard:.1f} GiB weight shard ({model.name}, TP {cfg.tensor_parallel_size or 1}"
    whose += f"; {model.source})" if model.source.startswith("the parameter count") else ")"
    need = WEIGHTS_MARGIN * shard + float(tried or 0) + CUDA_CONTEXT_GIB
    if isinstance(held, (int, float)):
        return f"the process held {held:g} GiB, more than {whose} could take: the weights had loaded" if held > need else ""
    if not placed and isinstance(total, (int, float)) and need < total:
        return f"{whose} fits the {total:g} GiB GPU with room to spare: the weights were not what ran out"
    return ""


def _engine(facts: Facts, e) -> str:
    """The engine, else the one whose allocator the event's wording is: ggml's buffer failures
    (ggml-cuda.cu, ggml-alloc.c, llama-model.cpp) come from llama.cpp or a server built on it."""
    return le.engine(facts) or ("llamacpp" if e.kind in GGML_KINDS else le.template_engine(e))


def _model(facts: Facts):
    """The served model's facts: its config, the shipped table by the logged name, else its name's parameter count."""
    from llm_doctor.models import from_name, from_table

    cfg = facts.deployment
    if facts.model is not None:
        return facts.model
    if cfg is None or not cfg.model:
        return None
    return from_table(cfg.model) or from_name(cfg.model)


def _numbers(e) -> list[str]:
    v = e.values
    parts = []
    if "tried" in v:
        parts.append(f"tried to allocate {v['tried']} GiB")
    if "alloc_mib" in v:
        parts.append(f"tried to allocate {float(v['alloc_mib']) / 1024:.2f} GiB on device {v.get('device', 0)}")
    if "total" in v:
        parts.append(f"GPU total {v['total']} GiB")
    if "free" in v:
        parts.append(f"free {v['free']} GiB")
    return ["; ".join(parts)] if parts else []


def _weights(facts: Facts, log: LogView, e, alternative: bool = False) -> Finding:
    """The weights do not fit; `alternative`: nothing placed the OOM, this is the possibility after load.runtime_oom."""
    tp = int(le.deployment_value(facts, "tensor_parallel_size") or 1)
    gpus = le.gpu_count(facts) or 0
    why = "" if alternative else _weights_evidence(facts, log, e) if e.phase in ("", UNPLACED, "profiling") else ""
    if e.kind in GGML_KINDS and e.phase in ("", UNPLACED) and not why:
        why = GGML_FIRST
    phase = "phase: not placed (the weights, if the model alone exceeds the GPU)" if alternative else \
        f"phase: weights ({why})" if why else f"phase: {e.phase or UNPLACED} (weights)"
    evidence = le.evidence([e]) + _numbers(e) + [f"{phase}, tensor_parallel_size {tp}"] + log.earlier_runs()
    fixes: list[Fix] = []
    engine = _engine(facts, e)
    if engine == "exllamav2":
        return Finding("load.weights_oom", "the model weights do not fit the GPU memory", evidence, _exllamav2_fixes(e),
                       explains=le.CLIENT_SYMPTOMS)
    flag = le.flag(facts, "tp")
    sized = _sized_split(facts, gpus)
    if sized is not None:
        text, fitting = sized
        evidence.append(text)
        if fitting:
            fixes.append(Fix(f"Shard the weights: TP={fitting} is the smallest split whose weights fit each GPU", f"{flag} {fitting}"))
    elif gpus > tp and engine not in GGML_ENGINES:
        wider = tp
        while wider * 2 <= gpus:
            wider *= 2
        fixes.append(Fix(f"Shard the weights over {wider} of the {gpus} GPUs", f"{flag} {wider}"))
    elif engine not in GGML_ENGINES:
        fixes.append(Fix(f"Shard the weights over more GPUs (at least TP={max(2, tp * 2)}; the log does not say how large "
                         "the weights are)", f"{flag} {max(2, tp * 2)}"))
    if engine in GGML_ENGINES:
        flag = "num_gpu (request option or Modelfile PARAMETER)" if engine == "ollama" else "-ngl"
        fixes.append(Fix(f"Offload fewer layers to the GPU with {flag} (the rest run on the CPU); the log does not give "
                         "the per-layer size to compute how many fit"))
    online = str(le.deployment_value(facts, "quantization") or "").lower()
    model = _model(facts)
    if online not in ("", "none") and online != ((model.quant_method or "").lower() if model else ""):
        fixes.append(Fix(f"Or load a checkpoint saved already quantized (an FP8, AWQ or GPTQ repo of the model): --quantization "
                         f"{online} converts a 16-bit checkpoint only after all of it has loaded at 16 bits"))
    elif fp8.from_facts(facts) is False:  # FP8 needs compute capability 8.9+
        fixes.append(Fix("Or load an AWQ/GPTQ checkpoint (2-4x smaller weights; FP8 needs compute capability 8.9+)"))
    else:
        quantize = le.flag(facts, "quant") if engine not in GGML_ENGINES else ""
        fixes.append(Fix("Or load a quantized checkpoint (AWQ/GPTQ/FP8: 2-4x smaller weights)", f"{quantize} fp8" if quantize else None))
    return Finding("load.weights_oom", "the model weights do not fit the GPU memory", evidence, fixes, explains=le.CLIENT_SYMPTOMS)


def _exllamav2_fixes(e) -> list[Fix]:
    """ExLlamaV2 has no tensor-parallel flag: its loader places whole layers on the GPUs of gpu_split (model.py
    set_device_map) or fills them in turn (load_autosplit_gen), and the cache it builds alongside holds
    max_seq_len tokens (TabbyAPI: gpu_split / gpu_split_auto, max_seq_len, cache_size in config.yml)."""
    fixes = [Fix("Give the loader more GPU memory: a gpu_split that adds a GPU, or autosplit over all of them (TabbyAPI: "
                 "gpu_split_auto: true)")]
    if "cache" in " ".join(e.lines):
        fixes.append(Fix("Or a smaller cache: a lower max_seq_len (cache_size) than the model's full context, or a "
                         "quantized cache (Q4/Q8)"))
    fixes.append(Fix("Or an EXL2 quant of the model at fewer bits per weight (bpw)"))
    return fixes


def _sized_split(facts: Facts, gpus: int) -> tuple[str, int | None] | None:
    """With the model's architecture (facts, or the shipped table by the logged model name) and the
    GPU size, the weights per GPU and the smallest TP that fits, from doctor.memory."""
    from llm_doctor import memory
    from llm_doctor.engine_args import configured_share
    from llm_doctor.models import from_table

    total = le.gpu_total_gib(facts)
    cfg = facts.deployment
    if not total or cfg is None:
        return None
    model = facts.model or (from_table(cfg.model) if cfg.model else None)
    if model is None or not model.num_layers:
        return None
    total_bytes = int(total * memory.GIB)
    util = configured_share(cfg)
    try:
        text = memory.explain_weights(model, cfg, total_bytes, gpus or 1)
        fitting = memory.smallest_fitting_tp(model, cfg, total_bytes * util)
    except (ValueError, TypeError, ZeroDivisionError):
        return None
    return text, fitting


def _runtime(facts: Facts, log: LogView, e, phase: str) -> Finding:
    loaded = _weights_loaded(facts, e, placed=e.phase == "weights")
    where = NOT_PLACED if phase == UNPLACED else f"phase: {phase}"
    evidence = le.evidence([e]) + _numbers(e) + [where] + ([loaded] if loaded else []) + log.earlier_runs()
    fixes: list[Fix] = []
    engine = _engine(facts, e)
    seqs = le.deployment_value(facts, "max_num_seqs")
    half = max(1, int(seqs) // 2) if isinstance(seqs, int) and seqs > 1 else None
    if phase == "cuda_graph":
        fixes.append(Fix("Skip CUDA graph capture (costs some decode speed)", EAGER_FLAGS.get(engine, "--enforce-eager")))
        if half and engine not in EAGER_FLAGS:
            fixes.append(Fix(f"Or capture graphs for fewer sequences (now {seqs})", f"--max-num-seqs {half}"))
    elif engine == "sglang":
        frac = le.deployment_value(facts, "gpu_memory_utilization")
        now = float(frac) if isinstance(frac, (int, float)) else SGLANG_DEFAULT_FRACTION
        drop = _failed_share(facts, e)
        if drop:
            fixes.append(Fix(f"Leave the failed allocation ({drop:.1%} of the GPU) outside the static pool",
                             f"--mem-fraction-static {max(0.5, math.floor((now - drop) * 100) / 100):.2f}"))
        chunk = le.deployment_value(facts, "max_num_batched_tokens")
        if isinstance(chunk, int) and chunk > 1:
            caps = f"--chunked-prefill-size {chunk // 2}" + (f" --max-running-requests {half}" if half else "")
            fixes.append(Fix(f"Or halve the prefill chunk (now {chunk}; activations scale with it)", caps))
    elif engine == "ollama":  # each parallel request slot holds its own KV cache (OLLAMA_NUM_PARALLEL, num_ctx)
        n_ctx = facts.logs.setup.n_ctx if facts.logs else None
        fixes.append(Fix("Serve one request at a time per model: every parallel slot reserves its own KV cache", "OLLAMA_NUM_PARALLEL=1"))
        fixes.append(Fix("Or a shorter context (num_ctx in the request or Modelfile; OLLAMA_CONTEXT_LENGTH for the default)"
                         + (f": now {n_ctx}" if n_ctx else ""), f"OLLAMA_CONTEXT_LENGTH={n_ctx // 2}" if n_ctx else None))
    elif engine == "llamacpp":
        n_ctx = facts.logs.setup.n_ctx if facts.logs else None
        ctx = f"-c {n_ctx // 2} " if n_ctx else ""
        # llama.cpp's defaults are -b 2048 -ub 512 (common/common.h n_batch, n_ubatch): halve them
        fixes.append(Fix("Use a smaller context or batch: compute buffers scale with them"
                         + (f" (context now {n_ctx})" if n_ctx else ""), f"{ctx}-b 1024 -ub 256"))
    elif engine in ("tgi", "lmdeploy", "trtllm"):
        fixes.extend(_caps(facts, engine, half, seqs))
    else:
        if half:
            fixes.append(Fix(f"Fewer concurrent sequences (now {seqs})", f"--max-num-seqs {half}"))
        else:
            fixes.append(Fix("Fewer concurrent sequences (half of vLLM's default 256)", "--max-num-seqs 128"))
        fixes.append(Fix("Or a smaller batch per step", "--max-num-batched-tokens 4096"))
        util = le.deployment_value(facts, "gpu_memory_utilization")
        drop = _failed_share(facts, e)
        if isinstance(util, (int, float)) and drop:
            fixes.append(Fix(f"Or leave the failed allocation ({drop:.1%} of the GPU) outside the KV cache budget",
                             f"--gpu-memory-utilization {math.floor((util - drop) * 100) / 100:.2f}"))
    title = {"profiling": "out of GPU memory in the start-up profiling run", "cuda_graph": "out of GPU memory while capturing CUDA graphs",
             "loaded": "out of GPU memory after the weights had loaded (profiling run, CUDA graphs or serving)",
             UNPLACED: "out of GPU memory (nothing in the log shows the weights loading)"}.get(phase, "out of GPU memory while serving")
    return Finding("load.runtime_oom", title, evidence, fixes, explains=le.CLIENT_SYMPTOMS)


def _caps(facts: Facts, engine: str, half: int | None, seqs: object) -> list[Fix]:
    """TGI's, LMDeploy's and TensorRT-LLM's own caps on a batch, halved where the log gives them
    (engine_flags spells each); TensorRT-LLM's are build options, baked into the engine."""
    seqs_flag, tokens_flag, mem_flag = le.flag(facts, "max_seqs"), le.flag(facts, "batched_tokens"), le.flag(facts, "mem")
    tokens = le.deployment_value(facts, "max_num_batched_tokens")
    rebuild = " (a build option: rebuild the engine with it)" if engine == "trtllm" else ""
    fixes = [Fix(f"Fewer sequences per batch (now {seqs}){rebuild}", f"{seqs_flag} {half}") if half else
             Fix(f"Fewer sequences per batch: lower {seqs_flag}{rebuild}")]
    if isinstance(tokens, int) and tokens > 1:
        fixes.append(Fix(f"Or halve the tokens per batch (now {tokens}; activations scale with it){rebuild}", f"{tokens_flag} {tokens // 2}"))
    else:
        fixes.append(Fix(f"Or fewer tokens per batch: lower {tokens_flag}{rebuild}"))
    fixes.append(Fix(f"Or leave more memory outside the KV cache: lower {mem_flag}"))
    return fixes


def _failed_share(facts: Facts, e) -> float | None:
    """The failed allocation as a share of the GPU: the least the memory fraction must give back."""
    tried = e.values.get("tried")
    if tried is None and "alloc_mib" in e.values:
        tried = float(e.values["alloc_mib"]) / 1024
    total = e.values.get("total") or le.gpu_total_gib(facts)
    try:
        return float(tried) / float(total) if tried and total else None
    except (TypeError, ValueError):
        return None

