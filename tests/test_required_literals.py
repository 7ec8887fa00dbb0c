"""Skipping a prose pattern whose required literals a text lacks (doctor/logparse/required.py) changes no outcome.

The fold is checked against re itself (every non-ASCII character re.IGNORECASE matches with an ASCII letter),
and every pattern of the two tiers that use it (worded.NOUNS, failure_prose.VOCABULARY) is run on real logs
and on sentences with the characters where folding could differ: a pattern said absent never matches.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from llm_doctor.logparse import failure_prose, worded
from llm_doctor.logparse import required as rq

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted((ROOT / "fixtures" / "logs").glob("*.log"))[::7]  # every 7th of ~200 real logs: engines, clients, languages
TRICKY = [
    "The ſtream of tokens stopped: İt runs out of memory when LOADİNG the 70B model on a ３２ GB card",
    "vLLM fails to load: ＯＯＭ 显存不足 while loading the model (пользователь: ошибка, не работает)",
    "Connection refused by the proxy at port 8000; the KV cache is full after 20 requests ΩK",
    "The model does not fit in 24 GB of VRAM, CUDA out of memory at startup",
]


def _patterns() -> list[tuple[re.Pattern[str], rq.Required]]:
    found = [(n.words, n.required[0]) for n in worded.NOUNS]
    found += [(n.needs, n.required[1]) for n in worded.NOUNS if n.needs is not None and n.required[1] is not None]
    found += list(zip((rx for _, rx in failure_prose.VOCABULARY), failure_prose._required(), strict=True))
    return found


def test_fold_maps_every_letter_re_matches_with_an_ascii_one() -> None:
    letters = re.compile(r"[a-z]", re.I)
    everything = "".join(chr(c) for c in range(0x80, sys.maxunicode + 1))
    matched = set(letters.findall(everything))
    assert matched == {chr(c) for c in rq.FOLD}
    for char in matched:
        letter = char.translate(rq.FOLD)
        assert letter.isascii() and re.fullmatch(letter, char, re.I)


@pytest.mark.parametrize("text", TRICKY)
def test_a_pattern_said_absent_never_matches_a_sentence(text: str) -> None:
    held = rq.held(text, rq.universe(r for _, r in _patterns()))
    skipped = 0
    for pattern, needs in _patterns():
        if needs.absent(held):
            skipped += 1
            assert pattern.search(text) is None, pattern.pattern[:80]
    assert skipped > len(_patterns()) // 2  # most patterns are skipped on any one sentence


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_a_pattern_said_absent_never_matches_a_log(log: Path) -> None:
    text = log.read_text(errors="replace")[: worded.HEAD_CHARS]
    held = rq.held(text, rq.universe(r for _, r in _patterns()))
    for pattern, needs in _patterns():
        if needs.absent(held):
            assert pattern.search(text) is None, pattern.pattern[:80]


@pytest.mark.parametrize("text", TRICKY + [p.read_text(errors="replace") for p in LOGS[:6]])
def test_every_noun_finds_the_same_term_with_and_without_the_literals(text: str) -> None:
    held = rq.held(text, worded._literals())
    assert [n.found(text, held) for n in worded.NOUNS] == [n.found(text) for n in worded.NOUNS]


def test_where_folding_may_differ_nothing_is_skipped() -> None:
    # ſ matches s and S: its factors would miss "stream"; \d matches the digits of other scripts
    assert rq.Required.of(re.compile(r"\bſtream\b", re.I)).literals is None
    digits = rq.Required.of(re.compile(r"\b\d+ ?GB model\b", re.I))
    wide = "a ３２ GB model on one card"
    assert not digits.absent(rq.held(wide, sorted(digits.literals or ())))
    assert re.search(r"\b\d+ ?GB model\b", wide, re.I)
    cyrillic = rq.Required.of(re.compile(r"ошибк\w*", re.I))
    assert cyrillic.cased and cyrillic.absent(rq.held("no error here", sorted(cyrillic.literals or ())))
    assert not cyrillic.absent(rq.held("ᲂшибка", sorted(cyrillic.literals or ())))  # (U+1C82, a form of о re matches)
