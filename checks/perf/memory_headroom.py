"""Is the engine told to take (almost) all GPU memory? (perf.memory_overcommitted)

vLLM profiles one forward pass and then fills `gpu_memory_utilization` of the GPU; SGLang takes
`mem_fraction_static` for weights + KV pool. At 0.95 and above, what is left must hold CUDA graphs,
NCCL buffers, the sampler's logits and any other process: peaks that the profile did not see (long
prompts, many images, a spike of concurrent requests) end in OOM in the middle of serving. TGI's
`cuda_memory_fraction` defaults to 1.0 but its warmup budgets only that times TGI_WIGGLE_ROOM (0.90):
the share judged is the one the engine budgets (engine_args.memory_share), not the flag's value.

perf.memory_overcommitted or load.runtime_oom (codes.md): runtime_oom is the CUDA OOM itself, during
serving; memory_overcommitted is the setting, a share "too high, leaving no headroom: intermittent OOM
under peaks". So:
- a share at or above 0.95 and no OOM: memory_overcommitted; a warning where the headroom it leaves is
  computed below HEADROOM_GIB (on the GPU given, else on an 80 GB one), else info: 0.95 of an 80 GB GPU leaves 4 GiB, room for the graphs and NCCL, and a
  setting is not a measured problem until the memory it leaves is;
- an OOM while serving (the log places it after start-up: decode/prefill batches ran, requests were
  answered) with the share raised above the engine's default to 0.9 or more: memory_overcommitted is its
  cause and ranks first (it explains load.runtime_oom). Start-up succeeded, so the profile run, the KV
  cache and the graphs all fitted: what ran out is the headroom the raised share took from the activation
  peaks of live batches, which the profile does not see (vLLM determine_available_memory, SGLang
  init_memory_pool size the pool from the share and one profile pass). The fix is the share that leaves
  the failed allocation free, and no more than the engine's safe range;
- any other OOM the log shows, with a high share (during start-up: profiling, graph capture, warm-up;
  or at the engine's shipped default, 0.9 for vLLM): the OOM is the failure and ranks first (an error,
  the load layer); memory_overcommitted stands beside it as the setting to change, not as its cause: an
  OOM there has other causes too (a long unchunked prefill, images, graph capture, a batch cap);
- memory_overcommitted is the OOM's root cause (it explains load.runtime_oom and ranks before it) only
  where the input ties the two: the person lowered the share and the OOM went away, or names the share
  too high as the cause (doctor/logparse/perf_prose.py `_memory_cure`). Then the share they say failed
  is judged whatever the threshold says (another process on the GPU makes 0.3 too high), and the fix is
  the share they say worked, else the engine's safe range.
"""

from __future__ import annotations

import math

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.engine_args import configured_share, memory_share, sglang_mem_fraction
from llm_doctor.facts import Facts
from llm_doctor.facts.stated import PerfStatement
from llm_doctor.findings import STATEMENT, Finding, Fix, NotApplicable, Outcome
from llm_doctor.logparse.perf_prose import cure_engine
from llm_doctor.logview import LogView

LIMIT = 0.95
SAFE = {"vllm": 0.90, "sglang": 0.85, "tgi": 0.90}
MAX_QUOTED = 2
# a share at or above this, raised above the engine's default, is the cause of an OOM while serving
RAISED = 0.90
# what a share must leave outside the engine's pool: CUDA graphs (vLLM logs 0.3-2 GiB for "Graph capturing
# finished"), NCCL buffers with TP, the sampler's logits, the CUDA context of anything else on the GPU
HEADROOM_GIB = 2.0
REFERENCE_GPU_GIB = 80.0  # where the GPU is not known: an 80 GB H100/A100, the size most serving GPUs are at or below


@check("perf.memory_headroom", "perf", codes=["perf.memory_overcommitted"], any_of=("deployment", "stated", "logs"),
       events=["cuda_oom"])
def memory_headroom(facts: Facts, log: LogView | None) -> Outcome:
    """The engine leaves GPU memory headroom for peaks (gpu_memory_utilization below 0.95)."""
    cfg = fv.maybe_deployment(facts)
    cured = cures(facts)
    if cured:
        return Outcome([_cured(facts, cured)])
    if cfg is None or cfg.gpu_memory_utilization is None:
        return _said_share(facts, cfg)
    util = memory_share(cfg)
    given = _given(cfg, util)
    serving = _serving_oom(cfg, log)
    if serving is not None:
        return Outcome([_overcommit_oom(facts, cfg, serving)])
    if util < LIMIT:
        return Outcome(detail=given)
    safe = SAFE.get(cfg.engine, 0.90)
    evidence = [f"{given} ({cfg.sources.get('gpu_memory_utilization', '?')})"]
    total = _total_mib(facts)
    if total:
        evidence.append(f"headroom left per GPU: {(1 - util) * total / 1024:.2f} GiB of {total / 1024:.1f} GiB "
                        f"(at {safe:g}: {(1 - safe) * total / 1024:.2f} GiB)")
    return Outcome([Finding(
        "perf.memory_overcommitted", f"{given} leaves no headroom for activation peaks, CUDA graphs and NCCL",
        evidence,
        [Fix(f"Leave headroom: {safe:g} is the engine's safe range", f"{fv.flag('mem', cfg.engine)} {safe:.2f}"),
         Fix("If the KV cache then gets too small, shorten the context or use an fp8 KV cache rather than squeezing headroom")],
        severity=_severity(util, total))])


def _severity(share: float, total_mib: float | None) -> str:
    """warn where the memory the share leaves is computed below HEADROOM_GIB (on this GPU, or on an 80 GB one where its
    size is not known), else info: the setting is named, the shortfall is not shown."""
    left = (1 - share) * (total_mib / 1024 if total_mib else REFERENCE_GPU_GIB)
    return "warn" if left < HEADROOM_GIB else "info"


def _serving_oom(cfg, log: LogView | None):
    """The CUDA OOM the log places while serving, where the share was raised to RAISED or more above the
    engine's default (SGLang's by TP size, else 0.9), or None."""
    if log is None or cfg.sources.get("gpu_memory_utilization") == "default":
        return None
    default = sglang_mem_fraction(cfg.tensor_parallel_size or 1) if cfg.engine == "sglang" else 0.9
    share = configured_share(cfg)
    if memory_share(cfg) < RAISED or share <= default:
        return None
    return next((e for e in log.events("cuda_oom") if e.phase == "serving"), None)


def _overcommit_oom(facts: Facts, cfg, e) -> Finding:
    """The raised share is the serving OOM's cause: the fix is the share that leaves the failed allocation
    free (the share less the part of the GPU it was short by), at most the engine's safe range."""
    util = memory_share(cfg)
    given = _given(cfg, util)
    safe = SAFE.get(cfg.engine, 0.90)
    evidence = [f"{given} ({cfg.sources.get('gpu_memory_utilization', '?')}), above the engine's default",
                f"line {e.line_no}: {e.lines[0].strip()[:300]}",
                "phase: serving (the OOM came after start-up: the profile, the KV cache and the graphs had fitted)"]
    value = safe
    tried, free = e.values.get("tried"), e.values.get("free") or 0.0
    total = e.values.get("total") or (_total_mib(facts) or 0) / 1024
    if isinstance(tried, (int, float)) and isinstance(total, (int, float)) and total > 0:
        short = max(float(tried) - float(free), 0.0)
        leaves = math.floor((configured_share(cfg) - short / total) * 100) / 100
        evidence.append(f"the failed allocation was {short * 1024:.0f} MiB short of free memory on the {total:g} GiB GPU: "
                        f"share {leaves:.2f} leaves it free; the engine's safe range is {safe:g}")
        value = min(safe, leaves)
    return Finding("perf.memory_overcommitted",
                   f"{given} left no headroom: the GPU ran out of memory while serving, after start-up had fitted",
                   evidence,
                   [Fix("Lower the share the engine takes, so the activation peaks of live batches fit beside the pool",
                        f"{fv.flag('mem', cfg.engine)} {value:.2f}"),
                    Fix("If the KV cache then gets too small, cap the batch (max-num-batched-tokens / chunked prefill, "
                        "max-num-seqs) or use an fp8 KV cache rather than squeezing headroom")],
                   explains=["load.runtime_oom"])


def said_high(facts: Facts) -> list[PerfStatement]:
    """The text's own settings of the share at LIMIT or above (`--gpu-memory-utilization=0.95` quoted in a report, a
    config line), where no launch command or engine log gives it."""
    return [s for s in facts.stated if s.code == "perf.memory_overcommitted" and s.measures.get("memory_share", 0) >= LIMIT]


def _said_share(facts: Facts, cfg) -> Outcome:
    """The share as the text sets it: judged by the same limit as the engine's arguments (the OOM the log shows, if
    any, stays the failure and ranks first; this is the setting beside it)."""
    said = said_high(facts)
    if not said:
        raise NotApplicable("the memory fraction (gpu_memory_utilization / mem_fraction_static) is not known")
    share = max(s.measures["memory_share"] for s in said)
    engine = (cfg.engine if cfg is not None else "") or "vllm"
    safe = SAFE.get(engine, 0.90)
    total = _total_mib(facts)
    return Outcome([Finding(
        "perf.memory_overcommitted", f"the memory share is set to {share:g}: no headroom for activation peaks, CUDA graphs and NCCL",
        [f"{s.where}: {s.text}" for s in said[:MAX_QUOTED]]
        + ["the share as the text sets it: the engine's own arguments are not in the input"],
        [Fix(f"Leave headroom: {safe:g} is the engine's safe range", f"{fv.flag('mem', engine)} {safe:.2f}"),
         Fix("If the KV cache then gets too small, shorten the context or use an fp8 KV cache rather than squeezing headroom")],
        severity=_severity(share, total), tier=STATEMENT)])


def cures(facts: Facts) -> list[PerfStatement]:
    """The sentences that tie an OOM to the memory share (lowered and cured, or named too high)."""
    return [s for s in facts.stated if s.code == "perf.memory_overcommitted" and s.measures.get("oom_cured")]


def _cured(facts: Facts, said: list[PerfStatement]) -> Finding:
    """The share is the OOM's cause, by the input's own account: the share that worked is the fix."""
    cfg = fv.maybe_deployment(facts)
    engine = cfg.engine if cfg is not None and cfg.engine else cure_engine(said[0])
    failed = next((s.measures["memory_share"] for s in said if "memory_share" in s.measures), None)
    worked = next((s.measures["cured_share"] for s in said if "cured_share" in s.measures), None)
    if failed is None and cfg is not None and cfg.gpu_memory_utilization is not None:
        failed = memory_share(cfg)
    evidence = [f"{s.where}: {s.text}" for s in said[:MAX_QUOTED]]
    if failed is not None and cfg is not None and cfg.gpu_memory_utilization is not None:
        evidence.append(f"{_given(cfg, memory_share(cfg))} ({cfg.sources.get('gpu_memory_utilization', '?')})")
    total = _total_mib(facts)
    if failed is not None and total:
        evidence.append(f"headroom left per GPU at {failed:g}: {(1 - failed) * total / 1024:.2f} GiB of {total / 1024:.1f} GiB")
    safe = SAFE.get(engine, 0.90)
    # the share that worked; else the safe range, or 0.05 below the share that failed where that is already below it
    value = worked if worked is not None else min(safe, round(failed - 0.05, 2)) if failed is not None else safe
    why = "the share said to work" if worked is not None else "0.05 below the share that failed" if value != safe else "the engine's safe range"
    at = f" ({failed:g})" if failed is not None else ""
    return Finding("perf.memory_overcommitted",
                   f"the memory share{at} leaves no headroom: the OOM is said to go away with a lower share",
                   evidence + ["stated in words: the OOM is tied to the share by the reporter, not by a log line"],
                   [Fix(f"Lower the share the engine takes ({why}), so activation peaks, graphs and other processes fit",
                        f"{fv.flag('mem', engine)} {value:.2f}"),
                    Fix("If the KV cache then gets too small, shorten the context or cap the batch "
                        "(max-num-batched-tokens, max-num-seqs) rather than squeezing headroom")],
                   explains=["load.runtime_oom"], tier=STATEMENT)


def _given(cfg, util: float) -> str:
    name = {"sglang": "mem_fraction_static", "tgi": "cuda_memory_fraction", "lmdeploy": "cache_max_entry_count",
            "trtllm": "kv_cache_free_gpu_mem_fraction"}.get(cfg.engine, "gpu_memory_utilization")
    given = f"{name}={cfg.gpu_memory_utilization:g}"
    if util != cfg.gpu_memory_utilization:  # TGI: the flag times its wiggle room
        given += f" x TGI_WIGGLE_ROOM {util / cfg.gpu_memory_utilization:g} = {util:g} budgeted"
    return given


def _total_mib(facts: Facts) -> float | None:
    if facts.gpus and facts.gpus.gpus:
        return min((x.memory_total_mib for x in facts.gpus.gpus if x.memory_total_mib), default=None)
    return None
