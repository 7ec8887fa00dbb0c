"""A repeated message is parsed once: its template's plan, then only the numbers are read again.

A busy server repeats a few hundred messages millions of times with other numbers (preemption
warnings, request lines, restarts). Parsing one costs the prefix peeling, the command/start/argument
patterns, the setup patterns, the rule grammar and the phase tracker: all of it gives the same
answer for a line that differs only in its digits, as long as each pattern treats every digit alike
(`\\d`, `\\w`, `.`, `[0-9]`, not `[1-9]`, `429`, `1\\.[01]`): such a pattern is "digit-blind", and on
two lines with the same characters but digits (same places, any values) it matches at the same
places with the same groups. So the key of a line is the line with every ASCII digit made `0`
(same length, same structure), and its plan records what parsing it decided:

- where the message starts in the line (the prefixes peeled) and where the process tag is,
- which rule matched (it is run again on every line: its values are the line's own numbers),
- what the phase tracker did with it,
- and the patterns that are NOT digit-blind (a rule with a status code, `python3?`, ...) that could
  decide otherwise on another line: they are tried again and any other answer parses the line in full
  (not where their relaxed form, doctor.logparse.relaxed, shows they cannot match any line of the template).

Only plain messages get a plan: not the engine's start, its arguments or command line, traceback
frames or a line that opens one, a wrapped line, an echo rule; the scanner parses those in full every
time. A line stating setup facts gets one that reads them again from each of its lines. The cache holds at most MAX_TEMPLATES plans (then starts afresh).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from llm_doctor.logparse import events as ev
from llm_doctor.logparse import failures as fl
from llm_doctor.logparse import grammar_cache, relaxed
from llm_doctor.logparse import lines as ln
from llm_doctor.logparse import prefilter as pf
from llm_doctor.logparse.lines import Line

MAX_TEMPLATES = 4096
MAX_KEY = 4096  # a longer line is parsed in full (plans stay small)
DIGITS_MASK = bytes.maketrans(b"0123456789", b"0000000000")
_TEXT_MASK = str.maketrans("0123456789", "0000000000")
_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
_ALL_DIGITS = frozenset("0123456789")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


def digit_blind(pattern: re.Pattern[str] | re.Pattern[bytes]) -> bool:
    """Does every piece of the pattern that can match an ASCII digit match every ASCII digit?"""
    return _digit_blind(pattern.pattern, pattern.flags)


@grammar_cache.remembered  # every scanner asks it of the same ~1,000 module-level patterns (a parse each)
def _digit_blind(source: str | bytes, flags: int) -> bool:
    return _blind(pf.sre_parse.parse(source, flags))


def _blind(items: Iterable) -> bool:
    c = pf.sre_constants
    for op, av in items:
        if op in (c.LITERAL, c.NOT_LITERAL):
            if av in _DIGITS:
                return False
        elif op == c.IN:
            if not _class_blind(av):
                return False
        elif op == c.SUBPATTERN:
            if not _blind(av[-1]):
                return False
        elif op == c.BRANCH:
            if not all(_blind(branch) for branch in av[1]):
                return False
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            if not _blind(av[2]):
                return False
        elif op in (c.ASSERT, c.ASSERT_NOT):
            if not _blind(av[1]):
                return False
        elif op == getattr(c, "ATOMIC_GROUP", None):
            if not _blind(av):
                return False
        elif op == c.GROUPREF_EXISTS:
            if not all(_blind(branch) for branch in av[1:] if branch is not None):
                return False
        elif op == c.GROUPREF:
            return False  # a back-reference compares digits
        # ANY, AT (boundaries: digits are word characters), CATEGORY: blind
    return True


def _class_blind(items: list) -> bool:
    """A character class accepts all ASCII digits or none of them."""
    c = pf.sre_constants
    accepted: set[str] = set()  # a negated class accepts the complement: all-or-none either way
    for op, av in items:
        if op == c.LITERAL:
            accepted |= {chr(av)} & _ALL_DIGITS
        elif op == c.RANGE:
            accepted |= {chr(x) for x in range(av[0], av[1] + 1)} & _ALL_DIGITS
        elif op == c.CATEGORY and av in (c.CATEGORY_DIGIT, c.CATEGORY_WORD, c.CATEGORY_UNI_DIGIT, c.CATEGORY_UNI_WORD):
            accepted |= _ALL_DIGITS
    return not accepted or accepted == _ALL_DIGITS


@dataclass(frozen=True)
class Check:
    """A pattern that is not digit-blind and what it answered on the line the plan was made from."""

    gate: tuple[str, ...] | None  # literals one of which every match holds (None: always try)
    pattern: re.Pattern[str]
    matched: bool

    def holds(self, text: str, low: str) -> bool:
        found = (self.gate is None or any(lit in low for lit in self.gate)) and self.pattern.search(text) is not None
        return found == self.matched


@dataclass(frozen=True)
class Plan:
    cut: int  # the message starts this far into the stripped line
    process: tuple[int, int] | None  # where the process tag is in the stripped line
    level: str
    rule: int | None  # index in ev.RULES of the rule that matched; None: none did
    tracker: str | None  # "frame" (a frame the tracker keeps), a phase it moves to, or None
    quiet: bool  # no rule matched and the failure reader said nothing either
    checks: tuple[Check, ...]
    key: str | None = None  # the template of its events (doctor.logparse.scan), when the same for all its lines
    cleaned: Cleaning | None = None  # how the line is cleaned, when known (see Cleaning)
    values: dict[str, object] | None = None  # its rule's values, when the same for all its lines (_fixed)
    # what its lines do, when all they do is count on one event (a rule of fixed values, no check, no
    # frame, no failure kind that waits to be served): the lines of plans with the same `repeats`
    # count on the same event and change nothing else (doctor.logparse.scan._Repeat)
    repeats: tuple[object, ...] | None = None
    # whether a line of it may say the engine is serving, and whether it says the server is up
    # (doctor.logparse.scan._says: digit-blind answers its lines share), when known
    says: tuple[bool, bool] | None = None
    empty: bool = False  # no message at all once the prefixes are peeled (a Ray tag alone): it only ends a hard-wrap
    setup: bool = False  # its lines state setup facts (doctor.logparse.setup): they are read from each line again


@dataclass(frozen=True)
class Cleaning:
    """The cleaning of a template's lines (lines.clean: colour codes, control bytes, line ends) as a
    format: cleaning is digit-blind, so on every line of a template it removes the same places, and
    the cleaned line is the cleaned template with the line's own digits put back where they land."""

    fmt: str  # the cleaned template, `{}` where a kept digit goes
    kept: tuple[int, ...]  # where in the decoded line those digits are

    MAX_DIGITS: ClassVar[int] = 4096  # a template's first line is cleaned log2(digits) + 1 times (of)

    def apply(self, decoded: str) -> str:
        if len(self.kept) < 2:
            return self.fmt.format(*(decoded[i] for i in self.kept))
        return self.fmt.format(*self._digits(decoded))

    @functools.cached_property
    def _digits(self) -> Callable[[str], tuple[str, ...]]:
        """The kept digits of a line, picked in C (a busy template has dozens: a generator cost ~1 µs each)."""
        return operator.itemgetter(*self.kept)

    @staticmethod
    def of(decoded: str) -> Cleaning | None:
        """Where each digit lands, read off a few cleanings of the line: in the k-th, digit number i (from 1)
        is made 1 where bit k of i is set and 0 elsewhere, so a kept digit's place spells its i in binary
        (cleaning is digit-blind: every variant keeps the same places; log2 of the digits cleanings, not one
        per digit, so a start-up line with hundreds of digits gets a plan too). None where that does not hold."""
        at = [i for i, ch in enumerate(decoded) if ch in _ALL_DIGITS]
        if len(at) > Cleaning.MAX_DIGITS:
            return None
        zeroed = decoded.translate(_TEXT_MASK)
        base = ln.clean(zeroed)
        places = [j for j, ch in enumerate(base) if ch == "0"]  # a 0 there is a digit kept: every other character is as it was
        numbers = [0] * len(places)
        chars = list(zeroed)
        for bit in range(len(at).bit_length()):
            for n, i in enumerate(at, 1):
                chars[i] = "1" if n >> bit & 1 else "0"
            cleaned = ln.clean("".join(chars))
            if len(cleaned) != len(base):
                return None
            for k, j in enumerate(places):
                numbers[k] |= (cleaned[j] == "1") << bit
        if not all(0 < n <= len(at) for n in numbers):
            return None
        fmt, pos = [], 0
        for j in places:
            fmt.append(base[pos:j].replace("{", "{{").replace("}", "}}") + "{}")
            pos = j + 1
        fmt.append(base[pos:].replace("{", "{{").replace("}", "}}"))
        cleaning = Cleaning("".join(fmt), tuple(at[n - 1] for n in numbers))
        return cleaning if cleaning.apply(decoded) == ln.clean(decoded) else None


# Which patterns are digit-blind is a property of the grammar, the same for every scanner (a big
# file is read by two, tail first): parsing ~1,000 regexes again per scanner costs a second.
@functools.cache
def _gated(patterns: tuple[re.Pattern[str], ...]) -> list[_Gated]:
    """The patterns that are not digit-blind, each split in its top-level alternatives: a big
    alternation with no literal every match holds (failures.ERROR_IN_LINE) would be searched again
    on every line of every template, while mostly its digit-blind branches decide, and those decide
    alike on all the lines of a template (only the other branches are tried again, each behind its own literals)."""
    out = []
    for p in patterns:
        if digit_blind(p):
            continue
        branches = _branches(p)
        blind = tuple(b for b in branches if digit_blind(b))
        out += [_Gated.of(_gate(b), b, blind) for b in branches if not digit_blind(b)]
    return out


def _branches(pattern: re.Pattern[str]) -> list[re.Pattern[str]]:
    """The top-level alternatives of a pattern, each compiled alone; the pattern itself when it has
    one, or when a piece alone would not mean what it means inside it (a back-reference, inline flags)."""
    src, depth, cuts, i = pattern.pattern, 0, [0], 0
    while i < len(src):
        ch = src[i]
        if ch == "\\":
            i += 1
        elif ch == "[":  # a class: up to its closing `]` (`[]x]` and `[^]x]` hold a literal `]`)
            i += 2 if src.startswith("[^", i) else 1
            i = src.find("]", i + 1)
            if i < 0:
                return [pattern]
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            cuts.append(i + 1)
        i += 1
    if len(cuts) == 1 or depth != 0 or _BACKREF.search(src):
        return [pattern]
    pieces = [src[a : b - 1] for a, b in zip(cuts, [*cuts[1:], len(src) + 1], strict=True)]
    try:
        compiled = [re.compile(piece, pattern.flags) for piece in pieces]
    except re.error:
        return [pattern]
    if any(c.flags != pattern.flags for c in compiled):  # `(?i)` at the start is the whole pattern's
        return [pattern]
    return compiled


@functools.cache
def _rule_gates() -> list[tuple[int, _Gated]]:
    return [(i, _Gated.of(rule.literals, rule.pattern)) for i, rule in enumerate(ev.RULES) if not digit_blind(rule.pattern)]


@functools.cache
def _peeling_blind() -> bool:
    return all(digit_blind(p) for p in (ln.ANSI, ln.CONTROL, *(p for _, p in ln._PREFIXES)))


@functools.cache  # the same module-level patterns for every scanner, like digit_blind
def _gate(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    found = pf.factors(pattern)
    return tuple(sorted(found)) if found else None


class TemplateCache:
    """Plans by template, for one scanner. `others`: the patterns besides the rules that decide
    how a line is parsed (commands, starts, arguments, setup, phases, frames)."""

    def __init__(self, others: Iterable[re.Pattern[str]], enabled: bool = True) -> None:
        self._plans: dict[bytes, Plan] = {}
        self.served = 0  # lines served by a plan
        self._others = _gated(tuple(others))
        # what the failure reader reads a line with (every pattern of doctor.logparse.failures)
        self._failures = _gated(tuple(p for p in vars(fl).values() if isinstance(p, re.Pattern)))
        self._rules = _rule_gates()
        # the cleaning and prefix peeling must be digit-blind too, or no line can be served
        self.usable = enabled and _peeling_blind()

    def __len__(self) -> int:
        return len(self._plans)

    def recall(self, no: int, raw: bytes) -> tuple[Line, Plan, dict[str, object] | None] | None:
        """The parsed line, its plan and its rule's values, when a plan for its template holds for it."""
        if len(raw) > MAX_KEY or not self._plans:
            return None
        plan = self._plans.get(raw.translate(DIGITS_MASK))
        if plan is None:
            return None
        if plan.empty:
            self.served += 1
            return Line(no, "", "", "", ""), plan, None
        decoded = ln.decode(raw)
        cleaned = plan.cleaned.apply(decoded) if plan.cleaned is not None else ln.clean(decoded)
        stripped = cleaned.strip()
        text = stripped[plan.cut :]
        if plan.checks:
            low = text.lower()
            if not all(check.holds(text, low) for check in plan.checks):
                return None
        found = plan.values
        if plan.rule is not None and found is None:
            m = ev.RULES[plan.rule].pattern.search(text)
            if m is None:
                return None
            found = values(m)
        process = stripped[plan.process[0] : plan.process[1]] if plan.process else ""
        self.served += 1
        return Line(no, text, cleaned, process, plan.level), plan, None if found is None else dict(found)

    def learn_empty(self, raw: bytes, line: Line) -> None:
        """Remember that a line whose peeling left no message has an empty template: peeling and
        cleaning are digit-blind, so every line of it is empty too. Not a Docker JSON record: its
        escapes (`\\u0009` vs `\\u0041`) differ in their digits alone."""
        if len(raw) <= MAX_KEY and self.usable and not line.raw.lstrip().startswith("{"):
            self._store(raw, _EMPTY)

    def _store(self, raw: bytes, plan: Plan) -> None:
        if len(self._plans) >= MAX_TEMPLATES:
            self._plans.clear()
        self._plans[raw.translate(DIGITS_MASK)] = plan

    def learn(self, raw: bytes, line: Line, rule: int | None, quiet: bool, key: str | None = None,
              says: tuple[bool, bool] | None = None, setup: bool = False) -> None:
        """Make the plan of a line that was just parsed in full (a plain message, see the module);
        `quiet`: no rule matched and the failure reader said nothing; `key`, `says`, `setup`: see Plan."""
        if len(raw) > MAX_KEY or not self.usable:
            return
        stripped = line.raw.strip()
        process = None
        if line.process:
            at = stripped.find(line.process)
            if at < 0 or stripped.find(line.process, at + 1) >= 0:
                return  # not one place: another line's tag cannot be cut out the same way
            process = (at, at + len(line.process))
        tracker = ev.PhaseTracker()
        tracker.feed(line.text)
        moved = "frame" if tracker.frames else tracker.milestone if tracker.milestone != "startup" else None
        text, low = line.text, line.text.lower()
        masked = low.translate(_TEXT_MASK)
        checks = [g.check(False, text, low, masked) for i, g in self._rules if rule is None or i < rule]
        checks += [g.check(g.matches(text, low), text, low, masked) for g in self._others + (self._failures if quiet else [])]
        kept = tuple(c for c in checks if c)
        fixed = _fixed(rule, text)
        repeats = None
        if fixed is not None and not kept and moved != "frame" and key is not None and ev.RULES[rule].kind not in fl.KINDS:  # type: ignore[index]
            repeats = (rule, key, moved, tuple(sorted(fixed.items())))
        self._store(raw, Plan(len(stripped) - len(text), process, line.level, rule, moved, quiet, kept, key,
                              Cleaning.of(ln.decode(raw)), fixed, None if setup else repeats, says, setup=setup))

    def plan(self, raw: bytes) -> Plan | None:
        """The plan of this line's template, if there is one (recall says whether it holds)."""
        return self._plans.get(raw.translate(DIGITS_MASK)) if len(raw) <= MAX_KEY else None



_EMPTY = Plan(0, None, "", None, None, True, (), empty=True)


@dataclass(frozen=True)
class _Gated:
    """A pattern that is not digit-blind, with its literals split: those without digits are in
    all the lines of a template or in none, those with digits only where the line has digits."""

    plain: tuple[str, ...] | None  # None: the pattern has no literal gate
    digits: tuple[tuple[str, str], ...]  # (literal, literal with its digits made 0)
    pattern: re.Pattern[str]
    # the digit-blind alternatives next to this one in the pattern it was split from (_gated): where
    # one matches, the whole pattern matches on every line of the template, whatever this one does
    blind: tuple[re.Pattern[str], ...] = ()

    @staticmethod
    def of(gate: tuple[str, ...] | None, pattern: re.Pattern[str], blind: tuple[re.Pattern[str], ...] = ()) -> _Gated:
        if gate is None:
            return _Gated(None, (), pattern, blind)
        digits = tuple((x, x.translate(_TEXT_MASK)) for x in gate if any(ch in _ALL_DIGITS for ch in x))
        return _Gated(tuple(x for x in gate if not any(ch in _ALL_DIGITS for ch in x)), digits, pattern, blind)

    def matches(self, text: str, low: str) -> bool:
        gate = self.plain is None or any(x in low for x in self.plain) or any(x in low for x, _ in self.digits)
        return gate and self.pattern.search(text) is not None

    @functools.cached_property
    def _wider(self) -> re.Pattern[str] | None:
        """The pattern's relaxed form (doctor.logparse.relaxed), made at its first check."""
        return relaxed.pattern(self.pattern)

    def check(self, matched: bool, text: str, low: str, masked: str) -> Check | None:
        """Its check on the lines of this template (`text`, `low`, `masked`: this one's message, lower-cased,
        and with its digits made 0); None when it cannot match any of them, or must match all of them:
        it matched this one where no digit is, nor next to it, and looks no further (no lookaround), so
        it matches every line that differs from this one in digits only, at the same place."""
        # (the cheap answers first: a learn asks ~150 of these, and most need no search at all)
        if self.plain is None or any(x in low for x in self.plain):
            check = Check(None, self.pattern, matched)
        else:
            gate = tuple(x for x, m in self.digits if m in masked)
            if not gate and not matched:
                return None
            check = Check(gate, self.pattern, matched)
        if matched and _local(self.pattern):
            m = self.pattern.search(text)
            if m is not None and not any(ch in _ALL_DIGITS for ch in text[max(0, m.start() - 1) : m.end() + 1]):
                return None
        if any(b.search(text) for b in self.blind):
            return None
        if not matched and self._wider is not None and self._wider.search(text) is None:
            return None  # its relaxed form matches where it does, and alike on all the lines of the template
        return check


def _local(pattern: re.Pattern[str]) -> bool:
    """Whether a match depends only on its span and the characters either side (no lookaround, no back-reference)."""
    return _no_lookaround_in(pattern.pattern, pattern.flags)


@grammar_cache.remembered
def _no_lookaround_in(source: str, flags: int) -> bool:
    return _no_lookaround(pf.sre_parse.parse(source, flags))


def _no_lookaround(items: Iterable) -> bool:
    c = pf.sre_constants
    for op, av in items:
        if op in (c.ASSERT, c.ASSERT_NOT, c.GROUPREF, c.GROUPREF_EXISTS):
            return False
        if op == c.SUBPATTERN and not _no_lookaround(av[-1]):
            return False
        if op == c.BRANCH and not all(_no_lookaround(branch) for branch in av[1]):
            return False
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and not _no_lookaround(av[2]):
            return False
        if op == getattr(c, "ATOMIC_GROUP", None) and not _no_lookaround(av):
            return False
    return True


def _fixed(rule: int | None, text: str) -> dict[str, object] | None:
    """The rule's values on every line of this template, when they are the same: a digit-blind rule
    matches all of them at the same places, so where its named groups hold no digit they hold the
    same text (the preemption warning of a busy server: its rule is not searched again on each line)."""
    if rule is None or not digit_blind(ev.RULES[rule].pattern):
        return None
    m = ev.RULES[rule].pattern.search(text)
    if m is None or any(ch in _ALL_DIGITS for value in m.groupdict().values() if value for ch in value):
        return None
    return values(m)


def values(m: re.Match[str]) -> dict[str, object]:
    """A rule's values from its match, as doctor.logparse.events.match gives them."""
    out: dict[str, object] = {}
    for key, raw in m.groupdict().items():
        if raw is None:
            continue
        key = key.rstrip("0123456789") if key[-1].isdigit() and key.rstrip("0123456789") in ev._BASE_KEYS else key
        out.setdefault(key, ev.to_number(raw))
    return out
