"""Is the engine told to take (almost) all GPU memory? (perf.memory_overcommitted)

vLLM profiles one forward pass and then fills `gpu_memory_utilization` of the GPU; SGLang takes
`mem_fraction_static` for weights + KV pool. At 0.95 and above, what is left must hold CUDA graphs,
NCCL buffers, the sampler's logits and any other process: peaks that the profile did not see (long
prompts, many images, a spike of concurrent requests) end in OOM in the middle of serving. TGI's
`cuda_memory_fraction` defaults to 1.0 but its warmup budgets only that times TGI_WIGGLE_ROOM (0.90):
the share judged is the one the engine budgets (engine_args.memory_share), not the flag's value.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.engine_args import memory_share
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

LIMIT = 0.95
SAFE = {"vllm": 0.90, "sglang": 0.85, "tgi": 0.90}


@check("perf.memory_headroom", "perf", codes=["perf.memory_overcommitted"], needs=("deployment",))
def memory_headroom(facts: Facts) -> Outcome:
    """The engine leaves GPU memory headroom for peaks (gpu_memory_utilization below 0.95)."""
    cfg = fv.deployment(facts)
    if cfg.gpu_memory_utilization is None:
        raise NotApplicable("the memory fraction (gpu_memory_utilization / mem_fraction_static) is not known")
    util = memory_share(cfg)
    name = {"sglang": "mem_fraction_static", "tgi": "cuda_memory_fraction"}.get(cfg.engine, "gpu_memory_utilization")
    given = f"{name}={cfg.gpu_memory_utilization:g}"
    if util != cfg.gpu_memory_utilization:  # TGI: the flag times its wiggle room
        given += f" x TGI_WIGGLE_ROOM {util / cfg.gpu_memory_utilization:g} = {util:g} budgeted"
    if util < LIMIT:
        return Outcome(detail=given)
    safe = SAFE.get(cfg.engine, 0.90)
    evidence = [f"{given} ({cfg.sources.get('gpu_memory_utilization', '?')})"]
    total = None
    if facts.gpus and facts.gpus.gpus:
        total = min((x.memory_total_mib for x in facts.gpus.gpus if x.memory_total_mib), default=None)
    if total:
        evidence.append(f"headroom left per GPU: {(1 - util) * total / 1024:.2f} GiB of {total / 1024:.1f} GiB "
                        f"(at {safe:g}: {(1 - safe) * total / 1024:.2f} GiB)")
    return Outcome([Finding(
        "perf.memory_overcommitted", f"{given} leaves no headroom for activation peaks, CUDA graphs and NCCL",
        evidence,
        [Fix(f"Leave headroom: {safe:g} is the engine's safe range", f"{fv.flag('mem', cfg.engine)} {safe:.2f}"),
         Fix("If the KV cache then gets too small, shorten the context or use an fp8 KV cache rather than squeezing headroom")],
        explains=["load.runtime_oom"])])
