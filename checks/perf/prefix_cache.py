"""Is prefix caching off? (perf.prefix_caching_off)

Chat turns, agents and RAG resend the same system prompt and history: with prefix caching the
engine reuses their KV blocks instead of recomputing every prompt, which cuts time to first token
and prefill load. vLLM V0 has it off by default (V1 on), SGLang's radix cache is on unless
`--disable-radix-cache`. Off by default is reported as info, turned off on purpose as a warning.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

SHARE = 2.0  # prompt tokens per generated token above this: prefill-heavy, a cache would pay


@check("perf.prefix_cache", "perf", codes=["perf.prefix_caching_off"], needs=("deployment",))
def prefix_cache(facts: Facts) -> Outcome:
    """Prefix caching is on where the engine supports it."""
    cfg = fv.deployment(facts)
    if cfg.engine not in ("vllm", "sglang"):
        raise NotApplicable(f"{cfg.engine}: prefix caching is not an engine flag here")
    if cfg.enable_prefix_caching is None:
        raise NotApplicable("whether prefix caching is on is not known")
    if cfg.enable_prefix_caching:
        return Outcome(detail="prefix caching on")
    source = cfg.sources.get("enable_prefix_caching", "?")
    evidence = [f"enable_prefix_caching=False ({source})"]
    m = facts.metrics if facts.metrics and facts.metrics.available else None
    heavy = False
    if m and m.values.get("prompt_tokens_total") and m.values.get("generation_tokens_total"):
        ratio = m.values["prompt_tokens_total"] / max(m.values["generation_tokens_total"], 1)
        heavy = ratio >= SHARE
        evidence.append(f"prompt/generated tokens so far: {ratio:.1f} ({m.raw.get('prompt_tokens_total')}, {m.raw.get('generation_tokens_total')})")
    fix = (Fix("Drop --disable-radix-cache so repeated prefixes are reused") if cfg.engine == "sglang"
           else Fix("Reuse the KV blocks of repeated prompt prefixes", "--enable-prefix-caching"))
    # a printed config (log, /metrics) lists defaults too: off there is a choice only where the default is on
    # (SGLang's radix cache, vLLM V1); off in vLLM V0's printed arguments is its default
    default_on = cfg.engine == "sglang" or cfg.engine_generation == "V1"
    on_purpose = source in ("cmdline", "code", "process") or (source in ("log", "metrics") and default_on)
    return Outcome([Finding("perf.prefix_caching_off", "prefix caching is off: every prompt is prefilled from scratch",
                            evidence, [fix], severity="warn" if (on_purpose or heavy) else "info")])
