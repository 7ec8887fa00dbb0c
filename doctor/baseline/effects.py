"""Configuration changes between two recordings and whether they took effect: a flag the engine
reports otherwise, a change that should improve a figure but did not, a change after which
nothing moved (`baseline.no_effect`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_doctor.baseline.model import Run
from llm_doctor.findings import Finding, Fix

if TYPE_CHECKING:
    from llm_doctor.baseline.compare import Comparison


def config_changes(before: Run, after: Run) -> list[tuple[str, str, str]]:
    """(arg, before, after) for every engine argument that differs; "-" where a side does not set
    it, but only when that side's same source (its command line, log, /metrics) was read, so an
    unreachable /metrics is not taken for a changed configuration."""
    b, a = before.server, after.server
    out = []
    for name in dict.fromkeys([*b.args, *a.args]):
        x, y = b.args.get(name), a.args.get(name)
        if x == y or name == "command_line":
            continue
        source = (b.args_source if x is not None else a.args_source).get(name, "")
        other = a if x is not None else b
        if (x is None or y is None) and source not in other.args_source.values():
            continue
        out.append((name, x if x is not None else "-", y if y is not None else "-"))
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _raised(b: str, a: str) -> bool:
    return (_number(a) or 0) > (_number(b) or 0) > 0


def _added(b: str, a: str) -> bool:
    return b.lower() in ("-", "none", "", "0") and a.lower() not in ("-", "none", "", "0")


# (engine argument, "did it change the way that should help", the figure it should improve, why)
EXPECTED_EFFECTS = (
    ("kv_cache_dtype", lambda b, a: "fp8" in a.lower() and "fp8" not in b.lower(), "kv_cache_tokens",
     "an fp8 KV cache stores each token in half the bytes of fp16/bf16, so the same memory holds about twice the tokens"),
    ("gpu_memory_utilization", _raised, "kv_cache_tokens", "a larger memory fraction leaves more memory for the KV cache"),
    ("quantization", _added, "kv_cache_tokens",
     "quantized weights take less memory, and the engine gives what they free to the KV cache"),
    ("tensor_parallel_size", _raised, "itl_ms", "more GPUs per replica split each token's work"),
    ("enforce_eager", lambda b, a: a.lower() == "false" and b.lower() == "true", "itl_ms",
     "CUDA graphs remove the per-step kernel launch overhead"),
    ("n_gpu_layers", _raised, "itl_ms", "layers on the GPU run faster than on the CPU"),
    ("num_speculative_tokens", _added, "itl_ms", "accepted draft tokens arrive several per step"),
)  # fmt: skip
FIGURE_TEXT = {"kv_cache_tokens": ("the KV cache did not grow", "KV cache capacity", "tokens"),
               "itl_ms": ("inter-token latency did not improve", "ITL p50", "ms")}  # fmt: skip


def no_effect_findings(c: Comparison, tolerance: float, skip: frozenset[str] | set[str] = frozenset()) -> list[Finding]:
    """A change that should improve a figure (EXPECTED_EFFECTS) while that figure did not improve
    beyond the tolerance and the noise: the flag was not applied, or something else caps it."""
    out = []
    for arg, helps, figure, why in EXPECTED_EFFECTS:
        change = next(((b, a) for n, b, a in c.config_changes if n == arg), None)
        v = c.verdicts.get(figure)
        if arg in skip or change is None or not helps(*change) or v is None or v.direction == "better":
            continue
        did_not, name, unit = FIGURE_TEXT[figure]
        fb, fa = (c.before.kv_cache_tokens, c.after.kv_cache_tokens) if figure == "kv_cache_tokens" else (
            c.before.latency[figure][0], c.after.latency[figure][0])  # fmt: skip
        shown = f"{fb:,.0f} -> {fa:,.0f} {unit}"
        noise = f" and the ±{v.noise:.0%} noise" if v.noise else ""
        fixes = [Fix("Check that the engine really applied the flag: its start-up log prints what it runs with", "llm-doctor analyze ENGINE.log")]
        if figure == "kv_cache_tokens":
            fixes.append(Fix("If the capacity is capped elsewhere (num_gpu_blocks_override, kv_cache_memory_bytes, max_total_tokens), lift the cap, or drop the flag and its cost"))
        else:
            fixes.append(Fix("If the time goes elsewhere (a CPU-bound host, a slow interconnect, batching limits), the flag cannot help: find where",
                             "llm-doctor run --only perf"))
        out.append(Finding("baseline.no_effect", f"{arg} {change[0]} -> {change[1]}, but {did_not} ({shown})", [
            f"{arg}: {change[0]} ({c.before.label}) -> {change[1]} ({c.after.label}), as the server reports it",
            f"{name}: {shown} ({v.change:+.0%}); expected to improve beyond the {tolerance:.0%} tolerance{noise}: {why}",
        ], fixes))  # fmt: skip
    return out


def unapplied_findings(after: Run, label: str) -> list[Finding]:
    """Flags the engine was given but its own /metrics report contradicts: not applied at all."""
    s = after.server
    if not s.unapplied:
        return []
    evidence = [f"{n}: asked {asked}, but the engine reports {s.args.get(n)} (/metrics) in {label}" for n, asked in s.unapplied.items()]
    return [Finding("baseline.no_effect", f"{', '.join(s.unapplied)} given but not applied: the engine reports otherwise", evidence, [
        Fix("Read the engine's start-up log for why it overrode or ignored the flag (an unsupported combination, a later flag, a config file)",
            "llm-doctor analyze ENGINE.log"),
    ])]  # fmt: skip


# values the server reports about its state, not settings someone chose: they are effects, not causes
MEASURED = {"num_gpu_blocks", "command_line"}


def unmoved_findings(c: Comparison) -> list[Finding]:
    """A configuration change after which nothing measured moved (no figure beyond the tolerance
    and noise, the same answers): the change took no visible effect. Info: many changes are meant
    to change nothing measurable, but "did my change do anything?" is the question asked."""
    changes = [(n, x, y) for n, x, y in c.config_changes if n not in MEASURED]
    o = c.outputs
    moved = any(v.direction for v in c.verdicts.values()) or o.similar or o.different or c.before.right != c.after.right
    if not changes or moved or not c.verdicts or any(f.code in ("baseline.no_effect", "baseline.improved") for f in c.findings):
        return []
    listed = ", ".join(f"{n} {x} -> {y}" for n, x, y in changes)
    return [Finding("baseline.no_effect", f"configuration changed ({listed}) but nothing measured moved", [
        f"configuration change: {n} {x} ({c.before.label}) -> {y} ({c.after.label})" for n, x, y in changes
    ] + ["latency, throughput, KV cache and GPU memory all within the tolerance and the noise; "
         f"answers: {len(o.identical)} identical of {len(o.identical) + len(o.similar) + len(o.different)}"], [
        Fix("If the change was meant to move one of these figures, check that the engine applied it (its start-up log and /metrics say what it runs with)"),
    ], severity="info")]  # fmt: skip
