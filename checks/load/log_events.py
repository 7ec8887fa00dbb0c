"""Shared helpers for the checks that judge engine-log events (no check is registered here).

The events themselves come from the engine, as the LogView a check's `events=` declaration asks
for (doctor/logview.py: the run being diagnosed, the declared kinds only). Every load-layer
root cause found in a log also explains what a client saw while the server was down (refused
connections, 5xx, timeouts), so ranking puts the server's cause before those symptoms.
"""

from __future__ import annotations

from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.logview import evidence  # noqa: F401  (the checks quote events through le.evidence)

CLIENT_SYMPTOMS = ["access.connect_failed", "access.server_error", "access.timeout", "access.response_invalid", "access.not_ready"]
GIB = 1024**3


def first_value(found: list[LogEvent], key: str) -> object | None:
    for e in found:
        if key in e.values:
            return e.values[key]
    return None


def deployment_value(facts: Facts, name: str) -> object | None:
    return getattr(facts.deployment, name, None) if facts.deployment is not None else None


def engine(facts: Facts) -> str:
    """The engine: from the parsed arguments, else from what wrote the log."""
    if facts.deployment is not None and facts.deployment.engine:
        return facts.deployment.engine
    return facts.logs.engine if facts.logs else ""


def gpu_total_gib(facts: Facts) -> float | None:
    """Total memory of one GPU: as the log states it, else from the GPU facts or the GPU's name."""
    logs = facts.logs
    if logs and logs.setup.gpu_total_gib:
        return float(logs.setup.gpu_total_gib)
    if logs and logs.setup.smi_total_mib:
        return logs.setup.smi_total_mib / 1024
    if facts.gpus and facts.gpus.gpus and facts.gpus.gpus[0].memory_total_mib:
        return facts.gpus.gpus[0].memory_total_mib / 1024
    if logs and logs.setup.gpu_names:
        from llm_doctor.planning import lookup_gpu

        try:
            return lookup_gpu(logs.setup.gpu_names[0])[1] / 1024
        except ValueError:
            return None
    return None


def gpu_count(facts: Facts) -> int | None:
    """GPUs the log (or the GPU facts) show on this host."""
    logs = facts.logs
    counts = []
    if facts.gpus and facts.gpus.gpus:
        counts.append(len(facts.gpus.gpus))
    if logs:
        s = logs.setup
        if s.gpu_count:
            counts.append(s.gpu_count)
        if s.gpu_names:
            counts.append(len(s.gpu_names))
        if s.visible_devices:
            counts.append(len([d for d in s.visible_devices.split(",") if d.strip()]))
    return max(counts) if counts else None


# the engines' own spelling of the flags the load fixes name (vLLM's where an engine is not listed):
# vLLM/SGLang/TGI launcher --help, LMDeploy `lmdeploy serve api_server --help`, trtllm-serve / trtllm-build.
# "kv_share" is the KV cache's share: of the GPU's total memory for vLLM, SGLang and TGI, of the memory
# the weights leave free for LMDeploy (--cache-max-entry-count, default 0.8) and TensorRT-LLM (0.9).
LOAD_FLAGS: dict[str, dict[str, str]] = {
    "ctx": {"vllm": "--max-model-len", "sglang": "--context-length", "tgi": "--max-total-tokens",
            "lmdeploy": "--session-len", "trtllm": "--max_seq_len"},
    "kv_share": {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static", "tgi": "--cuda-memory-fraction",
                 "lmdeploy": "--cache-max-entry-count", "trtllm": "--kv_cache_free_gpu_memory_fraction"},
    "kv_dtype": {"vllm": "--kv-cache-dtype fp8", "sglang": "--kv-cache-dtype fp8_e5m2", "tgi": "--kv-cache-dtype fp8_e5m2",
                 "lmdeploy": "--quant-policy 8"},
    "tp": {"vllm": "--tensor-parallel-size", "sglang": "--tp", "tgi": "--num-shard", "lmdeploy": "--tp", "trtllm": "--tp_size"},
    # quantizing on load (LMDeploy and TensorRT-LLM need a checkpoint quantized beforehand)
    "quant": {"vllm": "--quantization", "sglang": "--quantization", "tgi": "--quantize"},
    # the flag that forces a quantization method over the checkpoint's own config
    "quant_method": {"vllm": "--quantization", "sglang": "--quantization", "tgi": "--quantize", "lmdeploy": "--model-format"},
    # a newer release of the engine (TGI ships as a container image)
    "upgrade": {"vllm": "pip install -U vllm", "sglang": "pip install -U sglang",
                "tgi": "docker pull ghcr.io/huggingface/text-generation-inference:latest",
                "lmdeploy": "pip install -U lmdeploy", "trtllm": "pip install -U tensorrt_llm"},
}
# engines whose KV share is a fraction of the free memory after the weights, and its default
FREE_MEMORY_SHARE = {"lmdeploy": 0.8, "trtllm": 0.9}


def flag(facts: Facts, key: str) -> str:
    """The running engine's flag for `key` (LOAD_FLAGS); empty where that engine has no such flag."""
    eng = engine(facts)
    return LOAD_FLAGS[key].get(eng, "") if eng in LOAD_FLAGS["tp"] else LOAD_FLAGS[key]["vllm"]


def template_engine(e: LogEvent) -> str:
    """The engine whose catalogue template recognised the event ("" for a hand rule): a pasted
    error body names no engine in its lines, but its wording is one engine's own."""
    from llm_doctor.logparse.events import CATALOGUE_RULES

    source = e.values.get("template_source")
    return next((r.engine for r in CATALOGUE_RULES if r.source == source), "") if source else ""
