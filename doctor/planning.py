"""What `llm-doctor plan` does between its flags and the report: model facts, engine args and GPU
memory -> facts.plan, then the same checks and report as `run` (doctor.runner.finish)."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from llm_doctor.facts import Facts
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.gpu import Gpu, GpuFacts
from llm_doctor.facts.model import ModelFacts
from llm_doctor.facts.plan import MemoryPlan

MIB = 1024**2
DEFAULT_GPU = "H100"  # planned for when no --gpu / --gpu-memory is given, and said so
FLAG_OPTIONS = {  # plan's own flags -> engine flags, appended to the parsed command line
    "tensor_parallel_size": "--tensor-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size",
    "max_model_len": "--max-model-len",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "kv_cache_dtype": "--kv-cache-dtype",
    "quantization": "--quantization",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "dtype": "--dtype",
    "block_size": "--block-size",
}


def gpu_table() -> dict[str, Any]:
    return json.loads(resources.files("llm_doctor").joinpath("data/gpus.json").read_text())


def _norm(name: str) -> str:
    return name.upper().replace(" ", "").replace("_", "-").removeprefix("NVIDIA-").removeprefix("NVIDIA")


def gpu_entry(name: str) -> dict[str, Any] | None:
    """The gpus.json entry for H100, A100-80GB, L4, "NVIDIA H100 80GB HBM3"... (case and dash insensitive)."""
    table = gpu_table()
    key = _norm(name)
    key = {_norm(a): b for a, b in table["aliases"].items()}.get(key, key)
    for k, entry in table["gpus"].items():
        if _norm(k) == _norm(key) or _norm(entry["name"]) == key:
            return entry
    return None


def lookup_gpu(name: str) -> tuple[str, float]:
    """(NVML name, NVML total MiB) for H100, A100-80GB, L4, ... (case and dash insensitive)."""
    entry = gpu_entry(name)
    if entry is None:
        known = ", ".join(gpu_table()["gpus"])
        raise ValueError(f"unknown GPU {name!r}; known: {known} (or give --gpu-memory GiB)")
    return entry["name"], float(entry["mib"])


def reserved_mib(name: str) -> tuple[float, str]:
    """(MiB the driver reserves, where that figure comes from): NVML's total less this is what
    cudaMemGetInfo, and so the engine, sees. A GPU without a capture gets the median of the
    captured reservations (doctor/data/gpus.json), said so in the plan's assumptions."""
    entry = gpu_entry(name) if name else None
    if entry and entry.get("reserved_mib") is not None:
        return float(entry["reserved_mib"]), entry.get("reserved_from") or entry.get("seen") or "gpus.json"
    seen = sorted(
        float(e["reserved_mib"])
        for e in gpu_table()["gpus"].values()
        if e.get("seen") and "reserved_from" not in e
    )
    return seen[len(seen) // 2], "the median driver reservation of the captured GPUs (doctor/data/gpus.json)"


def cuda_total_bytes(name: str, nvml_mib: float) -> tuple[int, str]:
    """(bytes the engine sees as the GPU's total, the assumption behind it)."""
    reserved, source = reserved_mib(name)
    note = f"GPU total {nvml_mib:.0f} MiB (NVML) less {reserved:.0f} MiB driver reservation ({source})"
    return int((nvml_mib - reserved) * MIB), note


def resolve_model(name: str, offline: bool) -> tuple[ModelFacts | None, str]:
    from llm_doctor import models

    if name and Path(name).is_dir() and (Path(name) / "config.json").is_file():
        return models.from_folder(name), ""
    found = models.known(name) if name else None  # the Hugging Face cache, then the shipped table
    if found:
        return found, ""
    if not name:
        return None, "no model given (--model or the engine command's model)"
    if offline or os.environ.get("HF_HUB_OFFLINE") == "1":
        return None, f"{name} is neither in the Hugging Face cache ({models.hf_cache_root()}) nor in the built-in table, and the hub is off (offline)"
    from llm_doctor.collect.hub import fetch_model_files

    config, total, reason = fetch_model_files(name)
    if config is None:
        return None, reason
    try:
        return models.from_config(config, name=name, source="hub", weight_bytes=total), ""
    except ValueError as exc:
        raise ValueError(f"{name} from the hub: {exc}") from None


def build_facts(kw: dict[str, Any]) -> Facts:
    from llm_doctor import memory
    from llm_doctor.engine_args import invalid_values, parse_command

    command = list(kw.get("command") or ())
    cfg = parse_command(command) if command else EngineConfig()
    if not cfg.engine:
        cfg = parse_command(
            ["vllm", "serve", kw.get("model") or ""] if kw.get("engine", "vllm") == "vllm" else []
        )
        if kw.get("engine") == "sglang":
            cfg = parse_command(["python", "-m", "sglang.launch_server"])
        elif kw.get("engine") == "tgi":
            cfg = parse_command(["text-generation-launcher"])
    extra = [f"{flag}={kw[name]}" for name, flag in FLAG_OPTIONS.items() if kw.get(name) is not None]
    if extra:
        override = parse_command(["vllm", "serve", *extra])
        for name in FLAG_OPTIONS:
            if kw.get(name) is not None:
                setattr(cfg, name, getattr(override, name))
                cfg.sources[name] = "cmdline"
    model_name = kw.get("model") or cfg.model
    if model_name and not cfg.model:
        cfg.model = model_name
    assumed: list[str] = []
    if kw.get("gpu_memory") is not None:  # click keeps it above 0
        gpu_name, mib = kw.get("gpu") or "", float(kw["gpu_memory"]) * 1024
    else:
        gpu_name, mib = lookup_gpu(kw.get("gpu") or DEFAULT_GPU)
        if not kw.get("gpu"):
            assumed.append(f"no GPU given (--gpu NAME or --gpu-memory GiB): planned for {gpu_name} ({mib:.0f} MiB)")
    tp_pp = max(1, (cfg.tensor_parallel_size or 1) * (cfg.pipeline_parallel_size or 1))
    count = int(kw.get("gpus") or tp_pp)
    if not kw.get("gpus"):
        assumed.append(f"no GPU count given (--gpus N): as many as TP x PP = {count}")
    facts = Facts(deployment=cfg)
    facts.gpus = GpuFacts(
        source="plan flags",
        available=True,
        gpus=[Gpu(index=i, name=gpu_name, memory_total_mib=mib) for i in range(count)],
    )
    refused = invalid_values(cfg)
    if refused:
        facts.plan = MemoryPlan(engine=cfg.engine, model=model_name, verdict="config_invalid", reasons=refused)
        return facts
    model, reason = resolve_model(model_name, bool(kw.get("offline")))
    if model is None:
        facts.plan = MemoryPlan(
            engine=cfg.engine, model=model_name, verdict="model_unknown", reasons=[reason], assumptions=assumed
        )
        return facts
    facts.model = model
    total, note = cuda_total_bytes(gpu_name, mib)
    facts.plan = memory.plan(model, total, count, cfg, gpu_name)
    facts.plan.gpu_name = gpu_name
    facts.plan.assumptions[:0] = assumed
    facts.plan.assumptions.append(note)
    return facts


def plan_command(kw: dict[str, Any]) -> int:
    from llm_doctor.engine import Deadline
    from llm_doctor.redact import Redactor
    from llm_doctor.runner import doctor_failed, finish, selected

    redactor = Redactor([os.environ.get("HF_TOKEN")])
    try:
        facts = build_facts(kw)
        kw = {**kw, "only": kw.get("only") or ("load.memory_fit",)}
        return finish(facts, selected(kw), kw, redactor, Deadline(float(kw["deadline"])), title="llm-doctor plan")
    except ValueError as exc:
        import click

        raise click.UsageError(str(exc)) from exc
    except Exception as exc:
        return doctor_failed(exc, redactor)


def plan_from_facts(facts: Facts) -> MemoryPlan | None:
    """The memory plan a run or an analysis is judged by (load.memory_fit) and drawn with (the report's
    budget bars): facts.plan from `llm-doctor plan`, else planned from the model, the engine arguments
    and the GPUs; None when one of them is missing."""
    if facts.plan is not None:
        return facts.plan
    gpus = facts.gpus.gpus if facts.gpus else []
    if not (facts.model and facts.deployment and gpus and gpus[0].memory_total_mib):
        return None
    from llm_doctor import memory

    total, note = cuda_total_bytes(gpus[0].name, min(g.memory_total_mib or 0 for g in gpus))
    setup = facts.logs.setup if facts.logs else None
    printed = (
        memory.Printed(setup.gpu_total_gib, setup.weights_gib, setup.available_kv_gib)
        if setup and facts.deployment.engine in ("vllm", "")
        else None
    )
    # the GPUs seen are this node's; a multi-node launch (--nnodes) has as many on each node
    count = len(gpus) * max(1, facts.deployment.nnodes or 1)
    result = memory.plan(facts.model, total, count, facts.deployment, gpus[0].name, printed)
    result.gpu_name = gpus[0].name
    result.assumptions.append(note)
    return result
