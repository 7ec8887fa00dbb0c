"""A term a person's words deny: "zero Xid 43/13", "no OOM", "without any crash", "well below thermal throttle".

A report of a healthy run (a tuning result, a benchmark) names the failures it did NOT see; the prose
tiers (doctor/logparse/failure_prose.py, worded.py) read terms, so the term must be read with the word
before it. A term is denied when a denying word stands right before it, or one word before it ("no
thermal throttling", "zero GPU Xid", "nothing is wrong"): a determiner or preposition that says none (no,
zero, nothing, without, free of, below, nor), or "not"/"never" with a determiner ("not a single OOM", "never any crash").

Bare "not"/"never"/"no longer" deny only a symptom's own term ("is not throttled", "never crashed", "never OOMs"):
before any other word ("does not resolve", "never connects", "not divisible") they are the failure. And a term that spells its own
negation ("no GPUs", "without NVLink", "not enough memory") begins with it: no word before it denies it.
"""

from __future__ import annotations

import re

# the denying word, and at most one word between it and the term
DENIAL = re.compile(r"(?:\b(?P<bare>not|never|no longer|no more)(?P<det> (?:a|an|any|one|a single|once))?|\b(?:no|zero|nothing|without(?: any)?|free of|below|beneath|nor))"
                    r"\s(?:[\w-]+\s)?$", re.I)
# a symptom's own term, which a bare "not"/"never" denies (an error, a crash, a hang, a fault, a throttle, an OOM)
SYMPTOM = re.compile(r"(?:OOM|out of memory|crash|error|fail|fault|Xid|ECC|throttl|thermal|hang|hung|freez|froze|stuck|time[sd]? ?out|timeout|"
                     r"preempt|leak|kill|abort|panic|slow|degrad|spik|drop)", re.I)
WINDOW = 40  # characters before a term where its denial is read


def denied(text: str, start: int, term: str) -> bool:
    """True when the words just before `text[start:]` deny `term` (the term as the text spells it)."""
    m = DENIAL.search(text[max(0, start - WINDOW):start])
    if m is None:
        return False
    return not (m.group("bare") and not m.group("det")) or bool(SYMPTOM.match(term.lstrip()))
