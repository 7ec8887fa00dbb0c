"""An nccl-tests run pasted into a thread (`all_reduce_perf -b 8 -e 8G -f 2 -g 8`) -> the bus bandwidth
the GPUs reached, with the GPUs and hosts it ran on. No decisions here: perf.interconnect judges it.

The output, as NVIDIA/nccl-tests src/util.cu (2.x, and common.cu before the split) prints it:
- `# Using devices`, then per rank `#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s`
  (2019: `#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s`, 2017 without the Pid): the host and the GPU's name;
- a header `#       size         count      type   redop    root     time   algbw   busbw #wrong ...`, units
  `(B) (elements) ... (us) (GB/s) (GB/s)`, then one row per size: `%12li  %12li  %8s  %6s  %6s` and, out of
  place then in place, `  %7s  %6.2f  %6.2f  %6s` (time, algbw, busbw, #wrong; with -R/per-iteration timing
  more columns follow each);
- `# Avg bus bandwidth    : %g [OK|FAILED]` (2017: without the `#`) and `# Collective test concluded: <test>`.

NCCL 1.x's own tests (NVIDIA/nccl test/single/all_reduce_test.cu, before nccl-tests split off) print one size,
the one the command names (`all_reduce_test <data size in bytes> [number of GPUs] [GPU 0] [GPU 1] ...`), as rows
`  %7.3f  %5.2f  %5.2f` (time, algbw, busbw) after `N type op` (2016; later `bytes N type op`) under a header of
those names, and `#   Rank %2d uses device %2d [0x%02x] %s` per GPU (later versions). Where the rank lines are
not pasted, the command line above the table gives the number of GPUs.

A paste that compares runs (one pair of GPUs against another, one card against another) is read for its
slowest run: the run the thread is about.

busbw is the test's measure of the link ("bus bandwidth": algbw scaled by the collective's traffic per
rank, so it compares with the hardware's peak); the largest sizes carry it, small ones measure latency.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llm_doctor.facts import Facts
from llm_doctor.facts.metrics import MetricsFacts

_RANK = re.compile(r"^#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(?P<host>\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(?P<gpu>.+?)\s*$", re.M)
# the columns before the times differ by test and version (2019: "type" alone for all_gather, "type redop" for
# all_reduce, "type root" for broadcast; since 2.x every test prints "type redop root"): read by the header's names
_HEADER = re.compile(r"^#\s+size\s+count\s+type\b[^\n]*\bbusbw\b[^\n]*$", re.M)
_ROW = re.compile(r"^\s*\d+\s+\d+\s+\w")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(?P<avg>[\d.]+(?:e[+-]?\d+)?)", re.M)
_TEST = re.compile(r"^#\s*Collective test concluded:\s*(?P<test>\S+)", re.M)
LARGE = 32 * 1024**2  # bytes: a size at or above this measures the link's bandwidth, not its latency
# NCCL 1.x's tests: one size, the user's (1 MiB and more takes ~100 us on PCIe, far above the link's ~10 us latency)
_V1_HEADER = re.compile(r"^#?[ \t]*(?:bytes[ \t]+)?N[ \t]+type[ \t]+op[ \t]+time[ \t]+algbw[ \t]+busbw\b[^\n]*$", re.M)
_V1_ROW = re.compile(r"^\s*(?:(?P<bytes>\d+)\s+)?(?P<n>\d+)\s+(?P<type>char|int|half|float|double|int64|uint64)\s+(?:sum|prod|max|min)\s+"
                     r"[\d.]+\s+[\d.]+\s+(?P<busbw>[\d.]+)")
_V1_RANK = re.compile(r"^#\s+Rank\s+\d+\s+uses device\s+\d+\s+\[[^\]]*\]\s+(?P<gpu>.+?)\s*$", re.M)
_V1_COMMAND = re.compile(r"\b(?P<test>\w+_test)\s+\d+\s+(?P<gpus>\d+)\b")
_V1_BYTES = {"char": 1, "half": 2, "int": 4, "float": 4, "double": 8, "int64": 8, "uint64": 8}
V1_LARGE = 1024**2


@dataclass
class Run:
    """One nccl-tests run: its GPUs, hosts, and the best bus bandwidth of the large sizes (GB/s)."""

    source: str
    test: str = ""
    gpus: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    peak_busbw: float | None = None  # out of place, at the size LARGE or above where it is highest
    peak_size: int = 0
    peak_line: str = ""  # source:line: the row
    avg_busbw: float | None = None


def parse(source: str, text: str) -> Run | None:
    """The first nccl-tests result table of the text, None when there is none."""
    header = _HEADER.search(text)
    if header is None:
        return None
    first = text.count("\n", 0, header.end()) + 2  # the line after the header's
    run = Run(source)
    for m in _RANK.finditer(text, 0, header.start()):
        run.gpus.append(m.group("gpu"))
        if m.group("host") not in run.hosts:
            run.hosts.append(m.group("host"))
    column = header.group(0).lstrip("#").split().index("busbw")  # the first: out of place
    end = _AVG.search(text, header.end())
    for no, line in enumerate(text[header.end() + 1:end.start() if end else len(text)].splitlines(), first):
        cells = line.split()
        if not _ROW.match(line) or len(cells) <= column or int(cells[0]) < LARGE:
            continue
        try:
            busbw = float(cells[column])
        except ValueError:  # "N/A"
            continue
        if run.peak_busbw is None or busbw > run.peak_busbw:
            run.peak_busbw, run.peak_size, run.peak_line = busbw, int(cells[0]), f"{source}:{no}: {line.strip()}"
    if end is not None:
        run.avg_busbw = float(end.group("avg"))
    if (test := _TEST.search(text, header.end())) is not None:
        run.test = test.group("test")
    return run


def parse_v1(source: str, text: str, start: int = 0) -> tuple[Run, int] | None:
    """The first NCCL 1.x test table at or after `start`, and where it ends; None when there is none."""
    header = _V1_HEADER.search(text, start)
    if header is None:
        return None
    before = text[start:header.start()]  # what was printed, or typed, above this table and below the previous one
    run = Run(source)
    run.gpus = [m.group("gpu") for m in _V1_RANK.finditer(before)]
    command = next(reversed(list(_V1_COMMAND.finditer(before))), None)  # the last command line above the table ran it
    if command is not None:
        run.test = command.group("test")
        if not run.gpus:
            run.gpus = [""] * int(command.group("gpus"))
    run.hosts = ["localhost"]  # a single-process test: one host
    no = text.count("\n", 0, header.end()) + 1
    end = header.end()
    for line in text[header.end() + 1:].splitlines():
        no += 1
        row = _V1_ROW.match(line)
        if row is None:
            if line.strip():
                break
            continue
        end += len(line) + 1
        size = int(row.group("bytes") or int(row.group("n")) * _V1_BYTES[row.group("type")])
        busbw = float(row.group("busbw"))
        if size >= V1_LARGE and (run.peak_busbw is None or busbw > run.peak_busbw):
            run.peak_busbw, run.peak_size, run.peak_line = busbw, size, f"{source}:{no}: {line.strip()}"
    return run, end + 1


def runs_v1(source: str, text: str) -> list[Run]:
    """Every NCCL 1.x test table of the text, in order."""
    out: list[Run] = []
    at = 0
    while (found := parse_v1(source, text, at)) is not None:
        run, at = found
        out.append(run)
    return out


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """The run's peak bus bandwidth, ranks and hosts as log metrics (nccl_busbw_gbs, nccl_ranks, nccl_hosts;
    the GPU's name and the row in raw). True when a result table was read."""
    from llm_doctor.logparse import stat_lines

    run, compared = parse(source, text), ""
    if run is None:
        measured = [r for r in runs_v1(source, text) if r.peak_busbw is not None]
        if not measured:
            return False
        run = min(measured, key=lambda r: r.peak_busbw or 0.0)  # the slowest of the runs compared
        best = max(measured, key=lambda r: r.peak_busbw or 0.0)
        compared = f"the fastest run of the same paste: {best.peak_line} (busbw {best.peak_busbw:g} GB/s)" if best is not run else ""
    if run.peak_busbw is None:
        return True  # read: only small sizes, which measure latency and say nothing of the link
    values = {"nccl_busbw_gbs": run.peak_busbw, "nccl_size_bytes": float(run.peak_size),
              "nccl_ranks": float(len(run.gpus)), "nccl_hosts": float(len(run.hosts))}
    raw = {"nccl_busbw_gbs": f"{run.peak_line} ({run.test or 'nccl-tests'}, out-of-place busbw {run.peak_busbw:g} GB/s)"}
    if run.test:
        raw["nccl_test"] = run.test
    if run.gpus and run.gpus[0]:
        raw["nccl_gpu"] = run.gpus[0]
    if compared:
        raw["nccl_compared"] = compared
    stat_lines.into_facts(facts, MetricsFacts(source="log", available=True, values=values, raw=raw, origin="log"))
    return True
