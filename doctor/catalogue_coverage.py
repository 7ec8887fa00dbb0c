"""What the message catalogue covers: templates per engine, per event kind and per finding code.

A template means an event kind (doctor/logparse/events.py); a kind means the codes of the checks
that declare they read it (`@check(..., events=[...], codes=[...])`). So the coverage per code is
computed from the registry, never kept by hand, and a kind no check reads shows up as such.
"""

from __future__ import annotations

import json
from collections import Counter


def coverage() -> dict[str, object]:
    """The counts, as plain data (the JSON output is exactly this)."""
    from llm_doctor.engine import load_checks
    from llm_doctor.logparse import events as ev

    rules = ev.CATALOGUE_RULES
    codes_of: dict[str, set[str]] = {}
    for spec in load_checks().values():
        for kind in spec.events:
            codes_of.setdefault(kind, set()).update(spec.codes)
    per_kind = Counter(r.kind for r in rules)
    per_code: Counter[str] = Counter()
    for r in rules:
        per_code.update(codes_of.get(r.kind, ()))
    return {
        "templates": len(rules),
        "per_engine": dict(sorted(Counter(r.engine for r in rules).items())),
        "per_kind": {kind: {"templates": n, "codes": sorted(codes_of.get(kind, ()))} for kind, n in sorted(per_kind.items())},
        "per_code": dict(sorted(per_code.items())),
        "kinds_without_template": sorted({r.kind for r in ev.HAND_RULES} - set(per_kind)),
    }


def render(data: dict[str, object], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2)
    lines = [f"{data['templates']} templates in doctor/data/catalogue/*.jsonl", "", "per engine:"]
    lines += [f"  {engine:<20} {n}" for engine, n in data["per_engine"].items()]  # type: ignore[attr-defined]
    lines += ["", "per event kind (-> the codes of the checks that read it):"]
    for kind, info in data["per_kind"].items():  # type: ignore[attr-defined]
        lines.append(f"  {kind:<26} {info['templates']:>4}  -> {', '.join(info['codes']) or '(no check reads it)'}")
    lines += ["", "per finding code:"]
    lines += [f"  {code:<34} {n}" for code, n in data["per_code"].items()]  # type: ignore[attr-defined]
    lines += ["", "event kinds only hand rules read: " + (", ".join(data["kinds_without_template"]) or "none")]  # type: ignore[arg-type]
    return "\n".join(lines)
