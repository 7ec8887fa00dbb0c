"""Accuracy of `llm-doctor analyze` on the labelled corpus of real failure logs, train and held-out apart.

Runs the same path as `llm-doctor analyze CASE.log --format json` (collect -> checks -> ranked
report), in-process so the timing is the analysis and not interpreter start-up. Two splits:

- train: shared/corpus and corpus/ (ids d*, w*, x*, y*, z*, f*, g*, h*, i*, j*, k*, l*, m*, n*, o*, p*): the cases rules may be developed against;
- held-out: corpus/holdout/ (z*, f*, g*, h*, i*, j*, k*, l*, m*, n*, o* and p* ids chosen by a hash of the source URL, see corpus/README.md): read
  only as a score. Its misses are never listed, only counted.
- fresh: corpus/fresh/: the current blind set, collected from threads no other split uses while the
  rules change, labelled before anyone ran the doctor on it (corpus/README.md, Rounds f, g, h, i, j, k, l, m, n, o, p and q). A score
  only, like held-out; at the next stop it is folded into the other two by the same hash.

For each split it prints rank-1 and top-3 accuracy overall, per primary code and per engine, the
confusions (expected -> what came first), and the false all-clears: cases whose report status is `ok`
with exit code 0 although every corpus case is a failure. For the KV-cache cases it also checks that
the suggested --max-model-len fits the capacity the log states.

    .venv/bin/python bench/accuracy.py [--split train|held-out|fresh|all] [--corpus DIR ...] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPLITS = {
    "train": [ROOT.parent / "shared" / "corpus", ROOT / "corpus"],
    "held-out": [ROOT / "corpus" / "holdout"],
    "fresh": [ROOT / "corpus" / "fresh"],
}


@dataclass
class Outcome:
    """What the doctor said about one case: ranked codes, report status and gate exit code."""

    codes: list[str]
    status: str
    exit_code: int
    fixes: list[str]
    crash: str = ""


@dataclass
class Tally:
    """Rank-1 / top-3 counts for one group of cases (a code, an engine, a whole split)."""

    n: int = 0
    top1: int = 0
    top3: int = 0

    def add(self, want: str, codes: list[str]) -> None:
        self.n += 1
        self.top1 += codes[:1] == [want]
        self.top3 += want in codes[:3]

    def row(self, name: str, width: int = 34) -> str:
        return f"{name:{width}} {self.n:>4} {self.top1 / max(self.n, 1):>6.0%} {self.top3 / max(self.n, 1):>6.0%}"


@dataclass
class SplitResult:
    name: str
    total: Tally = field(default_factory=Tally)
    per_code: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    per_engine: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    confusions: Counter = field(default_factory=Counter)
    misses: list[tuple[str, str, str]] = field(default_factory=list)
    false_all_clear: list[str] = field(default_factory=list)
    miss_kinds: Counter = field(default_factory=Counter)
    kv_fit: list[bool] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def analyze(path: Path) -> Outcome:
    from llm_doctor.collect.files import load_paths
    from llm_doctor.engine import Deadline, load_checks, run_checks, select
    from llm_doctor.report import build_report

    deadline = Deadline(60)
    facts = load_paths([str(path)], deadline)
    report = build_report(run_checks(facts, select(load_checks()), deadline), facts)
    commands = [x.command or "" for f in report.findings for x in f.fixes]
    return Outcome([f.code for f in report.findings], report.status, report.exit_code("error"), commands)


def cases(folders: list[Path]) -> list[tuple[dict, Path]]:
    out = []
    for folder in folders:
        index = folder / "cases.jsonl"
        if not index.exists():
            continue
        for line in index.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                out.append((case, folder / f"{case['id']}.log"))
    return out


def kv_fit(case: dict, outcome: Outcome) -> bool | None:
    """For KV-cache cases with a stated capacity: does the suggested context length (--max-model-len, or
    the engine's own flag: SGLang --context-length, TGI --max-total-tokens, LMDeploy --session-len,
    TensorRT-LLM --max_seq_len) fit it?"""
    ev = case.get("expected_values") or {}
    capacity = ev.get("kv_cache_tokens") or ev.get("estimated_max_model_len")
    if case["primary"] != "load.kv_cache_insufficient" or not capacity:
        return None
    for command in outcome.fixes:
        m = re.search(r"--(?:max-model-len|context-length|max-total-tokens|session-len|max_seq_len) (\d+)", command)
        if m:
            return int(m.group(1)) <= int(capacity)
    return False


def miss_kind(want: str, codes: list[str]) -> str:
    """Why a case missed, in the terms the work divides by: the wanted code named lower in the report (a ranking
    fault), or not at all, the top code then saying the doctor placed nothing (`*.unrecognized_failure`,
    doctor.*, or no finding: a recognition gap) or naming another cause (a misreading)."""
    if want in codes:
        return "ranked lower"
    top = codes[0] if codes else ""
    if not top or top.endswith(".unrecognized_failure") or top.startswith("doctor."):
        return "not named, nothing placed"
    return "not named, another cause ranked first"


def run_split(name: str, folders: list[Path]) -> SplitResult:
    result = SplitResult(name)
    for case, path in cases(folders):
        start = time.perf_counter()
        try:
            outcome = analyze(path)
        except Exception as exc:  # a crash is a miss, reported, not a stop
            outcome = Outcome([], "crash", 3, [], f"CRASH {type(exc).__name__}: {exc}")
        result.seconds.append(time.perf_counter() - start)
        want, codes = case["primary"], outcome.codes
        for tally in (result.total, result.per_code[want], result.per_engine[case.get("engine", "?")]):
            tally.add(want, codes)
        if codes[:1] != [want]:
            got = codes[0] if codes else "(nothing)"
            result.confusions[(want, got)] += 1
            result.misses.append((case["id"], want, outcome.crash or " ".join(codes[:3]) or "(nothing)"))
            result.miss_kinds[miss_kind(want, codes)] += 1
        if outcome.status == "ok" and outcome.exit_code == 0:
            result.false_all_clear.append(case["id"])
        fit = kv_fit(case, outcome)
        if fit is not None:
            result.kv_fit.append(fit)
    return result


def print_split(r: SplitResult, show_misses: bool) -> None:
    n = r.total.n
    print(f"== {r.name}: {n} cases")
    if not n:
        return
    print(f"{'code':34} {'n':>4} {'top1':>6} {'top3':>6}")
    for code in sorted(r.per_code):
        print(r.per_code[code].row(code))
    print(f"{'engine':34} {'n':>4} {'top1':>6} {'top3':>6}")
    for engine in sorted(r.per_engine):
        print(r.per_engine[engine].row(engine))
    print(f"{'ALL':34} {n:>4} {r.total.top1 / n:>6.1%} {r.total.top3 / n:>6.1%}")
    print(f"false all-clear (status ok, exit 0) on a failure case: {len(r.false_all_clear)}/{n}")
    if r.kv_fit:
        print(f"KV cases whose --max-model-len fits the stated capacity: {sum(r.kv_fit)}/{len(r.kv_fit)}")
    misses = sum(r.miss_kinds.values())
    kinds = ", ".join(f"{kind} {k}" for kind, k in r.miss_kinds.most_common())
    print(f"misses: {misses} ({kinds})" if misses else "misses: 0")
    print("confusions (expected -> rank 1):")
    for (want, got), k in r.confusions.most_common():
        print(f"  {want} -> {got}: {k}")
    print(f"seconds per case: mean {sum(r.seconds) / n:.4f}, max {max(r.seconds):.4f}, total {sum(r.seconds):.2f}")
    if show_misses:
        print("misses:")
        for cid, want, got in r.misses:
            print(f"  {cid}: want {want}, got {got}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=[*SPLITS, "all"], default="all", help="which split(s) to score")
    ap.add_argument("--corpus", action="append", type=Path, help="score these folders instead, as one split")
    ap.add_argument("--show-misses", action="store_true", help="list each train case whose rank-1 code is wrong")
    args = ap.parse_args()
    if args.corpus:
        splits = {"custom: " + ", ".join(str(p) for p in args.corpus): args.corpus}
    else:
        splits = {k: v for k, v in SPLITS.items() if args.split in (k, "all")}
    for name, folders in splits.items():
        print(f"corpus {name}: {', '.join(str(p) for p in folders)}")
        for missing in (p for p in folders if not (p / "cases.jsonl").exists()):
            # run from a worktree, ../shared is not beside the checkout: say so, the figure is of fewer cases
            print(f"WARNING: {missing} has no cases.jsonl: this split is scored without it", file=sys.stderr)
        blind = any({"holdout", "fresh"} & set(p.parts) for p in folders)
        print_split(run_split(name, folders), args.show_misses and not blind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
