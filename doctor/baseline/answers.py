"""Answers before and after: scored against their expectations, and compared text to text
(identical, similar, different, with word diffs), for `baseline.quality_drop`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llm_doctor.baseline.model import RequestResult, Run
from llm_doctor.baseline.requests import Expect, score
from llm_doctor.findings import Finding, Fix

if TYPE_CHECKING:
    from llm_doctor.baseline.compare import Comparison, Summary

SIMILAR_RATIO = 0.9  # difflib ratio at or above which a changed answer counts as "similar"
DIFFS_SHOWN = 3


def is_right(r: RequestResult) -> bool:
    if r.expect is None:
        return False
    try:
        return score(Expect(str(r.expect.get("kind")), r.expect.get("value")), r.output)
    except (TypeError, ValueError, AttributeError, KeyError):
        return False  # a hand-edited expectation that cannot be checked scores nothing


@dataclass
class OutputDiff:
    identical: list[str] = field(default_factory=list)
    similar: list[str] = field(default_factory=list)
    different: list[str] = field(default_factory=list)
    unsteady: list[str] = field(default_factory=list)  # repeats disagreed: not deterministic, not compared
    diffs: dict[str, str] = field(default_factory=dict)  # request id -> word diff of its changed answer


def diff_outputs(before: Run, after: Run, ids: set[str]) -> OutputDiff:
    out = OutputDiff()
    after_by_id = {r.id: r for r in after.requests}
    for rb in before.requests:
        ra = after_by_id.get(rb.id)
        if ra is None or rb.id not in ids or not (rb.e2e_ms and ra.e2e_ms):
            continue
        if not (rb.consistent and ra.consistent):
            out.unsteady.append(rb.id)
            continue
        if rb.output == ra.output:
            out.identical.append(rb.id)
            continue
        ratio = difflib.SequenceMatcher(None, rb.output, ra.output, autojunk=False).ratio()
        (out.similar if ratio >= SIMILAR_RATIO else out.different).append(rb.id)
        out.diffs[rb.id] = word_diff(rb.output, ra.output)
    return out


def word_diff(old: str, new: str, limit: int = 300) -> str:
    """[-removed-]{+added+} over words, as `git diff --word-diff` shows it, cut at `limit`."""
    a, b = old.split(), new.split()
    parts: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            same = a[i1:i2]
            parts.append(" ".join(same) if len(same) <= 6 else " ".join(same[:3] + ["…"] + same[-3:]))
            continue
        if i2 > i1:
            parts.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            parts.append("{+" + " ".join(b[j1:j2]) + "+}")
    text = " ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quality_findings(before: Run, after: Run, c: Comparison, ids: set[str]) -> list[Finding]:
    after_by_id = {r.id: r for r in after.requests}
    turned_wrong, now_failing, fixed = [], [], set()
    for rb in before.requests:
        ra = after_by_id.get(rb.id)
        if ra is None or rb.id not in ids or not rb.e2e_ms:
            continue
        if ra.errors and not ra.e2e_ms:
            now_failing.append(f"{rb.id}: answered before, fails now: {ra.errors[0]}")
        elif rb.expect is not None and is_right(rb) and not is_right(ra):
            turned_wrong.append(f"{rb.id}: expected {rb.expect.get('kind')} {rb.expect.get('value')!r}; "
                                f"was {_quote(rb.output)}, now {_quote(ra.output)}")  # fmt: skip
        elif rb.expect is not None and is_right(ra) and not is_right(rb):
            fixed.add(rb.id)  # a change for the better: `improved` names it
    o = c.outputs
    compared = len(o.identical) + len(o.similar) + len(o.different)
    changed = len([i for i in o.similar + o.different if i not in fixed])
    if not (turned_wrong or now_failing or changed):
        return []
    score_line = f"quality score {score_text(c.before)} -> {score_text(c.after)}"
    share = f"answers: {len(o.identical)} identical, {len(o.similar)} similar, {len(o.different)} different of {compared} compared"
    if o.unsteady:
        share += f" ({len(o.unsteady)} not compared: their repeats already disagreed)"
    shown = [f"{i}: {d}" for i, d in o.diffs.items() if i not in fixed][:DIFFS_SHOWN]
    evidence = turned_wrong + now_failing + [score_line, share] + shown
    fixes = [Fix("Roll the change back, or check the new setup's answers on these requests before it serves users")]
    if turned_wrong or now_failing:
        n = len(turned_wrong) + len(now_failing)
        title = f"{n} answer{'s that were' if n > 1 else ' that was'} right {'are' if n > 1 else 'is'} now wrong or missing ({score_line})"
        return [Finding("baseline.quality_drop", title, evidence, fixes)]
    fixes.insert(0, Fix("Decoding is deterministic, so changed answers come from the change: read the diffs; "
                        "score them with `expect` in a --prompts file to turn this into a gate"))  # fmt: skip
    title = f"{changed} of {compared} answers changed (no scored answer got worse)"
    if fixed:
        title = f"{changed} of {compared} answers changed besides the {len(fixed)} scored ones that became right"
    return [Finding("baseline.quality_drop", title, evidence, fixes, severity="warn")]


def _quote(text: str, limit: int = 80) -> str:
    t = " ".join(text.split())
    return repr(t if len(t) <= limit else t[: limit - 1] + "…")


def score_text(s: Summary) -> str:
    return f"{s.right}/{s.scored}" if s.scored else "-"
