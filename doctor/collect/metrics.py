"""The engine's Prometheus /metrics: scraped twice across the sample window, for rates.

A single scrape has gauges (running, waiting, KV usage) but counters only as totals since start;
two scrapes `--sample` seconds apart give tokens/s, preemptions/s and the latency histograms of
*this* window rather than of the process' whole life. vLLM's `cache_config_info` carries the
engine's own configuration (gpu_memory_utilization, prefix caching, block size): it goes into
facts.deployment with source "metrics".
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.metrics import MetricsFacts
from llm_doctor.logparse import metrics_text as mt

COUNTER_RATES = {
    "prompt_tokens_total": "prompt_tokens_per_s",
    "generation_tokens_total": "generation_tokens_per_s",
    "preemptions_total": "preemptions_per_s",
    "prefix_cache_queries_total": "prefix_cache_queries_per_s",
    "decode_calls_total": "decode_calls_per_s",
}


def default_url(base_url: str) -> str:
    """The base URL's scheme and host with /metrics (engines serve it at the root, not under /v1)."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme or "http", parts.netloc, "/metrics", "", ""))


def scrape(url: str, api_key: str | None = None, timeout: float = 5.0) -> str:
    """One GET of /metrics, bounded in wall-clock time and bytes. llama-server guards /metrics with
    its API key, so the key goes as a bearer token, to this URL's origin only (the caller decides
    whether it is the key's origin), and redirects are not followed with it."""
    from llm_doctor.collect import safe_http

    headers = {"Accept": "text/plain"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    with safe_http.client(trust_env=True) as client:
        resp = safe_http.fetch(client, "GET", url, timeout, mt.MAX_SCRAPE_BYTES, headers=headers)
    if resp.status != 200:
        raise MetricsUnavailable(f"GET {url} answered HTTP {resp.status}" + _why(resp.status))
    return resp.body.decode("utf-8", errors="replace")


class MetricsUnavailable(Exception):
    pass


def _why(status: int) -> str:
    if status in (401, 403):
        return " (the endpoint wants the API key as a bearer token)"
    if status == 404:
        return " (no /metrics here: vLLM/SGLang serve it at the server root; llama-server needs --metrics)"
    if status == 501:
        return " (llama-server was started without --metrics)"
    return ""


def collect(
    url: str, api_key: str | None = None, sample_s: float = 3.0, timeout: float = 5.0, deadline: Deadline | None = None
) -> MetricsFacts:
    import httpx

    cap = deadline.cap if deadline else (lambda t: t)
    try:
        t0 = time.monotonic()
        first = mt.summarise(scrape(url, api_key, cap(timeout)))
    except (httpx.HTTPError, MetricsUnavailable) as exc:
        return MetricsFacts(source=url, reason=_error_text(exc))
    if first.samples == 0:
        return MetricsFacts(source=url, reason=f"{url} answered 200 but held no Prometheus samples")
    wait = max(0.0, min(sample_s, (deadline.remaining() * 0.3) if deadline else sample_s))
    second = None
    if wait > 0:
        time.sleep(wait)
        try:
            second = mt.summarise(scrape(url, api_key, cap(timeout)))
        except (httpx.HTTPError, MetricsUnavailable):
            second = None
    window = time.monotonic() - t0 if second else None
    return to_facts(first, second, window, url)


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, MetricsUnavailable) else str(exc)


def to_facts(first: mt.Scrape, second: mt.Scrape | None, window: float | None, source: str) -> MetricsFacts:
    last = second or first
    facts = MetricsFacts(source=source, engine=last.engine, available=True, model_name=last.model_name)
    facts.values = dict(last.values)
    facts.raw = dict(last.raw)
    facts.cache_config = dict(last.cache_config)
    for neutral, hist in last.histograms.items():
        facts.values.update(mt.histogram_values(neutral, hist))
    if second is not None and window:
        facts.window_s = round(window, 2)
        for counter, rate in COUNTER_RATES.items():
            if counter in first.values and counter in second.values:
                diff = second.values[counter] - first.values[counter]
                facts.values[rate] = round(max(diff, 0.0) / window, 3)
        for neutral, hist in second.histograms.items():
            if neutral in first.histograms:
                d = mt.delta(first.histograms[neutral], hist)
                if d.count > 0:
                    facts.values.update(mt.histogram_values(f"window_{neutral}", d))
    return facts


def engine_config(m: MetricsFacts) -> EngineConfig | None:
    """What /metrics says about the engine's configuration (vLLM cache_config_info; SGLang's
    max_* gauges), as an EngineConfig with source "metrics"."""
    cfg = EngineConfig(engine=m.engine)
    c = m.cache_config

    def put(field: str, value: object) -> None:
        setattr(cfg, field, value)
        cfg.sources[field] = "metrics"

    if c.get("gpu_memory_utilization") not in (None, "", "None"):
        put("gpu_memory_utilization", float(c["gpu_memory_utilization"]))
    if c.get("enable_prefix_caching") in ("True", "False"):
        put("enable_prefix_caching", c["enable_prefix_caching"] == "True")
    if (c.get("block_size") or "").isdigit():
        put("block_size", int(c["block_size"]))
    if c.get("cache_dtype") not in (None, "", "auto"):
        put("kv_cache_dtype", c["cache_dtype"])
    if (c.get("num_gpu_blocks") or "").isdigit():
        cfg.extra["num_gpu_blocks"] = c["num_gpu_blocks"]
    v = m.values
    if m.engine == "sglang":
        if "max_running_requests" in v:
            put("max_num_seqs", int(v["max_running_requests"]))
        if "context_len" in v:
            put("max_model_len", int(v["context_len"]))
        if "max_total_tokens" in v:
            put("max_total_tokens", int(v["max_total_tokens"]))
    if m.model_name:
        put("served_model_name", m.model_name)
    return cfg if cfg.sources else None


def merge_into(facts: Facts, m: MetricsFacts) -> None:
    facts.metrics = m
    cfg = engine_config(m) if m.available else None
    if cfg is not None:
        facts.deployment = facts.deployment.merge(cfg) if facts.deployment else cfg


def load_scrape(path: str, facts: Facts, deadline: Deadline) -> None:
    """`analyze` reader for a saved /metrics scrape (one scrape: gauges and totals, no rates)."""
    import gzip

    opener = gzip.open if Path(path).open("rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        text = fh.read(mt.MAX_SCRAPE_BYTES).decode("utf-8", errors="replace")
    scrape_ = mt.summarise(text)
    facts.notes += [f"{path}: {p}" for p in scrape_.problems]
    merge_into(facts, to_facts(scrape_, None, None, path))
