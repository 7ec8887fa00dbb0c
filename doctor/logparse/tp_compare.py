"""A benchmark table that compares tensor parallel sizes -> the throughput each GPU gives at each size.

Serving benchmarks are tabulated per configuration: InferenceX's result comments (`| Metric | TP=8/EP=8 |
TP=4/EP=4 | Delta |` with rows `Throughput/GPU`, `Output tput/GPU`, `Mean TTFT`), a PR's or a thread's
sweep (`| TP | Output token throughput (tok/s) |`, one row per size). Both say what codes.md calls
perf.tp_mismatch when the narrower split serves more per GPU: the wide one spends its extra GPUs on
all-reduces, and replicas of the narrow one would serve more. The throughput per GPU is read as the
table gives it (a `/GPU` row or column) or as the aggregate divided by the size. No decisions here:
perf.parallelism judges the figures (facts.stated, code perf.tp_mismatch, measures tp_wide, tp_narrow,
per_gpu_wide, per_gpu_narrow).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_doctor.facts import Facts
from llm_doctor.facts.stated import PerfStatement
from llm_doctor.logparse.bench_runs import CELL_NUMBER, TABLE_RULE, table_cells

# a configuration named by its TP size: "TP=8/EP=8", "TP8", "tp 4", "-tp 2", "TP=4, DP=2", "tensor_parallel_size=4"
_TP = re.compile(r"(?<![A-Za-z])(?:TP|tp_size|tensor[_ -]parallel(?:[_ -]size)?)\s?[=:]?\s?(\d{1,2})(?!\d)", re.I)
_TP_HEADER = re.compile(r"^(?:TP|TP size|tp_size|tensor[_ -]parallel(?:[_ -]size)?)$", re.I)
_PER_GPU = re.compile(r"(?:/|\bper\s)GPU\b", re.I)
# throughput, as the benchmarks label it (vLLM/SGLang "Output token throughput (tok/s)", "Total Token throughput",
# InferenceX "Throughput/GPU", "Output tput/GPU"), never a latency or a request rate
_TPUT = re.compile(r"\b(?:(?:output |total |token |gen(?:eration)? )*(?:throughput|tput)|tok(?:en)?s?/s)\b", re.I)
_NOT_TPUT = re.compile(r"\b(?:req(?:uest)?s?/s|latency|TTFT|TPOT|ITL|E2E|ms)\b|\bper[ -]?(?:user|request|req|stream)\b|/(?:user|req)\b", re.I)


@dataclass(frozen=True)
class Point:
    """One configuration of the table: its TP size, throughput per GPU and the line it came from."""

    tp: int
    per_gpu: float
    line: int
    label: str


def _number(cell: str) -> float | None:
    m = CELL_NUMBER.search(cell)
    return float(m.group(0).replace(",", "")) if m else None


def points(text: str) -> list[Point]:
    """The configurations of the first markdown table in the text that names two TP sizes or more,
    with a throughput for each."""
    if "|" not in text:
        return []
    lines = text.splitlines()
    for no in range(1, len(lines)):
        if not TABLE_RULE.match(lines[no]):
            continue
        header = table_cells(lines[no - 1])
        body = []
        for at in range(no + 1, len(lines)):
            if not lines[at].strip().startswith("|"):
                break
            body.append((at + 1, table_cells(lines[at])))
        found = _columns(header, body) or _rows(header, body)
        if len({p.tp for p in found}) >= 2:
            return found
    return []


def _columns(header: list[str], body: list[tuple[int, list[str]]]) -> list[Point]:
    """Configurations as columns (`| Metric | TP=8/EP=8 | TP=4/EP=4 |`), throughput as a row: the per-GPU
    row where there is one, else the aggregate divided by the size."""
    sizes = {i: int(m.group(1)) for i, h in enumerate(header) if i and (m := _TP.search(h))}
    if len(set(sizes.values())) < 2:
        return []
    rows = [(line, cells) for line, cells in body if cells and _TPUT.search(cells[0]) and not _NOT_TPUT.search(cells[0])]
    row = next((r for r in rows if _PER_GPU.search(r[1][0])), None) or next(iter(rows), None)
    if row is None:
        return []
    line, cells = row
    per_gpu = bool(_PER_GPU.search(cells[0]))
    out = []
    for i, tp in sizes.items():
        value = _number(cells[i]) if i < len(cells) else None
        if value and tp:
            out.append(Point(tp, value if per_gpu else value / tp, line, f"{cells[0]}: {header[i]} {cells[i]}"))
    return out


def _rows(header: list[str], body: list[tuple[int, list[str]]]) -> list[Point]:
    """Configurations as rows (`| TP | Output token throughput (tok/s) |`): a TP column and a throughput column."""
    tp_col = next((i for i, h in enumerate(header) if _TP_HEADER.match(h)), None)
    columns = [i for i, h in enumerate(header) if _TPUT.search(h) and not _NOT_TPUT.search(h)]
    col = next((i for i in columns if _PER_GPU.search(header[i])), None)
    col = col if col is not None else next(iter(columns), None)
    if tp_col is None or col is None:
        return []
    per_gpu = bool(_PER_GPU.search(header[col]))
    out = []
    for line, cells in body:
        if max(tp_col, col) >= len(cells):
            continue
        tp, value = _number(cells[tp_col]), _number(cells[col])
        if tp and value and tp == int(tp):
            out.append(Point(int(tp), value if per_gpu else value / tp, line, f"TP {int(tp)}: {header[col]} {cells[col]}"))
    return out


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """The widest TP of the table against the narrower one that serves most per GPU -> facts.stated
    (code perf.tp_mismatch); perf.parallelism judges the gap. True when such a table was read."""
    found = points(text)
    if not found:
        return False
    wide = max(found, key=lambda p: (p.tp, -p.per_gpu))
    narrower = [p for p in found if p.tp < wide.tp]
    if not narrower:
        return False
    best = max(narrower, key=lambda p: p.per_gpu)
    facts.stated.append(PerfStatement(
        "perf.tp_mismatch", f"{source}:{best.line}", f"{wide.label}; {best.label}"[:300],
        {"tp_wide": float(wide.tp), "tp_narrow": float(best.tp), "per_gpu_wide": round(wide.per_gpu, 3),
         "per_gpu_narrow": round(best.per_gpu, 3)}))
    return True
