"""Are the engine arguments valid? (argparse rejects a flag or value; a context length above what
the model's config allows). The fix names the value the engine itself derived."""

from __future__ import annotations

from checks.load import log_events as le
from doctor.engine import check
from doctor.facts import Facts
from doctor.findings import Finding, Fix, Outcome
from doctor.logview import LogView


@check("load.config", "load", codes=["load.config_invalid"], events=["config_invalid"])
def config(facts: Facts, log: LogView) -> Outcome:
    """The engine accepted its arguments."""
    found = log.events("config_invalid")
    if not found:
        return Outcome(detail="no argument error in the log")
    e = found[-1]
    v = e.values
    evidence = le.evidence(found) + log.earlier_runs()
    engine = le.engine(facts)
    if "derived" in v:
        flag = "--context-length" if v.get("field") == "context_length" else "--max-model-len"
        fixes = [Fix(f"Use at most the model's own limit ({v['derived']})", f"{flag} {v['derived']}"),
                 Fix("Or, when the model really supports more (RoPE scaling), allow it explicitly",
                     "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" if engine != "sglang" else "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")]
        title = f"{v.get('field')} {v.get('value')} is above the model's limit {v['derived']}"
    else:
        flag = str(v.get("flag") or "").strip("`' ")
        fixes = [Fix(f"Remove or rename {flag or 'the rejected argument'}; see `--help` of this engine version for the accepted spelling")]
        if flag.startswith("--") and "_" in flag:
            fixes.insert(0, Fix("Flags use dashes, not underscores", flag.split()[0].replace("_", "-")))
        title = f"the engine rejected its arguments{f': {flag}' if flag else ''}"
    return Outcome([Finding("load.config_invalid", title, evidence, fixes, explains=le.CLIENT_SYMPTOMS)])
