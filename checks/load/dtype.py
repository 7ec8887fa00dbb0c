"""Is the dtype supported by this GPU? bfloat16 needs compute capability 8.0 (Ampere), FP8 needs
8.9 (Ada/Hopper); older GPUs must run float16, or a checkpoint that is not FP8."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

# doctor/data/families.jsonl "dtype": lmdeploy src/turbomind/python/bind.cpp "turbomind has not been built with fp32 support"
BUILT_WITHOUT = re.compile(r"(?:not (?:been )?(?:built|compiled)|built without) (?:with )?(?P<dtype>fp32|float32|fp16|float16|half|bf16|bfloat16) support")


@check("load.dtype", "load", codes=["load.dtype_unsupported"], events=["dtype_unsupported", "cuda_mismatch"])
def dtype(facts: Facts, log: LogView) -> Outcome:
    """The model's dtype runs on this GPU's compute capability."""
    found = log.events("dtype_unsupported")
    if not found:
        return Outcome(detail="no dtype/compute-capability error in the log")
    e = found[0]
    cc = e.values.get("cc") or (facts.logs.setup.compute_capability if facts.logs else None)
    text = " ".join(e.lines).lower()
    evidence = le.evidence(found) + log.earlier_runs()
    if cc:
        evidence.append(f"GPU compute capability {cc}")
    built = BUILT_WITHOUT.search(text)
    if built:
        # a kernel library compiled without this dtype (TurboMind's ENABLE_FP32 / ENABLE_BF16): the GPU is not the limit
        other = "bfloat16" if built.group("dtype") in ("fp16", "float16", "half") else "float16"  # float16 runs on every GPU
        fixes = [Fix(f"This engine build has no {built.group('dtype')} kernels: load the model in {other}", f"--dtype {other}"),
                 Fix("Or use an engine/backend built with that dtype (LMDeploy: the PyTorch engine, --backend pytorch)")]
        title = f"the engine was built without {built.group('dtype')} support"
    elif "no valid attention backend" in text:
        # vLLM's selector: every backend refused the model's dtype (chains.OWNERS); half precision is what they all run
        model_dtype = re.search(r"\bdtype=torch\.(\w+)", text)
        other = "bfloat16" if model_dtype and model_dtype.group(1) in ("float16", "half") else "float16"
        fixes = [Fix(f"No attention backend has kernels for {model_dtype.group(1) if model_dtype else 'this dtype'}: load the model in "
                     f"{other}", f"--dtype {other}")]
        title = f"no attention backend runs {model_dtype.group(1) if model_dtype else 'this dtype'}"
    elif "fp16 and bf16" in text:
        # flash-attn's kernels exist only in half precision (flash_api.cpp): the model was loaded in float32
        fixes = [Fix("Load the model in half precision: float16 (or bfloat16 on compute capability 8.0+)", "--dtype float16")]
        title = "the attention kernels run only in float16/bfloat16, the model is in float32"
    elif "does not support float16" in text:
        # vLLM config/model.py _FLOAT16_NOT_SUPPORTED_MODELS (Gemma 2/3, GLM-4): float16, what dtype auto gives a GPU without
        # bfloat16, is numerically unstable for the model; bfloat16 needs compute capability 8.0, float32 runs anywhere
        other = "float32" if _below_ampere(cc) else "bfloat16"
        fixes = [Fix(f"Load the model in {other} (bfloat16 needs compute capability 8.0+; float32 doubles the weights' memory)",
                     f"--dtype {other}")]
        title = f"{str(e.values.get('model_type') or 'this model').strip(chr(39))} does not run in float16"
    elif "fp8" in text or "float8" in text:
        fixes = [Fix("FP8 needs compute capability 8.9+ (Ada/Hopper): load the BF16/FP16 or an AWQ/GPTQ checkpoint instead"),
                 Fix("Or run on an Ada/Hopper GPU (L4, L40S, H100, H200)")]
        title = "FP8 is not supported on this GPU"
    elif str(e.values.get("dtype", "")).lower() in ("fp32", "float32"):
        # a build without the dtype's kernels (LMDeploy's TurboMind: "has not been built with fp32 support"), not the GPU
        fixes = [Fix("This engine build has no float32 kernels: run the model in float16", "--dtype float16")]
        title = "float32 is not supported by this engine build"
    else:
        fixes = [Fix("Run in float16 (bfloat16 needs compute capability 8.0+)", "--dtype float16")]
        title = "bfloat16 is not supported on this GPU"
    # a GPU below every kernel of the build runs no dtype: then the CUDA finding is the cause, not this one
    explains = [] if le.gpu_below_floor(log.events("cuda_mismatch")) else ["load.cuda_mismatch"]
    return Outcome([Finding("load.dtype_unsupported", title, evidence, fixes, explains=[*explains, *le.CLIENT_SYMPTOMS])])


def _below_ampere(cc: object) -> bool:
    """A compute capability (8.6, "7.5", "sm_75") known to be below 8.0, where bfloat16 has no kernels."""
    digits = re.sub(r"[^0-9.]", "", str(cc or ""))
    if not digits:
        return False
    value = float(digits) if "." in digits else int(digits) / 10
    return value < 8.0
