"""Did the server become ready within `--wait-ready`?

A pipeline that starts an engine and finds it not answering needs to know why: still loading
(a 503 from the health route, give it longer), nothing listening (wrong port, or it died), or
crashed. When a start-up log was given, the log's own diagnosis is ranked before this finding
(every load-layer cause explains `access.not_ready`), and this one quotes the log's last failure,
so a crash reads as the crash, not as "timed out".
"""

from __future__ import annotations

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.gate import ReadyFacts
from llm_doctor.findings import Finding, Fix, Outcome

SHOWN = 8  # the last observations quoted


@check("access.ready", "access", codes=["access.not_ready"], needs=("ready",))
def ready(facts: Facts) -> Outcome:
    """The endpoint answered its health route and /models within --wait-ready."""
    r = facts.ready or ReadyFacts()
    if r.ready:
        return Outcome(detail=f"ready after {r.waited_s:g} s ({r.polls} poll(s))")
    last = r.seen[-1] if r.seen else None
    seen = f"{last.url}: {last.seen}" if last else "nothing"
    evidence = [f"{p.at_s:g} s: {p.url}: {p.seen}" for p in r.seen[-SHOWN:]]
    evidence += _log_state(facts)
    title = f"the endpoint was not ready after {r.waited_s:g} s of --wait-ready {r.timeout_s:g}: last seen {seen}"
    if r.stopped:
        title = f"--wait-ready stopped waiting after {r.waited_s:g} s: {r.stopped}; last seen {seen}"
        evidence.insert(0, r.stopped)
    return Outcome([Finding("access.not_ready", title, evidence, _fixes(r, facts),
                            explains=["access.connect_failed", "access.server_error", "access.timeout"])])  # fmt: skip


def _log_state(facts: Facts) -> list[str]:
    logs = facts.logs
    if logs is None or not logs.sources:
        return ["no start-up log was given (--log, --docker or --k8s would show why it is not up)"]
    where = ", ".join(logs.sources)
    fatal = [e for e in logs.events if e.fatal and e.run == logs.runs - 1]
    if fatal:
        e = fatal[-1]
        line = e.lines[0] if e.lines else e.kind
        return [f"the start-up log ({where}) shows the engine failed: {e.kind} at line {e.line_no}: {line}",
                "its diagnosis is the finding ranked above this one"]  # fmt: skip
    if logs.ready:
        return [f"the start-up log ({where}) shows the engine serving: the base URL may not point at it"]
    if logs.started:
        return [f"the start-up log ({where}) shows the engine starting, with no failure and no ready line yet: still loading"]
    return [f"the start-up log ({where}) does not show the engine starting"]


def _fixes(r: ReadyFacts, facts: Facts) -> list[Fix]:
    last = r.seen[-1] if r.seen else None
    longer = Fix(f"If it is still loading, wait longer (this wait: {r.timeout_s:g} s)", f"--wait-ready {r.timeout_s * 2:g}")
    if facts.logs is not None and any(e.fatal for e in facts.logs.events):
        return [Fix("Fix the start-up failure ranked above; the server will not come up until then")]
    if r.stopped.startswith("the base URL"):
        return [Fix("Fix the base URL (see access.base_url)")]
    if r.stopped:
        return [Fix("Read why it stopped: its log (it was read when --docker/--k8s names it; --previous for a restarted pod)")]
    if last is not None and last.status is not None:  # answering, but not ready (503 while loading, 5xx)
        return [longer]
    return [
        Fix("Nothing answered: check that the engine is running and listens on the host and port of --base-url "
            "(vLLM --host 0.0.0.0 --port, a container's published port)"),
        longer,
        Fix("Read the engine's start-up log to see whether it crashed", "--log server.log  (or --docker NAME, --k8s POD)"),
    ]  # fmt: skip
