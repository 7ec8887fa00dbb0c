"""Does the tensor/pipeline parallel size fit the GPUs? (perf.tp_mismatch)

Idle GPUs are throughput left on the table (TP below the GPUs the engine was given); TP larger
than one node's GPUs puts every all-reduce of every layer on the network, where TP x PP (TP
inside a node, PP across nodes) carries one activation per stage instead. Reads the engine config
(command line, log, process) and the GPU count (GPU facts or CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import math

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome


def valid_tp(gpus: int, heads: int | None) -> int:
    """The largest TP <= gpus that the engines accept: a power of two (vLLM/SGLang kernels), and
    a divisor of the attention heads when the model is known."""
    tp = 1
    while tp * 2 <= gpus and (heads is None or heads % (tp * 2) == 0):
        tp *= 2
    return tp


@check("perf.parallelism", "perf", codes=["perf.tp_mismatch"], any_of=("deployment", "stated"))
def parallelism(facts: Facts) -> Outcome:
    """TP x PP uses the GPUs there are, and TP stays inside one node."""
    cfg = fv.maybe_deployment(facts)
    compared = _compared(facts, cfg.engine if cfg is not None else "")
    if isinstance(compared, Finding):
        return Outcome([compared])
    if cfg is None:
        if compared is None:
            raise NotApplicable("no engine config and no benchmark comparing TP sizes")
        return Outcome(detail=compared)
    if cfg.engine in ("llamacpp", "ollama"):
        raise NotApplicable(f"{cfg.engine} splits layers, it has no tensor parallel size")
    g = facts.gpus if facts.gpus and facts.gpus.available and facts.gpus.gpus else None
    visible = fv.visible_indices(cfg, g)
    if not visible:
        spans = _spans_nodes(cfg) or _wider_than_logged(facts, cfg)
        if spans is not None:
            return Outcome([spans])
        raise NotApplicable("the number of GPUs is not known (no GPU facts, no CUDA_VISIBLE_DEVICES)")
    n = len(visible)
    tp, pp = cfg.tensor_parallel_size or 1, cfg.pipeline_parallel_size or 1
    dp = cfg.data_parallel_size or 1
    heads = facts.model.num_attention_heads if facts.model else None
    where = ("CUDA_VISIBLE_DEVICES=" + cfg.env["CUDA_VISIBLE_DEVICES"] if "CUDA_VISIBLE_DEVICES" in cfg.env
             else f"the container was given {n} GPU(s)" if cfg.gpus_granted else f"{n} GPU(s) on the host")
    evidence = [f"tensor_parallel_size={tp} ({cfg.sources.get('tensor_parallel_size', '?')}), pipeline_parallel_size={pp}, data_parallel_size={dp}",
                f"GPUs available to the engine: {n} ({where})"]
    nodes = cfg.nnodes or 1
    if tp > n and nodes <= 1 and (g is not None):
        new_pp = math.ceil(tp * pp / n)
        return Outcome([Finding(
            "perf.tp_mismatch",
            f"TP={tp} is larger than the {n} GPUs of this node: tensor parallelism would span nodes",
            evidence + ["tensor parallel all-reduces run every layer; across nodes they cross the network"],
            [Fix(f"Keep TP inside the node and split across nodes with pipeline parallelism (TP {n} x PP {new_pp})",
                 fv.command(cfg.engine, ("tp", n), ("pp", new_pp)))],
            explains=["perf.slow_interconnect", "perf.high_latency", "perf.low_gpu_util"])])
    if nodes > 1 and g is not None and tp > n:
        new_pp = math.ceil(tp * pp / n)
        return Outcome([Finding(
            "perf.tp_mismatch", f"TP={tp} spans {nodes} nodes of {n} GPUs each",
            evidence + [f"nnodes={nodes}"],
            [Fix(f"TP {n} inside each node, PP {new_pp} across nodes", fv.command(cfg.engine, ("tp", n), ("pp", new_pp)))],
            # with nnodes the GPUs of the other nodes exist: a per-node "TP > GPUs" is this, not an invalid TP
            explains=["perf.slow_interconnect", "perf.high_latency", "load.tp_invalid"])])
    used = tp * pp * dp
    if used < n and nodes <= 1:
        idle = n - used
        better = valid_tp(n // pp, heads)
        fixes = []
        pcie_only = bool(g and g.topology) and not any(c.startswith("NV") for row in g.topology for c in row)
        if better > tp and not pcie_only:
            fixes.append(Fix(f"Use the idle GPUs for tensor parallelism (TP {better}{f' divides the {heads} heads' if heads else ''})",
                             fv.command(cfg.engine, ("tp", better))))
        replicas = n // (tp * pp)
        if replicas > 1 and cfg.engine in ("vllm", "sglang"):
            fixes.append(Fix(f"{'Or serve' if fixes else 'Serve'} {replicas} replicas with data parallelism (more throughput "
                             f"when the model fits TP {tp}{'; on PCIe-only GPUs better than more TP' if pcie_only else ''})",
                             fv.command(cfg.engine, ("dp", replicas))))
        if not fixes:
            fixes.append(Fix(f"Expose only the GPUs the engine uses, so {idle} GPU(s) can serve another replica",
                             f"CUDA_VISIBLE_DEVICES={','.join(str(i) for i in visible[:used])}"))
        return Outcome([Finding(
            "perf.tp_mismatch", f"the engine uses {used} of {n} GPUs: {idle} GPU(s) stay idle",
            evidence, fixes, explains=["load.weights_oom", "load.kv_cache_insufficient", "load.no_kv_cache_memory"])])
    logged = _wider_than_logged(facts, cfg)
    if logged is not None and _tp_needed(facts, cfg, g, heads) is None:
        return Outcome([logged])
    smaller = _tp_needed(facts, cfg, g, heads)
    if smaller is not None and smaller < tp:
        weights_gib, total_gib = smaller_weights(facts, cfg, smaller), _gpu_gib(g)
        replicas = tp // smaller
        return Outcome([Finding(
            "perf.tp_mismatch", f"TP={tp} is more than this model needs: TP {smaller} holds it, {replicas} replicas would serve more",
            evidence + [f"{facts.model.name}: {weights_gib:.1f} GiB of weights per GPU at TP {smaller}, of {total_gib:.1f} GiB"],
            [Fix(f"Serve {replicas} replicas of TP {smaller} instead of one of TP {tp} (less all-reduce per token)",
                 fv.command(cfg.engine, ("tp", smaller), ("dp", replicas)))])])
    return Outcome(detail=f"TP {tp} x PP {pp} x DP {dp} on {n} GPU(s)")


GAIN = 1.15  # the narrower TP serving this much more per GPU: beyond the noise between two benchmark runs


def _compared(facts: Facts, engine: str) -> Finding | str | None:
    """A benchmark table of two TP sizes (doctor/logparse/tp_compare.py): where the narrower one serves GAIN times
    the throughput per GPU of the wider one, the wider split buys latency with GPUs that replicas of the narrower
    one would turn into throughput. A detail string when the table shows them even; None without such a table."""
    said = next((s for s in facts.stated if s.code == "perf.tp_mismatch" and "per_gpu_narrow" in s.measures), None)
    if said is None:
        return None
    x = said.measures
    wide, narrow = int(x["tp_wide"]), int(x["tp_narrow"])
    gain = x["per_gpu_narrow"] / x["per_gpu_wide"] if x["per_gpu_wide"] else 0.0
    if gain < GAIN:
        return f"TP {narrow} serves {gain:.2f}x the throughput per GPU of TP {wide} (benchmark table): the wider split pays its way"
    replicas = max(2, wide // narrow)
    return Finding(
        "perf.tp_mismatch", f"TP={wide} is wider than the model needs: TP {narrow} serves {gain - 1:.0%} more per GPU",
        [f"{said.where}: {said.text}",
         f"throughput per GPU: {x['per_gpu_wide']:g} at TP {wide}, {x['per_gpu_narrow']:g} at TP {narrow} ({gain:.2f}x): "
         f"the extra GPUs of TP {wide} go to all-reduces, not to tokens"],
        [Fix(f"Serve {replicas} replicas of TP {narrow} on the same GPUs instead of one of TP {wide} (more tokens per GPU; "
             f"each request's latency is that of TP {narrow})", fv.command(engine, ("tp", narrow), ("dp", replicas)))],
        explains=["perf.low_gpu_util", "perf.slow_interconnect"])


def _spans_nodes(cfg) -> Finding | None:
    """TP spans nodes by the launch command alone: with --nnodes N the engines place tp x pp ranks evenly, tp x pp / N
    per node (SGLang server_args tp_size_per_node = tp_size // nnodes; vLLM's --nnodes the same), so a TP group larger
    than that puts every layer's all-reduce on the network. Only without data parallelism (its ranks are placed too)."""
    nodes = cfg.nnodes or 1
    tp, pp = cfg.tensor_parallel_size or 1, cfg.pipeline_parallel_size or 1
    if nodes <= 1 or (cfg.data_parallel_size or 1) > 1 or (tp * pp) % nodes:
        return None
    per_node = tp * pp // nodes
    if tp <= per_node:
        return None
    new_pp = tp * pp // per_node
    return Finding(
        "perf.tp_mismatch", f"TP={tp} spans {nodes} nodes: {per_node} GPU(s) of each TP group per node",
        [f"tensor_parallel_size={tp} ({cfg.sources.get('tensor_parallel_size', '?')}), pipeline_parallel_size={pp}, nnodes={nodes} "
         f"({cfg.sources.get('nnodes', '?')})",
         f"the engine places tp x pp / nnodes = {per_node} GPU(s) per node: each layer's all-reduce crosses the network"],
        [Fix(f"TP {per_node} inside each node, PP {new_pp} across nodes (one activation per stage crosses the network)",
             fv.command(cfg.engine, ("tp", per_node), ("pp", new_pp))),
         Fix(f"Or, where the model fits {per_node} GPU(s), serve one replica per node behind a load balancer: no traffic between nodes")],
        explains=["perf.slow_interconnect", "perf.high_latency", "perf.low_gpu_util"])


WEIGHTS_SHARE = 0.4  # weights under 40% of a GPU leave the KV cache room to batch


def _gpu_gib(g) -> float | None:
    totals = [x.memory_total_mib for x in (g.gpus if g else []) if x.memory_total_mib]
    return min(totals) / 1024 if totals else None


def smaller_weights(facts: Facts, cfg, tp: int) -> float:
    import dataclasses

    from llm_doctor.memory import weights_bytes_per_gpu

    return weights_bytes_per_gpu(facts.model, dataclasses.replace(cfg, tensor_parallel_size=tp)) / 1024**3


def _tp_needed(facts: Facts, cfg, g, heads: int | None) -> int | None:
    """The smallest TP whose weights per GPU stay under WEIGHTS_SHARE of the GPU; None when the
    model or the GPU size is not known."""
    total = _gpu_gib(g)
    if facts.model is None or total is None or (cfg.pipeline_parallel_size or 1) > 1:
        return None
    tp = 1
    while tp < (cfg.tensor_parallel_size or 1):
        if (heads is None or heads % tp == 0) and smaller_weights(facts, cfg, tp) <= WEIGHTS_SHARE * total:
            return tp
        tp *= 2
    return None


def _wider_than_logged(facts: Facts, cfg) -> Finding | None:
    """TP larger than the model needs by the engine's own numbers: vLLM prints each worker's weight memory ("Model
    loading took 6.05 GiB", SGLang "Load weight end. ... mem usage=6.05 GB") and the GPU's size ("total_gpu_memory
    (79.15GiB)", "Free memory on device (a/79.15 GiB)"). Weights are split evenly by TP (vocab-parallel embeddings
    included), so TP t holds weights x tp / t per GPU; the smallest t (a power of two dividing the heads) whose share
    stays under WEIGHTS_SHARE of the GPU leaves the KV cache room to batch, and the GPUs beyond it serve more as
    replicas. Only without pipeline parallelism, and only where the log states both numbers."""
    s = facts.logs.setup if facts.logs is not None else None
    tp = cfg.tensor_parallel_size or 1
    if s is None or not s.weights_gib or not s.gpu_total_gib or tp < 2 or (cfg.pipeline_parallel_size or 1) > 1:
        return None
    heads = facts.model.num_attention_heads if facts.model else None
    total = s.weights_gib * tp
    need = 1
    while need < tp and ((heads is not None and heads % need) or total / need > WEIGHTS_SHARE * s.gpu_total_gib):
        need *= 2
    if need >= tp:
        return None
    replicas = tp // need
    # one step wider than needed buys lower latency per request, a common choice (a 70B at TP 8 on 8 H200s): a note;
    # two steps and more is GPUs spent on all-reduces
    severity = "info" if replicas == 2 else "warn"
    return Finding(
        "perf.tp_mismatch", f"TP={tp} is more than this model needs: TP {need} holds it, {replicas} replicas would serve more",
        [f"tensor_parallel_size={tp} ({cfg.sources.get('tensor_parallel_size', '?')})",
         f"the engine logged {s.weights_gib:g} GiB of weights per GPU of {s.gpu_total_gib:g} GiB: {total:.1f} GiB in all, "
         f"{total / need:.1f} GiB per GPU at TP {need} ({total / need / s.gpu_total_gib:.0%} of a GPU)"],
        [Fix(f"Serve {replicas} replicas of TP {need} instead of one of TP {tp} (less all-reduce per token)",
             fv.command(cfg.engine, ("tp", need), ("dp", replicas)))],
        severity=severity, explains=["perf.low_gpu_util", "perf.slow_interconnect"])
