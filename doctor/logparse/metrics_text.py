"""Prometheus text exposition (an engine's /metrics) -> engine-neutral numbers.

vLLM renamed its metrics between V0 and V1 (gpu_cache_usage_perc -> kv_cache_usage_perc, a hit-rate
gauge -> hits/queries counters), SGLang changed its label from `name=` to `model_name=` and some
gauge names, TGI and llama.cpp use their own. Checks should not know any of that, so this module
maps every known spelling onto one neutral name (`NAMES`). Parsing is prometheus_client's; only the
mapping is ours. Keyed on *sample* names, so vLLM V1's `*_created` gauges never pass for counters.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

MAX_SCRAPE_BYTES = 16 * 1024 * 1024

# neutral name -> the sample names engines use for it, preferred first
NAMES: dict[str, tuple[str, ...]] = {
    "running": (
        "vllm:num_requests_running",
        "sglang:num_running_reqs",
        "sglang:num_requests_running",
        "tgi_batch_current_size",
        "llamacpp:requests_processing",
    ),
    "waiting": (
        "vllm:num_requests_waiting",
        "sglang:num_queue_reqs",
        "sglang:num_requests_waiting",
        "sglang:queue_req",
        "tgi_queue_size",
        "llamacpp:requests_deferred",
    ),
    "swapped": ("vllm:num_requests_swapped",),
    "kv_cache_usage": (
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "sglang:token_usage",
        "llamacpp:kv_cache_usage_ratio",
    ),
    "preemptions_total": ("vllm:num_preemptions_total",),
    "prefix_cache_queries_total": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_cache_hits_total": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prefix_cache_hit_rate": ("vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"),
    "prompt_tokens_total": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "llamacpp:prompt_tokens_total"),
    "generation_tokens_total": (
        "vllm:generation_tokens_total",
        "sglang:generation_tokens_total",
        "llamacpp:tokens_predicted_total",
    ),
    "gen_throughput": ("sglang:gen_throughput", "llamacpp:predicted_tokens_seconds"),
    "prompt_throughput": ("llamacpp:prompt_tokens_seconds",),
    "max_total_tokens": ("sglang:max_total_num_tokens",),
    "max_running_requests": ("sglang:max_running_requests",),
    "max_prefill_tokens": ("sglang:max_prefill_tokens",),
    "context_len": ("sglang:context_len",),
    "decode_calls_total": ("llamacpp:n_decode_total",),
    "busy_slots_per_decode": ("llamacpp:n_busy_slots_per_decode",),
    "tgi_batch_max_tokens": ("tgi_batch_current_max_tokens",),
}

# neutral histogram name -> histogram base names (samples are <base>_sum / _count / _bucket)
HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl": (
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
        "sglang:inter_token_latency_seconds",
        "sglang:time_per_output_token_seconds",
    ),
    "e2e": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds", "tgi_request_duration"),
    "queue": ("vllm:request_queue_time_seconds", "sglang:waiting_request_latency_seconds", "tgi_request_queue_duration"),
}

# gauges where several label sets (engines, models) are combined by max, not by sum
MAX_COMBINED = {"kv_cache_usage", "prefix_cache_hit_rate", "max_total_tokens", "context_len", "max_prefill_tokens"}

ENGINE_PREFIXES = (("vllm:", "vllm"), ("sglang:", "sglang"), ("llamacpp:", "llamacpp"), ("tgi_", "tgi"))

_SAMPLE_LINE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})?\s+\S+")


@dataclass
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Histogram:
    sum: float = 0.0
    count: float = 0.0
    buckets: dict[float, float] = field(default_factory=dict)  # upper bound -> cumulative count


@dataclass
class Scrape:
    """One /metrics scrape, summarised."""

    engine: str = ""
    model_name: str = ""
    values: dict[str, float] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    cache_config: dict[str, str] = field(default_factory=dict)
    samples: int = 0
    problems: list[str] = field(default_factory=list)


def looks_like_metrics(head: str) -> bool:
    """Content sniff: `# TYPE`/`# HELP` lines, or bare samples of a known engine prefix."""
    lines = [ln.strip() for ln in head.splitlines()[:200] if ln.strip()]
    if not lines:
        return False
    typed = sum(1 for ln in lines if ln.startswith(("# TYPE ", "# HELP ")))
    samples = [ln for ln in lines if not ln.startswith("#")]
    known = sum(1 for ln in samples if ln.startswith(tuple(p for p, _ in ENGINE_PREFIXES)) and _SAMPLE_LINE.match(ln))
    shaped = sum(1 for ln in samples if _SAMPLE_LINE.match(ln))
    if typed >= 2 and shaped >= 1 and shaped >= 0.8 * len(samples):
        return True
    return known >= 3 and known >= 0.8 * len(samples)


def parse_samples(text: str) -> tuple[list[Sample], list[str]]:
    """All samples of a scrape. A malformed line (a truncated paste, a proxy's HTML) does not lose
    the rest: prometheus_client raises while iterating, so we fall back to one line at a time."""
    from prometheus_client.parser import text_string_to_metric_families

    text = text[:MAX_SCRAPE_BYTES].replace("\r\n", "\n").replace("\r", "\n")
    try:
        return [Sample(s.name, dict(s.labels), float(s.value)) for f in text_string_to_metric_families(text) for s in f.samples], []
    except (ValueError, TypeError, IndexError) as exc:
        first_error = f"malformed /metrics text ({exc}); parsed line by line"
    out: list[Sample] = []
    bad = 0
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            for f in text_string_to_metric_families(line + "\n"):
                out += [Sample(s.name, dict(s.labels), float(s.value)) for s in f.samples]
        except (ValueError, TypeError, IndexError):
            bad += 1
    return out, [f"{first_error}: {bad} line(s) skipped"]


def summarise(text: str) -> Scrape:
    samples, problems = parse_samples(text)
    finite = [s for s in samples if math.isfinite(s.value)]
    if len(finite) < len(samples):  # NaN / +Inf values: nothing to judge, and not valid in JSON
        problems.append(f"{len(samples) - len(finite)} sample(s) with a NaN or infinite value ignored")
        samples = finite
    scrape = Scrape(samples=len(samples), problems=problems)
    by_name: dict[str, list[Sample]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(s)
    for prefix, engine in ENGINE_PREFIXES:
        if any(n.startswith(prefix) for n in by_name):
            scrape.engine = engine
            break
    for neutral, names in NAMES.items():
        for name in names:
            if name in by_name:
                vals = [s.value for s in by_name[name]]
                value = max(vals) if neutral in MAX_COMBINED else sum(vals)
                scrape.values[neutral] = value
                scrape.raw[neutral] = f"{name} {_fmt(value)}"
                break
    _normalise(scrape)
    for neutral, bases in HISTOGRAMS.items():
        for base in bases:
            hist = _histogram(by_name, base)
            if hist is not None:
                scrape.histograms[neutral] = hist
                break
    info = by_name.get("vllm:cache_config_info")
    if info:
        scrape.cache_config = dict(info[0].labels)
    for s in samples:
        model = s.labels.get("model_name") or (s.labels.get("name") if s.name.startswith("sglang:") else None)
        if model and s.name != "sglang:func_latency_seconds_sum":
            scrape.model_name = model
            break
    return scrape


def _normalise(scrape: Scrape) -> None:
    """Units: SGLang's old cache_hit_rate is a percent (10.61), the new one a fraction; vLLM V0
    reports -1 for "no queries yet"; V1 has only hits/queries counters."""
    v = scrape.values
    rate = v.get("prefix_cache_hit_rate")
    if rate is not None:
        if rate < 0:
            del v["prefix_cache_hit_rate"]
        elif rate > 1:
            v["prefix_cache_hit_rate"] = rate / 100
    if "prefix_cache_hit_rate" not in v and v.get("prefix_cache_queries_total"):
        v["prefix_cache_hit_rate"] = v.get("prefix_cache_hits_total", 0.0) / v["prefix_cache_queries_total"]


def _histogram(by_name: dict[str, list[Sample]], base: str) -> Histogram | None:
    count = by_name.get(base + "_count")
    if not count:
        return None
    hist = Histogram(sum=sum(s.value for s in by_name.get(base + "_sum", [])), count=sum(s.value for s in count))
    for s in by_name.get(base + "_bucket", []):
        try:
            le = float(s.labels.get("le", "nan"))
        except ValueError:
            continue
        hist.buckets[le] = hist.buckets.get(le, 0.0) + s.value
    return hist


def quantile(hist: Histogram, q: float) -> float | None:
    """The q-quantile from cumulative buckets, interpolated linearly inside the bucket (what
    Prometheus' histogram_quantile does); None without finite buckets or when it lies beyond the
    largest finite bound."""
    bounds = sorted(b for b in hist.buckets if b == b)
    if not bounds or hist.count <= 0:
        return None
    total = hist.buckets[bounds[-1]] or hist.count
    target = q * total
    prev_bound, prev_count = 0.0, 0.0
    for b in bounds:
        c = hist.buckets[b]
        if c >= target:
            if b == float("inf"):
                return None  # above the largest finite bucket: no number to give
            span = c - prev_count
            return prev_bound + (b - prev_bound) * ((target - prev_count) / span if span > 0 else 1.0)
        prev_bound, prev_count = b, c
    return prev_bound


def delta(first: Histogram, second: Histogram) -> Histogram:
    """The observations made between two scrapes (a counter reset gives the second as is)."""
    if second.count < first.count:
        return second
    return Histogram(
        sum=second.sum - first.sum,
        count=second.count - first.count,
        buckets={b: c - first.buckets.get(b, 0.0) for b, c in second.buckets.items()},
    )


def histogram_values(prefix: str, hist: Histogram) -> dict[str, float]:
    out: dict[str, float] = {f"{prefix}_count": hist.count}
    if hist.count > 0:
        out[f"{prefix}_mean_s"] = hist.sum / hist.count
        for q, label in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            val = quantile(hist, q)
            if val is not None:
                out[f"{prefix}_{label}_s"] = val
    return out


def _fmt(value: float) -> str:
    return str(int(value)) if abs(value) < 1e15 and value == int(value) else f"{value:g}"  # inf, nan: as is
