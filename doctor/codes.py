"""The finding-code catalogue (report contract v1, docs/codes.md).

Codes are data: every finding names one of these, and the default severity lives here so that
checks only decide *whether* a code applies. tests/test_codes.py keeps this table and
docs/codes.md identical.
"""

from __future__ import annotations

from dataclasses import dataclass

LAYERS = ("access", "load", "cluster", "perf", "gate", "baseline", "doctor")  # cluster: differences between Ray nodes; gate: requirements a pipeline sets (llm-doctor.toml); baseline: `baseline compare`; doctor: what was not read or judged


@dataclass(frozen=True)
class CodeInfo:
    code: str
    severity: str
    meaning: str

    @property
    def layer(self) -> str:
        return self.code.split(".", 1)[0]


_TABLE: tuple[tuple[str, str, str], ...] = (
    ("access.key_missing", "error", "no API key found in flags, env or client config files"),
    (
        "access.key_malformed",
        "error",
        "key has whitespace, quotes, a newline, a `Bearer ` prefix, or the wrong shape for the provider",
    ),
    (
        "access.key_rejected",
        "error",
        "server answered 401/403: key wrong, expired, revoked, or for another provider",
    ),
    (
        "access.base_url_invalid",
        "error",
        "base URL malformed, or its path is wrong (missing or doubled `/v1`, extra path or query parameters, chat path pasted in)",
    ),
    ("access.dns_failed", "error", "host name does not resolve"),
    (
        "access.connect_failed",
        "error",
        "TCP connect refused / timed out / unreachable (server down, wrong port, firewall, container network)",
    ),
    (
        "access.proxy_failed",
        "error",
        "an HTTP(S)/SOCKS proxy from env or flags is unreachable, rejects, or intercepts the request",
    ),
    (
        "access.tls_failed",
        "error",
        "TLS handshake or certificate verification failed (self-signed, expired, wrong host, http vs https)",
    ),
    (
        "access.model_not_found",
        "error",
        'model ID not served (404 / "model not found" / "does not exist"); includes closest served IDs',
    ),
    ("access.model_id_missing", "error", "no model ID configured, or an empty one"),
    (
        "access.response_invalid",
        "error",
        "200 but the body is not the expected shape (no `choices`, HTML from a proxy, wrong API flavour)",
    ),
    (
        "access.protocol_mismatch",
        "error",
        "OpenAI-style client pointed at an Anthropic-style endpoint or the reverse (Claude Code vs Cline/Cursor settings)",
    ),
    ("access.rate_limited", "error", "429 rate limit"),
    ("access.quota_exceeded", "error", "402 / insufficient quota / billing"),
    (
        "access.server_error",
        "error",
        "5xx from the server or gateway (502/503/504: upstream down or overloaded)",
    ),
    (
        "access.streaming_broken",
        "error",
        "non-streaming works but SSE streaming stalls, is buffered, or is malformed",
    ),
    ("access.timeout", "error", "request accepted but no answer within the deadline"),
    (
        "access.key_on_command_line",
        "warn",
        "the API key was given with --api-key: it is in `ps` for every user of the machine and in shell history; use --api-key-env NAME or --api-key-file PATH",
    ),
    (
        "access.not_ready",
        "error",
        "--wait-ready: the endpoint did not answer its health route and /models within the wait; says the last status seen (a crash the start-up log shows ranks before it)",
    ),
    (
        "access.unrecognized_failure",
        "error",
        "a client-side failure the doctor sees (an exception, an error status or body) but recognises no known cause for; quoted as evidence",
    ),
    (
        "load.weights_oom",
        "error",
        "the weights alone (after TP/PP split and quantization) do not fit the GPU memory budget",
    ),
    (
        "load.kv_cache_insufficient",
        "error",
        'max model length needs more KV cache than fits (vLLM "max seq len ... larger than the maximum number of tokens that can be stored in KV cache")',
    ),
    (
        "load.no_kv_cache_memory",
        "error",
        'nothing left for KV cache at all ("No available memory for the cache blocks", negative/zero blocks)',
    ),
    (
        "load.gpu_memory_occupied",
        "error",
        "other processes hold GPU memory, so free memory is below the requested utilization",
    ),
    (
        "load.runtime_oom",
        "error",
        "CUDA out of memory during serving (prefill/decode/sampling/cuda-graph capture), not at weight load",
    ),
    (
        "load.host_oom",
        "error",
        "the process was killed for host RAM (OOM killer, cgroup/Kubernetes OOMKilled, exit 137)",
    ),
    (
        "load.shm_insufficient",
        "error",
        "/dev/shm too small (Docker default 64 MB): NCCL / multiprocessing failures",
    ),
    (
        "load.tp_invalid",
        "error",
        "tensor/pipeline parallel size incompatible with the model (heads, KV heads, vocab or layers not divisible) or with the GPUs present",
    ),
    (
        "load.dtype_unsupported",
        "error",
        "dtype not supported on this GPU (e.g. bfloat16 or FP8 on too old a compute capability)",
    ),
    (
        "load.quantization_unsupported",
        "error",
        "quantization method unsupported by the engine/GPU, or mismatching the checkpoint",
    ),
    (
        "load.cuda_mismatch",
        "error",
        "driver / CUDA runtime / torch / engine build incompatible (no kernel image, driver too old, wrong wheel)",
    ),
    (
        "load.nccl_failed",
        "error",
        "NCCL / distributed init failure (timeouts, unhandled system error, wrong interface, P2P/IB problems)",
    ),
    (
        "load.model_files",
        "error",
        "model files missing, unreadable, gated (HF 401/403), wrong path, or not a supported architecture",
    ),
    (
        "load.config_invalid",
        "error",
        "engine arguments invalid or contradictory (unknown flag, out-of-range value, max_model_len above the model's limit)",
    ),
    (
        "load.gpu_fault",
        "error",
        "GPU hardware or driver fault (Xid, ECC, fallen off the bus, illegal memory access from hardware)",
    ),
    ("load.remote_code", "error", "the model needs `--trust-remote-code` to load its custom code"),
    (
        "load.engine_outdated",
        "error",
        'the engine or transformers is too old for the model\'s architecture or format (unknown architecture, "requires a newer version")',
    ),
    (
        "load.gpu_not_visible",
        "error",
        "the engine sees no GPU or fewer than expected: no NVIDIA container runtime / device request, `CUDA_VISIBLE_DEVICES` empty or wrong, driver or `nvidia_uvm` not loaded; it fails or silently falls back to CPU",
    ),
    (
        "load.startup_timeout",
        "error",
        "the model did not finish loading before something gave up: a liveness/readiness probe, a launcher or client load timeout, a watchdog",
    ),
    (
        "load.unrecognized_failure",
        "error",
        "the engine failed (an uncaught exception, a fatal ERROR, a kill, a start-up that stopped) and no known cause matches; the exception and the lines around it are quoted",
    ),
    (
        "perf.tp_mismatch",
        "warn",
        "tensor parallel size does not fit the GPUs or the model: idle GPUs, TP across nodes, TP larger than the model needs (replicas would serve more)",
    ),
    (
        "perf.low_gpu_util",
        "warn",
        "GPU utilization stays low (below about 50%) while requests are being served",
    ),
    (
        "perf.slow_interconnect",
        "warn",
        "TP/PP traffic crosses PCIe without P2P, a degraded PCIe link, sockets/Ethernet instead of NVLink/InfiniBand",
    ),
    (
        "perf.kv_cache_pressure",
        "warn",
        "KV cache near full, preemptions/recomputation, requests waiting for cache",
    ),
    ("perf.prefix_caching_off", "warn", "prefix caching disabled for a workload that would benefit"),
    (
        "perf.batching_limited",
        "warn",
        "continuous batching throttled: max_num_seqs / max_num_batched_tokens too small, or requests serialized",
    ),
    ("perf.eager_mode", "warn", "CUDA graphs disabled (enforce-eager) or graph capture failed"),
    ("perf.gpu_throttled", "warn", "clocks throttled for power, thermal or an applied clock limit"),
    (
        "perf.cpu_bound",
        "warn",
        "the host CPU (tokenization, scheduling, detokenization, too few cores) is the bottleneck",
    ),
    (
        "perf.high_latency",
        "warn",
        "time to first token or inter-token latency well above what the hardware should give",
    ),
    (
        "perf.memory_overcommitted",
        "warn",
        "gpu_memory_utilization set too high, leaving no headroom: intermittent OOM under peaks",
    ),
    (
        "gate.kv_cache_tokens_below",
        "error",
        "the KV cache holds fewer tokens than the gate's `min_kv_cache_tokens` (from `plan`, the engine log or its /metrics)",
    ),
    (
        "gate.concurrency_below",
        "error",
        "fewer requests of the gate's `context_length` fit the KV cache at once than its `min_concurrency`",
    ),
    ("gate.ttft_above", "error", "time to first token measured by --probe-load is above the gate's `max_ttft_ms`"),
    (
        "gate.tokens_per_s_below",
        "error",
        "generated tokens/s at --probe-load N concurrency are below the gate's `min_tokens_per_s`",
    ),
    (
        "gate.gpu_memory_above",
        "error",
        "a GPU's used memory fraction is above the gate's `max_gpu_memory_fraction`",
    ),
    (
        "gate.requirement_unmeasured",
        "error",
        "a gate requirement could not be judged: the figure it needs was not collected; says what would collect it",
    ),
    (
        "baseline.latency_regression",
        "error",
        "time to first token or inter-token latency (p50) grew beyond --tolerance and beyond the noise the recordings' repeats show",
    ),
    (
        "baseline.throughput_regression",
        "error",
        "tokens/s at concurrency 1 or N fell beyond --tolerance and beyond the noise the recordings' rounds show",
    ),
    (
        "baseline.quality_drop",
        "error",
        "scored answers that were right are now wrong, or requests that were answered now fail (error); answers changed under deterministic decoding with no scored loss (warn), with word diffs",
    ),
    (
        "baseline.no_effect",
        "warn",
        "a configuration change that took no effect: a flag the engine was given (command line, log) that its own /metrics contradicts; or one that should improve a figure (kv_cache_dtype fp8, a larger gpu_memory_utilization or quantization: KV cache tokens; more tensor parallelism, CUDA graphs, more GPU layers, speculative tokens: inter-token latency) did not improve it beyond --tolerance and the noise, so the flag was not applied or something else caps it (warn); or nothing measured moved after it (info)",
    ),
    (
        "baseline.improved",
        "info",
        "a figure got better beyond --tolerance and the noise (latency, tokens/s, KV cache tokens, GPU memory) or more scored answers are right: the change worked",
    ),
    (
        "baseline.memory_growth",
        "warn",
        "GPU memory used grew beyond --tolerance and beyond the spread of the readings",
    ),
    (
        "cluster.connect_failed",
        "error",
        "`run --ray`: nothing answers at the Ray address (wrong host or port, the head is down, a firewall), or `auto` finds no RAY_ADDRESS and no cluster started on this machine",
    ),
    (
        "cluster.node_unreachable",
        "error",
        "a Ray node gave no facts: listed dead, died during the run, its task failed, or it did not answer within the deadline; named by address, node ID and custom resources",
    ),
    (
        "cluster.version_skew",
        "error",
        "the NVIDIA driver, CUDA, torch, vLLM, SGLang, NCCL, Python or Ray version differs between nodes; names the nodes that differ from the rest",
    ),
    (
        "cluster.gpu_resources_mismatch",
        "error",
        "a node registered a different number of GPUs with Ray than NVML sees there, or the nodes' GPU counts differ (tensor parallelism needs the same count per node)",
    ),
    (
        "cluster.network_interface",
        "error",
        "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME names a network interface that does not exist on a node",
    ),
    (
        "cluster.placement_infeasible",
        "error",
        "a placement group (vLLM asks for one GPU bundle per worker) is pending and can never be placed on the nodes Ray has: a bundle fits no node, STRICT_PACK/STRICT_SPREAD cannot be met, or the cluster has too few GPUs in all; says the TP x PP that fits",
    ),
    (
        "cluster.model_missing_on_node",
        "error",
        "the model (a local path, or a Hugging Face ID in the node's hub cache) is absent on a node, or its copy there differs in size, weight files or config.json from the other nodes'",
    ),
    (
        "doctor.input_incomplete",
        "warn",
        "part of the input could not be read or judged: cut by the deadline or a size cap, truncated, unreadable among several, or a text of which nothing is output the doctor reads; says what was and was not read",
    ),
    ("doctor.check_crashed", "error", "a check raised; the rest went on, but its question is unanswered"),
)

CODES: dict[str, CodeInfo] = {c: CodeInfo(c, s, m) for c, s, m in _TABLE}


def info(code: str) -> CodeInfo:
    """The catalogue entry of ``code``; an unknown code is a programming error, so it raises."""
    try:
        return CODES[code]
    except KeyError:
        raise KeyError(
            f"unknown finding code {code!r}: add it to docs/codes.md and doctor/codes.py"
        ) from None
