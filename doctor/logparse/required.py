"""Whether a text can hold a match of a pattern at all, from the literals every match holds.

The prose tiers (doctor/logparse/failure_prose.py, worded.py) run dozens of case-insensitive
patterns with no literal prefix (`\\bOOM(?:s|ed)?\\b|\\bout of ...`) over up to 256 kB of a file's
head: Python's re tries every branch at every position, ~30 ms a pattern, most of a second for a
log that states nothing in words. prefilter.factors gives, for each pattern, lower-case literals one
of which every match contains; a text that holds none of them cannot match, so its search is skipped
and the outcome is the same.

"Holds" reads the text folded the way re.IGNORECASE compares: lower case, and the four non-ASCII
letters that re matches with ASCII ones (Python's re docs: İ ı ſ K) written as those. That is exact
for a literal of ASCII characters and of characters without case (CJK, kana, hangul). Where it may
not be, the literals are used only where they are: those with a cased non-ASCII letter (whose other
cases re also matches) on ASCII text; those of a pattern with `\\d` (in a str pattern it matches every
script's digits, factors spells it 0-9) on text with no other digits than 0-9. A pattern with one of
those four letters, or with no required literal, is always run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from llm_doctor.logparse import prefilter

# the non-ASCII letters re.IGNORECASE matches with ASCII letters, as those letters (tests/test_required_literals.py)
FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
# those letters in a pattern, as its factors spell them (ſ, ı, and the combining dot of İ lower-cased): a pattern
# holding one matches ASCII text that holds none of its factors
SPECIAL = frozenset("\u017f\u0131\u0307")
WIDE_DIGIT = re.compile(r"(?![0-9])\d")  # a digit of another script, which \d matches


@dataclass(frozen=True)
class Held:
    """Which of some patterns' literals a text holds, whether it is ASCII and whether it has digits other than 0-9."""

    present: frozenset[str]
    ascii: bool
    wide_digits: bool


def held(text: str, literals: Iterable[str]) -> Held:
    """The literals (of Required.literals) the folded text holds."""
    if text.isascii():
        low, ascii, wide = text.lower(), True, False
    else:
        low, ascii, wide = text.translate(FOLD).lower(), False, WIDE_DIGIT.search(text) is not None
    return Held(frozenset(lit for lit in literals if lit in low), ascii, wide)


@dataclass(frozen=True)
class Required:
    """The literals one of which each match of a pattern holds (None: nothing is known), and where they are exact:
    on ASCII text only (a cased non-ASCII letter), on text with no digits but 0-9 (the pattern has `\\d`)."""

    literals: frozenset[str] | None
    cased: bool = False
    digits: bool = False

    @classmethod
    def of(cls, pattern: re.Pattern[str]) -> Required:
        found = prefilter.factors(pattern)
        if not found or any(c in SPECIAL for lit in found for c in lit):
            return cls(None)
        cased = any(not c.isascii() and not c.lower() == c == c.upper() for lit in found for c in lit)
        return cls(frozenset(found), cased, "\\d" in pattern.pattern)

    def absent(self, text: Held) -> bool:
        """True when no match of the pattern can be in the text: it holds none of the literals (looked for by held)."""
        if self.literals is None or self.cased and not text.ascii or self.digits and text.wide_digits:
            return False
        return text.present.isdisjoint(self.literals)


def universe(required: Iterable[Required | None]) -> tuple[str, ...]:
    """Every literal of these, once: what held() looks for."""
    return tuple(sorted({lit for r in required if r is not None and r.literals for lit in r.literals}))
