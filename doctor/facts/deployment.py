"""The engine configuration of a deployment, from a command line, a process, a log, or /metrics.

One shape for vLLM, SGLang, TGI, llama.cpp, TensorRT-LLM and Ollama, with the engines' own
defaults filled in by the parser (doctor/engine_args.py). `sources` says where each value came
from ("cmdline", "log", "process", "metrics", "default"), since a log's printed args and a running
process can disagree, and a default is weaker evidence than a flag someone typed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

DEFAULT = "default"


@dataclass
class EngineConfig:
    engine: str = ""  # vllm | sglang | tgi | llamacpp | ollama | trtllm
    engine_version: str = ""
    engine_generation: str = ""  # vLLM "V0" | "V1": their memory profiling and defaults differ
    model: str = ""
    served_model_name: str = ""
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None  # vLLM max_model_len; SGLang context_length; TGI max_total_tokens
    gpu_memory_utilization: float | None = (
        None  # vLLM; SGLang's mem_fraction_static; TGI cuda_memory_fraction
    )
    dtype: str = ""
    kv_cache_dtype: str = ""
    quantization: str = ""
    block_size: int | None = None  # vLLM block_size; SGLang page_size
    max_num_seqs: int | None = None  # vLLM max_num_seqs; SGLang max_running_requests; TGI max_batch_size
    max_num_batched_tokens: int | None = (
        None  # vLLM; SGLang chunked_prefill_size; TGI max_batch_prefill_tokens
    )
    max_total_tokens: int | None = None  # SGLang max_total_tokens; TGI max_batch_total_tokens: a KV pool cap
    kv_cache_memory_bytes: int | None = None  # vLLM --kv-cache-memory-bytes: a fixed KV budget per GPU
    num_gpu_blocks_override: int | None = None
    enforce_eager: bool | None = None
    enable_prefix_caching: bool | None = None
    pooling: bool | None = None  # an embedding / scoring model: vLLM --task embed, --runner pooling, pooler_config; SGLang --is-embedding
    enable_chunked_prefill: bool | None = None
    enable_expert_parallel: bool | None = None
    trust_remote_code: bool | None = None
    cpu_offload_gb: float | None = None
    swap_space_gb: float | None = None
    n_gpu_layers: int | None = None  # llama.cpp -ngl
    nnodes: int | None = None
    host: str = ""
    port: int | None = None
    api_key_set: bool | None = None
    # GPUs the container was given (`docker run --gpus N` / device list, Kubernetes nvidia.com/gpu, Compose devices
    # count): inside it they are the only ones, numbered from 0
    gpus_granted: int | None = None
    env: dict[str, str] = field(default_factory=dict)  # VAR=value given before the command
    extra: dict[str, str] = field(default_factory=dict)  # other flags as given
    unknown_flags: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(
        default_factory=dict
    )  # field -> "cmdline" | "log" | "metrics" | "default"

    def is_set(self, name: str) -> bool:
        """True when `name` holds a value that did not come from the engine's defaults."""
        value = getattr(self, name)
        return value not in (None, "") and self.sources.get(name) != DEFAULT

    def merge(self, other: EngineConfig) -> EngineConfig:
        """A new config: this one's values, with the gaps filled from `other`.

        A value this config only has by default yields to a value `other` has from real evidence
        (a log line beats the default the parser assumed); `sources` records who gave what."""
        out = dataclasses.replace(
            self, env=dict(self.env), extra=dict(self.extra), sources=dict(self.sources)
        )
        out.unknown_flags = list(dict.fromkeys(self.unknown_flags + other.unknown_flags))
        for f in dataclasses.fields(self):
            if f.name in ("env", "extra", "unknown_flags", "sources"):
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if theirs in (None, ""):
                continue
            if mine in (None, "") or (
                self.sources.get(f.name) == DEFAULT and other.sources.get(f.name) != DEFAULT
            ):
                setattr(out, f.name, theirs)
                if f.name in other.sources:
                    out.sources[f.name] = other.sources[f.name]
                else:
                    out.sources.pop(f.name, None)
        for key, value in other.env.items():
            out.env.setdefault(key, value)
        for key, value in other.extra.items():
            out.extra.setdefault(key, value)
        return out
