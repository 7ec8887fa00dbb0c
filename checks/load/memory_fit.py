"""Does the deployment fit its GPUs? Turns the memory plan (facts.plan, from `llm-doctor plan`, or
planned from the model, deployment and GPU facts of a run by doctor.planning.plan_from_facts) into
findings whose fixes are the computed changes."""

from __future__ import annotations

import math

from llm_doctor.engine import check
from llm_doctor.engine_flags import flag
from llm_doctor.facts import Facts
from llm_doctor.facts.plan import MemoryPlan
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome
from llm_doctor.planning import plan_from_facts

GIB = 1024**3
CODES = {
    "weights_oom": "load.weights_oom",
    "no_kv_cache_memory": "load.no_kv_cache_memory",
    "kv_cache_insufficient": "load.kv_cache_insufficient",
    "gpu_count": "load.tp_invalid",
    "tp_invalid": "load.tp_invalid",
    "config_invalid": "load.config_invalid",
    "model_unknown": "load.model_files",
}


@check("load.memory_fit", "load", codes=[*CODES.values(), "perf.memory_overcommitted"])
def memory_fit(facts: Facts) -> Outcome:
    """The weights, activations and KV cache fit the GPU memory budget."""
    plan = plan_from_facts(facts)
    if plan is None:
        raise NotApplicable("no memory plan: needs the model, the engine arguments and the GPUs")
    if plan.verdict in NOT_PLANNED:
        return Outcome([_not_planned(plan)])
    layout = (
        f"model {plan.model or '?'} on {plan.gpu_count} x {plan.gpu_name or 'GPU'} ({plan.gpu_total_gib} GiB each), "
        f"{plan.engine} TP={plan.tensor_parallel_size} PP={plan.pipeline_parallel_size}"
    )
    if plan.verdict == "tp_invalid":  # a budget for a split the engine refuses would mislead
        fixes = [Fix(f"{c.what}: {c.result}", c.command) for c in plan.changes]
        return Outcome([Finding("load.tp_invalid", plan.reasons[0], [layout, *plan.reasons], fixes)])
    evidence = [
        layout,
        f"budget {plan.budget_gib} GiB per GPU = weights {plan.weights_gib_per_gpu} + activations "
        f"{plan.activation_gib} + non-torch {plan.non_torch_gib} + KV cache {plan.kv_cache_gib}",
        f"KV cache {plan.kv_cache_tokens} tokens at {plan.kv_bytes_per_token} bytes/token; max_model_len "
        f"{plan.max_model_len}; max concurrency {plan.max_concurrency}x",
        *plan.reasons,
    ]
    findings = []
    if not plan.fits:
        code = CODES.get(plan.verdict, "load.config_invalid")
        fixes = [Fix(f"{c.what}: {c.result}", c.command) for c in plan.changes]
        title = plan.reasons[0] if plan.reasons else f"the deployment does not fit: {plan.verdict}"
        explains = ["load.runtime_oom"] if code == "load.weights_oom" else []
        findings.append(Finding(code, title, evidence, fixes, explains=explains))
    elif plan.headroom_gib < 0:
        findings.append(
            Finding(
                "perf.memory_overcommitted",
                f"{-plan.headroom_gib} GiB short of headroom outside the budget (CUDA context and graphs)",
                evidence,
                [Fix("Leave room for the CUDA context and graphs: the largest share that leaves the shortfall free",
                     f"{flag('mem', plan.engine)} {_share_leaving(plan, -plan.headroom_gib)}")],
            )
        )
    at = f"{plan.max_concurrency}x at {plan.max_model_len}" if plan.max_model_len else "max_model_len not known"
    detail = f"fits: {plan.kv_cache_tokens} KV tokens, {at}" if plan.fits else ""
    return Outcome(findings, detail)


def _share_leaving(plan: MemoryPlan, shortfall_gib: float) -> float:
    """The engine's memory share (budget / total) lowered by the shortfall, rounded down to 0.01."""
    return math.floor((plan.budget_gib - shortfall_gib) / plan.gpu_total_gib * 100) / 100


NOT_PLANNED = ("model_unknown", "config_invalid")


def _not_planned(plan: MemoryPlan) -> Finding:
    """No budget could be computed: say why, and what to pass, instead of a plan for "0 x GPU"."""
    if plan.verdict == "config_invalid":
        return Finding("load.config_invalid", f"the engine arguments have values the engine refuses: {'; '.join(plan.reasons)}",
                       [f"launch command: {r}" for r in plan.reasons],
                       [Fix("Give each of these a valid value (or drop it to take the engine's default)")])
    name = plan.model or "(none given)"
    return Finding(
        "load.model_files",
        f"no plan: the model {name} is unknown ({'; '.join(plan.reasons)})",
        [*plan.reasons, *plan.assumptions],
        [
            Fix("Give a local model folder that holds its config.json", "--model /path/to/model-folder"),
            Fix("Or a repo id the Hugging Face hub serves (without --offline; HF_TOKEN for a gated repo)", f"--model {plan.model or 'ORG/NAME'}"),
            Fix("And the GPUs to plan for: a GPU name (or its memory) and how many", "--gpu H100 --gpus 1 (or --gpu-memory GiB)"),
        ],
    )
