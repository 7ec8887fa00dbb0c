"""Shared reading of live/saved facts for the perf checks (no check is registered here).

Which GPUs the engine uses, its parallel sizes, and the engine's own spelling of a flag, so that
each fix is printed in the syntax of the engine that will read it (`--tensor-parallel-size` for
vLLM, `--tp` for SGLang, `--num-shard` for TGI).
"""

from __future__ import annotations

from llm_doctor.facts import Facts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.gpu import Gpu, GpuFacts

FLAGS: dict[str, dict[str, str]] = {
    "tp": {"vllm": "--tensor-parallel-size", "sglang": "--tp", "tgi": "--num-shard", "trtllm": "--tp_size"},
    "pp": {"vllm": "--pipeline-parallel-size", "sglang": "--pp-size", "trtllm": "--pp_size"},
    "dp": {"vllm": "--data-parallel-size", "sglang": "--dp"},
    "max_seqs": {
        "vllm": "--max-num-seqs",
        "sglang": "--max-running-requests",
        "tgi": "--max-concurrent-requests",
        "llamacpp": "--parallel",
        "trtllm": "--max_batch_size",
    },
    "mem": {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static", "tgi": "--cuda-memory-fraction",
            "trtllm": "--kv_cache_free_gpu_memory_fraction"},
    "batched_tokens": {
        "vllm": "--max-num-batched-tokens",
        "sglang": "--chunked-prefill-size",
        "tgi": "--max-batch-prefill-tokens",
        "trtllm": "--max_num_tokens",
    },
    # a KV cache of half the bytes per token: fp8 in the GPU engines, 8-bit K and V in llama.cpp
    "kv_dtype": {"vllm": "--kv-cache-dtype fp8", "sglang": "--kv-cache-dtype fp8_e5m2", "tgi": "--kv-cache-dtype fp8_e5m2",
                 "llamacpp": "-ctk q8_0 -ctv q8_0"},
    "ctx": {"vllm": "--max-model-len", "sglang": "--context-length", "tgi": "--max-total-tokens", "llamacpp": "-c",
            "trtllm": "--max_seq_len"},
}


def flag(kind: str, engine: str) -> str:
    """The engine's spelling of a knob; vLLM's for an input whose engine is not known."""
    table = FLAGS[kind]
    return table.get(engine) or table["vllm"]


def command(engine: str, *settings: tuple[str, object]) -> str | None:
    """`--tp 2 --dp 2` in the engine's own flags, leaving out the knobs it does not have (TGI and
    llama.cpp have no data-parallel flag: replicas are separate servers); None when it has none of them."""
    known = bool(engine)
    parts = [f"{FLAGS[kind].get(engine) or ('' if known else FLAGS[kind]['vllm'])} {value}".strip()
             for kind, value in settings if FLAGS[kind].get(engine) or not known]
    return " ".join(parts) or None


def maybe_deployment(facts: Facts) -> EngineConfig | None:
    """The engine config: from a command line, a log, /metrics, or a running process."""
    if facts.deployment is not None and facts.deployment.engine:
        return facts.deployment
    procs = facts.host.processes if facts.host else []
    return next((p.config for p in procs if p.config is not None and p.config.engine), None)


def deployment(facts: Facts) -> EngineConfig:
    """For a check that declares needs=("deployment",): the engine decided it is there."""
    cfg = maybe_deployment(facts)
    assert cfg is not None, "declare needs=('deployment',)"
    return cfg


def maybe_gpus(facts: Facts) -> GpuFacts | None:
    g = facts.gpus
    return g if g is not None and g.available and g.gpus else None


def gpus(facts: Facts) -> GpuFacts:
    """For a check that declares needs=("gpus",)."""
    g = maybe_gpus(facts)
    assert g is not None, "declare needs=('gpus',)"
    return g


def world_size(cfg: EngineConfig) -> int:
    return (cfg.tensor_parallel_size or 1) * (cfg.pipeline_parallel_size or 1)


def visible_indices(cfg: EngineConfig | None, g: GpuFacts | None) -> list[int] | None:
    """GPU indices the engine may use: CUDA_VISIBLE_DEVICES when it lists indices, else all."""
    env = dict(cfg.env) if cfg else {}
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        items = [x.strip() for x in cvd.split(",") if x.strip()]
        if all(x.isdigit() for x in items):
            return [int(x) for x in items]
        if g is not None:  # UUIDs
            return [gpu.index for gpu in g.gpus if gpu.uuid in items] or None
        return list(range(len(items)))
    if g is not None and g.gpus:
        return [gpu.index for gpu in g.gpus]
    return None


def engine_gpus(cfg: EngineConfig | None, g: GpuFacts) -> list[Gpu]:
    """The GPUs the engine runs on: the first TP x PP of the visible ones (engines take them in order)."""
    visible = visible_indices(cfg, g) or [gpu.index for gpu in g.gpus]
    take = world_size(cfg) if cfg else len(visible)
    chosen = [g.by_index(i) for i in visible[: max(1, take)]]
    return [x for x in chosen if x is not None]


def from_log(m) -> bool:
    """Metrics read from a log's stat lines (a series), not a /metrics scrape (one reading)."""
    return m is not None and m.origin == "log"


def sustained(m, count_name: str) -> bool:
    """In a log: the state counted by `count_name` held over a share of the stat lines, so it
    describes the run, not one busy moment (doctor/logparse/stat_lines.is_sustained)."""
    from llm_doctor.logparse.stat_lines import is_sustained

    return is_sustained(m.values.get(count_name, 0), m.values.get("stat_samples", 0))


def share(m, count_name: str) -> str:
    """"12 of 40 stat lines" for the evidence."""
    return f"{m.values.get(count_name, 0):g} of {m.values.get('stat_samples', 0):g} stat lines"


def gib(mib: float | None) -> str:
    return f"{(mib or 0) / 1024:.1f} GiB"
