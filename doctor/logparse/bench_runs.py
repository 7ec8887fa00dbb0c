"""Several serving-benchmark runs pasted together (a concurrency sweep) -> the load probe's facts.

`llm-doctor run --probe-load N` measures generated tokens/s at concurrency 1 and N: if N requests at
once give no more tokens/s than one, the server serves them one at a time (perf.batching judges
it). A user who swept `--max-concurrency 1 ... N` with a serving benchmark pasted the same
measurement, so its runs fill the same ProbeFacts. One run alone says nothing about scaling: the
latency in it is doctor/logparse/stat_lines.py's.

The summary, as the benchmarks print it:
- vLLM `benchmark_serving.py` / `vllm bench serve` (benchmarks/benchmark_serving.py,
  vllm/benchmarks/serve.py): a `===== Serving Benchmark Result =====` banner, then `{:<40} {:<10}`
  rows: "Successful requests:", "Maximum request concurrency:" (only with --max-concurrency; in
  0.6.x it is printed with "Traffic request rate:" just above the banner instead), "Output token
  throughput (tok/s):", ..., closed by a line of `=`.
- SGLang `python -m sglang.bench_serving` (python/sglang/bench_serving.py): the same banner and
  rows, "Max request concurrency:" (a number or "not set") among them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BANNER = re.compile(r"^=+ ?Serving Benchmark Result ?=+\s*$", re.M)
_CLOSE = re.compile(r"^={20,}\s*$", re.M)
_CONCURRENCY = re.compile(r"^(?:Maximum|Max) request concurrency:\s+(\d+)\s*$", re.M)
_OUTPUT = re.compile(r"^Output token throughput \(tok/s\):\s+([\d.]+)\s*$", re.M)
_DONE = re.compile(r"^Successful requests:\s+(\d+)\s*$", re.M)
SWEEP_SPAN = 4  # a sweep from one request at a time to at least this many: batching must show in between


@dataclass(frozen=True)
class Run:
    """One benchmark summary: its concurrency cap, generated tokens/s and where it is (line numbers)."""

    concurrency: int
    output_tps: float
    requests: int
    line: int


def runs(text: str) -> list[Run]:
    """The summaries in the text that state their concurrency cap, in order."""
    if "Benchmark Result" not in text:
        return []
    out = []
    start = 0
    for m in _BANNER.finditer(text):
        close = _CLOSE.search(text, m.end())
        end = close.start() if close else len(text)
        body = text[m.end() : end]
        before = text[start : m.start()]  # 0.6.x printed the cap above the banner
        cap = _CONCURRENCY.search(body) or _last(_CONCURRENCY, before)
        tps, done = _OUTPUT.search(body), _DONE.search(body)
        if cap and tps and done:
            out.append(Run(int(cap.group(1)), float(tps.group(1)), int(done.group(1)), text.count("\n", 0, m.start()) + 1))
        start = close.end() if close else end
    return out


# a markdown table of a sweep, as people tabulate their runs: a concurrency column and an aggregate throughput column
# (not a per-request one: that falls as requests share the GPU, and it should)
_TABLE_CONCURRENCY = re.compile(r"^(?:max[-_ ]?)?concurrency\b|^concurren(?:t|cy)\b|^(?:num[-_ ]?)?(?:clients|users|concurrent requests)\b|"
                                r"^c$|^parallel(?: requests)?$", re.I)
_TABLE_TPS = re.compile(r"\b(?:output |total |aggregate |generation |gen )?(?:token )?throughput\b|\btok(?:en)?s?/s\b|\btps\b", re.I)
_PER_REQUEST = re.compile(r"\bper[ -]?(?:user|request|req|stream|seq\w*|client)\b|/(?:user|req|request|stream)\b|\b(?:input|prompt|prefill)\b|"
                          r"\bsingle\b|\beach\b|\breq/s\b", re.I)
CELL_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")  # a markdown table's |---|---| line


def table_cells(line: str) -> list[str]:
    """A markdown table row's cells, their emphasis and code marks peeled (doctor/logparse/tp_compare.py reads them too)."""
    return [c.strip().strip("*`_ ") for c in line.strip().strip("|").split("|")]


def table_runs(text: str) -> list[Run]:
    """The rows of the first markdown table in the text with a concurrency column and an aggregate
    throughput column, as runs (requests unknown: 0)."""
    if "|" not in text:
        return []
    lines = text.splitlines()
    for no in range(1, len(lines)):
        if not TABLE_RULE.match(lines[no]):
            continue
        header = table_cells(lines[no - 1])
        conc = next((i for i, h in enumerate(header) if _TABLE_CONCURRENCY.search(h)), None)
        tps = next((i for i, h in enumerate(header) if _TABLE_TPS.search(h) and not _PER_REQUEST.search(h)), None)
        if conc is None or tps is None:
            continue
        out = []
        for at in range(no + 1, len(lines)):
            row = lines[at].strip()
            if not row.startswith("|"):
                break
            cells = row.strip("|").split("|")
            c, t = (CELL_NUMBER.search(cells[i]) if i < len(cells) else None for i in (conc, tps))
            if c and t and "." not in c.group(0):
                out.append(Run(int(c.group(0).replace(",", "")), float(t.group(0).replace(",", "")), 0, at + 1))
        return out
    return []


def sweep(found: list[Run]) -> tuple[Run, Run] | None:
    """The run at concurrency 1 and the one at the highest, when the runs span a sweep (what the
    probe measures: a sweep that starts higher may be flat because the GPU is already saturated)."""
    if len(found) < 2:
        return None
    low = min(found, key=lambda r: (r.concurrency, -r.output_tps))
    high = max(found, key=lambda r: (r.concurrency, r.output_tps))
    if low.concurrency != 1 or high.concurrency < SWEEP_SPAN:
        return None
    return low, high


def _last(rx: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = None
    for found in rx.finditer(text):  # noqa: B007 - the last one is wanted
        pass
    return found
