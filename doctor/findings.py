"""Finding and Fix: what a check concludes, in the shape of the JSON report contract.

A check returns findings; the engine stamps them with the check id, and the report ranks them.
`explains` lets a root cause name the codes of the symptoms it accounts for, so ranking can put
the cause first ("memory held by another process" before "KV cache too small").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_doctor.codes import info

SEVERITIES = ("error", "warn", "info")
# the evidence tier of a finding that rests on a person's sentence, not on a log line or a probe
# (doctor/logparse/perf_prose.py, failure_prose.py): the report ranks it below every other finding
STATEMENT = "statement"
# the tier below it: a code named from the symptom words of a whole failure report that no rule or sentence places
# (doctor/logparse/worded.py, doctor/guessed.py): ranked after every other diagnosis, before the doctor's own state
GUESS = "guess"


@dataclass
class Fix:
    summary: str
    command: str | None = None


@dataclass
class Finding:
    code: str
    title: str
    evidence: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    severity: str = ""
    explains: list[str] = field(default_factory=list)
    check: str = ""
    node: str = ""  # the Ray node whose own facts gave it (run --ray); "" for this machine or a log
    tier: str = ""  # STATEMENT when its evidence is a person's words, GUESS their symptom nouns; "" when a log line, a probe or a fact

    def __post_init__(self) -> None:
        entry = info(self.code)  # raises on an unknown code: codes are a contract
        if not self.severity:
            self.severity = entry.severity
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")

    @property
    def layer(self) -> str:
        return self.code.split(".", 1)[0]


@dataclass
class Outcome:
    """What a check function returns: its findings and a one-line detail for the checks table."""

    findings: list[Finding] = field(default_factory=list)
    detail: str = ""


class NotApplicable(Exception):
    """Raised by a check whose subject is absent (no endpoint, no log): reported as `skip`, never `pass`."""
