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
    fixes += [
        Fix(f"Use a checkpoint in a method this engine version supports (the error lists them){'' if not method else f'; {method} is not one'}"),
        Fix("Or upgrade the engine to a release that implements it", le.flag(facts, "upgrade")),
    ]
    if forced := le.flag(facts, "quant_method"):
        fixes.append(Fix(f"Or let the engine read the method from the checkpoint's config instead of forcing it: drop {forced}"))
    return Outcome([Finding("load.quantization_unsupported", f"quantization {method or ''} is not supported here".replace("  ", " "),
                            evidence, fixes, explains=le.CLIENT_SYMPTOMS)])
