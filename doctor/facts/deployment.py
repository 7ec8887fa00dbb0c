"""The engine configuration of a deployment, from a command line, a process, a log, or /metrics.

One shape for vLLM, SGLang, TGI and llama.cpp, with the engines' own defaults filled in by the
parser (doctor/engine_args.py). `sources` says where each value came from, since a log's printed
args and a running process can disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class EngineConfig:
    engine: str = ""  # vllm | sglang | tgi | llamacpp | ollama | trtllm
    engine_version: str = ""
    model: str = ""
    served_model_name: str = ""
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None  # vLLM; SGLang's mem_fraction_static goes here too
    dtype: str = ""
    kv_cache_dtype: str = ""
    quantization: str = ""
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool | None = None
    enable_prefix_caching: bool | None = None
    trust_remote_code: bool | None = None
    cpu_offload_gb: float | None = None
    swap_space_gb: float | None = None
    host: str = ""
    port: int | None = None
    api_key_set: bool | None = None
    extra: dict[str, str] = field(default_factory=dict)  # other flags as given
    unknown_flags: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # field -> "cmdline" | "log" | "metrics" | "default"
