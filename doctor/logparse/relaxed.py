"""A pattern with every digit it names made any digit: a digit-blind pattern that matches wherever it does.

The template cache (doctor.logparse.template_cache) tries again, on every line of a template, each
pattern that is not digit-blind (`5\\d\\d`, `[1-9]`, `429`) and could match there. Most of them never
do: `\\b(?:error|status|HTTP|code)\\s*5\\d\\d\\b` holds the literal "code" of every "decode" line, and
the client-side sentence pattern of doctor.logparse.failures (~440 characters, case-insensitive)
was searched again on every tqdm "Capturing CUDA graphs (mixed prefill-decode ...)" redraw of a
start-up. Its relaxed form (`\\b(?:error|status|HTTP|code)\\s*\\d\\d\\d\\b`) is digit-blind, so it gives
one answer on all the lines of a template; and it matches wherever the pattern does (each piece
accepts at least what it accepted: a digit any digit, a class its digits all, a negative lookaround
nothing, so it is dropped). Where the relaxed form does not match a template's line, the pattern
can match none of its lines, and nothing needs to be tried again.

A pattern with a back-reference, a conditional, an atomic group or a possessive repeat (where
accepting more can make a match fail) has no relaxed form here.
"""

from __future__ import annotations

import functools
import re

from llm_doctor.logparse import grammar_cache
from llm_doctor.logparse import prefilter as pf

_DIGITS = frozenset(range(ord("0"), ord("9") + 1))


class _NoRelaxing(Exception):
    """The pattern holds a piece this module does not relax."""


def pattern(p: re.Pattern[str]) -> re.Pattern[str] | None:
    """The relaxed form of `p`, compiled (None when it has none)."""
    source = _source(p.pattern, p.flags)
    return None if source is None else _compiled(source, p.flags & ~re.VERBOSE)  # (the source is written without layout)


@functools.cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)


@grammar_cache.remembered  # a parse of the pattern by re's own parser, in Python: remembered like digit_blind
def _source(source: str, flags: int) -> str | None:
    try:
        return _items(pf.sre_parse.parse(source, flags))
    except _NoRelaxing:
        return None


def _items(items) -> str:  # (re's parser's SubPattern: no public type)
    return "".join(_item(op, av) for op, av in items)


def _item(op, av) -> str:  # (one case per opcode of re's parser)
    c = pf.sre_constants
    if op == c.LITERAL:
        return "[0-9]" if av in _DIGITS else re.escape(chr(av))
    if op == c.NOT_LITERAL:
        return r"[\s\S]" if av in _DIGITS else "[^" + re.escape(chr(av)) + "]"
    if op == c.ANY:
        return "."
    if op == c.IN:
        return _class(av)
    if op == c.AT:
        return _AT[av]
    if op == c.CATEGORY:
        return _CATEGORY[av]
    if op == c.BRANCH:
        return "(?:" + "|".join(_items(branch) for branch in av[1]) + ")"
    if op == c.SUBPATTERN:
        _group, add, remove, inner = av
        flags = _flags(add) + ("-" + _flags(remove) if remove else "")
        return f"(?{flags}:" + _items(inner) + ")"
    if op in (c.MAX_REPEAT, c.MIN_REPEAT):
        low, high, inner = av
        bound = f"{{{low},}}" if high == c.MAXREPEAT else f"{{{low}}}" if low == high else f"{{{low},{high}}}"
        return "(?:" + _items(inner) + ")" + bound + ("?" if op == c.MIN_REPEAT else "")
    if op == c.ASSERT:
        direction, inner = av
        return ("(?=" if direction == 1 else "(?<=") + _items(inner) + ")"
    if op == c.ASSERT_NOT:
        return ""  # accepting more inside a negative lookaround would accept less: it goes, and all it forbade is allowed
    if op == getattr(c, "FAILURE", None):
        return "(?!)"
    raise _NoRelaxing(op)


def _class(items) -> str:
    c = pf.sre_constants
    negated = bool(items) and items[0][0] == c.NEGATE
    body = items[1:] if negated else items
    parts, digits = [], set()
    for op, av in body:
        if op == c.LITERAL:
            parts.append(re.escape(chr(av)))
            digits |= {av} & _DIGITS
        elif op == c.RANGE:
            parts.append(re.escape(chr(av[0])) + "-" + re.escape(chr(av[1])))
            digits |= set(range(av[0], av[1] + 1)) & _DIGITS
        elif op == c.CATEGORY:
            parts.append(_CATEGORY[av])
            if av in (c.CATEGORY_DIGIT, c.CATEGORY_WORD):
                digits |= _DIGITS
        else:
            raise _NoRelaxing(op)
    if digits and digits != _DIGITS:  # some digits but not all: all of them
        if negated:
            return r"[\s\S]"  # it refused some digits but not all: any character
        parts.append("0-9")
    return "[" + ("^" if negated else "") + "".join(parts) + "]"


def _flags(mask: int) -> str:
    return "".join(letter for letter, flag in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if mask & flag)


_C = pf.sre_constants
_AT = {_C.AT_BEGINNING: "^", _C.AT_BEGINNING_STRING: r"\A", _C.AT_END: "$", _C.AT_END_STRING: r"\Z",
       _C.AT_BOUNDARY: r"\b", _C.AT_NON_BOUNDARY: r"\B"}
_CATEGORY = {_C.CATEGORY_DIGIT: r"\d", _C.CATEGORY_NOT_DIGIT: r"\D", _C.CATEGORY_SPACE: r"\s",
             _C.CATEGORY_NOT_SPACE: r"\S", _C.CATEGORY_WORD: r"\w", _C.CATEGORY_NOT_WORD: r"\W"}
