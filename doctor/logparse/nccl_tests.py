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


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """The run's peak bus bandwidth, ranks and hosts as log metrics (nccl_busbw_gbs, nccl_ranks, nccl_hosts;
    the GPU's name and the row in raw). True when a result table was read."""
    from llm_doctor.logparse import stat_lines

    run = parse(source, text)
    if run is None:
        return False
    if run.peak_busbw is None:
        return True  # read: only small sizes, which measure latency and say nothing of the link
    values = {"nccl_busbw_gbs": run.peak_busbw, "nccl_size_bytes": float(run.peak_size),
              "nccl_ranks": float(len(run.gpus)), "nccl_hosts": float(len(run.hosts))}
    raw = {"nccl_busbw_gbs": f"{run.peak_line} ({run.test or 'nccl-tests'}, out-of-place busbw {run.peak_busbw:g} GB/s)"}
    if run.test:
        raw["nccl_test"] = run.test
    if run.gpus:
        raw["nccl_gpu"] = run.gpus[0]
    stat_lines.into_facts(facts, MetricsFacts(source="log", available=True, values=values, raw=raw, origin="log"))
    return True
