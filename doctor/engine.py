"""Runs checks in layer order under one deadline.

Checks are registered with `@check(...)`: an id, a layer, the Facts sections they need and the
checks they come after. A check whose needed facts are absent is `skip`; one whose dependency
failed is `blocked` (never `pass`: "model not found" cannot be judged when the key was rejected);
one that raises is `error` and the rest go on. Each check is timed.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from doctor.codes import LAYERS, info
from doctor.facts import Facts
from doctor.findings import Finding, NotApplicable, Outcome

CheckFunc = Callable[[Facts], "Outcome | list[Finding]"]

FAILED = ("fail", "blocked", "error")


@dataclass(frozen=True)
class CheckSpec:
    id: str
    layer: str
    func: CheckFunc
    codes: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    title: str = ""


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
    id: str, layer: str, codes: Iterable[str] = (), needs: Iterable[str] = (), after: Iterable[str] = ()
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check function. `codes` are the finding codes it may emit (listed by
    `llm-doctor checks`); `needs` are Facts attribute names that must be present; `after` are
    check ids whose failure blocks this one."""
    if layer not in LAYERS:
        raise ValueError(f"layer {layer!r} is not one of {LAYERS}")
    codes = tuple(codes)
    for code in codes:
        info(code)

    def register(func: CheckFunc) -> CheckFunc:
        if id in REGISTRY and REGISTRY[id].func is not func:
            raise ValueError(f"check {id!r} registered twice")
        doc = (func.__doc__ or "").strip().splitlines()
        REGISTRY[id] = CheckSpec(id, layer, func, codes, tuple(needs), tuple(after), doc[0] if doc else "")
        return func

    return register


def load_checks() -> dict[str, CheckSpec]:
    """Import every module under checks/ so their @check decorators run."""
    import checks

    for mod in pkgutil.walk_packages(checks.__path__, prefix="checks."):
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


def select(specs: dict[str, CheckSpec], only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[CheckSpec]:
    """Checks in layer order, registration order within a layer. `only` names layers or check
    ids; `skip` names check ids (or layers)."""
    only, skip = set(only), set(skip)
    chosen = [
        s
        for s in specs.values()
        if (not only or s.layer in only or s.id in only) and s.id not in skip and s.layer not in skip
    ]
    return sorted(chosen, key=lambda s: LAYERS.index(s.layer))


def run_checks(
    facts: Facts,
    specs: list[CheckSpec],
    deadline: Deadline | None = None,
    on_layer: Callable[[str], None] | None = None,
) -> list[CheckResult]:
    results: dict[str, CheckResult] = {}
    layer = ""
    for spec in specs:
        if on_layer and spec.layer != layer:
            layer = spec.layer
            on_layer(layer)
        results[spec.id] = _run_one(spec, facts, results, deadline)
    return list(results.values())


def _run_one(spec: CheckSpec, facts: Facts, done: dict[str, CheckResult], deadline: Deadline | None) -> CheckResult:
    def result(status: str, detail: str, findings: list[Finding] | None = None, ms: float = 0.0) -> CheckResult:
        return CheckResult(spec.id, spec.layer, status, round(ms, 2), detail, findings or [])

    for dep in spec.after:
        prior = done.get(dep)
        if prior and prior.status in FAILED:
            return result("blocked", f"blocked: {dep} {prior.status}")
        if prior and prior.status == "skip":
            return result("skip", f"not checked: {dep} was not checked")
    missing = [n for n in spec.needs if getattr(facts, n, None) is None]
    if missing:
        return result("skip", "no " + ", ".join(missing) + " facts")
    if deadline and deadline.expired():
        return result("skip", f"not checked: the {deadline.seconds:g} s deadline was reached")
    start = time.perf_counter()
    try:
        out = spec.func(facts)
    except NotApplicable as exc:
        return result("skip", str(exc), ms=(time.perf_counter() - start) * 1000)
    except Exception as exc:  # a crashing check must not take the others down
        return result("error", f"check crashed: {type(exc).__name__}: {exc}", ms=(time.perf_counter() - start) * 1000)
    ms = (time.perf_counter() - start) * 1000
    if isinstance(out, list):
        out = Outcome(findings=out)
    undeclared = [f.code for f in out.findings if spec.codes and f.code not in spec.codes]
    if undeclared:
        return result("error", f"check emitted undeclared code(s) {', '.join(undeclared)}", ms=ms)
    for f in out.findings:
        f.check = spec.id
    severities = {f.severity for f in out.findings}
    status = "fail" if "error" in severities else "warn" if "warn" in severities else "pass"
    detail = out.detail or "; ".join(f.title for f in out.findings) or "ok"
    return result(status, detail, out.findings, ms)
