"""Are the GPU clocks held down? (perf.gpu_throttled)

NVML's clocks-event reasons (nvidia-smi `Clocks Event Reasons`, `Clocks Throttle Reasons` before
driver 535) say why the SM clock is below its maximum. Idle is not throttling; sync boost and
display clocks do not matter for serving. A software power cap only matters when the GPU actually
draws near its limit or the limit was lowered below the board's maximum; application-clock
settings only when they pin the clock below the maximum.

Without a reason (a `--query-gpu=timestamp,clocks.sm,utilization.gpu` sampling holds none): a GPU busy
(BUSY_UTIL % or more) at an SM clock under CLOCK_SHARE of the clock it reaches (its max clock, or the
highest the same samples show) is held down all the same; boost clocks under load stay within a few
tens of percent of the maximum (power-capped boards near 70-85 %), so under 60 % something holds it.
"""

from __future__ import annotations

from llm_doctor.checks.perf import facts_view as fv
from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.gpu import Gpu
from llm_doctor.findings import Finding, Fix, NotApplicable, Outcome

THERMAL = {"hw_thermal_slowdown", "sw_thermal_slowdown", "thermal"}  # "thermal": stated, HW or SW not said
POWER = {"sw_power_cap", "hw_power_brake_slowdown"}
IGNORED = {"idle", "gpu_idle", "sync_boost", "display_clock_setting"}
NEAR_LIMIT = 0.75
BUSY_UTIL = 80.0  # % utilization: the sample is under load
CLOCK_SHARE = 0.6  # an SM clock under this share of the clock the GPU reaches, while busy: held down


@check("perf.clocks", "perf", codes=["perf.gpu_throttled"], any_of=("gpus", "stated"), per_node=True)
def clocks(facts: Facts) -> Outcome:
    """No GPU is held below its clocks by power, heat or a clock limit."""
    g = fv.maybe_gpus(facts)
    # without GPU facts, the clocks and reasons a person states (doctor/logparse/perf_prose.py)
    said = [s for s in facts.stated if s.gpu is not None] if g is None else []
    gpus = g.gpus if g is not None else _one_per_index([s.gpu for s in said if s.gpu is not None])
    if not gpus or all(not x.throttle_reasons and "throttle_reasons" in x.unsupported for x in gpus) or all(
        x.sm_clock_mhz is None and not x.throttle_reasons for x in gpus
    ):
        raise NotApplicable("no clock/throttle facts for these GPUs")
    hits = []
    for x in gpus:
        reasons = [r for r in x.throttle_reasons if counts(x, r)]
        if reasons:
            hits.append((x, reasons))
    if not hits:
        dropped = [x for x in gpus if held_down(x)]
        if dropped:
            return Outcome([_clock_drop(dropped)])
        return Outcome(detail="no active throttle reason")
    evidence = [f"{s.where}: {s.text}" for s in said if s.gpu is not None and any(s.gpu.index == x.index for x, _ in hits)][:3]
    fixes = []
    for x, reasons in hits:
        clock = f", SM {x.sm_clock_mhz:g} of {x.sm_clock_max_mhz:g} MHz" if x.sm_clock_mhz and x.sm_clock_max_mhz else ""
        power = f", {x.power_draw_w:g} W of {x.power_limit_w:g} W limit" if x.power_draw_w is not None and x.power_limit_w else ""
        temp = f", {x.temperature_c:g} C" if x.temperature_c is not None else ""
        state = f", performance state {x.performance_state}" if x.performance_state else ""
        evidence.append(f"GPU{x.index}{' ' + x.name if x.name else ''}: active {', '.join(reasons)}{clock}{power}{temp}{state}")
    kinds = {r for _, rs in hits for r in rs}
    ids = ",".join(str(x.index) for x, _ in hits)
    first = hits[0][0]
    if kinds & THERMAL:
        fixes.append(Fix("Cool the GPU: check fans/airflow and inlet temperature; see the slowdown thresholds",
                         f"nvidia-smi -i {ids} -q -d TEMPERATURE,PERFORMANCE"))
    if "sw_power_cap" in kinds:
        lowered = [x for x, _ in hits if x.power_limit_w and x.power_max_limit_w and x.power_limit_w < x.power_max_limit_w]
        if lowered:
            x = lowered[0]
            fixes.append(Fix(f"The power limit was lowered to {x.power_limit_w:g} W; restore the board maximum",
                             f"sudo nvidia-smi -i {x.index} -pl {x.power_max_limit_w:g}"))
        else:
            fixes.append(Fix("The GPU runs at its full power limit: expected under heavy load; check cooling and that the PSU delivers it",
                             f"nvidia-smi -i {ids} -q -d POWER"))
    if kinds & {"hw_slowdown", "hw_power_brake_slowdown"}:
        fixes.append(Fix("Hardware slowdown (power brake/PSU or overheating board): check power cables and PSU capacity",
                         f"nvidia-smi -i {ids} -q -d PERFORMANCE"))
    if "applications_clocks_setting" in kinds:
        fixes.append(Fix("Application/locked clocks pin the SM clock below its maximum: reset them",
                         f"sudo nvidia-smi -i {first.index} -rac && sudo nvidia-smi -i {first.index} -rgc"))
    return Outcome([Finding("perf.gpu_throttled", f"{len(hits)} GPU(s) throttled: {', '.join(sorted(kinds))}",
                            evidence, fixes, explains=["perf.high_latency"])])


def held_down(x: Gpu) -> bool:
    """Busy at a clock under CLOCK_SHARE of the one it reaches, with no reason recorded to say why."""
    busy = x.util_gpu is not None and x.util_gpu.max >= BUSY_UTIL
    return bool(busy and x.sm_clock_mhz and x.sm_clock_max_mhz and x.sm_clock_mhz < CLOCK_SHARE * x.sm_clock_max_mhz)


def _clock_drop(dropped: list[Gpu]) -> Finding:
    evidence = [f"GPU{x.index}{' ' + x.name if x.name else ''}: SM {x.sm_clock_mhz:g} MHz at {x.util_gpu.max:g} % utilization "  # type: ignore[union-attr]
                f"against {x.sm_clock_max_mhz:g} MHz it reaches ({x.sm_clock_mhz / x.sm_clock_max_mhz:.0%}; "  # type: ignore[operator]
                f"under {CLOCK_SHARE:.0%} while busy)" for x in dropped]
    ids = ",".join(str(x.index) for x in dropped)
    fixes = [Fix("The clock falls under load and the samples record no reason: read the clocks event reasons, power draw "
                 "against its limit and temperature while it serves (power cap, thermal slowdown, a stuck low-power state)",
                 f"nvidia-smi -i {ids} -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE"),
             Fix("If the clocks were locked or application clocks set, reset them",
                 f"sudo nvidia-smi -i {ids} -rgc && sudo nvidia-smi -i {ids} -rac")]
    return Finding("perf.gpu_throttled", f"{len(dropped)} GPU(s) clocked down under load: SM {dropped[0].sm_clock_mhz:g} of "
                   f"{dropped[0].sm_clock_max_mhz:g} MHz", evidence, fixes, explains=["perf.high_latency"])


def counts(x, reason: str) -> bool:
    """The reason holds the clock down (an idle board's power cap or a clock setting at the maximum does not)."""
    if reason in IGNORED:
        return False
    if reason == "sw_power_cap":
        # the driver reports the cap "active" on an idle board too; it throttles when the GPU draws
        # near its limit (the reading is an average, so somewhat below it) or is busy
        busy = x.util_gpu is not None and x.util_gpu.mean >= 50
        # no draw or utilization read: the performance state says whether it works (P0-P2 under load, P8 idle)
        if x.power_draw_w is None and x.util_gpu is None and x.performance_state in ("P0", "P1", "P2"):
            busy = True
        near = busy or (x.power_draw_w is not None and x.power_limit_w and x.power_draw_w >= NEAR_LIMIT * x.power_limit_w)
        lowered = x.power_limit_w and x.power_max_limit_w and x.power_limit_w < 0.95 * x.power_max_limit_w
        return bool(near or lowered)
    if reason == "applications_clocks_setting":
        return bool(x.sm_clock_mhz and x.sm_clock_max_mhz and x.sm_clock_mhz < 0.9 * x.sm_clock_max_mhz)
    return True


def _one_per_index(stated: list[Gpu]) -> list[Gpu]:
    """Several sentences about the same GPU are one GPU: its reasons together, the first value of each reading."""
    out: dict[int, Gpu] = {}
    for x in stated:
        mine = out.setdefault(x.index, Gpu(index=x.index))
        mine.throttle_reasons += [r for r in x.throttle_reasons if r not in mine.throttle_reasons]
        for name in ("sm_clock_mhz", "sm_clock_max_mhz", "power_draw_w", "power_limit_w", "temperature_c"):
            if getattr(mine, name) is None:
                setattr(mine, name, getattr(x, name))
    return list(out.values())
