"""Perf symptoms a person states in words: the facts behind a complaint that carries no stat line.

"KV cache usage stays at 99 % and requests queue", "clocks drop to 900 MHz with SW Power Cap
active", "TTFT is 20 s at 10 concurrent": the measures such a sentence gives fill the same facts a
scrape or a stat line fills (doctor/logparse/perf_prose.py puts them there), so the perf checks
judge them with their own thresholds. Each statement is also kept here, with the code it speaks
of, so that one whose measure no check can judge ("the KV cache is always full") is still reported
(checks/perf/stated.py) instead of ending as an all-clear.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_doctor.facts.gpu import Gpu


@dataclass
class PerfStatement:
    code: str  # the perf finding code the sentence speaks of ("perf.kv_cache_pressure")
    where: str  # "source:line"
    text: str  # the sentence, cut to 300 characters
    measures: dict[str, float] = field(default_factory=dict)  # what it gives in numbers (kv_cache_usage, ttft_s, ...)
    gpu: Gpu | None = None  # a GPU's clocks and throttle reasons as stated (perf.gpu_throttled)


@dataclass
class FailureStatement:
    """A load or access failure a person names in a sentence (doctor/logparse/failure_prose.py): the
    evidence tier "statement", reported by checks/load/stated.py below what a log or a probe shows."""

    code: str  # the load or access finding code the sentence names ("load.engine_outdated")
    where: str  # "source:line"
    text: str  # the sentence, redacted, cut to 300 characters


@dataclass
class WordedGuess:
    """A code named by the symptom words of a whole text that states a failure no rule places
    (doctor/logparse/worded.py): the evidence tier "guess", reported only when nothing else was found."""

    code: str  # the finding code the words lean to ("access.dns_failed")
    score: int  # the weight of its nouns in the text
    words: list[str]  # the nouns found, as the text spells them
    where: str  # "source:line" of the line that states the failure
    text: str  # that line, cut to 300 characters (redacted before it is kept)
