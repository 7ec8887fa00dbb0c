"""Facts from an engine's Prometheus /metrics endpoint (or a saved scrape)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MetricsFacts:
    source: str = ""
    engine: str = ""
    available: bool = False
    reason: str = ""
    values: dict[str, float] = field(default_factory=dict)
