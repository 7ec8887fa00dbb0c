"""The guess tier's finding: a code named from the words of a failure report, when nothing else was found.

doctor/logparse/worded.py scores every code's symptom nouns over a text that states a failure
(facts.guessed). The coverage pass (doctor/engine.py) turns the best guess into a finding only when
no check, no statement and no unrecognised failure gave one: a rule's or a sentence's finding always
says more than a count of nouns. The finding is of the evidence tier "guess" (ranked below every
other diagnosis, above the doctor's own state), at warn: it rests on no error line, so its evidence
says so, names the words it rests on, and its first fix is the output that would confirm it. A perf
code guessed is info: a perf warning rests on a measured figure or the engine's own statement, and
words alone ("TTFT", "slow") are as often a healthy run's report or an improvement's as a complaint.
"""

from __future__ import annotations

from llm_doctor.checks.load.stated import ABOUT as FAILURES
from llm_doctor.checks.load.stated import ENGINE_LOG, PROBE
from llm_doctor.checks.perf.stated import ABOUT as PERF
from llm_doctor.facts import Facts
from llm_doctor.findings import GUESS, Finding

NO_LINE = "named from the words of the report, no error line: no log line, probe output or sentence the rules read shows it (evidence tier: guess)"


def findings(facts: Facts, found: list[Finding]) -> list[Finding]:
    """The best guess of the texts read, as one finding, or none. `found`: what the coverage pass found before it
    (no check found anything): a guess is made where that is only the doctor's own state, or an unrecognised
    failure read from a person's sentence alone ("I always get a 404 error"), which the guess then explains (the
    words name its cause); a failure a program printed that no rule placed is left as it is."""
    placed = [f for f in found if f.layer != "doctor"]
    if not facts.guessed or any(not f.code.endswith(".unrecognized_failure") for f in placed):
        return []
    if placed and not _sentences_only(facts):
        return []
    best = max(facts.guessed, key=lambda g: g.score)  # (max keeps the first of equals: the earlier text's)
    if best.code in FAILURES:
        what, fix = FAILURES[best.code]
        fixes = ([fix] if fix else []) + [ENGINE_LOG if best.code.startswith("load.") else PROBE]
    elif best.code in PERF:
        what, _, perf_fix = PERF[best.code]
        fixes = [perf_fix]
    else:
        return []
    others = [g.code for g in facts.guessed if g.code != best.code]
    evidence = [f"{best.where}: {best.text}", f"the words it rests on: {', '.join(best.words)} (weight {best.score})", NO_LINE]
    if others:
        evidence.append(f"also named, by fewer words: {', '.join(dict.fromkeys(others))}")
    title = f"{what.replace(' is said ', ' seems ').replace(' are said ', ' seem ')}, by the words of the report (a guess)"
    severity = "info" if best.code in PERF else "warn"
    return [Finding(best.code, title, evidence, fixes, severity=severity, explains=[f.code for f in placed], tier=GUESS)]


def _sentences_only(facts: Facts) -> bool:
    """Every generic failure of the judged run is a person's sentence that quotes no error (failures.PROSE_CASCADE)."""
    from llm_doctor.logparse.failures import KINDS, PROSE_CASCADE
    from llm_doctor.logview import judged_run

    logs = facts.logs
    if logs is None:
        return False
    run = judged_run(logs)
    failures = [e for e in logs.events if e.run == run and (e.fatal or e.kind in KINDS)]
    return bool(failures) and all(e.values.get("cascade") == PROSE_CASCADE for e in failures)
