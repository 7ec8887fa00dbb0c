"""Can these GPUs run FP8 (an fp8 KV cache, FP8 weights)? Compute capability 8.9 (Ada) or newer.

A fix that says "--kv-cache-dtype fp8" or "--quantization fp8" is only offered where the answer is
not "no": an A100 (8.0) must not be told to use FP8. The compute capability wins (NVML, or the
engine log); without it the GPU's name decides; an unknown GPU is None, and callers then label the
fix with the requirement instead of dropping it.
"""

from __future__ import annotations

from collections.abc import Iterable

from llm_doctor.facts import Facts

MIN_CC = 8.9
# names as NVML/nvidia-smi/vLLM print them; matched as upper-case substrings
FP8_GPUS = ("H100", "H200", "H800", "H20", "GH200", "B100", "B200", "GB200", "L4", "L20", "L40", "4090", "5090", "ADA")
OLDER_GPUS = ("A100", "A800", "A10", "A30", "A40", "A16", "A2", "V100", "T4", "P100", "P40", "3090", "3080", "2080", "A6000")


def supported(ccs: Iterable[float], names: Iterable[str]) -> bool | None:
    """True/False when the compute capabilities or names say so; None when nothing tells."""
    known = [cc for cc in ccs if cc]
    if known:
        return min(known) >= MIN_CC
    upper = [n.upper() for n in names if n]
    if any(tag in n for n in upper for tag in OLDER_GPUS if not any(t in n for t in FP8_GPUS)):
        return False
    if any(tag in n for n in upper for tag in FP8_GPUS):
        return True
    return None


def from_facts(facts: Facts) -> bool | None:
    gpus = facts.gpus.gpus if facts.gpus else []
    ccs = [_cc(g.compute_capability) for g in gpus]
    names = [g.name for g in gpus]
    if facts.logs is not None:
        ccs.append(facts.logs.setup.compute_capability or 0.0)
        names += facts.logs.setup.gpu_names
    return supported(ccs, names)


def _cc(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0
