"""Each engine's own spelling of a knob, for every fix and plan change the tool prints.

One table, so that a memory plan and a perf check never offer two different flags for the same
knob of the same engine (they did: TGI's concurrency cap was `--max-batch-size` in one and
`--max-concurrent-requests` in the other). Every flag here reads back, through
`engine_args.parse_command`, into the EngineConfig field named in KNOB_FIELDS (tested), so a fix
we print is a flag the engine's parser — and ours — knows.

A flag may be a template with `{0}` where one setting takes the value twice (llama.cpp's K and
V cache types are two flags).
"""

from __future__ import annotations

FLAGS: dict[str, dict[str, str]] = {
    "tp": {"vllm": "--tensor-parallel-size", "sglang": "--tp", "tgi": "--num-shard", "lmdeploy": "--tp", "trtllm": "--tp_size"},
    "pp": {"vllm": "--pipeline-parallel-size", "sglang": "--pp-size", "trtllm": "--pp_size"},
    "dp": {"vllm": "--data-parallel-size", "sglang": "--dp", "lmdeploy": "--dp"},
    "max_seqs": {
        "vllm": "--max-num-seqs",
        "sglang": "--max-running-requests",
        "tgi": "--max-batch-size",
        "llamacpp": "--parallel",
        "trtllm": "--max_batch_size",
        "lmdeploy": "--max-batch-size",
    },
    # LMDeploy's and TensorRT-LLM's share is of the memory the weights leave free (log_events.FREE_MEMORY_SHARE)
    "mem": {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static", "tgi": "--cuda-memory-fraction",
            "lmdeploy": "--cache-max-entry-count", "trtllm": "--kv_cache_free_gpu_memory_fraction"},
    "batched_tokens": {
        "vllm": "--max-num-batched-tokens",
        "sglang": "--chunked-prefill-size",
        "tgi": "--max-batch-prefill-tokens",
        "trtllm": "--max_num_tokens",
        "lmdeploy": "--max-prefill-token-num",
    },
    "kv_dtype": {"vllm": "--kv-cache-dtype", "sglang": "--kv-cache-dtype", "tgi": "--kv-cache-dtype",
                 "llamacpp": "-ctk {0} -ctv {0}", "lmdeploy": "--quant-policy"},
    "ctx": {"vllm": "--max-model-len", "sglang": "--context-length", "tgi": "--max-total-tokens", "llamacpp": "-c",
            "lmdeploy": "--session-len", "trtllm": "--max_seq_len"},
    # quantizing on load (LMDeploy and TensorRT-LLM need a checkpoint quantized beforehand)
    "quant": {"vllm": "--quantization", "sglang": "--quantization", "tgi": "--quantize"},
    # forcing a quantization method over the checkpoint's own config
    "quant_method": {"vllm": "--quantization", "sglang": "--quantization", "tgi": "--quantize", "lmdeploy": "--model-format"},
}  # fmt: skip

# the EngineConfig field each knob sets (what engine_args reads the flag into)
KNOB_FIELDS = {
    "tp": "tensor_parallel_size",
    "pp": "pipeline_parallel_size",
    "dp": "data_parallel_size",
    "max_seqs": "max_num_seqs",
    "mem": "gpu_memory_utilization",
    "batched_tokens": "max_num_batched_tokens",
    "kv_dtype": "kv_cache_dtype",
    "ctx": "max_model_len",
    "quant": "quantization",
}

# a KV cache of half the bytes per token: fp8 in the GPU engines, 8-bit K and V in llama.cpp and LMDeploy
KV_HALF = {"vllm": "fp8", "sglang": "fp8_e5m2", "tgi": "fp8_e5m2", "llamacpp": "q8_0", "lmdeploy": "8"}

# a newer release of the engine (TGI ships as a container image)
UPGRADE = {"vllm": "pip install -U vllm", "sglang": "pip install -U sglang",
           "tgi": "docker pull ghcr.io/huggingface/text-generation-inference:latest",
           "lmdeploy": "pip install -U lmdeploy", "trtllm": "pip install -U tensorrt_llm"}


def flag(kind: str, engine: str) -> str:
    """The engine's spelling of a knob; vLLM's for an input whose engine is not known or lacks it."""
    table = FLAGS[kind]
    return table.get(engine) or table["vllm"]


def setting(kind: str, engine: str, value: object) -> str:
    """`--max-model-len 43808` in the engine's spelling (vLLM's when the engine has no such flag)."""
    name = flag(kind, engine)
    return name.format(value) if "{0}" in name else f"{name} {value}".strip()


def command(engine: str, *settings: tuple[str, object]) -> str | None:
    """`--tp 2 --dp 2` in the engine's own flags, leaving out the knobs it does not have (TGI and
    llama.cpp have no data-parallel flag: replicas are separate servers); None when it has none of them.
    An input whose engine is not known gets vLLM's flags."""
    known = bool(engine)
    parts = [setting(kind, engine if known else "vllm", value) for kind, value in settings
             if FLAGS[kind].get(engine) or not known]
    return " ".join(parts) or None


def kv_half(engine: str) -> str | None:
    """The setting that halves the KV cache's bytes per token, or None for an engine that has none."""
    value = KV_HALF.get(engine or "vllm")
    return setting("kv_dtype", engine or "vllm", value) if value else None
