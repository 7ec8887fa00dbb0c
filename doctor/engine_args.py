"""Engine arguments -> EngineConfig, for every place they show up.

`parse_command` reads a command line (typed by a user, or a running process's argv);
`parse_log_args` reads the forms an engine log prints at start-up (vLLM "non-default args: {...}",
"with config: k=v, ...", "args: Namespace(...)", SGLang "server_args=ServerArgs(...)", TGI
"Args { ... }"). Both fill in the engine's own defaults, marked `sources[field] = "default"`, so a
check can tell a value someone chose from one the engine assumed. Pure parsing: no I/O.

Defaults are the engines' documented/source defaults:
- vLLM: vllm/engine/arg_utils.py (EngineArgs, `_set_default_args_v1`), vllm/config.py
  (CacheConfig.block_size 16 on CUDA, gpu_memory_utilization 0.9, swap_space 4).
- SGLang: python/sglang/srt/server_args.py (ServerArgs.__post_init__: mem_fraction_static by TP
  size, chunked_prefill_size 8192 / 2048 below 25 GB, page_size 1, port 30000).
- TGI: launcher/src/main.rs (cuda_memory_fraction 1.0, port 3000, num_shard = all visible GPUs).
- llama.cpp: common/arg.cpp (port 8080, host 127.0.0.1).
- TensorRT-LLM: tensorrt_llm/commands/serve.py (max_batch_size 2048, max_num_tokens 8192,
  kv_cache_free_gpu_memory_fraction 0.9, port 8000).
- LMDeploy: lmdeploy/cli/utils.py and cli/serve.py (tp 1, cache_max_entry_count 0.8 of the memory
  the weights leave free, max_prefill_token_num 8192, cache_block_seq_len 64, server_port 23333).
- Ollama: envconfig (OLLAMA_HOST 127.0.0.1:11434).
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from llm_doctor.facts.deployment import DEFAULT, EngineConfig

GIB = 1024**3

# --- value converters -------------------------------------------------------------------------


def human_int(raw: object) -> int:
    """vLLM's human_readable_int: "32k" = 32000, "32K" = 32768, "1.5M", plain ints, floats."""
    if isinstance(raw, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(raw, (int, float)):
        return int(raw)
    text = _unquoted(raw).replace("_", "")
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?)([kKmMgGtT]?)", text)
    if not m:
        raise ValueError(f"not a number: {raw!r}")
    num, suffix = float(m.group(1)), m.group(2)
    power = " kmgt".index(suffix.lower()) if suffix else 0
    base = 1024 if suffix.isupper() else 1000
    return int(num * base**power)  # a negative number is kept: invalid_values() judges the range


def to_bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on", "y"):
        return True
    if text in ("0", "false", "no", "off", "n", "none"):
        return False
    raise ValueError(f"not a boolean: {raw!r}")


def to_float(raw: object) -> float:
    if isinstance(raw, bool):
        raise ValueError("a boolean is not a number")
    return float(raw if isinstance(raw, (int, float)) else _unquoted(raw))


def _unquoted(raw: object) -> str:
    """`4`, '0.9' and "8" as a command quoted in Markdown or a ticket carries them."""
    return str(raw).strip().strip("`'\"")


def to_str(raw: object) -> str:
    text = "" if raw is None else str(raw).replace("\r", "").replace("\n", "")  # hard-wrapped pastes
    for prefix in ("torch.", "LoadFormat.", "QuantizationMethods."):
        text = text.removeprefix(prefix)
    return text.strip().strip("'\"")


def gib_to_bytes(raw: object) -> int:
    return int(to_float(raw) * GIB)


def negate(raw: object) -> bool:
    return not to_bool(raw)


def graphs_off(raw: object) -> bool:
    """TGI's --cuda-graphs takes the batch sizes to capture; "0" captures none (launcher/src/main.rs)."""
    return [x.strip() for x in str(raw).strip("'\"").split(",") if x.strip()] in ([], ["0"])


def secret_set(raw: object) -> bool:
    """An API key is recorded only as present or not; its value never enters Facts."""
    return raw not in (None, "", "None")


@dataclass(frozen=True)
class Flag:
    field: str
    conv: Callable[[object], object] = to_str
    boolean: bool = False  # takes no value on the command line


# vLLM's tasks that pool one vector per prompt instead of generating (--task since 0.6.x: "embedding", later "embed",
# "classify", "score", "reward"; since 0.10 --runner pooling, --convert embed|classify|reward)
POOLING_TASKS = ("embed", "embedding", "classify", "score", "reward")


def pooling_task(raw: object) -> bool:
    return to_str(raw).lower() in (*POOLING_TASKS, "pooling")


def pooler_set(raw: object) -> bool:
    """vLLM prints `pooler_config=None` in its config line for a generating model, a PoolerConfig(...) for a pooling one."""
    return to_str(raw) not in ("", "None")


def _b(field: str, conv: Callable[[object], object] = to_bool) -> Flag:
    return Flag(field, conv, boolean=True)


# --- per-engine flag tables (names normalised: no leading dashes, '-' -> '_', lower case) -------

VLLM_FLAGS: dict[str, Flag] = {
    "model": Flag("model"),
    "model_tag": Flag("model"),
    "served_model_name": Flag("served_model_name"),
    "tensor_parallel_size": Flag("tensor_parallel_size", human_int),
    "tp": Flag("tensor_parallel_size", human_int),
    "pipeline_parallel_size": Flag("pipeline_parallel_size", human_int),
    "pp": Flag("pipeline_parallel_size", human_int),
    "data_parallel_size": Flag("data_parallel_size", human_int),
    "dp": Flag("data_parallel_size", human_int),
    "max_model_len": Flag("max_model_len", human_int),
    "max_seq_len": Flag("max_model_len", human_int),  # how "with config:" prints it
    "gpu_memory_utilization": Flag("gpu_memory_utilization", to_float),
    "dtype": Flag("dtype"),
    "kv_cache_dtype": Flag("kv_cache_dtype"),
    "quantization": Flag("quantization"),
    "q": Flag("quantization"),
    "block_size": Flag("block_size", human_int),
    "max_num_seqs": Flag("max_num_seqs", human_int),
    "max_num_batched_tokens": Flag("max_num_batched_tokens", human_int),
    "kv_cache_memory_bytes": Flag("kv_cache_memory_bytes", human_int),
    "kv_cache_memory": Flag("kv_cache_memory_bytes", human_int),
    "num_gpu_blocks_override": Flag("num_gpu_blocks_override", human_int),
    "enforce_eager": _b("enforce_eager"),
    "enable_prefix_caching": _b("enable_prefix_caching"),
    "task": Flag("pooling", pooling_task),
    "runner": Flag("pooling", pooling_task),
    "convert": Flag("pooling", pooling_task),
    "pooler_config": Flag("pooling", pooler_set),
    "enable_chunked_prefill": _b("enable_chunked_prefill"),
    "enable_expert_parallel": _b("enable_expert_parallel"),
    "trust_remote_code": _b("trust_remote_code"),
    "cpu_offload_gb": Flag("cpu_offload_gb", to_float),
    "swap_space": Flag("swap_space_gb", to_float),
    "host": Flag("host"),
    "port": Flag("port", human_int),
    "api_key": Flag("api_key_set", secret_set),
}

SGLANG_FLAGS: dict[str, Flag] = {
    "model_path": Flag("model"),
    "served_model_name": Flag("served_model_name"),
    "tp_size": Flag("tensor_parallel_size", human_int),
    "tp": Flag("tensor_parallel_size", human_int),
    "pp_size": Flag("pipeline_parallel_size", human_int),
    "dp_size": Flag("data_parallel_size", human_int),
    "dp": Flag("data_parallel_size", human_int),
    "context_length": Flag("max_model_len", human_int),
    "mem_fraction_static": Flag("gpu_memory_utilization", to_float),
    "dtype": Flag("dtype"),
    "kv_cache_dtype": Flag("kv_cache_dtype"),
    "quantization": Flag("quantization"),
    "page_size": Flag("block_size", human_int),
    "max_running_requests": Flag("max_num_seqs", human_int),
    "chunked_prefill_size": Flag("max_num_batched_tokens", human_int),
    "max_total_tokens": Flag("max_total_tokens", human_int),
    "disable_radix_cache": _b("enable_prefix_caching", negate),
    "disable_cuda_graph": _b("enforce_eager"),
    "is_embedding": _b("pooling"),
    "enable_ep_moe": _b("enable_expert_parallel"),
    "trust_remote_code": _b("trust_remote_code"),
    "nnodes": Flag("nnodes", human_int),
    "host": Flag("host"),
    "port": Flag("port", human_int),
    "api_key": Flag("api_key_set", secret_set),
}

TGI_FLAGS: dict[str, Flag] = {
    "model_id": Flag("model"),
    "served_model_name": Flag("served_model_name"),
    "num_shard": Flag("tensor_parallel_size", human_int),
    "max_total_tokens": Flag("max_model_len", human_int),
    "max_batch_prefill_tokens": Flag("max_num_batched_tokens", human_int),
    "max_batch_total_tokens": Flag("max_total_tokens", human_int),
    "max_batch_size": Flag("max_num_seqs", human_int),
    "cuda_graphs": Flag("enforce_eager", graphs_off),
    "quantize": Flag("quantization"),
    "dtype": Flag("dtype"),
    "kv_cache_dtype": Flag("kv_cache_dtype"),
    "cuda_memory_fraction": Flag("gpu_memory_utilization", to_float),
    "trust_remote_code": _b("trust_remote_code"),
    "hostname": Flag("host"),
    "port": Flag("port", human_int),
    "api_key": Flag("api_key_set", secret_set),
}

LLAMACPP_FLAGS: dict[str, Flag] = {
    "m": Flag("model"),
    "model": Flag("model"),
    "a": Flag("served_model_name"),
    "alias": Flag("served_model_name"),
    "c": Flag("max_model_len", human_int),
    "ctx_size": Flag("max_model_len", human_int),
    "ngl": Flag("n_gpu_layers", human_int),
    "n_gpu_layers": Flag("n_gpu_layers", human_int),
    "gpu_layers": Flag("n_gpu_layers", human_int),
    "np": Flag("max_num_seqs", human_int),
    "parallel": Flag("max_num_seqs", human_int),
    "b": Flag("max_num_batched_tokens", human_int),
    "batch_size": Flag("max_num_batched_tokens", human_int),
    "ctk": Flag("kv_cache_dtype"),
    "cache_type_k": Flag("kv_cache_dtype"),
    "host": Flag("host"),
    "port": Flag("port", human_int),
    "api_key": Flag("api_key_set", secret_set),
}

TRTLLM_FLAGS: dict[str, Flag] = {
    "model": Flag("model"),
    "tp_size": Flag("tensor_parallel_size", human_int),
    "pp_size": Flag("pipeline_parallel_size", human_int),
    "max_batch_size": Flag("max_num_seqs", human_int),
    "max_num_tokens": Flag("max_num_batched_tokens", human_int),
    "max_seq_len": Flag("max_model_len", human_int),
    "kv_cache_free_gpu_memory_fraction": Flag("gpu_memory_utilization", to_float),
    "trust_remote_code": _b("trust_remote_code"),
    "host": Flag("host"),
    "port": Flag("port", human_int),
}

# `lmdeploy serve api_server MODEL ...` (lmdeploy/cli/serve.py, cli/utils.py ArgumentHelper): the share of
# --cache-max-entry-count is of the memory the weights leave free, like TensorRT-LLM's fraction
LMDEPLOY_FLAGS: dict[str, Flag] = {
    "tp": Flag("tensor_parallel_size", human_int),
    "dp": Flag("data_parallel_size", human_int),
    "session_len": Flag("max_model_len", human_int),
    "max_batch_size": Flag("max_num_seqs", human_int),
    "cache_max_entry_count": Flag("gpu_memory_utilization", to_float),
    "max_prefill_token_num": Flag("max_num_batched_tokens", human_int),
    "quant_policy": Flag("kv_cache_dtype"),
    "model_format": Flag("quantization"),
    "dtype": Flag("dtype"),
    "cache_block_seq_len": Flag("block_size", human_int),
    "enable_prefix_caching": _b("enable_prefix_caching"),
    "eager_mode": _b("enforce_eager"),
    "model_name": Flag("served_model_name"),
    "server_name": Flag("host"),
    "server_port": Flag("port", human_int),
    "api_keys": Flag("api_key_set", secret_set),
    "model_path": Flag("model"),
}

FLAGS: dict[str, dict[str, Flag]] = {
    "vllm": VLLM_FLAGS,
    "sglang": SGLANG_FLAGS,
    "tgi": TGI_FLAGS,
    "llamacpp": LLAMACPP_FLAGS,
    "trtllm": TRTLLM_FLAGS,
    "lmdeploy": LMDEPLOY_FLAGS,
    "ollama": {},
}

# Flags known to take no value, beyond the mapped booleans: so "--enforce-eager MODEL" and
# "-fa -c 4096" parse right. An unlisted flag followed by a non-flag token takes it as value.
BOOLEAN_FLAGS = {
    "vllm": {
        "disable_log_requests",
        "disable_log_stats",
        "disable_custom_all_reduce",
        "enable_auto_tool_choice",
        "disable_frontend_multiprocessing",
        "enable_lora",
        "skip_tokenizer_init",
        "enable_sleep_mode",
        "disable_sliding_window",
        "headless",
        "enable_log_requests",
        "no_enable_log_requests",
    },
    "sglang": {
        "enable_metrics",
        "enable_p2p_check",
        "enable_torch_compile",
        "disable_overlap_schedule",
        "enable_dp_attention",
        "is_embedding",
        "enable_multimodal",
        "skip_tokenizer_init",
    },
    "tgi": {
        "sharded",
        "disable_custom_kernels",
        "json_output",
        "disable_grammar_support",
        "disable_usage_stats",
    },
    "llamacpp": {
        "fa",
        "flash_attn",
        "rtr",
        "fmoe",
        "cont_batching",
        "cb",
        "mlock",
        "no_mmap",
        "embedding",
        "metrics",
        "no_webui",
        "jinja",
        "verbose",
        "v",
        "cpu_moe",
    },
    "trtllm": set(),
    "lmdeploy": set(),
    "ollama": set(),
}


def defaults(engine: str, generation: str = "") -> dict[str, object]:
    """The engine's defaults for the fields the doctor reasons about (see the module docstring).

    vLLM's max_num_seqs / max_num_batched_tokens depend on the GPU (`_set_default_args_v1`:
    1024 / 8192 on >= 70 GiB GPUs other than A100, else 256 / 2048); these are the values for the
    smaller case, and `apply_hardware_defaults` corrects them once the GPU is known."""
    if engine == "vllm":
        v0 = generation == "V0"
        return {
            "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1,
            "data_parallel_size": 1,
            "gpu_memory_utilization": 0.9,
            "block_size": 16,
            "dtype": "auto",
            "kv_cache_dtype": "auto",
            "max_num_seqs": 256,
            "max_num_batched_tokens": None if v0 else 2048,
            "enforce_eager": False,
            "enable_prefix_caching": not v0,
            "enable_chunked_prefill": not v0,
            "trust_remote_code": False,
            "cpu_offload_gb": 0.0,
            "swap_space_gb": 4.0,
            "port": 8000,
        }
    if engine == "sglang":
        return {
            "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1,
            "data_parallel_size": 1,
            "block_size": 1,
            "dtype": "auto",
            "kv_cache_dtype": "auto",
            "max_num_batched_tokens": 8192,
            "enable_prefix_caching": True,
            "enforce_eager": False,
            "trust_remote_code": False,
            "host": "127.0.0.1",
            "port": 30000,
        }
    if engine == "tgi":
        return {"gpu_memory_utilization": 1.0, "port": 3000, "host": "0.0.0.0", "trust_remote_code": False}
    if engine == "llamacpp":
        return {"host": "127.0.0.1", "port": 8080}
    if engine == "trtllm":
        return {
            "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1,
            "max_num_seqs": 2048,
            "max_num_batched_tokens": 8192,
            "gpu_memory_utilization": 0.9,
            "host": "localhost",
            "port": 8000,
        }
    if engine == "lmdeploy":
        return {
            "tensor_parallel_size": 1,
            "data_parallel_size": 1,
            "gpu_memory_utilization": 0.8,
            "max_num_batched_tokens": 8192,
            "block_size": 64,
            "enable_prefix_caching": False,
            "enforce_eager": False,
            "host": "0.0.0.0",
            "port": 23333,
        }
    if engine == "ollama":
        return {"host": "127.0.0.1", "port": 11434}
    return {}


def tgi_shards(cfg: EngineConfig, visible_gpus: int) -> EngineConfig:
    """TGI without --num-shard shards over every device it is given (launcher/src/main.rs
    find_num_shards -> num_cuda_devices: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES, which the
    container runtime sets to the GPUs of `--gpus`; "all" counts them). The one place TGI's implied
    TP is decided, so the memory plan and the perf checks name the same number."""
    if cfg.engine != "tgi" or cfg.is_set("tensor_parallel_size") or visible_gpus < 1:
        return cfg
    listed = cfg.env.get("CUDA_VISIBLE_DEVICES") or cfg.env.get("NVIDIA_VISIBLE_DEVICES") or "all"
    count = visible_gpus if listed.strip() in ("all", "void") else len([x for x in listed.split(",") if x.strip()])
    return dataclasses.replace(cfg, tensor_parallel_size=max(1, count),
                               sources={**cfg.sources, "tensor_parallel_size": DEFAULT})


TGI_WIGGLE_ROOM = 0.90  # server/text_generation_server/models/globals.py (since 2.3, Aug 2024; env TGI_WIGGLE_ROOM)


def configured_share(cfg: EngineConfig) -> float:
    """The memory share flag as given, else the engine's default when the config has none at all
    (SGLang's TP-1 mem_fraction_static, vLLM's gpu_memory_utilization)."""
    return cfg.gpu_memory_utilization or (sglang_mem_fraction(1) if cfg.engine == "sglang" else 0.9)


def memory_share(cfg: EngineConfig) -> float:
    """The share of each GPU's total memory the engine budgets for weights, activations and KV cache.

    vLLM's gpu_memory_utilization and SGLang's mem_fraction_static are that share. TGI's
    --cuda-memory-fraction (default 1.0) is only a per-process cap: its warmup sizes the KV cache from
    the memory free under `CUDA_MEMORY_FRACTION * TGI_WIGGLE_ROOM` of the total (flash_causal_lm.py
    warmup, get_free_memory), so TGI at its defaults leaves 10 % of every GPU unbudgeted."""
    util = configured_share(cfg)
    if cfg.engine == "tgi":
        try:
            wiggle = float(cfg.env.get("TGI_WIGGLE_ROOM", TGI_WIGGLE_ROOM))
        except ValueError:
            wiggle = TGI_WIGGLE_ROOM
        return round(util * wiggle, 4)
    return util


def sglang_mem_fraction(tp_size: int) -> float:
    """SGLang ServerArgs.__post_init__: mem_fraction_static when not given, by TP size."""
    for at_least, fraction in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
        if tp_size >= at_least:
            return fraction
    return 0.88


def apply_hardware_defaults(cfg: EngineConfig, gpu_name: str, gpu_total_bytes: int) -> EngineConfig:
    """Defaults that depend on the GPU and the parallel layout, filled in once those are known.

    vLLM `_set_default_args_v1` (OPENAI_API_SERVER): max_num_seqs 1024 and max_num_batched_tokens
    8192 on GPUs with >= 70 GiB other than A100, else 256 / 2048. SGLang: mem_fraction_static by
    TP size, chunked_prefill_size 2048 below 25,000 MB."""
    out = cfg.merge(EngineConfig())
    if cfg.engine == "vllm":
        big = gpu_total_bytes >= 70 * GIB and "a100" not in gpu_name.lower()
        for name, value in (
            ("max_num_seqs", 1024 if big else 256),
            ("max_num_batched_tokens", 8192 if big else 2048),
        ):
            if not out.is_set(name) and (
                name != "max_num_batched_tokens" or out.enable_chunked_prefill is not False
            ):
                if out.sources.get(name) == DEFAULT or getattr(out, name) is None:
                    setattr(out, name, value)
                    out.sources[name] = DEFAULT
    if cfg.engine == "sglang":
        if not out.is_set("gpu_memory_utilization"):
            out.gpu_memory_utilization = sglang_mem_fraction(out.tensor_parallel_size or 1)
            out.sources["gpu_memory_utilization"] = DEFAULT
        if not out.is_set("max_num_batched_tokens") and gpu_total_bytes < 25_000 * 1024**2:
            out.max_num_batched_tokens = 2048
            out.sources["max_num_batched_tokens"] = DEFAULT
    return out


# --- command lines ----------------------------------------------------------------------------

ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
IMAGE_ENGINES = (("vllm-openai", "vllm"), ("vllm/vllm", "vllm"), ("text-generation-inference", "tgi"))


DOCKER_DEVICES = re.compile(r"device=([\w,-]+)")


def docker_gpus(value: str) -> int | None:
    """How many GPUs `docker run --gpus VALUE` gives the container: a count, or the listed devices
    (`"device=0,2"`); None for `all` (the host's count, not known from the command)."""
    value = value.strip("'\" ")
    if value.isdigit():
        return int(value)
    m = DOCKER_DEVICES.search(value)
    return len([x for x in m.group(1).split(",") if x]) if m else None


def parse_command(argv_or_str: str | Iterable[str], source: str = "cmdline") -> EngineConfig:
    """A command line of any supported engine -> EngineConfig with the engine's defaults.

    Accepts a shell string (quotes, backslash-newline continuations) or an argv list; leading
    `VAR=value` assignments, `env`, `python -m`, `docker run ... IMAGE` wrappers are understood.
    Both `--flag value` and `--flag=value`, dashes or underscores, argparse-style unique prefixes
    (`--model` for SGLang's `--model-path`), booleans and `--no-<flag>`."""
    argv = _split(argv_or_str)
    env: dict[str, str] = {}
    granted: int | None = None
    engine, rest, positional_model = "", [], False
    for i, tok in enumerate(argv):
        base = os.path.basename(tok)
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if ENV_ASSIGN.match(tok) and not engine:
            key, _, value = tok.partition("=")
            env[key] = value
            continue
        if tok in ("-e", "--env") and ENV_ASSIGN.match(nxt):  # `docker run -e CUDA_VISIBLE_DEVICES=0,1 IMAGE`
            key, _, value = nxt.partition("=")
            env[key] = value
            continue
        if tok == "--gpus" or tok.startswith("--gpus="):  # `docker run --gpus 2`, `--gpus '"device=0,1"'`
            granted = docker_gpus(tok.partition("=")[2] or nxt)
            continue
        if base == "vllm" and nxt == "serve":
            engine, rest, positional_model = "vllm", argv[i + 2 :], True
        elif tok in ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"):
            engine, rest = "vllm", argv[i + 1 :]
        elif tok == "sglang.launch_server" or (base == "sglang" and nxt in ("serve", "launch_server")):
            engine, rest = "sglang", argv[i + (1 if tok == "sglang.launch_server" else 2) :]
        elif base == "text-generation-launcher":
            engine, rest = "tgi", argv[i + 1 :]
        elif base in ("llama-server", "llama-server.exe", "llama-cli", "llama-cli.exe") or (
            base in ("main", "main.exe") and nxt in ("-m", "--model")  # llama.cpp's CLI before its rename (mid-2024)
        ):
            engine, rest = "llamacpp", argv[i + 1 :]
        elif base == "trtllm-serve":
            engine, rest, positional_model = "trtllm", argv[i + (2 if nxt == "serve" else 1) :], True
        elif (base == "lmdeploy" and nxt == "serve") or tok == "lmdeploy.serve.openai.api_server":
            # `lmdeploy serve api_server MODEL`; before the CLI (v0.1) `python -m lmdeploy.serve.openai.api_server MODEL`
            engine, rest, positional_model = "lmdeploy", argv[i + (3 if base == "lmdeploy" else 1) :], True
        elif base == "ollama" and nxt == "serve":
            engine, rest = "ollama", argv[i + 2 :]
        elif any(image in tok for image, _ in IMAGE_ENGINES) and i > 0:
            engine = next(e for image, e in IMAGE_ENGINES if image in tok)
            rest = argv[i + 1 :]
            if rest and rest[0] in ("vllm", "serve"):  # `vllm/vllm-openai IMAGE vllm serve MODEL` forms
                rest = rest[2:] if rest[0] == "vllm" and len(rest) > 1 and rest[1] == "serve" else rest[1:]
                positional_model = True
        else:
            continue
        break
    cfg = EngineConfig(engine=engine, env=env, gpus_granted=granted)
    if not engine:
        cfg.unknown_flags = ["<no known engine command found>"]
        return cfg
    _apply_tokens(cfg, rest, positional_model, source)
    _apply_env(cfg, env, source)
    return _fill_defaults(cfg)


_WINDOWS_SEPARATOR = re.compile(r"(?<=[\w.:])\\(?=[\w.])")


def _split(argv_or_str: str | Iterable[str]) -> list[str]:
    if isinstance(argv_or_str, str):
        text = argv_or_str.replace("\\\r\n", " ").replace("\\\n", " ")
        # a Windows path (`.\Release\main.exe -m .\models\7B\...`): POSIX quoting would eat its separators
        text = _WINDOWS_SEPARATOR.sub("/", text)
        try:
            return shlex.split(text, comments=False)
        except ValueError:  # an unbalanced quote: fall back to whitespace
            return text.split()
    return [str(t) for t in argv_or_str]


def _normalise(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_").lower()


def _lookup(engine: str, name: str) -> tuple[str, Flag | None]:
    table = FLAGS[engine]
    if name in table:
        return name, table[name]
    if engine in ("vllm", "sglang", "tgi", "trtllm", "lmdeploy") and len(name) > 2:  # argparse/clap unique prefixes
        hits = [k for k in table if k.startswith(name)]
        if len(hits) == 1:
            return hits[0], table[hits[0]]
    return name, None


def _apply_tokens(cfg: EngineConfig, tokens: list[str], positional_model: bool, source: str) -> None:
    engine = cfg.engine
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("-") or tok in ("-", "--"):
            if positional_model and not cfg.model:
                _set(cfg, "model", Flag("model"), tok, source)
            elif tok != "--":
                cfg.extra.setdefault("<positional>", tok)
            continue
        name, eq, inline = tok.partition("=")
        key = _normalise(name)
        negated = False
        if key.startswith("no_") and key not in BOOLEAN_FLAGS[engine]:
            base_key, flag = _lookup(engine, key[3:])
            if flag and flag.boolean:
                key, negated = base_key, True
        key, flag = _lookup(engine, key) if not negated else (key, flag)
        takes_value = not (flag.boolean if flag else key in BOOLEAN_FLAGS[engine])
        value: object
        if eq:
            value = inline
        elif negated:
            value = False
        elif not takes_value:
            value = True
        elif i < len(tokens) and not _looks_like_flag(tokens[i]):
            value = tokens[i]
            i += 1
        elif flag is None:
            value = True  # an unknown flag with nothing after it: a boolean
        else:
            cfg.unknown_flags.append(f"{name} (no value given)")
            continue
        if flag is None:
            cfg.extra[name] = "" if value is True else str(value)
            continue
        _set(cfg, flag.field, flag, value, source, flag_name=name)


def _looks_like_flag(tok: str) -> bool:
    return tok.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", tok)


def _set(cfg: EngineConfig, field: str, flag: Flag, value: object, source: str, flag_name: str = "") -> None:
    try:
        converted = flag.conv(value)
    except (TypeError, ValueError):
        cfg.unknown_flags.append(f"{flag_name or field}={value} (not a valid value)")
        return
    if field == "api_key_set" and converted is False and cfg.api_key_set:
        return
    setattr(cfg, field, converted)
    cfg.sources[field] = source


def _apply_env(cfg: EngineConfig, env: dict[str, str], source: str) -> None:
    """The few environment variables that act as engine arguments."""
    if cfg.engine == "ollama":
        host = env.get("OLLAMA_HOST", "")
        if host:
            h, _, p = host.rpartition(":") if ":" in host else (host, "", "")
            cfg.host, cfg.sources["host"] = h or host, source
            if p.isdigit():
                cfg.port, cfg.sources["port"] = int(p), source
        for var, field in (
            ("OLLAMA_NUM_PARALLEL", "max_num_seqs"),
            ("OLLAMA_CONTEXT_LENGTH", "max_model_len"),
        ):
            if env.get(var, "").isdigit():
                setattr(cfg, field, int(env[var]))
                cfg.sources[field] = source
        if env.get("OLLAMA_KV_CACHE_TYPE"):
            cfg.kv_cache_dtype, cfg.sources["kv_cache_dtype"] = env["OLLAMA_KV_CACHE_TYPE"], source
    if cfg.engine == "tgi" and env.get("MODEL_ID") and not cfg.model:
        cfg.model, cfg.sources["model"] = env["MODEL_ID"], source
    if cfg.engine == "tgi" and "CUDA_GRAPHS" in env and not cfg.is_set("enforce_eager"):
        cfg.enforce_eager, cfg.sources["enforce_eager"] = graphs_off(env["CUDA_GRAPHS"]), source
    if cfg.engine == "tgi" and env.get("CUDA_MEMORY_FRACTION") and not cfg.is_set("gpu_memory_utilization"):
        cfg.gpu_memory_utilization, cfg.sources["gpu_memory_utilization"] = to_float(env["CUDA_MEMORY_FRACTION"]), source
    if cfg.engine == "vllm" and "VLLM_USE_V1" in env:
        cfg.extra["VLLM_USE_V1"] = env["VLLM_USE_V1"]


def _fill_defaults(cfg: EngineConfig) -> EngineConfig:
    for name, value in defaults(cfg.engine, cfg.engine_generation).items():
        if value is not None and getattr(cfg, name) in (None, ""):
            setattr(cfg, name, value)
            cfg.sources[name] = DEFAULT
    if cfg.engine == "vllm" and cfg.max_num_batched_tokens is None and cfg.max_model_len:
        # V0 without chunked prefill: the scheduler takes max(max_model_len, 2048) tokens a step.
        cfg.max_num_batched_tokens = max(cfg.max_model_len, 2048)
        cfg.sources["max_num_batched_tokens"] = DEFAULT
    return cfg


# --- values no engine accepts ------------------------------------------------------------------

# field -> (is the value valid, what a valid one is); a value given outside is refused by the
# engine's own argument checks (vLLM's EngineArgs/ParallelConfig, SGLang's ServerArgs)
AT_LEAST_1 = (lambda v: v >= 1, "at least 1")
NOT_NEGATIVE = (lambda v: v >= 0, "0 or more")
RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "tensor_parallel_size": AT_LEAST_1,
    "pipeline_parallel_size": AT_LEAST_1,
    "data_parallel_size": AT_LEAST_1,
    "max_model_len": AT_LEAST_1,
    "gpu_memory_utilization": (lambda v: 0 < v <= 1, "above 0 and at most 1"),
    "max_num_seqs": AT_LEAST_1,
    "max_num_batched_tokens": AT_LEAST_1,
    "block_size": AT_LEAST_1,
    "cpu_offload_gb": NOT_NEGATIVE,
    "swap_space_gb": NOT_NEGATIVE,
}
# values outside the range that mean something: llama.cpp `-c 0` takes the model's context,
# vLLM `--max-model-len -1` its maximum
SPECIAL = {("llamacpp", "max_model_len", 0), ("vllm", "max_model_len", -1)}


LAUNCH_SOURCES = ("cmdline", "process")  # a launch command given, or a live engine's argv


def invalid_values(cfg: EngineConfig) -> list[str]:
    """What in a launch command the engine would refuse: a value out of range (TP 0, a negative
    context length, a memory share above 1) or one that is not a number. Only a launch command or a
    live process is judged: defaults are valid, and a command quoted in a log is often cut or
    wrapped in Markdown."""
    if not any(cfg.sources.get(name) in LAUNCH_SOURCES for name in ("model", *RANGES)):
        return []
    out = [flag for flag in cfg.unknown_flags if _refused_field(cfg.engine, flag) in RANGES]
    for name, (valid, wanted) in RANGES.items():
        value = getattr(cfg, name)
        if value is None or cfg.sources.get(name) not in LAUNCH_SOURCES or (cfg.engine, name, value) in SPECIAL:
            continue
        if not valid(value):
            out.append(f"{name} {value:g}: must be {wanted}")
    return out


def _refused_field(engine: str, entry: str) -> str:
    """The field of an unknown_flags entry "--flag=value (not a valid value)" / "--flag (no value given)"."""
    if engine not in FLAGS or not entry.endswith(("(not a valid value)", "(no value given)")):
        return ""
    _, flag = _lookup(engine, _normalise(re.split(r"[= ]", entry, maxsplit=1)[0]))
    return flag.field if flag else ""


# --- start-up logs ----------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VLLM_VERSION = re.compile(r"(?:LLM engine \(v|vLLM API server version |vLLM version )v?(\d+\.\d+[\w.+-]*)")
VLLM_GENERATION = re.compile(r"Initializing an? (V[01] )?LLM engine")
TGI_DEFAULTED = re.compile(r"text_generation_launcher: Default `(\w+)` to (\d+)")
NEW_RECORD = re.compile(r"\n\s*(?:INFO|WARNING|WARN|ERROR|DEBUG|\(|\[|\d{4}-\d\d-\d\d|\d\d-\d\d )")
MARKERS = (
    ("vllm", "dict", re.compile(r"non-default args: (\{)")),
    ("vllm", "call", re.compile(r"args: Namespace(\()")),
    ("vllm", "line", re.compile(r"LLM engine(?: \([^)]*\))? with config: ()")),
    ("sglang", "call", re.compile(r"server_args=ServerArgs(\()")),
    ("tgi", "struct", re.compile(r"text_generation_launcher: Args (\{)")),
)
PRIORITY = {"dict": 3, "call": 2, "struct": 2, "line": 1}  # explicit non-default args win


def parse_log_args(text: str) -> EngineConfig:
    """The engine arguments a start-up log prints -> EngineConfig (sources "log"), defaults filled.

    When a log holds several starts, the last one counts (it is the one that crashed). Values
    printed as explicit "non-default args" outrank the full Namespace/config dumps; of each kind
    of dump the last one printed is used."""
    text = ANSI.sub("", text)
    found: list[tuple[int, str, str, dict[str, object]]] = []
    for engine, kind, pattern in MARKERS:
        for m in pattern.finditer(text):
            body = _body(text, m.start(1), kind)
            pairs = _parse_body(body, kind)
            if pairs:
                found.append((m.start(), engine, kind, pairs))
    version = generation = ""
    for m in VLLM_VERSION.finditer(text):
        version = m.group(1).rstrip(".")
    for m in VLLM_GENERATION.finditer(text):
        generation = (m.group(1) or "").strip()
    if not generation and version:
        generation = "V1" if _version_tuple(version) >= (0, 8) else "V0"
    elif not generation and VLLM_GENERATION.search(text):
        generation = "V0"  # "Initializing an LLM engine with config" without a version: pre-0.4
    if not found:
        return EngineConfig(
            engine="vllm" if version else "", engine_version=version, engine_generation=generation
        )
    last_engine = max(found)[1]
    latest: dict[str, tuple[int, str, str, dict[str, object]]] = {}
    for item in sorted(found):
        if item[1] == last_engine:
            latest[item[2]] = item  # per kind of dump, the last one printed
    chosen = list(latest.values())
    cfg = EngineConfig(engine=last_engine)
    if last_engine == "vllm":
        cfg.engine_version, cfg.engine_generation = version, generation
    for _, _, _, pairs in sorted(chosen, key=lambda f: PRIORITY[f[2]]):
        for key, value in pairs.items():
            k, flag = _lookup(last_engine, _normalise(key))
            if flag is None:
                continue
            if value is None:
                continue
            if flag.field == "api_key_set":
                cfg.api_key_set = secret_set(value)
                cfg.sources["api_key_set"] = "log"
                continue
            _set(cfg, flag.field, flag, value, "log", flag_name=k)
    if last_engine == "tgi":  # the launcher prints the values it derived for unset limits
        for m in TGI_DEFAULTED.finditer(text):
            k, flag = _lookup("tgi", m.group(1))
            if flag and getattr(cfg, flag.field) is None:
                _set(cfg, flag.field, flag, m.group(2), "log", flag_name=k)
    return _fill_defaults(cfg)


def _body(text: str, open_at: int, kind: str) -> str:
    """The text of one dump: to the matching bracket, or to the end of the line for "line"."""
    if kind == "line":
        end = text.find("\n", open_at)
        line = text[open_at : end if end >= 0 else len(text)].rstrip()
        # vLLM closes this line with the ")" of its format string ("... enable_prefix_caching=%s)").
        return line[:-1] if line.endswith(")") and line.count(")") > line.count("(") else line
    close = {"(": ")", "{": "}"}[text[open_at]]
    depth, quote, i = 0, "", open_at
    limit = min(len(text), open_at + 200_000)
    while i < limit:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
            elif ch == "\n" and NEW_RECORD.match(text, i):
                break  # a quote left open by a truncated line: the next log record starts here
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and ch == close:
                return text[open_at + 1 : i]
        elif ch == "\n" and kind != "struct" and NEW_RECORD.match(text, i):
            break  # a one-line dump cut by the paste: keep what is there
        i += 1
    return text[open_at + 1 : i]


def _parse_body(body: str, kind: str) -> dict[str, object]:
    if kind == "dict":
        try:
            value = ast.literal_eval("{" + body + "}")
            if isinstance(value, dict):
                return {str(k): v for k, v in value.items()}
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
        return {k.strip("'\""): _py_value(v) for k, v in _pairs(body, ":")}
    sep = ":" if kind == "struct" else "="
    return {k: (_rust_value(v) if kind == "struct" else _py_value(v)) for k, v in _pairs(body, sep)}


def _pairs(body: str, sep: str) -> list[tuple[str, str]]:
    """Top-level `key<sep>value` items separated by commas, respecting quotes and brackets."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(body):
        if quote:
            if ch == quote and body[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    out = []
    for item in items:
        key, found, value = item.partition(sep)
        key = key.strip()
        if found and re.fullmatch(r"['\"]?[A-Za-z_][\w.-]*['\"]?", key):
            out.append((key, value.strip()))
    return out


def _py_value(raw: str) -> object:
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        # A quoted value cut by a truncated paste ('TheBloke/Mixtral-8x7B-Instru>) is no evidence.
        return None if raw[:1] in "'\"" and raw else raw


def _rust_value(raw: str) -> object:
    """TGI's Rust Debug values: Some("x"), None, true/false, "str", numbers."""
    raw = raw.strip().rstrip(",").strip()
    m = re.fullmatch(r"Some\(\s*(.*?)\s*,?\s*\)", raw, re.S)
    if m:
        raw = m.group(1).rstrip(",").strip()
    if raw == "None":
        return None
    if raw in ("true", "false"):
        return raw == "true"
    return _py_value(raw)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])
