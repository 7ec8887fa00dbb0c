"""Perf scenarios: the files of one report attached together, judged as `llm-doctor analyze` judges them.

Each `corpus/perf/<scenario>/` folder holds what a user attached to one public thread (engine log,
benchmark summary, launch command, nvidia-smi, topo) and a `scenario.json`: the thread's URL
(`source`), and either the perf codes it must name (`expected`) or `healthy: true` (no perf
warning or error may come out of it). Two numbers per split:

- named fully: the share of problem scenarios whose report holds every expected code;
- healthy quiet: the share of healthy scenarios with no perf finding at warn or error.

Held out: `corpus/perf/holdout/` (sha256(source URL) % 5 < 2), read only as a score: its misses are
counted, never listed. Fresh: `corpus/perf/fresh/`, the current blind set (round q; rounds h, i, j, k, l, m, n, o and p were folded in at stops 22, 23, 24, 26, 27, 29, 31, 32 and 33) collected by someone who
writes no rules, read the same way (a score only, misses never listed, no rule written from it).

    .venv/bin/python bench/perf_scenarios.py [--split train|held-out|fresh|all] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PERF = ROOT / "corpus" / "perf"
SPLITS = {"train": PERF, "held-out": PERF / "holdout", "fresh": PERF / "fresh"}
LOUD = ("warn", "error")


@dataclass
class Score:
    problems: int = 0
    named: int = 0
    healthy: int = 0
    quiet: int = 0
    misses: list[str] = field(default_factory=list)


def scenarios(folder: Path) -> list[Path]:
    """The scenario folders directly under `folder`; the held-out and fresh roots sit inside train's
    folder and are never its scenarios."""
    if not folder.is_dir():
        return []
    split_roots = set(SPLITS.values())
    return sorted(p for p in folder.iterdir() if p not in split_roots and (p / "scenario.json").is_file())


def findings(folder: Path) -> list[tuple[str, str]]:
    """(code, severity) of every finding `analyze` gives on the scenario's files together."""
    from llm_doctor.collect.files import load_paths
    from llm_doctor.engine import Deadline, load_checks, run_checks, select
    from llm_doctor.report import build_report

    deadline = Deadline(60)
    files = sorted(str(p) for p in folder.iterdir() if p.is_file() and p.name != "scenario.json")
    facts = load_paths(files, deadline)
    report = build_report(run_checks(facts, select(load_checks()), deadline), facts)
    return [(f.code, f.severity) for f in report.findings]


def score(folder: Path) -> Score:
    s = Score()
    for case in scenarios(folder):
        meta = json.loads((case / "scenario.json").read_text())
        try:
            got = findings(case)
        except Exception as exc:  # a crash is a miss, reported, not a stop
            got = [(f"CRASH {type(exc).__name__}: {exc}", "error")]
        codes = {c for c, _ in got}
        loud = sorted({c for c, sev in got if c.startswith("perf.") and sev in LOUD})
        if meta.get("healthy"):
            s.healthy += 1
            s.quiet += not loud
            if loud:
                s.misses.append(f"{case.name}: healthy, got {' '.join(loud)}")
        else:
            s.problems += 1
            missing = [c for c in meta["expected"] if c not in codes]
            s.named += not missing
            if missing:
                s.misses.append(f"{case.name}: missing {' '.join(missing)}; got {' '.join(c for c, _ in got) or '(nothing)'}")
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    ap.add_argument("--show-misses", action="store_true", help="list the train split's misses (never the held-out ones)")
    args = ap.parse_args()
    for name, folder in SPLITS.items():
        if args.split not in (name, "all"):
            continue
        s = score(folder)
        print(f"== {name} ({folder.relative_to(ROOT)}): {s.problems} problem, {s.healthy} healthy scenarios")
        print(f"named fully:   {s.named}/{s.problems} ({s.named / max(s.problems, 1):.0%})")
        print(f"healthy quiet: {s.quiet}/{s.healthy} ({s.quiet / max(s.healthy, 1):.0%})")
        if args.show_misses and name == "train":
            for line in s.misses:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
