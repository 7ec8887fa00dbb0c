"""Is the checkpoint's quantization supported by this engine build and GPU? (unknown method,
a method the CLI does not accept, a MoE/bit-width combination the kernels do not implement)."""

from __future__ import annotations

import re

from llm_doctor.checks.load import log_events as le
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, Fix, Outcome
from llm_doctor.logview import LogView

# "... requires some operators from vllm. Please install vllm by `pip install vllm==0.8.4`" (SGLang),
# "... requires the latest version of bitsandbytes: `pip install -U bitsandbytes`" (transformers)
INSTALL = re.compile(r"`(pip install [^`]+)`")
# transformers' MXFP4 quantizer naming the kernels it did not find ("requires triton >= 3.4.0 and kernels installed")
MXFP4_KERNELS = re.compile(r"MXFP4 quantization requires triton", re.I)
# transformers' FP8 quantizers: "FP8 quantized models is only supported on GPUs with compute capability >= 9.0"
STATED_FLOOR = re.compile(r"compute capability >= ?(\d+(?:\.\d+)?)")


@check("load.quantization", "load", codes=["load.quantization_unsupported"], events=["quant_unsupported", "quant_partition"])
def quantization(facts: Facts, log: LogView) -> Outcome:
    """The quantization method is supported and matches the checkpoint."""
    found = log.events("quant_unsupported")
    partition = log.events("quant_partition")
    if not found and not any("size" not in e.values for e in partition):
        return Outcome(detail="no quantization error in the log")
    found = found or partition
    method = le.first_value(found, "method") or le.deployment_value(facts, "quantization")
    evidence = le.evidence(found) + log.earlier_runs()
    fixes = []
    install = INSTALL.search(" ".join(line for e in found for line in e.lines))
    if install:  # the engine names the package (and version) the method's kernels come from
        fixes.append(Fix("Install what the error asks for: the method's kernels come from it", install.group(1)))
    if not install and MXFP4_KERNELS.search(" ".join(line for e in found for line in e.lines)):
        # transformers' quantizer_mxfp4.py: without triton >= 3.4 and the `kernels` package a pre-quantized MXFP4 checkpoint
        # (gpt-oss) is dequantized to bf16 at load, so it takes about four times the expert weights' memory
        fixes.append(Fix("Install the MXFP4 kernels transformers looks for, so the checkpoint loads quantized",
                         "pip install -U 'triton>=3.4' kernels"))
    if qparam := le.first_value(found, "qparam"):
        fixes.append(Fix(f"The checkpoint holds packed quantized weights ({qparam}) but the engine built unquantized layers: start "
                         "it with the checkpoint's method (config.json quantization_config.quant_method)", "--quantization awq"
                         if "awq" in str(le.deployment_value(facts, "model") or "").lower() else None))
    floor = _capability_floor(found)
    if floor:
        fixes.append(Fix(floor))
    fixes += [
        Fix(f"Use a checkpoint in a method this engine version supports (the error lists them){'' if not method else f'; {method} is not one'}"),
        Fix("Or upgrade the engine to a release that implements it", le.flag(facts, "upgrade")),
    ]
    if forced := le.flag(facts, "quant_method"):
        fixes.append(Fix(f"Or let the engine read the method from the checkpoint's config instead of forcing it: drop {forced}"))
    title = f"quantization {method or ''} is not supported here".replace("  ", " ")
    if not any(e.fatal for e in found):
        # transformers' FP8 quantizer below compute capability 8.9 warns and loads the weights dequantized to bf16
        # (quantizers/quantizer_finegrained.py): the model runs, in twice the memory, so a warning beside any error it causes
        return Outcome([Finding("load.quantization_unsupported", f"{title}: the engine loads the weights dequantized instead",
                                evidence, fixes, severity="warn")])
    return Outcome([Finding("load.quantization_unsupported", title, evidence, fixes, explains=le.CLIENT_SYMPTOMS)])


def _capability(value: object) -> float | None:
    """A compute capability as the message gives it: vLLM's `get_min_capability` writes 8.0 as 80, transformers as 8.0."""
    if not isinstance(value, (int, float)) or value <= 0:
        return None
    return value / 10 if value >= 10 else float(value)


def _capability_floor(found: list) -> str:
    """The fix when the message names the GPU generation the method's kernels start at ("Minimum capability: 80.
    Current capability: 75.", "compute capability >= 9.0", "actual = `8.0`"), or "": no method setting lowers it."""
    need, have = _capability(le.first_value(found, "need")), _capability(le.first_value(found, "cc"))
    if need is None:  # the template stops before the number, where a terminal's cut may fall: read it from the line
        stated = STATED_FLOOR.search(" ".join(line for e in found for line in e.lines))
        need = _capability(float(stated.group(1))) if stated else None
    if need is None:
        return ""
    gpu = f"this GPU's compute capability {have:.1f}" if have is not None else "this GPU"
    return (f"The method's kernels need compute capability {need:.1f}+ and {gpu} is below it: load a checkpoint in a method "
            "this GPU runs (GPTQ/AWQ run from 7.5), the unquantized model, or a newer GPU")
