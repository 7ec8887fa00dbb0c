"""Host facts: RAM, swap, /dev/shm, CPUs, cgroup limits, and the engine processes running.

The perf checks need these to call a host CPU-bound (load near the core count, or a container
capped to fewer CPUs than the engine's threads) and the load checks to judge /dev/shm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_doctor.facts.deployment import EngineConfig


@dataclass
class EngineProcess:
    pid: int
    engine: str = ""
    cmdline: str = ""
    config: EngineConfig | None = None
    env: dict[str, str] = field(default_factory=dict)  # CUDA_VISIBLE_DEVICES, NCCL_*, VLLM_*, OMP_NUM_THREADS
    rss_mib: float | None = None
    cpu_percent: float | None = None
    num_threads: int | None = None
    children: list[int] = field(default_factory=list)  # worker pids (TP ranks hold GPU memory too)


@dataclass
class ProbeFacts:
    """The opt-in concurrency probe (--probe-load N): generated tokens/s at concurrency 1 and N.
    If N concurrent requests give no more tokens/s than one, the server serves them one at a time."""

    concurrency: int = 0
    tps_1: float | None = None
    tps_n: float | None = None
    ttft_ms: float | None = None  # time to the first generated token of one streamed request, alone
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    server_hint: str = ""  # engine guessed from the server's answers ("llamacpp", "vllm", ...)
    slots: int | None = None  # requests the server admits at once (llama-server /props total_slots)
    notes: list[str] = field(default_factory=list)


@dataclass
class HostFacts:
    cpu_count: int | None = None  # logical
    cpu_physical: int | None = None
    load_avg_1m: float | None = None
    cpu_percent: float | None = None  # whole host over the sample window
    mem_total_mib: float | None = None
    mem_available_mib: float | None = None
    swap_total_mib: float | None = None
    swap_used_mib: float | None = None
    shm_total_mib: float | None = None
    shm_used_mib: float | None = None
    in_container: bool | None = None
    cgroup_memory_limit_mib: float | None = None
    cgroup_cpu_limit: float | None = None  # CPUs (quota / period)
    processes: list[EngineProcess] = field(default_factory=list)
    probe: ProbeFacts | None = None
