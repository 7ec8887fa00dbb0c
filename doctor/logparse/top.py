"""`top` pasted into an issue -> host facts: how busy the CPUs were and which engine processes ran.

The GPU waits when the CPU cannot keep up; `top` is what people paste to show it. Read into the
fields the live host collector fills (HostFacts: load average, CPU busy %, the engine processes
with their CPU %), perf.host_cpu judges it the same way.

The format, as procps-ng writes it (src/top/top.c, texts in src/top/top_nls.c): a summary line
`top - <time> up <uptime>, <n> users,  load average: 1.00, 0.90, 0.80` (LOADAV_line), `Tasks:`, the
CPU line `%Cpu(s):  5.0 us,  1.0 sy,  0.0 ni, 93.8 id, ...` (STATE_lin2x6/7_fmt; one `%Cpu<n> :`
line per CPU after `1`; procps 3.2 wrote `Cpu(s):  5.0%us, ... 93.8%id`), memory lines, then the
task header `PID USER PR NI VIRT RES SHR S %CPU %MEM TIME+ COMMAND` (Head_nlstab) and a row per
process. COMMAND is the process name (15 characters) unless `c` shows the command line. The
engines name their processes: vLLM `VLLM::EngineCore`, `VLLM::Worker_TP<n>` (setproctitle, cut to
`VLLM::EngineCor`), its API server is the `vllm` command itself; SGLang `sglang::scheduler`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LOAD = re.compile(r"^top - .*?load average:\s*(?P<one>\d+(?:\.\d+)?)", re.M)
_CPU = re.compile(r"^%?Cpu\(s\):.*?(?P<idle>\d+(?:\.\d+)?)\s*%?\s*id\b", re.M)
_PER_CPU = re.compile(r"^%?Cpu\d+\s*:", re.M)
_HEADER = re.compile(r"^\s*PID\s+USER\s+.*%CPU.*\bCOMMAND\s*$", re.M)
_ENGINE_NAMES = (
    (re.compile(r"^(?:vllm|VLLM::)"), "vllm"), (re.compile(r"^sglang::"), "sglang"),
    (re.compile(r"^llama-(?:server|cli)\b"), "llamacpp"), (re.compile(r"^ollama"), "ollama"),
    (re.compile(r"^text-generation"), "tgi"),
)


@dataclass(frozen=True)
class Task:
    """One process row: its pid, share of one core (top's Irix mode: 100 = one core) and name."""

    pid: int
    cpu_percent: float
    command: str
    engine: str


@dataclass
class TopSnapshot:
    load_avg_1m: float | None = None
    cpu_busy_percent: float | None = None  # the whole host: 100 - idle
    cpu_count: int | None = None  # only when the per-CPU lines are shown
    tasks: list[Task] = field(default_factory=list)  # the engines' processes


def parse(text: str) -> TopSnapshot | None:
    """The last `top` screen in a text; None when there is none (no summary line and task header)."""
    if "load average" not in text or "COMMAND" not in text:
        return None
    starts = [m.start() for m in _LOAD.finditer(text)]
    header = None
    for m in _HEADER.finditer(text):
        header = m
    if not starts or header is None:
        return None
    before = [s for s in starts if s < header.start()]
    screen = text[(before or starts)[-1] : header.start()]
    snap = TopSnapshot()
    load = _LOAD.search(screen)
    snap.load_avg_1m = float(load.group("one")) if load else None
    if cpu := _CPU.search(screen):
        snap.cpu_busy_percent = round(100 - float(cpu.group("idle")), 1)
    snap.cpu_count = len(_PER_CPU.findall(screen)) or None
    names = header.group(0).split()
    at_cpu, at_pid = names.index("%CPU"), names.index("PID")
    for line in text[header.end() :].split("\n")[1:]:
        cells = line.split(None, len(names) - 1)
        if len(cells) < len(names) or not cells[at_pid].isdigit():
            if line.strip():
                break
            continue
        command = cells[-1].strip()
        engine = next((e for rx, e in _ENGINE_NAMES if rx.match(command)), "")
        try:
            cpu_percent = float(cells[at_cpu].replace(",", "."))
        except ValueError:
            continue
        if engine:
            snap.tasks.append(Task(int(cells[at_pid]), cpu_percent, command, engine))
    return snap
