"""Runs checks in the order their declarations give, under one deadline, and sees what nobody judged.

A check is registered with `@check(...)` and declares what it judges: the Facts sections it needs
(all of them), or any one of (`any_of`), the log event kinds it reads (`events`), the checks it
comes after, and whether it judges a running engine (`running`). The engine, not the check,
decides from those declarations: `skip` when a declared input is missing, `blocked` when a check it
comes after failed or, for a `running` check, when the log shows the engine crashed or never
started. It hands each check the events it declared, from the run being diagnosed (a LogView).

Because every check says what it reads, the engine can also see what no check judged: a fatal log
event no check turned into a finding, or a failure no rule recognised (an uncaught exception, an
ERROR line that ends a run, a crash signal) becomes a `*.unrecognized_failure` finding, a check
that raises becomes `doctor.check_crashed`, and checks the deadline cut are `doctor.input_incomplete`.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from llm_doctor.codes import LAYERS, info
from llm_doctor.facts import Facts
from llm_doctor.findings import Finding, NotApplicable, Outcome
from llm_doctor.logparse.failures import KINDS as GENERIC_FAILURES
from llm_doctor.logview import LogView, judged_run, where

CheckFunc = Callable[..., "Outcome | list[Finding]"]

FAILED = ("fail", "blocked", "error")
COVERAGE_ID = "doctor.coverage"


def _has_deployment(facts: Facts) -> bool:
    if facts.deployment is not None and facts.deployment.engine:
        return True
    return any(p.config is not None and p.config.engine for p in (facts.host.processes if facts.host else []))


# a section is present when it holds something to judge, not merely when it is not None
SECTIONS: dict[str, Callable[[Facts], bool]] = {
    "settings": lambda f: f.settings is not None,
    "endpoint": lambda f: f.endpoint is not None,
    "logs": lambda f: f.logs is not None and bool(f.logs.sources),
    "deployment": _has_deployment,
    "model": lambda f: f.model is not None,
    "gpus": lambda f: f.gpus is not None and f.gpus.available and bool(f.gpus.gpus),
    "host": lambda f: f.host is not None,
    "metrics": lambda f: f.metrics is not None,
    "plan": lambda f: f.plan is not None,
    "cluster": lambda f: f.cluster is not None,
    "gate": lambda f: f.gate is not None and bool(f.gate.requirements),  # llm-doctor.toml [requirements]
    "ready": lambda f: f.ready is not None,  # --wait-ready
    "gaps": lambda f: True,
    "stated": lambda f: bool(f.stated),  # perf symptoms stated in words (doctor/logparse/perf_prose.py)
    "said": lambda f: bool(f.said),  # load/access failures stated in words (doctor/logparse/failure_prose.py)
}


@dataclass(frozen=True)
class CheckSpec:
    id: str
    layer: str
    func: CheckFunc
    codes: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    running: bool = False
    per_node: bool = False
    title: str = ""

    def inputs(self) -> str:
        """The declaration in words, for `llm-doctor checks`."""
        parts = [", ".join(self.needs)] if self.needs else []
        if self.any_of:
            parts.append("any of " + "/".join(self.any_of))
        if self.events:
            parts.append("events " + ", ".join(self.events))
        if self.running:
            parts.append("a running engine")
        if self.per_node:
            parts.append("also each Ray node's own")
        return "; ".join(parts) or "-"


@dataclass
class CheckResult:
    id: str
    layer: str
    status: str  # pass | warn | fail | skip | blocked | error
    duration_ms: float = 0.0
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)


REGISTRY: dict[str, CheckSpec] = {}


def check(
    id: str,
    layer: str,
    codes: Iterable[str] = (),
    needs: Iterable[str] = (),
    any_of: Iterable[str] = (),
    events: Iterable[str] = (),
    after: Iterable[str] = (),
    running: bool = False,
    per_node: bool = False,
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check. `codes`: the finding codes it may emit; `needs`: Facts sections that must all
    be present; `any_of`: sections of which one must be; `events`: the log event kinds it judges (it
    then needs a log, unless `any_of` names another way, and is called as func(facts, log_view));
    `after`: check ids whose failure blocks it; `running`: it judges a running engine, so it is
    blocked when the log shows the engine failed; `per_node`: it judges one machine's own GPUs and host,
    so with a Ray cluster (`run --ray`) it also runs on each node's facts and names the node."""
    if layer not in LAYERS:
        raise ValueError(f"layer {layer!r} is not one of {LAYERS}")
    codes, needs, any_of, events = tuple(codes), tuple(needs), tuple(any_of), tuple(events)
    for code in codes:
        info(code)
    for name in needs + any_of:
        if name not in SECTIONS:
            raise ValueError(f"check {id!r}: unknown facts section {name!r}")
    if events and "logs" not in needs + any_of:
        needs += ("logs",)

    def register(func: CheckFunc) -> CheckFunc:
        if id in REGISTRY and REGISTRY[id].func is not func:
            raise ValueError(f"check {id!r} registered twice")
        doc = (func.__doc__ or "").strip().splitlines()
        REGISTRY[id] = CheckSpec(id, layer, func, codes, needs, any_of, events, tuple(after), running, per_node,
                                 doc[0] if doc else "")
        return func

    return register


def load_checks() -> dict[str, CheckSpec]:
    """Import every module under checks/ so their @check decorators run."""
    import llm_doctor.checks as checks

    for mod in pkgutil.walk_packages(checks.__path__, prefix="llm_doctor.checks."):
        importlib.import_module(mod.name)
    return REGISTRY


class Deadline:
    """One overall deadline shared by collectors and checks, so the doctor never hangs."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def cap(self, timeout: float) -> float:
        """A per-request timeout that never runs past the deadline (at least 50 ms)."""
        return max(0.05, min(timeout, self.remaining()))

    def reserving(self, share: float = 0.1, least: float = 0.5, most: float = 5.0) -> Deadline:
        """The part of this deadline collectors may spend: the rest (a tenth, at least half a second
        but never more than a quarter, at most 5 s) is kept for the checks and the report, so a
        scan or a probe cut by the deadline is still judged."""
        keep = min(most, max(least, self.seconds * share), self.seconds / 4)
        sub = Deadline(self.seconds)
        sub.seconds = self.seconds - keep
        sub.end = self.end - keep
        return sub


class UnknownSelection(ValueError):
    """--only/--skip named something that is neither a layer nor a check id (a usage error)."""


def select(specs: dict[str, CheckSpec], only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[CheckSpec]:
    """Checks in declaration order (layers in order; within a layer, a check after those it names,
    then by id). `only` names layers or check ids; `skip` names check ids or layers. The doctor's
    own checks (layer `doctor`) always run unless skipped by id: they say what was not read."""
    only, skip = set(only), set(skip)
    known = set(LAYERS) | set(specs)
    for name in sorted(only | skip):
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else "; see `llm-doctor checks`"
            raise UnknownSelection(f"--only/--skip: {name!r} is neither a layer ({', '.join(LAYERS)}) nor a check id{hint}")
    chosen = {
        s.id: s
        for s in specs.values()
        if (not only or s.layer in only or s.id in only or s.layer == "doctor") and s.id not in skip and s.layer not in skip
    }
    return _ordered(chosen)


def _ordered(chosen: dict[str, CheckSpec]) -> list[CheckSpec]:
    out: list[CheckSpec] = []
    placed: set[str] = set()

    def place(spec: CheckSpec, path: tuple[str, ...] = ()) -> None:
        if spec.id in placed:
            return
        if spec.id in path:
            raise ValueError(f"checks depend on each other in a cycle: {' -> '.join(path + (spec.id,))}")
        for dep in sorted(spec.after):
            if dep in chosen and LAYERS.index(chosen[dep].layer) <= LAYERS.index(spec.layer):
                place(chosen[dep], path + (spec.id,))
        placed.add(spec.id)
        out.append(spec)

    for spec in sorted(chosen.values(), key=lambda s: (LAYERS.index(s.layer), s.id)):
        place(spec)
    return out


def run_checks(
    facts: Facts,
    specs: list[CheckSpec],
    deadline: Deadline | None = None,
    on_layer: Callable[[str], None] | None = None,
) -> list[CheckResult]:
    results: dict[str, CheckResult] = {}
    layer = ""
    failed_engine = engine_failure(facts)
    for spec in specs:
        if on_layer and spec.layer != layer:
            layer = spec.layer
            on_layer(layer)
        results[spec.id] = _run_one(spec, facts, results, deadline, failed_engine)
        if spec.per_node and facts.cluster:
            _add_node_results(results[spec.id], spec, facts, results, deadline, failed_engine)
    results[COVERAGE_ID] = coverage(facts, specs, list(results.values()))
    return list(results.values())


def _run_one(
    spec: CheckSpec, facts: Facts, done: dict[str, CheckResult], deadline: Deadline | None, failed_engine: str
) -> CheckResult:
    def result(status: str, detail: str, findings: list[Finding] | None = None, ms: float = 0.0) -> CheckResult:
        return CheckResult(spec.id, spec.layer, status, round(ms, 2), detail, findings or [])

    for dep in spec.after:
        prior = done.get(dep)
        if prior and prior.status in FAILED:
            return result("blocked", f"blocked: {dep} {prior.status}")
        if prior and prior.status == "skip":
            return result("skip", f"not checked: {dep} was not checked")
    if spec.running and failed_engine:
        return result("blocked", f"blocked: {failed_engine}")
    missing = [n for n in spec.needs if not SECTIONS[n](facts)]
    if spec.any_of and not any(SECTIONS[n](facts) for n in spec.any_of):
        missing.append(" or ".join(spec.any_of))
    if missing:
        return result("skip", "no " + ", ".join(missing) + " facts")
    if deadline and deadline.expired():
        return result("skip", f"not checked: the {deadline.seconds:g} s deadline was reached")
    args: tuple[Any, ...] = (facts,)
    if spec.events:
        args += (LogView(facts.logs, frozenset(spec.events)) if SECTIONS["logs"](facts) else None,)  # type: ignore[arg-type]
    start = time.perf_counter()
    try:
        out = spec.func(*args)
    except NotApplicable as exc:
        return result("skip", str(exc), ms=(time.perf_counter() - start) * 1000)
    except Exception as exc:  # a crashing check must not take the others down; it is a finding
        ms = (time.perf_counter() - start) * 1000
        return result("error", f"check crashed: {type(exc).__name__}: {exc}", [crashed(spec, exc)], ms)
    ms = (time.perf_counter() - start) * 1000
    if isinstance(out, list):
        out = Outcome(findings=out)
    undeclared = [f.code for f in out.findings if spec.codes and f.code not in spec.codes]
    if undeclared:
        exc = ValueError(f"check emitted undeclared code(s) {', '.join(undeclared)}")
        return result("error", str(exc), [crashed(spec, exc)], ms)
    for f in out.findings:
        f.check = spec.id
    severities = {f.severity for f in out.findings}
    status = "fail" if "error" in severities else "warn" if "warn" in severities else "pass"
    detail = out.detail or "; ".join(f.title for f in out.findings) or "ok"
    return result(status, detail, out.findings, ms)


def _add_node_results(
    row: CheckResult, spec: CheckSpec, facts: Facts, done: dict[str, CheckResult], deadline: Deadline | None, failed_engine: str
) -> None:
    """Run a node-local check on each answering Ray node's own GPUs and host, and add what it finds
    to the check's row, each finding named by its node. A node's finding that repeats one from this
    machine's own facts (the head node is usually this machine) is not added twice."""
    assert facts.cluster is not None
    seen = {(f.code, f.title) for f in row.findings}
    added = False
    for node in facts.cluster.nodes.values():
        if node.error or (node.gpus is None and node.host is None):
            continue
        one = _run_one(spec, replace(facts, gpus=node.gpus, host=node.host, cluster=None), done, deadline, failed_engine)
        for f in one.findings:
            if (f.code, f.title) not in seen:
                f.node, f.title = node.label, f"{node.label}: {f.title}"
                row.findings.append(f)
                added = True
    if added:
        severities = {f.severity for f in row.findings}
        row.status = "fail" if "error" in severities else "warn" if "warn" in severities else "pass"
        row.detail = "; ".join(f.title for f in row.findings)


def crashed(spec: CheckSpec, exc: BaseException) -> Finding:
    frames = traceback.extract_tb(exc.__traceback__)
    where = [f"raised at {fr.filename.rsplit('/', 2)[-2:][-1]}:{fr.lineno} in {fr.name}" for fr in frames[-2:]]
    return Finding(
        "doctor.check_crashed",
        f"check {spec.id} crashed: its question ({spec.title or spec.id}) is unanswered",
        [f"{type(exc).__name__}: {exc}", *where],
        check=spec.id,
    )


def engine_failure(facts: Facts) -> str:
    """Why the engine is not running, as the log shows it ("" when it does not show that): the run
    being diagnosed has a fatal event a load check judges, or a failure that ended the run."""
    logs = facts.logs
    if logs is None or not logs.sources or logs.engine == "client":
        return ""
    load_kinds = {k for s in REGISTRY.values() if s.layer == "load" for k in s.events}
    run = judged_run(logs)
    said = {st.where for st in facts.stated}
    # the engine's own serving-time signal (a preemption, a full-cache retry): it ran, serving requests
    serving = any(e.run == run and e.kind in SERVING_SIGNALS for e in logs.events)
    for e in logs.events:
        if e.run != run or not e.fatal:
            continue
        if e.kind in load_kinds or (e.kind in GENERIC_FAILURES and not e.values.get("then_served") and not _said_running(e, said)
                                    and not _served_beside(e, serving)):
            return f"the engine log shows it failed ({e.kind} at {e.source}:{e.line_no})"
    return ""


SERVING_SIGNALS = ("preemption", "decode_retract")


def _served_beside(e, serving: bool) -> bool:
    """A failure line no rule knows (an error_line: words, no exception, no signal) in a run whose engine printed its
    serving-time signals, that says nothing of the engine going down: the perf checks judge what it did while it served."""
    from llm_doctor.logparse.failures import ENGINE_DOWN

    return serving and e.kind == "error_line" and not ENGINE_DOWN.search(str(e.values.get("summary", "")))


def _said_running(e, said: set[str]) -> bool:
    """A person's sentence about a failure that quotes no error, or that states a perf problem (a statement of
    doctor/logparse/perf_prose.py on the same line: "the GB10 low-power stuck-state failure"), and does not say the
    engine went down: no log line shows the engine stopped, so the perf checks still judge what it did while it ran."""
    from llm_doctor.logparse.failures import ENGINE_DOWN, PROSE_CASCADE

    sentence = e.values.get("cascade") == PROSE_CASCADE or where(e) in said
    return sentence and not ENGINE_DOWN.search(str(e.values.get("summary", "")))


def coverage(facts: Facts, specs: list[CheckSpec], results: list[CheckResult]) -> CheckResult:
    """What no check judged: failures in the log nobody turned into a finding, checks the deadline
    cut, input that showed nothing of the run when nothing else was found. Runs after every check, so
    it knows what they found."""
    from llm_doctor import unrecognized

    start = time.perf_counter()
    findings = unrecognized.findings(facts, specs, results, REGISTRY)
    cut = [r.id for r in results if r.status == "skip" and "deadline was reached" in r.detail]
    if cut:
        findings.append(Finding(
            "doctor.input_incomplete",
            f"{len(cut)} check(s) did not run: the deadline was reached",
            [f"not run: {', '.join(cut)}"],
            check=COVERAGE_ID,
        ))
    unseen = [g for g in facts.gaps if g.unless_judged]
    if unseen and not findings and not any(r.findings for r in results):
        findings.append(Finding(
            "doctor.input_incomplete",
            "nothing in the input shows how the run went: it was not judged",
            [f"{g.source}: {g.reason}" for g in unseen],
            check=COVERAGE_ID,
        ))
    if not any(f.layer != "doctor" for r in results for f in r.findings):
        from llm_doctor import guessed

        findings += guessed.findings(facts, findings)  # a failure report's words, where nothing else named a cause
    for f in findings:
        f.check = f.check or COVERAGE_ID
    severities = {f.severity for f in findings}
    status = "fail" if "error" in severities else "warn" if "warn" in severities else "pass"
    detail = "; ".join(f.title for f in findings) or "every failure in the input was judged by a check"
    return CheckResult(COVERAGE_ID, "doctor", status, round((time.perf_counter() - start) * 1000, 2), detail, findings)
