"""Was all of the input read? A cut log is judged on what was read, and the report says what was not.

The collectors record every gap (facts.gaps): a log cut by the deadline, a truncated gzip, an
unreadable file among several, a text of which no line is anything the doctor reads (a text that states
a failure anywhere, in a log line or in a sentence around a pasted error, is read: doctor.logparse.failures
finds it, and it is judged). The report status becomes `incomplete` through this finding, so a
deploy gate never passes on input it could not finish. Where the collector measured its speed, the
fix is the deadline that would have read it all.
"""

from __future__ import annotations

import math

from llm_doctor.engine import check
from llm_doctor.facts import Facts
from llm_doctor.facts.inputs import InputGap
from llm_doctor.findings import Finding, Fix, Outcome

MIB = 1024 * 1024


@check("doctor.inputs", "doctor", codes=["doctor.input_incomplete"], needs=("gaps",))
def inputs(facts: Facts) -> Outcome:
    """Every input was read to its end. A gap that matters only when nothing was found is the
    coverage pass's (doctor.engine.coverage): it knows what the checks found."""
    gaps = [g for g in facts.gaps if not g.unless_judged]
    if not gaps:
        return Outcome(detail="every input was read to its end")
    evidence = [_describe(g) for g in gaps]
    fixes = []
    deadline = _deadline_for_all(gaps)
    if deadline:
        fixes.append(Fix(f"Give the scan time to read everything (about {deadline} s at the speed measured)", f"--deadline {deadline}"))
    files = [g.source for g in gaps if g.bytes_total]
    if files:
        fixes.append(Fix("Or hand over only the end, where the crash is", f"tail -c 64M {files[0]} > last.log && llm-doctor analyze last.log"))
    title = f"part of the input was not read or could not be judged ({len(gaps)} source(s)): the diagnosis rests on the rest"
    return Outcome([Finding("doctor.input_incomplete", title, evidence, fixes)])


def _describe(g: InputGap) -> str:
    read = f"{g.bytes_read / MIB:.1f} MiB read" if g.bytes_read is not None else ""
    total = f" of {g.bytes_total / MIB:.1f} MiB" if g.bytes_total else ""
    spent = f" in {g.seconds:.1f} s" if g.seconds else ""
    amount = f" ({read}{total}{spent})" if read else ""
    return f"{g.source}: {g.reason}{amount}"


def _deadline_for_all(gaps: list[InputGap]) -> int | None:
    """Seconds a full read would take at the measured speed, with a quarter more for the checks."""
    need = 0.0
    for g in gaps:
        if not (g.bytes_total and g.bytes_read and g.seconds):
            return None
        need += g.bytes_total / (g.bytes_read / g.seconds)
    return int(math.ceil(need * 1.25 / 10) * 10) if need else None
