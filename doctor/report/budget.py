"""One bar per GPU: weights | activations | KV cache | headroom | over budget, so a person sees
the budget at a glance (text, markdown, html and junit reports, via Report.extra_sections), with the
assumptions the plan made (GPU, GPU count, context length, engine version) under it."""

from __future__ import annotations

from llm_doctor.facts.plan import MemoryPlan

PARTS = (
    ("█", "weights"),
    ("▓", "activations+non-torch"),
    ("▒", "KV cache"),
    ("░", "headroom"),
    ("X", "over budget"),
)


def segments(plan: MemoryPlan) -> list[tuple[str, str, float]]:
    """(bar character, name, GiB) per part of one GPU's memory, in PARTS order; the text and HTML
    bars both draw these."""
    total = max(plan.gpu_total_gib, 0.01)
    sizes = [
        plan.weights_gib_per_gpu,
        plan.activation_gib + plan.non_torch_gib,
        max(0.0, plan.kv_cache_gib),
        max(0.0, total - plan.budget_gib),
        max(0.0, -plan.kv_cache_gib),
    ]
    return [(ch, name, size) for (ch, name), size in zip(PARTS, sizes, strict=True)]


def render(plan: MemoryPlan, width: int = 60) -> str:
    assumed = [f"assumed: {a}" for a in plan.assumptions]
    if not plan.gpu_total_gib:  # the model or the arguments were unusable: no budget to draw
        return "\n".join([f"not computed ({plan.verdict}): {'; '.join(plan.reasons)}", *assumed])
    total = max(plan.gpu_total_gib, 0.01)
    parts = segments(plan)
    scale = width / max(total, sum(size for _, _, size in parts))
    bar = "".join(ch * round(size * scale) for ch, _, size in parts)
    legend = "  ".join(f"{ch} {name} {size:.2f} GiB" for ch, name, size in parts if size > 0)
    lines = [
        f"per GPU ({plan.gpu_count} x {plan.gpu_name or 'GPU'}, {total:.2f} GiB, TP={plan.tensor_parallel_size}):",
        f"[{bar}]",
        legend,
        f"KV cache tokens {plan.kv_cache_tokens}; max concurrency {plan.max_concurrency}x at "
        f"{plan.max_model_len} tokens; fits: {'yes' if plan.fits else 'NO (' + plan.verdict + ')'}",
        *assumed,
    ]
    return "\n".join(lines)
