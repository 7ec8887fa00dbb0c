"""Is the engine told to take (almost) all GPU memory? (perf.memory_overcommitted)

vLLM profiles one forward pass and then fills `gpu_memory_utilization` of the GPU; SGLang takes
`mem_fraction_static` for weights + KV pool. At 0.95 and above, what is left must hold CUDA graphs,
NCCL buffers, the sampler's logits and any other process: peaks that the profile did not see (long
prompts, many images, a spike of concurrent requests) end in OOM in the middle of serving.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

LIMIT = 0.95
SAFE = {"vllm": 0.90, "sglang": 0.85, "tgi": 0.90}


@check("perf.memory_headroom", "perf", codes=["perf.memory_overcommitted"], needs=("deployment",))
def memory_headroom(facts: Facts) -> Outcome:
    """The engine leaves GPU memory headroom for peaks (gpu_memory_utilization below 0.95)."""
    cfg = fv.deployment(facts)
    util = cfg.gpu_memory_utilization
    if util is None:
        raise NotApplicable("the memory fraction (gpu_memory_utilization / mem_fraction_static) is not known")
    if util < LIMIT:
        return Outcome(detail=f"memory fraction {util:g}")
    name = {"sglang": "mem_fraction_static", "tgi": "cuda_memory_fraction"}.get(cfg.engine, "gpu_memory_utilization")
    safe = SAFE.get(cfg.engine, 0.90)
    evidence = [f"{name}={util:g} ({cfg.sources.get('gpu_memory_utilization', '?')})"]
    total = None
    if facts.gpus and facts.gpus.gpus:
        total = min((x.memory_total_mib for x in facts.gpus.gpus if x.memory_total_mib), default=None)
    if total:
        evidence.append(f"headroom left per GPU: {(1 - util) * total / 1024:.2f} GiB of {total / 1024:.1f} GiB "
                        f"(at {safe:g}: {(1 - safe) * total / 1024:.2f} GiB)")
    return Outcome([Finding(
        "perf.memory_overcommitted", f"{name}={util:g} leaves no headroom for activation peaks, CUDA graphs and NCCL",
        evidence,
        [Fix(f"Leave headroom: {safe:g} is the engine's safe range", f"{fv.flag('mem', cfg.engine)} {safe:.2f}"),
         Fix("If the KV cache then gets too small, shorten the context or use an fp8 KV cache rather than squeezing headroom")],
        explains=["load.runtime_oom"])])
