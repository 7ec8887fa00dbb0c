"""Does the tensor-parallel size fit the model and the GPUs? Attention heads (and KV heads,
intermediate sizes, quantization blocks) must split evenly over TP ranks, and TP x PP ranks need
that many visible GPUs. The fix lists the TP sizes that are valid for this model and GPU count."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView
from llm_doctor.memory import valid_tp_sizes

# an architecture the engine cannot shard at all (TGI models/__init__.py "sharded is not supported for AutoModel" / "for
# this model", mamba.py "Mamba does not support Tensor Parallelism (TP)"): no TP size but 1 divides it
NO_SHARDING = re.compile(r"sharded is not supported for|does not support Tensor Parallelism", re.I)
# TurboMind's converter (lmdeploy/turbomind/deploy/converter.py `assert ((tp & (tp - 1) == 0) and tp != 0), 'tp should be 2^n'`)
POWER_OF_TWO = re.compile(r"tp should be 2\s*\^\s*n", re.I)
# TurboMind's Windows Barrier (lmdeploy src/turbomind/models/llama/Barrier.h, _MSC_VER): FT_CHECK/TM_CHECK(count == 1), one GPU only
WINDOWS_BARRIER = re.compile(r"Barrier\.h\b", re.I)
# TensorRT-LLM's Executor (cpp/tensorrt_llm/executor/executorImpl.cpp initializeWorkers): the MPI ranks, participant ids or
# device ids given against the engine's tp*pp(*cp)
EXECUTOR_RANKS = re.compile(r"(?:MPI worldSize|participantIds size|deviceIds \(\d+\) \* numNodes)\b[^\n]*?tp\*pp", re.I)
KINDS = ("tp_heads", "tp_gpus", "pp_unsupported", "quant_partition", "not_divisible", "device_ordinal")


@check("load.parallel", "load", codes=["load.tp_invalid"], events=KINDS)
def parallel(facts: Facts, log: LogView) -> Outcome:
    """The tensor/pipeline parallel layout divides the model and fits the GPUs."""
    found = log.events(*KINDS)
    if not found:
        refused = _refused_layout(facts)
        return Outcome([refused]) if refused else Outcome(detail="no parallel-layout error in the log")
    kinds = {e.kind for e in found}
    if kinds == {"device_ordinal"} and not _tp_exceeds_gpus(facts):
        return Outcome(detail="invalid device ordinal without a TP larger than the GPUs: judged by load.gpu_visibility")
    e = next(x for x in found if x.kind == min(kinds, key=KINDS.index))
    tp = e.values.get("tp") or le.deployment_value(facts, "tensor_parallel_size")
    if e.kind == "quant_partition" and not _tp_above_one(facts, e):
        return Outcome(detail="a quantized shape mismatch without TP > 1 is not the TP size's fault: judged by load.quantization")
    gpus = le.gpu_count(facts)
    evidence = le.evidence([e]) + log.earlier_runs()
    fixes: list[Fix] = []
    flag = le.flag(facts, "tp", e)
    if e.kind == "tp_heads":
        heads = int(e.values["heads"])  # type: ignore[call-overload]
        kv = facts.model.num_kv_heads if facts.model else None
        # without a GPU count, the sizes below the one that failed (more GPUs than were given is no fix)
        bound = gpus or (int(tp) - 1 if isinstance(tp, int) and tp > 1 else None)
        sizes = valid_tp_sizes(heads, bound, kv)
        evidence.append(f"{heads} attention heads; valid TP sizes{f' for {gpus} GPUs' if gpus else ''}: {', '.join(map(str, sizes))}")
        best = max(sizes)
        fixes.append(Fix(f"Use a TP size that divides {heads} heads (valid: {', '.join(map(str, sizes))})", f"{flag} {best}"))
        if gpus and best < gpus:
            fixes.append(Fix(f"Or run {gpus // best} replicas of TP {best}, or add pipeline parallelism over the rest",
                             f"{flag} {best} --pipeline-parallel-size {gpus // best}" if gpus % best == 0 and flag == "--tensor-parallel-size" else None))
    elif e.kind == "tp_gpus" and "mp" in e.values:
        # Meta's reference loader (llama/generation.py Llama.build): one process per model-parallel shard of the checkpoint
        mp = e.values["mp"]
        fixes.append(Fix(f"The checkpoint is stored as {mp} model-parallel shards (consolidated.*.pth) but {e.values.get('world')} "
                         f"process(es) started: start one process per shard", f"torchrun --nproc_per_node {mp}"))
    elif e.kind == "tp_gpus" and "ranks" in e.values:
        # TensorRT-LLM's WorldConfig: the engine's TP x PP ranks against the MPI processes that started, not the GPUs
        ranks, world = e.values["ranks"], int(e.values.get("tp") or 1) * int(e.values.get("pp_ranks") or 1)  # type: ignore[call-overload]
        fixes.append(Fix(f"The engine was built for {world} ranks (TP {e.values.get('tp')} x PP {e.values.get('pp_ranks') or 1}) but "
                         f"{ranks} process(es) started: launch one per rank (put `mpirun -n {world} --allow-run-as-root` before the same "
                         "command)"))
        fixes.append(Fix(f"Or rebuild the engine for {ranks} GPU(s) (convert_checkpoint.py --tp_size {ranks}, then trtllm-build)"))
    elif e.kind == "tp_gpus" and WINDOWS_BARRIER.search(" ".join(e.lines)):
        fixes.append(Fix("TurboMind on Windows runs on one GPU only (its Windows barrier takes a count of 1): serve a model "
                         "that fits one GPU (an AWQ/4-bit checkpoint)", f"{flag} 1"))
        fixes.append(Fix("Or run tensor parallelism on Linux (or WSL2), or with the PyTorch engine (--backend pytorch)"))
    elif e.kind == "tp_gpus" and EXECUTOR_RANKS.search(" ".join(e.lines)):
        fixes.append(Fix("Start exactly tp_size x pp_size ranks of the engine (its config.json `mapping`): Triton's "
                         "launch_triton_server.py --world_size <tp*pp>, or `mpirun -n <tp*pp>`"))
        fixes.append(Fix("Or rebuild the engine for the ranks you start (trtllm-build from a checkpoint converted with that --tp_size)"))
    elif e.kind == "tp_gpus":
        n = e.values.get("gpus") or le.gpu_count(facts)
        fixes.append(Fix(f"Use at most the {n} visible GPUs", f"{flag} {n}") if n else
                     Fix("Use at most as many GPUs as are visible (count them with `nvidia-smi -L`)"))
    elif e.kind == "pp_unsupported" or "pp" in e.values:
        fixes.append(_pipeline_fix(facts, e))
    elif e.kind == "not_divisible" and POWER_OF_TWO.search(" ".join(e.lines)):
        # LMDeploy's TurboMind (turbomind/deploy/converter.py, turbomind.py): `assert (tp & (tp - 1)) == 0, 'tp should be 2^n'`
        bound = gpus or (int(tp) if isinstance(tp, int) else None)
        below = 1 << (int(bound).bit_length() - 1) if bound else None
        fixes.append(Fix("TurboMind splits a model over a power-of-two number of GPUs only (1, 2, 4, 8)"
                         + (f": the largest within {bound} is {below}" if below else ""), f"{flag} {below}" if below else None))
        fixes.append(Fix("Or use the PyTorch engine (--backend pytorch), or run replicas on the GPUs left over"))
    elif e.kind == "not_divisible" and NO_SHARDING.search(" ".join(e.lines)):
        fixes.append(Fix("This model has no tensor-parallel implementation in this engine: serve it on one GPU "
                         "(run replicas for more throughput), or use an engine version that shards this architecture",
                         f"{flag} 1"))
    elif e.kind in ("quant_partition", "not_divisible"):
        a, b = e.values.get("size") or e.values.get("a"), e.values.get("block") or e.values.get("b")
        if a is None or b is None:  # the words name no sizes ("Tensor parallel world size must divide num heads")
            heads = facts.model.num_attention_heads if facts.model else None
            sizes = valid_tp_sizes(heads, int(tp) - 1 if isinstance(tp, int) and tp > 1 else gpus,
                                   facts.model.num_kv_heads if facts.model else None) if heads else []
            fixes.append(Fix(f"The model's sizes do not split over TP {tp or 'this size'}: use a TP size that divides them"
                             + (f" (for its {heads} heads: {', '.join(map(str, sizes))})" if sizes else
                                " (num_attention_heads and hidden_size in its config.json)"),
                             f"{flag} {max(sizes)}" if sizes else None))
        elif isinstance(tp, int) and "ep" in e.values:
            fixes.append(_expert_split_fix(int(a), tp, int(e.values["ep"])))  # type: ignore[call-overload]
        elif isinstance(tp, int) and tp > 1:
            smaller = [n for n in range(tp - 1, 0, -1) if (tp % n == 0)]
            fixes.append(Fix(f"A per-rank size ({a}) does not split into blocks of {b}: use a smaller TP size",
                             f"{flag} {smaller[0]}" if smaller else None))
        if any("gate's and up's" in line or "down's weight" in line for line in e.lines):
            # a block-quantized MoE's experts cut over the TP ranks (fp8.py Fp8MoEMethod): expert parallelism keeps each whole
            ep = "--ep-size " + str(tp) if le.engine(facts) == "sglang" and isinstance(tp, int) else "--enable-expert-parallel"
            fixes.append(Fix("Or keep each expert whole on one GPU with expert parallelism", ep))
        elif a is not None and b is not None:
            fixes.append(Fix(f"A per-rank size ({a}) does not divide by {b}: use a smaller TP size (or another quantization)"))
    else:  # device_ordinal with TP above the GPUs
        fixes.append(Fix(f"TP {tp} needs {tp} visible GPUs per node ({gpus} seen): lower it or expose more GPUs",
                         f"{flag} {gpus}" if gpus else None))
    pipeline = e.kind == "pp_unsupported" or "pp" in e.values
    title = (f"pipeline parallel size {e.values.get('pp') or le.deployment_value(facts, 'pipeline_parallel_size') or ''} does not fit "
             "the model".replace("  ", " ") if pipeline else f"tensor parallel size {tp or '?'} does not fit the model/GPUs")
    return Outcome([Finding("load.tp_invalid", title, evidence, fixes,
                            explains=["load.nccl_failed", "load.gpu_not_visible", "load.quantization_unsupported", *le.CLIENT_SYMPTOMS])])


# the engines that shard attention heads over TP ranks and refuse a TP size that does not divide them at start-up
# (vLLM config.py verify_with_parallel_config "Total number of attention heads (32) must be divisible by tensor parallel
# size (3)", SGLang model_config.py, TGI's custom_modeling shard checks, LMDeploy's TP split asserts, TensorRT-LLM's
# mapping "The number of heads (40) is not a multiple of tp_size (3)")
SHARDING_ENGINES = ("vllm", "sglang", "tgi", "lmdeploy", "trtllm")


def _refused_layout(facts: Facts) -> Finding | None:
    """A TP size typed on the launch command that the model's head counts (its config.json, or the shipped table by
    the launched model's name) cannot split, when no GPU facts let load.memory_fit plan it: the engine refuses it at
    start-up whatever the log goes on to show (a launcher that logs the command and dies quietly, a cut paste)."""
    from llm_doctor.memory import layout_problem

    cfg, model = facts.deployment, facts.model
    if cfg is None or model is None or not model.num_attention_heads or cfg.engine not in SHARDING_ENGINES:
        return None
    if not cfg.is_set("tensor_parallel_size") or (facts.gpus and facts.gpus.gpus):
        return None  # no TP typed, or GPUs known: load.memory_fit plans the layout with them
    tp = int(cfg.tensor_parallel_size or 1)
    problem = layout_problem(model, tp, 1)
    if not problem:
        return None
    heads, kv = model.num_attention_heads, model.num_kv_heads
    sizes = valid_tp_sizes(heads, tp - 1, kv)  # as many GPUs as were given at most: the sizes below the refused one
    flag = le.flag(facts, "tp")
    evidence = [f"launch command: {flag} {tp} ({cfg.sources.get('tensor_parallel_size', 'cmdline')})",
                f"model {model.name} ({model.source}): {heads} attention heads, {kv or heads} KV heads", problem]
    return Finding("load.tp_invalid", f"tensor parallel size {tp} does not divide the model's attention heads", evidence,
                   [Fix(f"Use a TP size that divides {heads} heads (below {tp}: {', '.join(map(str, sizes))})",
                        f"{flag} {max(sizes)}")],
                   explains=["load.unrecognized_failure", "load.nccl_failed", *le.CLIENT_SYMPTOMS])


def _expert_split_fix(size: int, tp: int, ep: int) -> Fix:
    """SGLang splits each expert's intermediate size over moe_tp_size = tp_size / ep_size ranks
    (model_runner.py, v0.5): the smallest expert-parallel size above the one given whose quotient
    divides the size keeps TP as it is (ep = tp keeps every expert whole on one GPU)."""
    fitting = [n for n in range(ep + 1, tp + 1) if tp % n == 0 and size % (tp // n) == 0]
    if fitting:
        return Fix(f"Split the experts wider so each keeps whole blocks: with --ep-size {fitting[0]} every expert's "
                   f"{size} rows split over {tp // fitting[0]} rank(s) (tp_size {tp} / ep_size {fitting[0]})", f"--ep-size {fitting[0]}")
    return Fix(f"No expert-parallel size divides {tp} so that {size} splits evenly: use a TP size whose quotient by --ep-size divides {size}")


def _pipeline_fix(facts: Facts, e) -> Fix:
    """Pipeline stages the model cannot take: a stage count that divides its layers (vLLM before
    uneven partitioning), or none at all for a model without pipeline support, whose GPUs then
    all go to tensor parallelism."""
    tp = int(le.deployment_value(facts, "tensor_parallel_size") or 1)
    if "layers" in e.values:
        layers, pp = int(e.values["layers"]), int(e.values["pp"])  # type: ignore[call-overload]
        fitting = [n for n in range(pp - 1, 0, -1) if layers % n == 0]
        return Fix(f"Use a pipeline-parallel size that divides the model's {layers} layers (below {pp}: {fitting[0]})",
                   f"--pipeline-parallel-size {fitting[0]}")
    pp = le.deployment_value(facts, "pipeline_parallel_size")
    if isinstance(pp, int) and pp > 1:
        return Fix(f"This model has no pipeline parallelism in this engine: put all {tp * pp} GPUs into tensor parallelism",
                   f"--tensor-parallel-size {tp * pp} --pipeline-parallel-size 1")
    return Fix("This model has no pipeline parallelism in this engine: drop --pipeline-parallel-size and split it with "
               "--tensor-parallel-size over the same GPUs")


def _tp_exceeds_gpus(facts: Facts) -> bool:
    tp = le.deployment_value(facts, "tensor_parallel_size")
    nnodes = le.deployment_value(facts, "nnodes") or 1
    gpus = le.gpu_count(facts)
    if not isinstance(tp, int):
        return False
    per_node = tp // int(nnodes) if nnodes else tp  # type: ignore[call-overload]
    return (gpus is not None and per_node > gpus) or (isinstance(nnodes, int) and nnodes > 1)


def _tp_above_one(facts: Facts, e) -> bool:
    """Whether TP is to blame: TP > 1 known, or the message gives per-rank sizes and TP is not known to be 1."""
    cfg = facts.deployment
    tp = cfg.tensor_parallel_size if cfg else None
    known = bool(cfg and cfg.is_set("tensor_parallel_size"))
    if known:
        return bool(tp and tp > 1)
    return "size" in e.values
