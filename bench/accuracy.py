"""Accuracy of `llm-doctor analyze` on the labelled corpus of real failure logs.

Runs the same path as `llm-doctor analyze CASE.log --format json` (collect -> checks -> ranked
report), in-process so the timing is the analysis and not interpreter start-up, over every case
of shared/corpus and corpus/ (ids d*, x*, e*). Prints top-1 and top-3 accuracy per primary code,
the confusions (expected -> what came first), seconds per case, and the corpus size. For the
KV-cache cases it also checks that the suggested --max-model-len fits the capacity the log states.

    .venv/bin/python bench/accuracy.py [--corpus DIR ...] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_CORPORA = [ROOT.parent / "shared" / "corpus", ROOT / "corpus"]


def analyze(path: Path) -> list[dict]:
    from doctor.collect.files import load_paths
    from doctor.engine import Deadline, load_checks, run_checks, select
    from doctor.report import build_report

    deadline = Deadline(60)
    facts = load_paths([str(path)], deadline)
    results = run_checks(facts, select(load_checks()), deadline)
    report = build_report(results, facts)
    return report.to_json()["findings"]


def cases(corpora: list[Path]) -> list[tuple[dict, Path]]:
    out = []
    for folder in corpora:
        index = folder / "cases.jsonl"
        if not index.exists():
            continue
        for line in index.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                out.append((case, folder / f"{case['id']}.log"))
    return out


def kv_fit(case: dict, findings: list[dict]) -> bool | None:
    """For KV-cache cases with a stated capacity: does the suggested --max-model-len fit it?"""
    ev = case.get("expected_values") or {}
    capacity = ev.get("kv_cache_tokens") or ev.get("estimated_max_model_len")
    if case["primary"] != "load.kv_cache_insufficient" or not capacity:
        return None
    for f in findings:
        for fix in f["fixes"]:
            m = re.search(r"--max-model-len (\d+)", fix.get("command") or "")
            if m:
                return int(m.group(1)) <= int(capacity)
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", type=Path, help="corpus folder(s) with cases.jsonl")
    ap.add_argument("--show-misses", action="store_true", help="list each case whose rank-1 code is wrong")
    args = ap.parse_args()
    all_cases = cases(args.corpus or DEFAULT_CORPORA)
    per_code: dict[str, Counter] = defaultdict(Counter)
    confusions: Counter = Counter()
    misses, kv_results, seconds = [], [], []
    for case, path in all_cases:
        start = time.perf_counter()
        try:
            findings = analyze(path)
        except Exception as exc:  # a crash is a miss, reported, not a stop
            findings = []
            misses.append((case["id"], case["primary"], f"CRASH {type(exc).__name__}: {exc}"))
        seconds.append(time.perf_counter() - start)
        codes = [f["code"] for f in findings]
        want = case["primary"]
        c = per_code[want]
        c["n"] += 1
        c["top1"] += bool(codes[:1] == [want])
        c["top3"] += want in codes[:3]
        if codes[:1] != [want]:
            got = codes[0] if codes else "(nothing)"
            confusions[(want, got)] += 1
            misses.append((case["id"], want, " ".join(codes[:3]) or "(nothing)"))
        fit = kv_fit(case, findings)
        if fit is not None:
            kv_results.append((case["id"], fit))
    n = len(all_cases)
    top1 = sum(c["top1"] for c in per_code.values())
    top3 = sum(c["top3"] for c in per_code.values())
    print(f"corpus: {n} cases from {', '.join(str(p) for p in (args.corpus or DEFAULT_CORPORA))}")
    print(f"{'code':34} {'n':>3} {'top1':>6} {'top3':>6}")
    for code in sorted(per_code):
        c = per_code[code]
        print(f"{code:34} {c['n']:>3} {c['top1'] / c['n']:>6.0%} {c['top3'] / c['n']:>6.0%}")
    print(f"{'ALL':34} {n:>3} {top1 / max(n, 1):>6.1%} {top3 / max(n, 1):>6.1%}")
    if kv_results:
        ok = sum(1 for _, fit in kv_results if fit)
        print(f"KV cases whose --max-model-len fits the stated capacity: {ok}/{len(kv_results)}")
    print("confusions (expected -> rank 1):")
    for (want, got), k in confusions.most_common():
        print(f"  {want} -> {got}: {k}")
    if seconds:
        print(f"seconds per case: mean {sum(seconds) / len(seconds):.4f}, max {max(seconds):.4f}, total {sum(seconds):.2f}")
    if args.show_misses:
        print("misses:")
        for cid, want, got in misses:
            print(f"  {cid}: want {want}, got {got}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
