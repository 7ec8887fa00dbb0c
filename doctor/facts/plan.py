"""The memory plan section of Facts (`facts.plan`): what doctor/memory.py computed, so the JSON
report carries kv_cache_tokens, max_concurrency, weights_gib_per_gpu and fits, and a saved bundle
re-judges offline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Change:
    """One change that makes the plan fit, with the exact flag and the number it yields."""

    what: str
    flag: str
    value: str
    result: str  # what it buys, in numbers

    @property
    def command(self) -> str:
        return f"{self.flag} {self.value}".strip()


@dataclass
class MemoryPlan:
    engine: str = ""
    model: str = ""
    gpu_name: str = ""
    gpu_total_gib: float = 0.0
    gpu_count: int = 0
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    budget_gib: float = 0.0  # total x utilization: what the engine may use
    weights_gib_per_gpu: float = 0.0
    activation_gib: float = 0.0
    non_torch_gib: float = 0.0
    kv_cache_gib: float = 0.0  # may be negative: the shortfall
    kv_bytes_per_token: int = 0
    kv_cache_tokens: int = 0
    max_model_len: int = 0
    max_concurrency: float = 0.0
    headroom_gib: float = 0.0  # outside the budget, after CUDA context and graphs
    fits: bool = False
    verdict: str = (
        ""  # ok | weights_oom | no_kv_cache_memory | kv_cache_insufficient | gpu_count | model_unknown
    )
    reasons: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
