"""Is prefix caching off? (perf.prefix_caching_off)

Chat turns, agents and RAG resend the same system prompt and history: with prefix caching the
engine reuses their KV blocks instead of recomputing every prompt, which cuts time to first token
and prefill load. vLLM V0 has it off by default (V1 on), SGLang's radix cache is on unless
`--disable-radix-cache`. Off is reported as info, by default or on purpose (a benchmark turns it off to
measure prefill: vLLM's own PRs serve with --no-enable-prefix-caching); a warning where the counters show
a prefill-heavy load it would serve.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

SHARE = 2.0  # prompt tokens per generated token above this: prefill-heavy, a cache would pay
FRESH_MIN = 3  # llama-server requests re-evaluated from their first token, with none reusing a prefix: caching is off


@check("perf.prefix_cache", "perf", codes=["perf.prefix_caching_off"], any_of=("deployment", "metrics"))
def prefix_cache(facts: Facts) -> Outcome:
    """Prefix caching is on where the engine supports it (and, where a person states the hit rate, it hits)."""
    cfg = fv.maybe_deployment(facts)
    m = facts.metrics if facts.metrics and facts.metrics.available else None
    if m is not None and fv.from_log(m) and (m.values.get("prompt_fresh") or m.values.get("prompt_reused")):
        return _llama_server(m)
    # a hit rate a person states (doctor/logparse/perf_prose.py): a stat line's 0 % is only an idle or random load
    rate = m.values.get("prefix_cache_hit_rate") if m and m.origin == "prose" else None
    if cfg is None or cfg.engine not in ("vllm", "sglang") or cfg.enable_prefix_caching is None:
        if rate is not None:
            return _hit_rate(cfg, m, rate)  # type: ignore[arg-type]
        if cfg is None:
            raise NotApplicable("no engine config and no stated prefix cache hit rate")
        if cfg.engine not in ("vllm", "sglang"):
            raise NotApplicable(f"{cfg.engine}: prefix caching is not an engine flag here")
        raise NotApplicable("whether prefix caching is on is not known")
    if cfg.pooling:
        # one forward pass per prompt and nothing decoded: encoder models keep no KV cache, and vLLM leaves prefix
        # caching off for pooling models by default; off is no finding there
        raise NotApplicable(f"{cfg.engine}: a pooling (embedding) model ({cfg.sources.get('pooling', '?')})")
    if cfg.enable_prefix_caching:
        return _hit_rate(cfg, m, rate) if rate is not None else Outcome(detail="prefix caching on")  # type: ignore[arg-type]
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
    # off, a choice or a default, is the setting; the warning is the load it costs, measured
    return Outcome([Finding("perf.prefix_caching_off", "prefix caching is off: every prompt is prefilled from scratch",
                            evidence, [fix], severity="warn" if heavy else "info")])


def _hit_rate(cfg, m, rate: float) -> Outcome:
    """A stated prefix cache hit rate: above zero the cache works; zero means no repeated prefix was
    reused, because caching is off (or not known to be on), or because what repeats never fills a block."""
    if rate > 0:
        return Outcome(detail=f"prefix cache hit rate {rate:.0%} (stated)")
    engine = (cfg.engine if cfg else "") or m.engine
    on = bool(cfg and cfg.enable_prefix_caching)
    if on:
        fix = Fix("Caching is on but nothing hits: a shared prefix shorter than one KV block, or a per-request field "
                  "(a timestamp, an id, a cache salt) at the start of the prompt, is never reused; put the fixed part first")
    elif engine == "sglang":
        fix = Fix("Drop --disable-radix-cache so repeated prefixes are reused")
    elif engine == "vllm":
        fix = Fix("Reuse the KV blocks of repeated prompt prefixes", "--enable-prefix-caching")
    else:
        fix = Fix("Turn on the server's prefix (KV) cache and check that a repeated request reads from it (its usage shows cached tokens)")
    evidence = [m.raw.get("prefix_cache_hit_rate", "prefix cache hit rate 0%")]
    if cfg is not None and cfg.enable_prefix_caching is not None:
        evidence.append(f"enable_prefix_caching={cfg.enable_prefix_caching} ({cfg.sources.get('enable_prefix_caching', '?')})")
    return Outcome([Finding("perf.prefix_caching_off", "no repeated prompt prefix is read from the cache (hit rate 0%)",
                            evidence, [fix], severity="info", explains=["perf.high_latency"])])


def _llama_server(m) -> Outcome:
    """llama-server says per request how much of the prompt it kept from the slot's cache ("kv cache rm
    [n_past, end)", doctor/logparse/stat_lines.py): a chat's turns and a regenerate share their start, so
    with the prompt cache on the first token at least (the template's head) is kept. Every request from 0
    means it is off ("cache_prompt" was off by default in older builds and in forks); the same prompt length
    evaluated twice from 0 is a prompt sent again and computed again, a warning."""
    v = m.values
    fresh, reused, repeat = int(v.get("prompt_fresh", 0)), int(v.get("prompt_reused", 0)), int(v.get("prompt_repeat", 0))
    dropped = int(v.get("prompt_dropped", 0))
    fix = Fix('Send "cache_prompt": true with each request (off by default in older llama-server builds and forks) and keep '
              "the start of the prompt identical across requests", '"cache_prompt": true')
    if dropped and not reused:
        # a late-2023 build prints "in cache: N tokens | to process" only for a request that asked for the cache: a slot
        # that held the last turn's tokens and evaluates the next prompt from 0 without it threw the turn away
        return Outcome([Finding("perf.prefix_caching_off", "llama-server drops the slot's cached prompt: the request did not ask for the "
                                "prompt cache, so every prompt is evaluated from its first token",
                                [m.raw.get("prompt_dropped", "kv cache rm - [0, end)"),
                                 f"{dropped} of {fresh} request(s) evaluated from token 0 on a slot that held the previous task's tokens, "
                                 "with no 'in cache: ... | to process' line (printed only when cache_prompt is set)"],
                                [fix], explains=["perf.high_latency"])])
    if reused or fresh < FRESH_MIN:
        return Outcome(detail=f"llama-server kept a cached prompt prefix in {reused} of {fresh + reused} request(s)")
    evidence = [m.raw.get("prompt_fresh", "kv cache rm [0, end)"), f"{fresh} of {fresh} requests evaluated their prompt from its first token"]
    if repeat:
        evidence.append(f"{repeat} of them the same length as the prompt before: the same prompt computed again")
    return Outcome([Finding("perf.prefix_caching_off", "llama-server reuses no cached prompt prefix: every request is prefilled from scratch",
                            evidence, [fix], severity="warn" if repeat else "info", explains=["perf.high_latency"])])
