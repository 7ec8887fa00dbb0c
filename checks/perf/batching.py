"""Is continuous batching held back? (perf.batching_limited)

A queue that grows while the KV cache has room means the scheduler's caps, not memory, stop
requests from joining the batch: max_num_seqs (SGLang max_running_requests, llama.cpp --parallel
slots) reached, or a prefill token budget smaller than the chunk it is meant to admit (SGLang's
max_prefill_tokens below chunked_prefill_size). The concurrency probe shows the same thing from
outside: tokens/s that do not grow with concurrent requests mean they are served one at a time.
Reads /metrics, the engine config and the probe result.
"""

from __future__ import annotations

import math

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome
from llm_doctor.logview import LogView

ROOM = 0.7  # KV usage below this while requests wait: the cache is not what holds them back
SMALL_SEQS = 8
TINY_SEQS = 4  # at or below: a warning, the batch is all but serial
SCALING_MIN = 1.5  # tokens/s at N concurrent vs 1 below this: no batching


@check("perf.batching", "perf", codes=["perf.batching_limited"], any_of=("deployment", "metrics", "host", "logs", "stated"),
       events=["batch_cap_reduced"], running=True)
def batching(facts: Facts, log: LogView | None) -> Outcome:
    """Requests are batched: no queue while the KV cache has room, limits not tiny, throughput scales."""
    cfg = fv.maybe_deployment(facts)
    m = facts.metrics if facts.metrics and facts.metrics.available else None
    probe = facts.host.probe if facts.host else None
    reduced = _reduced_cap(cfg, log.events("batch_cap_reduced")) if log else None
    swept = _cap_sweep(facts, cfg)
    if cfg is None and m is None and probe is None and reduced is None and swept is None:
        raise NotApplicable("no engine config, /metrics or load probe")
    findings = [f for f in (reduced, swept, _queue(cfg, m), _probe(cfg, probe), _prefill_budget(cfg, m), _tiny_limit(cfg),
                            _instances_over_batch(cfg)) if f]
    return Outcome(findings, "" if findings else "no batching limit seen")


def _reduced_cap(cfg, found: list) -> Finding | None:
    """SGLang lowered the batch cap it was given to what its KV pool (or a hybrid model's mamba
    state cache) holds: requests beyond it queue whatever --max-running-requests says. The requested
    concurrency is served by replicas of the reduced size; the reduced cap itself, set explicitly,
    keeps a router or gateway from sending more than one replica admits."""
    from llm_doctor.checks.load import log_events as le

    if not found:
        return None
    v = found[-1].values
    reduced = int(v.get("reduced") or v.get("capped") or 0)  # type: ignore[call-overload]
    requested = int(v["requested"]) if v.get("requested") else (cfg.max_num_seqs if cfg and cfg.is_set("max_num_seqs") else None)  # type: ignore[call-overload]
    if not reduced or (requested and requested <= reduced):
        return None
    engine = (cfg.engine if cfg and cfg.engine else "") or "sglang"
    by = "the mamba state cache" if v.get("by") else "the KV cache"
    evidence = le.evidence(found[-1:])
    fixes = [Fix(f"Tell the router the real cap: each replica admits {reduced} requests", f"{fv.flag('max_seqs', engine)} {reduced}")]
    if requested:
        replicas = math.ceil(requested / reduced)
        evidence.append(f"{requested} concurrent requests asked for, {reduced} admitted: {requested - reduced} more queue")
        fixes.insert(0, Fix(f"Serve {requested} at once with {replicas} replicas of {reduced} (data parallelism, or more GPUs for the KV pool)",
                            fv.command(engine, ("dp", replicas))))
    return Finding("perf.batching_limited",
                   f"the engine cut its batch cap to {reduced}"
                   + (f" of the {requested} requested" if requested else "") + f": {by} holds no more",
                   evidence, fixes, explains=["perf.high_latency", "perf.kv_cache_pressure"])


def _queue(cfg, m) -> Finding | None:
    if m is None:
        return None
    v = m.values
    running, waiting, usage = v.get("running"), v.get("waiting"), v.get("kv_cache_usage")
    if not running or not waiting or usage is None or usage >= ROOM:
        return None
    if fv.from_log(m) and not fv.sustained(m, "capped_samples"):
        return None  # a log: a queue while the cache had room for a moment is a burst being admitted
    engine = (cfg.engine if cfg else "") or m.engine
    cap = int(v["max_running_requests"]) if "max_running_requests" in v else (cfg.max_num_seqs if cfg else None)
    # the number of sequences the cache would hold at 80% at the observed tokens per sequence
    fits = math.floor(running * 0.8 / max(usage, 0.01))
    target = max(int(running) * 2, min(fits, int(running + waiting)))
    if cap:
        target = max(target, cap * 2) if running >= cap * 0.9 else target
    evidence = list(dict.fromkeys(m.raw[k] for k in ("running", "waiting", "kv_cache_usage") if k in m.raw))
    if cap:
        evidence.append(f"batch cap ({fv.flag('max_seqs', engine).lstrip('-')}) = {cap}")
    evidence.append(f"{waiting:g} requests wait while the KV cache is only {usage:.0%} used: about {fits} sequences would fit at 80%")
    if fv.from_log(m):
        evidence.append(f"requests waited while the cache had room in {fv.share(m, 'capped_samples')}")
    return Finding("perf.batching_limited", f"{waiting:g} requests queue while the KV cache is {usage:.0%} used: the batch is capped",
                   evidence, [Fix(f"Let more requests into the batch (the cache holds about {fits})", f"{fv.flag('max_seqs', engine)} {min(target, fits)}")],
                   explains=["perf.high_latency", "perf.low_gpu_util"])


def _cap_sweep(facts: Facts, cfg) -> Finding | None:
    """A pasted sweep of the batch cap (doctor/logparse/perf_prose.py `_cap_sweep`) whose throughput grows nearly as
    fast as the cap: the cap, not the GPUs, bounded it. The fix is the cap of the sweep's best row, measured."""
    said = next((s for s in facts.stated if s.code == "perf.batching_limited" and "cap_scaling" in s.measures), None)
    if said is None:
        return None
    x = said.measures
    engine = (cfg.engine if cfg is not None and cfg.engine else "") or "vllm"
    name = fv.flag("max_seqs", engine)
    return Finding("perf.batching_limited",
                   f"throughput grows with the batch cap ({x['cap_scaling']:.0%} of linear): a cap of {x['max_num_seqs']:g} holds the batch back",
                   [f"{said.where}: {said.text}"],
                   [Fix(f"Raise the cap to the sweep's best row ({x['cap_best']:g}); TTFT grows with it, so stop where the "
                        "latency target still holds", f"{name} {x['cap_best']:g}")],
                   explains=["perf.low_gpu_util"])


def _probe(cfg, probe) -> Finding | None:
    if probe is None or not probe.tps_1 or not probe.tps_n or probe.concurrency < 2:
        return None
    ratio = probe.tps_n / probe.tps_1
    if ratio >= SCALING_MIN:
        return None
    engine = cfg.engine if cfg else ""
    n = probe.concurrency
    slots = probe.slots or (cfg.max_num_seqs if cfg and engine == "llamacpp" and cfg.is_set("max_num_seqs") else None)
    if slots and slots >= n:
        return None  # the server admits N at once: a flat probe is compute-bound, not a batching limit
    if engine == "llamacpp" or (not engine and probe.server_hint == "llamacpp"):
        fix = Fix(f"Give llama-server {n} slots (the context is split between them)", f"--parallel {n}")
    else:
        fix = Fix("Raise the batch cap", f"{fv.flag('max_seqs', engine or 'vllm')} {max(n * 16, 64)}")
    return Finding("perf.batching_limited",
                   f"throughput does not scale with concurrency ({ratio:.2f}x at {n} requests): requests are served one at a time",
                   [f"probe: {probe.tps_1:.1f} tokens/s at concurrency 1, {probe.tps_n:.1f} tokens/s at concurrency {n}",
                    *probe.notes[:2]], [fix], explains=["perf.high_latency", "perf.low_gpu_util"])


def _prefill_budget(cfg, m) -> Finding | None:
    if cfg is None or cfg.engine != "sglang":
        return None
    chunk = cfg.max_num_batched_tokens
    prefill = None
    raw = cfg.extra.get("max_prefill_tokens") or cfg.extra.get("--max-prefill-tokens")
    if raw and str(raw).isdigit():
        prefill = int(raw)
    elif m is not None and "max_prefill_tokens" in m.values:
        prefill = int(m.values["max_prefill_tokens"])
    elif chunk and cfg.is_set("max_num_batched_tokens"):
        prefill = 16384  # SGLang's default --max-prefill-tokens
    if not chunk or not prefill or prefill >= chunk:
        return None
    return Finding("perf.batching_limited",
                   f"max_prefill_tokens {prefill} is below chunked_prefill_size {chunk}: each prefill batch stops at {prefill} tokens",
                   [f"chunked_prefill_size={chunk} ({cfg.sources.get('max_num_batched_tokens', '?')}), max_prefill_tokens={prefill}"],
                   [Fix("Raise the prefill budget with the chunk size", f"--max-prefill-tokens {chunk}")],
                   explains=["perf.high_latency"])


def _tiny_limit(cfg) -> Finding | None:
    if cfg is None or not cfg.max_num_seqs or not cfg.is_set("max_num_seqs") or cfg.max_num_seqs > SMALL_SEQS:
        return None
    default = {"vllm": 256, "sglang": 256, "llamacpp": 4, "tgi": 128}.get(cfg.engine, 64)
    if cfg.max_num_seqs >= default:
        return None
    name = fv.flag("max_seqs", cfg.engine)
    return Finding("perf.batching_limited", f"{name} {cfg.max_num_seqs}: at most {cfg.max_num_seqs} request(s) are batched together",
                   [f"{name.lstrip('-')}={cfg.max_num_seqs} ({cfg.sources.get('max_num_seqs')})"],
                   [Fix(f"Batch more requests (the engine default is {default})", f"{name} {default}")],
                   # llama-server ran 1 slot by default (common.h n_parallel = 1) for most of its life: its own default is no warning
                   severity="warn" if cfg.max_num_seqs <= TINY_SEQS and cfg.engine != "llamacpp" else "info")


TURBOMIND_BATCH = 64  # max_batch_size in the config.ini `lmdeploy convert` writes (LMDeploy 0.0.x-0.1.x)


def _instances_over_batch(cfg) -> Finding | None:
    """LMDeploy before 0.2 served a converted TurboMind workspace with `--instance_num` (api_server main(),
    default 32): the number of sessions the server holds at once, not the batch. TurboMind batches at most
    `max_batch_size` of them, read from the workspace's triton_models/weights/config.ini (64 as `lmdeploy
    convert` writes it, docs/en/inference/turbomind_config.md); every instance above it waits for a free
    seat, so raising --instance_num (or the client's concurrency) past it serves no more at once."""
    if cfg is None or cfg.engine != "lmdeploy":
        return None
    raw = str(cfg.extra.get("--instance_num") or cfg.extra.get("--instance-num") or "")
    if not raw.isdigit():
        return None
    instances = int(raw)
    explicit = cfg.is_set("max_num_seqs") and cfg.max_num_seqs
    cap = int(cfg.max_num_seqs) if explicit else TURBOMIND_BATCH
    if instances <= cap:
        return None
    workspace = (cfg.model or "./workspace").rstrip("/")
    ini = f"{workspace}/triton_models/weights/config.ini"
    said = f"max_batch_size={cap} ({cfg.sources.get('max_num_seqs')})" if explicit else \
        f"max_batch_size={cap} (the TurboMind workspace's config.ini as lmdeploy convert writes it)"
    return Finding("perf.batching_limited",
                   f"--instance_num {instances} holds {instances} sessions, but TurboMind batches at most {cap}: the rest wait",
                   [f"instance_num={instances} ({cfg.sources.get('model', 'command line')})", said,
                    f"{instances - cap} of {instances} concurrent sessions queue for a seat in the batch"],
                   [Fix(f"Raise max_batch_size in the workspace's config.ini to the concurrency served ({instances}); the KV "
                        "cache (cache_max_entry_count) still bounds how many fit",
                        f"sed -i 's/^max_batch_size = .*/max_batch_size = {instances}/' {ini}"),
                    Fix("Or, on LMDeploy 0.2 and later, where the batch cap is a server flag",
                        f"{fv.flag('max_seqs', 'lmdeploy')} {instances}")],
                   explains=["perf.high_latency", "perf.low_gpu_util"])
