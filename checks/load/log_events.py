"""Shared helpers for the checks that judge engine-log events (no check is registered here).

The events themselves come from the engine, as the LogView a check's `events=` declaration asks
for (doctor/logview.py: the run being diagnosed, the declared kinds only). Every load-layer
root cause found in a log also explains what a client saw while the server was down (refused
connections, 5xx, timeouts), so ranking puts the server's cause before those symptoms.
"""

from __future__ import annotations

import re

from llm_doctor import engine_flags
from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.logparse.failures import CLIENT
from llm_doctor.logview import evidence  # noqa: F401  (the checks quote events through le.evidence)


def relayed(e: LogEvent, engine: str) -> bool:
    """A prompt longer than the context, refused, as the client received it (the error body of the HTTP answer, a client's
    print of the answer, a client's own output), not the engine's log line: the request failed, the engine went on. (An input
    above the micro-batch, llama-server's -ub, is the server's setting whoever quotes it.)"""
    if "n_ubatch" in e.values:
        return False
    return engine == "client" or "inside the HTTP error body" in str(e.values.get("tier", "")) or bool(CLIENT.search(" ".join(e.lines)))


CLIENT_SYMPTOMS = ["access.connect_failed", "access.server_error", "access.timeout", "access.response_invalid", "access.not_ready"]
GIB = 1024**3
# the GPU is older than any kernel of the build (vLLM's setup.py "GPUs with compute capability below 7.0 are not
# supported", torch "PyTorch no longer supports this GPU because it is too old", Ollama "CUDA GPU is too old", "amdgpu
# too old", TGI's "GPU with CUDA capability 7 0 is not supported", flash-attn's "only supports Ampere GPUs or newer",
# TensorRT-LLM's kernels "Assertion failed: Unsupported Arch(itecture)"): no
# dtype runs there, so such a cuda_mismatch comes before a bfloat16 refusal beside it
GPU_BELOW_FLOOR = re.compile(r"GPU[^.]{0,20}? too old|too old to be supported by the triton|no longer supports this GPU|compute capability (?:below )?\d[\d.]*\b[^.]*?"
                             r"(?:not supported|too old)|(?:CUDA|ROCm) capability \d+ \d+ is not supported|"
                             r"only supports Ampere GPUs or newer|(?:only supports?|requires?) (?:a )?(?:GPUs? )?(?:with )?(?:sm|compute capability)[ _]?(?:of )?\d+(?:\.\d+)?(?:\+| or higher)|"
                             r"only supports? (?:GPUs? )?(?:with )?(?:sm|compute capability)[ _]?(?:of )?\d|"
                             r"Assertion failed: Unsupported Arch", re.I)


# TGI's "Sharded X requires Flash Attention enabled models" (models/__init__.py) says only that the flash models did not
# import; why is in the warning models/__init__.py logged first ("Could not import Flash Attention enabled models: CUDA is
# not available", tgi.jsonl): a container without a GPU is that failure's first cause, not a kernel that misfits the GPU
FLASH_MODELS_MISSING = re.compile(r"requires Flash Attention enabled models", re.I)


def only_flash_models_missing(found: list[LogEvent]) -> bool:
    """Whether every cuda_mismatch event is TGI's missing flash models, a symptom whose cause another line names."""
    mismatches = [e for e in found if e.kind == "cuda_mismatch"]
    return bool(mismatches) and all(FLASH_MODELS_MISSING.search(" ".join(e.lines)) for e in mismatches)


def gpu_below_floor(found: list[LogEvent]) -> bool:
    """Whether a cuda_mismatch event says the GPU is below what the build supports at all."""
    return any(GPU_BELOW_FLOOR.search(line) for e in found if e.kind == "cuda_mismatch" for line in e.lines)


# the driver's libcuda missing (events.py gpu_not_visible): on an NVIDIA machine the container or host was given no driver;
# on an AMD (ROCm) one there is no libcuda to give, and what asked for it is a CUDA build of the engine's kernels
NO_LIBCUDA = re.compile(r"libcuda\.so(?:\.1)?: cannot open shared object file", re.I)


def cuda_build_on_rocm(e: LogEvent, rocm: bool | None) -> bool:
    """Whether this missing-GPU event is a CUDA binary asking for libcuda on a ROCm machine: a build mismatch, not a GPU
    the process was not given."""
    return bool(rocm) and e.kind == "gpu_not_visible" and any(NO_LIBCUDA.search(line) for line in e.lines)


# a message wrapped into at most this many lines still reads as one (vLLM's refusals pasted into an issue)
WRAP_LINES = 2


def wrapped(found: list[LogEvent]) -> list[LogEvent]:
    """The last message among `found` with the pieces of it that a wrap put on the lines just before
    it (the grammar has a rule for each piece of a message that pastes often wrap: vLLM V1's KV and
    free-memory refusals), in line order: a piece names values the others do not."""
    last = found[-1]
    pieces = [last]
    for e in reversed(found[:-1]):
        if e.source != last.source or not 0 < pieces[-1].line_no - e.line_no <= WRAP_LINES or \
                any(e.values.keys() & p.values.keys() - {"template_source"} for p in pieces):
            break
        pieces.append(e)
    return pieces[::-1]


def joined_values(pieces: list[LogEvent]) -> dict[str, object]:
    """The values of a message's pieces (wrapped()), the later piece's on a clash."""
    values: dict[str, object] = {}
    for piece in pieces:
        values.update(piece.values)
    return values


def first_value(found: list[LogEvent], key: str) -> object | None:
    for e in found:
        if key in e.values:
            return e.values[key]
    return None


def deployment_value(facts: Facts, name: str) -> object | None:
    return getattr(facts.deployment, name, None) if facts.deployment is not None else None


def engine(facts: Facts) -> str:
    """The engine: from the parsed arguments, else from what wrote the log. A client's output names none (the engine's
    error quoted in the answer it got is read by its template's engine, template_engine)."""
    if facts.deployment is not None and facts.deployment.engine:
        return facts.deployment.engine
    return facts.logs.engine if facts.logs and facts.logs.engine != "client" else ""


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
# the engines whose own flags the load fixes speak (doctor/engine_flags.py); the others get vLLM's
LOAD_ENGINES = ("vllm", "sglang", "tgi", "lmdeploy", "trtllm")
# engines whose KV share is a fraction of the free memory after the weights, and its default
FREE_MEMORY_SHARE = {"lmdeploy": 0.8, "trtllm": 0.9}


def flag(facts: Facts, key: str, event: LogEvent | None = None) -> str:
    """The running engine's flag for `key` (an engine_flags knob; kv_share = mem, kv_dtype = the whole
    8-bit KV setting, upgrade = the command that installs a newer release); empty where that engine has
    no such flag, vLLM's for an engine the load fixes do not speak. When neither the arguments nor the
    log name the engine, the engine whose wording recognised `event` does (a pasted TensorRT-LLM assert)."""
    eng = engine(facts) or (template_engine(event) if event is not None else "")
    eng = eng if eng in LOAD_ENGINES else "vllm"
    if key == "upgrade":
        return engine_flags.UPGRADE.get(eng, "")
    if key == "kv_dtype":
        return engine_flags.kv_half(eng) or ""
    return engine_flags.FLAGS["mem" if key == "kv_share" else key].get(eng, "")


def template_engine(e: LogEvent) -> str:
    """The engine whose catalogue template recognised the event ("" for a hand rule): a pasted
    error body names no engine in its lines, but its wording is one engine's own."""
    from llm_doctor.logparse.events import CATALOGUE_RULES

    source = e.values.get("template_source")
    return next((r.engine for r in CATALOGUE_RULES if r.source == source), "") if source else ""
