"""Is the dtype supported by this GPU? bfloat16 needs compute capability 8.0 (Ampere), FP8 needs
8.9 (Ada/Hopper); older GPUs must run float16, or a checkpoint that is not FP8."""

from __future__ import annotations

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView


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
    if "fp8" in text or "float8" in text:
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
