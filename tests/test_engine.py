"""The check engine: declared inputs decide skip/blocked, crashes are findings, order comes from
declarations, selection is validated, events are handed over, and the deadline is kept."""

from __future__ import annotations

import time

import pytest

from llm_doctor import engine
from llm_doctor.engine import COVERAGE_ID, CheckSpec, Deadline, UnknownSelection, run_checks, select
from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent, LogFacts
from llm_doctor.findings import Finding, NotApplicable, Outcome
from llm_doctor.logview import LogView


def spec(id: str, layer: str, func, codes=(), needs=(), after=(), events=(), running=False) -> CheckSpec:
    return CheckSpec(id, layer, func, codes=tuple(codes), needs=tuple(needs), events=tuple(events), after=tuple(after),
                     running=running)


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


def by_id(results) -> dict:
    return {r.id: r for r in results}


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
    got = by_id(run_checks(Facts(), specs))
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


def test_a_crashed_check_is_an_error_finding() -> None:
    (r, cov) = run_checks(Facts(), [spec("l.crash", "load", crashes)])
    (f,) = r.findings
    assert (f.code, f.severity, f.check) == ("doctor.check_crashed", "error", "l.crash")
    assert f.evidence[0] == "RuntimeError: boom"
    assert any("in crashes" in line for line in f.evidence)
    assert cov.id == COVERAGE_ID


def test_a_log_without_sources_is_no_log() -> None:
    got = run_checks(Facts(logs=LogFacts()), [spec("l.needs_logs", "load", passes, needs=["logs"])])
    assert got[0].status == "skip"
    got = run_checks(Facts(logs=LogFacts(sources=["x.log"])), [spec("l.needs_logs", "load", passes, needs=["logs"])])
    assert got[0].status == "pass" and got[0].detail == "fine"


def test_events_are_handed_from_the_judged_run_and_only_declared_kinds() -> None:
    logs = LogFacts(sources=["x.log"], runs=2, events=[
        LogEvent("cuda_oom", line_no=3, run=0), LogEvent("preemption", line_no=9, run=1, fatal=False),
        LogEvent("nccl_error", line_no=12, run=1),
    ])
    seen: dict = {}

    def reads(facts: Facts, log: LogView) -> Outcome:
        seen["kinds"] = [e.kind for e in log.events()]
        seen["run"] = log.run
        with pytest.raises(ValueError, match="did not declare"):
            log.events("host_oom")
        return Outcome()

    run_checks(Facts(logs=logs), [spec("l.reads", "load", reads, events=["nccl_error", "cuda_oom", "preemption"])])
    assert seen == {"kinds": ["preemption", "nccl_error"], "run": 1}


def test_running_engine_checks_are_blocked_when_the_log_shows_a_crash() -> None:
    engine.load_checks()  # the load checks' declared kinds say which events mean "the engine failed"
    crashed = Facts(logs=LogFacts(sources=["x.log"], engine="vllm", events=[LogEvent("cuda_oom", source="x.log", line_no=7)]))
    got = by_id(run_checks(crashed, [spec("p.live", "perf", passes, running=True), spec("p.config", "perf", passes)]))
    assert got["p.live"].status == "blocked"
    assert got["p.live"].detail == "blocked: the engine log shows it failed (cuda_oom at x.log:7)"
    assert got["p.config"].status == "pass"
    served = Facts(logs=LogFacts(sources=["x.log"], engine="vllm",
                                 events=[LogEvent("error_line", values={"then_served": True})]))
    assert run_checks(served, [spec("p.live", "perf", passes, running=True)])[0].status == "pass"


def test_undeclared_code_is_a_check_error() -> None:
    got = run_checks(Facts(), [spec("a.x", "access", fails, codes=["access.key_missing"])])
    assert got[0].status == "error"
    assert "undeclared code(s) access.key_rejected" in got[0].detail
    assert got[0].findings[0].code == "doctor.check_crashed"


def test_timing_is_recorded() -> None:
    def slow(facts: Facts) -> Outcome:
        time.sleep(0.02)
        return Outcome()

    (r, _) = run_checks(Facts(), [spec("a.slow", "access", slow)])
    assert r.duration_ms >= 20


def test_deadline_skips_remaining_checks_and_says_so() -> None:
    d = Deadline(0.0)
    (r, cov) = run_checks(Facts(), [spec("a.x", "access", passes)], deadline=d)
    assert r.status == "skip" and "deadline" in r.detail
    assert [f.code for f in cov.findings] == ["doctor.input_incomplete"]
    assert cov.findings[0].evidence == ["not run: a.x"]


def test_deadline_reserve_leaves_time_for_the_checks() -> None:
    d = Deadline(60)
    sub = d.reserving()
    assert sub.end == pytest.approx(d.end - 5.0)
    assert Deadline(3).reserving().seconds == pytest.approx(2.5)
    assert Deadline(1).reserving().seconds == pytest.approx(0.75)


def test_select_orders_by_declarations_and_filters() -> None:
    specs = {
        s.id: s
        for s in [
            spec("p.one", "perf", passes),
            spec("l.one", "load", passes),
            spec("a.zz", "access", passes),
            spec("a.two", "access", passes, after=["a.zz"]),
            spec("d.inputs", "doctor", passes),
        ]
    }
    assert [s.id for s in select(specs)] == ["a.zz", "a.two", "l.one", "p.one", "d.inputs"]
    assert [s.id for s in select(specs, only=["access", "load"])] == ["a.zz", "a.two", "l.one", "d.inputs"]
    assert [s.id for s in select(specs, only=["access"], skip=["a.two"])] == ["a.zz", "d.inputs"]
    assert [s.id for s in select(specs, only=["p.one"])] == ["p.one", "d.inputs"]


def test_select_rejects_what_it_does_not_know() -> None:
    specs = {s.id: s for s in [spec("load.kv_cache", "load", passes)]}
    with pytest.raises(UnknownSelection, match="'bogus' is neither a layer"):
        select(specs, only=["bogus"])
    with pytest.raises(UnknownSelection, match="did you mean load.kv_cache"):
        select(specs, skip=["load.kv_cach"])


def test_register_rejects_bad_layer_unknown_code_and_unknown_section() -> None:
    with pytest.raises(ValueError):
        engine.check("x.y", "network")
    with pytest.raises(KeyError):
        engine.check("x.y", "access", codes=["access.bogus"])
    with pytest.raises(ValueError, match="unknown facts section"):
        engine.check("x.y", "access", needs=["logz"])


def test_all_real_checks_load_and_declare_their_inputs() -> None:
    specs = engine.load_checks()
    assert all(s.layer in ("access", "load", "cluster", "perf", "gate", "doctor") for s in specs.values())
    assert "logs" in specs["load.gpu_oom"].needs and "cuda_oom" in specs["load.gpu_oom"].events
    # metrics: an nccl-tests run's busbw; stated: a busbw a person gives in words (checks/perf/interconnect.py)
    assert specs["perf.interconnect"].any_of == ("gpus", "logs", "metrics", "stated")
