"""The check engine: layer order, skip vs blocked vs error, timing, selection, deadline."""

from __future__ import annotations

import time

import pytest

from doctor import engine
from doctor.engine import CheckSpec, Deadline, run_checks, select
from doctor.facts import Facts
from doctor.facts.logs import LogFacts
from doctor.findings import Finding, NotApplicable, Outcome


def spec(id: str, layer: str, func, codes=(), needs=(), after=()) -> CheckSpec:
    return CheckSpec(id, layer, func, tuple(codes), tuple(needs), tuple(after))


def fails(facts: Facts) -> list[Finding]:
    return [Finding("access.key_rejected", "key rejected", ["HTTP 401"])]


def passes(facts: Facts) -> Outcome:
    return Outcome(detail="fine")


def crashes(facts: Facts) -> Outcome:
    raise RuntimeError("boom")


def not_applicable(facts: Facts) -> Outcome:
    raise NotApplicable("no log given")


def warns(facts: Facts) -> list[Finding]:
    return [Finding("perf.low_gpu_util", "GPU idle", severity="warn")]


def test_statuses_and_blocking() -> None:
    specs = [
        spec("a.key", "access", fails, codes=["access.key_rejected"]),
        spec("a.model", "access", passes, after=["a.key"]),
        spec("a.after_model", "access", passes, after=["a.model"]),
        spec("l.crash", "load", crashes),
        spec("l.needs_logs", "load", passes, needs=["logs"]),
        spec("l.na", "load", not_applicable),
        spec("l.after_na", "load", passes, after=["l.na"]),
        spec("p.warn", "perf", warns),
        spec("p.after_crash", "perf", passes, after=["l.crash"]),
    ]
    got = {r.id: r for r in run_checks(Facts(), specs)}
    assert got["a.key"].status == "fail"
    assert got["a.key"].findings[0].check == "a.key"
    assert got["a.model"].status == "blocked"
    assert got["a.model"].detail == "blocked: a.key fail"
    assert got["a.after_model"].status == "blocked"  # blocked propagates
    assert got["l.crash"].status == "error"
    assert "RuntimeError: boom" in got["l.crash"].detail
    assert got["l.needs_logs"].status == "skip"
    assert got["l.needs_logs"].detail == "no logs facts"
    assert got["l.na"].status == "skip" and got["l.na"].detail == "no log given"
    assert got["l.after_na"].status == "skip"
    assert got["p.warn"].status == "warn"
    assert got["p.after_crash"].status == "blocked"


def test_needs_met_runs_the_check() -> None:
    got = run_checks(Facts(logs=LogFacts()), [spec("l.needs_logs", "load", passes, needs=["logs"])])
    assert got[0].status == "pass" and got[0].detail == "fine"


def test_undeclared_code_is_a_check_error() -> None:
    got = run_checks(Facts(), [spec("a.x", "access", fails, codes=["access.key_missing"])])
    assert got[0].status == "error"
    assert "undeclared code(s) access.key_rejected" in got[0].detail


def test_timing_is_recorded() -> None:
    def slow(facts: Facts) -> Outcome:
        time.sleep(0.02)
        return Outcome()

    (r,) = run_checks(Facts(), [spec("a.slow", "access", slow)])
    assert r.duration_ms >= 20


def test_deadline_skips_remaining_checks() -> None:
    d = Deadline(0.0)
    (r,) = run_checks(Facts(), [spec("a.x", "access", passes)], deadline=d)
    assert r.status == "skip" and "deadline" in r.detail


def test_select_orders_by_layer_and_filters() -> None:
    specs = {
        s.id: s
        for s in [
            spec("p.one", "perf", passes),
            spec("l.one", "load", passes),
            spec("a.one", "access", passes),
            spec("a.two", "access", passes),
        ]
    }
    assert [s.id for s in select(specs)] == ["a.one", "a.two", "l.one", "p.one"]
    assert [s.id for s in select(specs, only=["access", "load"])] == ["a.one", "a.two", "l.one"]
    assert [s.id for s in select(specs, only=["access"], skip=["a.two"])] == ["a.one"]
    assert [s.id for s in select(specs, only=["p.one"])] == ["p.one"]


def test_register_rejects_bad_layer_and_unknown_code() -> None:
    with pytest.raises(ValueError):
        engine.check("x.y", "network")
    with pytest.raises(KeyError):
        engine.check("x.y", "access", codes=["access.bogus"])


def test_all_real_checks_load() -> None:
    specs = engine.load_checks()
    assert all(s.layer in ("access", "load", "perf") for s in specs.values())
