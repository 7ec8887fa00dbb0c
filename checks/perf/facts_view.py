"""Shared reading of live/saved facts for the perf checks (no check is registered here).

Which GPUs the engine uses, its parallel sizes, and the engine's own spelling of a flag, so that
each fix is printed in the syntax of the engine that will read it (`--tensor-parallel-size` for
vLLM, `--tp` for SGLang, `--num-shard` for TGI).
"""

from __future__ import annotations

from llm_doctor.engine_args import tgi_shards
from llm_doctor.engine_flags import command, flag, kv_half  # noqa: F401 (fv.flag(...) in every perf check)
from llm_doctor.facts import Facts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.gpu import Gpu, GpuFacts


def maybe_deployment(facts: Facts) -> EngineConfig | None:
    """The engine config: from a command line, a log, /metrics, or a running process — with the
    parallel size the engine itself picks where the command leaves it out (TGI's shards)."""
    cfg = facts.deployment if facts.deployment is not None and facts.deployment.engine else None
    if cfg is None:
        procs = facts.host.processes if facts.host else []
        cfg = next((p.config for p in procs if p.config is not None and p.config.engine), None)
    visible = visible_indices(cfg, maybe_gpus(facts)) if cfg is not None else None
    return tgi_shards(cfg, len(visible)) if cfg is not None and visible else cfg


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
    if cfg is not None and cfg.gpus_granted:  # a container sees only the GPUs it was given
        return list(range(cfg.gpus_granted))
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
    """Metrics read from a text (a log's stat lines, a series; or a person's sentence stating the run's
    state, doctor/logparse/perf_prose.py), not a /metrics scrape (one reading)."""
    return m is not None and m.origin in ("log", "prose")


def sustained(m, count_name: str) -> bool:
    """In a log: the state counted by `count_name` held over a share of the stat lines, so it
    describes the run, not one busy moment (doctor/logparse/stat_lines.is_sustained)."""
    from llm_doctor.logparse.stat_lines import is_sustained

    return is_sustained(m.values.get(count_name, 0), m.values.get("stat_samples", 0))


def share(m, count_name: str) -> str:
    """"12 of 40 stat lines" for the evidence."""
    if m.origin == "prose":
        return "the reporter's statement"
    return f"{m.values.get(count_name, 0):g} of {m.values.get('stat_samples', 0):g} stat lines{sampled(m)}"


def sampled(m) -> str:
    """" read (a sample: ...)" after a count of stat lines when a long series was read as a sample
    (doctor/logparse/stat_lines.SAMPLE_EVERY): the counts are of the lines read, not of all."""
    from llm_doctor.logparse.stat_lines import SAMPLE_AFTER, SAMPLE_EVERY

    unread = m.values.get("stat_lines_unread", 0)
    return (f" read (sampled: 1 in {SAMPLE_EVERY} after the first {SAMPLE_AFTER:,}; {unread:g} more not read)"
            if unread else "")


def gib(mib: float | None) -> str:
    return f"{(mib or 0) / 1024:.1f} GiB"
