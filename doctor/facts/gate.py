"""Facts of the deploy gate: what the pipeline's configuration requires, where every value came
from, and what `--wait-ready` saw while the server was starting.

The requirements travel in the bundle, so `llm-doctor analyze bundle.json` judges the same gate
offline; the wait transcript is what the readiness check and the report quote.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ConfigValue:
    """One option as the run used it: `flag --wait-ready`, `file llm-doctor.toml`, `default`."""

    name: str
    value: str
    source: str


@dataclass
class GateFacts:
    config_file: str = ""  # the file read ("" when none)
    # min_kv_cache_tokens, min_concurrency, context_length, max_ttft_ms, min_tokens_per_s,
    # max_gpu_memory_fraction: only those the configuration names
    requirements: dict[str, float] = field(default_factory=dict)
    ignore: dict[str, str] = field(default_factory=dict)  # code -> the reason the configuration gives
    values: list[ConfigValue] = field(default_factory=list)


@dataclass
class ReadyPoll:
    """One observation while waiting: a status code, or the error when nothing answered."""

    at_s: float
    url: str
    status: int | None = None
    error: str = ""

    @property
    def seen(self) -> str:
        return f"HTTP {self.status}" if self.status is not None else self.error


@dataclass
class ReadyFacts:
    timeout_s: float = 0.0
    waited_s: float = 0.0
    ready: bool = False
    polls: int = 0
    health_route: bool | None = None  # False when the server answers 404 there (no such route)
    seen: list[ReadyPoll] = field(default_factory=list)  # each change of what was seen, and the last poll
    stopped: str = ""  # why waiting ended early: the container or pod the server runs in is gone
