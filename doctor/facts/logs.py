"""Facts read from engine logs: the setup the log describes and the typed events it holds.

A log often holds several starts of the engine (a crash loop, a paste of two attempts). Every
event carries the `run` it belongs to; checks diagnose the last run that failed and mention the
earlier ones, because the last crash is what the user is looking at.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LogEvent:
    kind: str  # e.g. "cuda_oom", "kv_cache_too_small", "nccl_error" (doctor/logparse/events.py)
    source: str = ""  # file the line came from
    line_no: int = 0
    lines: list[str] = field(default_factory=list)  # the evidence, redacted
    values: dict[str, object] = field(default_factory=dict)
    run: int = 0  # which start of the engine in this log (0 = the first)
    process: str = ""  # "VllmWorker rank=1 pid=4321", "TP3", "rank0", ""
    phase: str = ""  # startup | weights | profiling | cuda_graph | serving (where an OOM happened)
    fatal: bool = True  # an error (vs. a warning or a performance signal)
    count: int = 1  # how many times the same message (same template, other numbers) was seen
    last_line: str = ""  # the last of those repeats, when it differs from the first (values are the last one's)
    last_line_no: int = 0
    level: str = ""  # the log level the line was written at (WARNING, ERROR ...), where its prefix says


@dataclass
class LogSetup:
    """Numbers the engine printed about itself; None when the log does not say."""

    gpu_names: list[str] = field(default_factory=list)
    gpu_count: int | None = None
    gpu_total_gib: float | None = None
    compute_capability: float | None = None
    free_at_start_gib: float | None = None
    visible_devices: str = ""
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    kv_cache_tokens: int | None = None
    available_kv_gib: float | None = None
    memory_share: float | None = None  # the share of GPU memory the engine printed it budgets (vLLM's profile lines)
    weights_gib: float | None = None
    # vLLM's safetensors loader (weight_utils.py, v0.11+) sizes the checkpoint against the host's available RAM
    checkpoint_gib: float | None = None
    available_ram_gib: float | None = None
    max_concurrency: float | None = None
    cuda_graphs: bool | None = None
    gpu_found: bool | None = None  # the engine's own discovery named a GPU it will use (Ollama's "inference compute ... library=cuda")
    rocm: bool | None = None  # the log says the machine runs AMD's ROCm/HIP stack (a platform detected, a ROCm torch)
    smi_used_mib: int | None = None  # the most memory an nvidia-smi table pasted into the log shows in use
    smi_total_mib: int | None = None
    smi_processes: dict[str, int] = field(default_factory=dict)  # "gpu:pid" -> MiB, from such a table
    sse_chunks: int = 0  # OpenAI-style `data: {...}` stream chunks quoted in the log
    sse_done: bool = False  # ... and whether the stream's `data: [DONE]` terminator is there
    stream_read: bool = False  # a streamed answer is being read: its chunks quoted, or a stream reader's frame
    base_url: str = ""  # the base URL a client in the log was configured with (the last one stated)
    proxy: str = ""  # the first proxy or gateway the text names (nginx, an ingress, Cloudflare, Caddy ...)
    proxy_env: str = ""  # the proxy URL the environment sets (HTTPS_PROXY / ALL_PROXY / HTTP_PROXY, the first stated)
    no_proxy: str = ""  # ... and the hosts NO_PROXY exempts from it
    proxy_named: bool = False  # the proxy variables are named (read, cleared, printed), or a request is said to go through a proxy
    loopback_url: bool = False  # a URL on the loopback (localhost, 127.x, 0.0.0.0) is named: a client and its server on one host
    docker_host_mapped: bool = False  # host.docker.internal is mapped for the container (--add-host / extra_hosts host-gateway)
    wire_api: str = ""  # "responses" where a client's code or settings call the Responses API (client.responses.create)
    n_ctx: int | None = None
    n_ctx_train: int | None = None


@dataclass
class LogFacts:
    sources: list[str] = field(default_factory=list)
    lines_read: int = 0
    bytes_read: int = 0
    engine: str = ""
    engine_version: str = ""
    engine_generation: str = ""
    runs: int = 1  # starts of the engine seen in the log
    started: bool = False  # the log shows the engine starting ...
    ready: bool = False  # ... and, in its last start, serving (ready line, stat lines, answered requests)
    setup: LogSetup = field(default_factory=LogSetup)
    events: list[LogEvent] = field(default_factory=list)
    folded_runs: int = 0  # old starts of a crash loop whose events were folded into counts (memory stays flat)
    folded_kinds: list[str] = field(default_factory=list)  # the fatal kinds those folded starts showed
    problems: list[str] = field(default_factory=list)  # unreadable, empty, binary, truncated, tool missing
    cut_run: int | None = None  # the start the deadline cut the read in: its end (its crash, maybe) was not read
