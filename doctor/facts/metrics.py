"""Facts from an engine's Prometheus /metrics endpoint (or a saved scrape).

`values` uses engine-neutral names (doctor/logparse/metrics_text.py maps vLLM V0/V1, SGLang, TGI
and llama.cpp names onto them), so a check asks for "kv_cache_usage" once instead of knowing that
vLLM renamed gpu_cache_usage_perc. Rates (`*_per_s`) exist only when two scrapes were taken.

The same facts come from a log alone (origin "log", doctor/logparse/stat_lines.py): the engine's
periodic stat lines and a benchmark summary. A log is a series, so it adds counts over its samples
(`stat_samples`, `kv_full_samples`, `queued_samples`, `pressed_samples`, `capped_samples`) and
peaks (`*_max`); `running`/`waiting`/`kv_cache_usage` are its busiest sample, and `raw` quotes
the line (source:line) each value came from. A long series is read as a sample (`stat_lines_unread`:
the stat lines it did not read; the counts are of those it did).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MetricsFacts:
    source: str = ""
    engine: str = ""
    available: bool = False
    reason: str = ""
    values: dict[str, float] = field(default_factory=dict)
    # the names as the engine wrote them, for evidence: neutral name -> "vllm:kv_cache_usage_perc 0.97"
    raw: dict[str, str] = field(default_factory=dict)
    cache_config: dict[str, str] = field(default_factory=dict)  # vllm:cache_config_info labels
    window_s: float | None = None  # seconds between the two scrapes
    model_name: str = ""
    origin: str = ""  # "log" when read from stat lines / a benchmark summary, "" for a scrape
