"""A benchmark table that compares tensor parallel sizes -> the throughput each GPU gives at each size.

Serving benchmarks are tabulated per configuration: InferenceX's result comments (`| Metric | TP=8/EP=8 |
TP=4/EP=4 | Delta |` with rows `Throughput/GPU`, `Output tput/GPU`, `Mean TTFT`), a PR's or a thread's
sweep (`| TP | Output token throughput (tok/s) |`, one row per size). Both say what codes.md calls
perf.tp_mismatch when the narrower split serves more per GPU: the wide one spends its extra GPUs on
all-reduces, and replicas of the narrow one would serve more. The throughput per GPU is read as the
table gives it (a `/GPU` row or column) or as the aggregate divided by the size. No decisions here:
perf.parallelism judges the figures (facts.stated, code perf.tp_mismatch, measures tp_wide, tp_narrow,
per_gpu_wide, per_gpu_narrow).

The same tables compare a setting on and off (`| warm TTFT | prefix-ON | prefix-OFF |`, rows `main branch (no cache)`
and `w. cache (49% hit rate)`, `--enforce-eager` against CUDA graphs): the off arm measured COST times slower (a
latency or a time higher, a throughput lower) is what its code names, whichever state the user runs. Read into
facts.stated with the measure `setting_cost` (the off arm against the on arm); checks/perf/stated.py reports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_doctor.facts import Facts
from llm_doctor.facts.stated import PerfStatement
from llm_doctor.logparse.bench_runs import CELL_NUMBER, table_cells

# a configuration named by its TP size: "TP=8/EP=8", "TP8", "tp 4", "-tp 2", "TP=4, DP=2", "tensor_parallel_size=4"
_TP = re.compile(r"(?<![A-Za-z])(?:TP|tp_size|tensor[_ -]parallel(?:[_ -]size)?)\s?[=:]?\s?(\d{1,2})(?!\d)", re.I)
_TP_HEADER = re.compile(r"^(?:TP|TP size|tp_size|tensor[_ -]parallel(?:[_ -]size)?)$", re.I)
_PER_GPU = re.compile(r"(?:/|\bper\s)GPU\b", re.I)
# throughput, as the benchmarks label it (vLLM/SGLang "Output token throughput (tok/s)", "Total Token throughput",
# InferenceX "Throughput/GPU", "Output tput/GPU"), never a latency or a request rate
_TPUT = re.compile(r"\b(?:(?:output |total |token |gen(?:eration)? )*(?:throughput|tput)|tok(?:en)?s?/s)\b", re.I)
_NOT_TPUT = re.compile(r"\b(?:req(?:uest)?s?/s|latency|TTFT|TPOT|ITL|E2E|ms)\b|\bper[ -]?(?:user|request|req|stream)\b|/(?:user|req)\b", re.I)


# a markdown table's rule line: |---|---| (and the two-dash `--|--|--` some write without the outer pipes)
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)+\|?\s*$")
COST = 1.5  # the off arm this many times slower than the on arm: well past a benchmark's run-to-run noise (a few %)
# the arms of a setting, as tables label them: (code, off, on); off is tried first ("no cuda graph" holds "cuda graph")
_CACHE = r"(?:prefix[- _]|radix[- _]|APC\b ?)?cach(?:e|ing)\b"
SETTINGS = (
    ("perf.prefix_caching_off",
     re.compile(rf"\b(?:prefix|radix)[- _]?(?:cach(?:e|ing)[- _]?)?off\b|\b(?:no|without|w/o|wo)\.? {_CACHE}|{_CACHE} (?:off|disabled)\b|"
                r"--no-enable-prefix-caching|--disable-radix-cache|enable_prefix_caching=False", re.I),
     re.compile(rf"\b(?:prefix|radix)[- _]?(?:cach(?:e|ing)[- _]?)?on\b|\b(?:with|w\.|w/) ?{_CACHE}|{_CACHE} (?:on|enabled)\b|"
                r"(?<![\w-])--enable-prefix-caching|enable_prefix_caching=True", re.I)),
    ("perf.eager_mode",
     re.compile(r"--enforce-eager|\beager\b|enforce_eager=True|--disable-cuda-graph\b|\b(?:no|without|w/o) (?:cuda[- ]?)?graphs?\b|"
                r"\b(?:cuda[- ]?)?graphs? (?:off|disabled)\b", re.I),
     re.compile(r"\bcuda[- ]?graphs?\b|\bgraphs? (?:on|enabled)\b|\bwith graphs?\b|FULL_AND_PIECEWISE|\bpiecewise\b", re.I)),
)
_LOWER = re.compile(r"\b(?:TTFT|TPOT|ITL|E2EL?|latency|time|duration|ms|secs?|seconds?)\b|\((?:s|ms)\)", re.I)  # lower is better
_HIGHER = re.compile(r"tok(?:en)?s?/s|\b(?:throughput|tput|tps|t/s|req(?:uest)?s?/s|QPS|speed)\b", re.I)  # higher is better


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


def _tables(text: str) -> list[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Each markdown table of the text: its header cells and its body rows (line number, cells)."""
    lines = text.splitlines()
    out = []
    for no in range(1, len(lines)):
        if not TABLE_RULE.match(lines[no]) or "|" not in lines[no - 1]:
            continue
        body = []
        for at in range(no + 1, len(lines)):
            if "|" not in lines[at] or TABLE_RULE.match(lines[at]):
                break
            body.append((at + 1, table_cells(lines[at])))
        out.append((table_cells(lines[no - 1]), body))
    return out


def _arm(label: str, off: re.Pattern[str], on: re.Pattern[str]) -> str:
    return "off" if off.search(label) else "on" if on.search(label) else ""


def _cost(metric: str, off: str, on: str) -> float | None:
    """How many times worse the off value is than the on value, for a metric whose direction its label (or the
    cells' unit) says; None where it says none or a value is missing."""
    a, b = _number(off), _number(on)
    if not a or not b:
        return None
    if _HIGHER.search(metric):
        return b / a
    if _LOWER.search(metric) or (_LOWER.search(off) and _LOWER.search(on)):
        return a / b
    return None


@dataclass(frozen=True)
class Cost:
    """The off arm of a setting against its on arm, in one metric of one table."""

    code: str
    cost: float
    line: int
    text: str


def setting_costs(text: str) -> list[Cost]:
    """The worst cost of each setting a table compares on and off (arms as columns or as rows)."""
    best: dict[str, Cost] = {}
    for header, body in _tables(text):
        for code, off_rx, on_rx in SETTINGS:
            for found in _arm_columns(code, header, body, off_rx, on_rx) + _arm_rows(code, header, body, off_rx, on_rx):
                if found.cost >= COST and (code not in best or found.cost > best[code].cost):
                    best[code] = found
    return list(best.values())


def _arm_columns(code: str, header: list[str], body: list[tuple[int, list[str]]], off_rx: re.Pattern[str],
                 on_rx: re.Pattern[str]) -> list[Cost]:
    """`| warm TTFT | prefix-ON | prefix-OFF |`: one column per arm, the metric in the first header cell or the row's."""
    arms = {_arm(h, off_rx, on_rx): i for i, h in reversed(list(enumerate(header))) if i}
    if "off" not in arms or "on" not in arms:
        return []
    off, on = arms["off"], arms["on"]
    out = []
    for line, cells in body:
        if max(off, on) < len(cells) and (cost := _cost(f"{header[0]} {cells[0]}", cells[off], cells[on])):
            out.append(Cost(code, cost, line, f"{header[0]} {cells[0]}: {header[off]} {cells[off]}, {header[on]} {cells[on]}"))
    return out


def _arm_rows(code: str, header: list[str], body: list[tuple[int, list[str]]], off_rx: re.Pattern[str],
              on_rx: re.Pattern[str]) -> list[Cost]:
    """`| Version | Input (tok/s) | Cost Time (s) |` with rows `main branch (no cache)` and `w. cache`: one row per arm
    (the first of each), the metric in each column's header."""
    rows: dict[str, tuple[int, list[str]]] = {}
    for line, cells in body:
        if cells and (arm := _arm(cells[0], off_rx, on_rx)):
            rows.setdefault(arm, (line, cells))
    if "off" not in rows or "on" not in rows:
        return []
    (_, off), (line, on) = rows["off"], rows["on"]
    out = []
    for i in range(1, min(len(header), len(off), len(on))):
        if cost := _cost(header[i], off[i], on[i]):
            out.append(Cost(code, cost, line, f"{header[i]}: {off[0]} {off[i]}, {on[0]} {on[i]}"))
    return out


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """Both kinds of table -> facts.stated. True when one was read."""
    if "|" not in text:
        return False
    costs = setting_costs(text)
    for c in costs:
        facts.stated.append(PerfStatement(c.code, f"{source}:{c.line}", c.text[:300], {"setting_cost": round(c.cost, 2)}))
    return _tp_into_facts(source, text, facts) or bool(costs)


def _tp_into_facts(source: str, text: str, facts: Facts) -> bool:
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
