"""Log scan speed, memory and outcome: `llm-doctor analyze` vs `grep`/`rg` on the same representative logs.

For each shape of bench/log_shapes.py and each size, one temp file, and in the same run on it:

  - `grep -E -c` with ten trigger words (the baseline an engineer would type; its output goes to a
    file, because GNU grep stops at the first match when stdout is /dev/null),
  - `rg -c` with the same words, when `rg` is on PATH or in this venv (pip package `ripgrep`),
  - `llm-doctor analyze FILE --format json` (this venv's CLI) with the default --deadline and with
    --deadline 600,
  - with `--python-prefilter`, also `analyze --deadline 600` with no external tool (the scanner's
    own pure-Python prefilter: what a machine without rg or grep gets).

It prints seconds, MB/s, the ratio to grep (and to rg), the CPU seconds (user + system, its own
children's included: analyze's rg) and their ratio to grep's (the fair figure on a shared, loaded
machine, where wall time measures the neighbours), the child's peak RSS (os.wait4), the
report's status and rank-1 code, and the time until the crash was found: the wall time of an
analyze run whose rank-1 is the crash. The crash's code is not assumed: it is the rank-1 of
`analyze` on the same shape generated with no steady-state lines (start-up headers and the crash only).
Nothing is asserted; the numbers are for people.

Every analyze child runs as an installed tool does on a user's machine after its first run: its own
grammar cache (LLM_DOCTOR_CACHE, in the temp folder: the user cache dir is shared by every checkout on this
machine, and one with another catalogue overwrites it) and compiled bytecode (PYTHONPYCACHEPREFIX there;
PYTHONDONTWRITEBYTECODE, when set, is dropped: an editable checkout has no .pyc, a wheel's are compiled at
install). The crash-only run of each shape comes first and fills both.

`analyze` prefilters a big file with rg (this venv's, from the `ripgrep` wheel, or PATH's) or grep when
there is one (doctor/logparse/external_prefilter.py): the header says which.

    .venv/bin/python bench/log_scan.py [--size-mb 10 512] [--big] [--shape vllm-busy ...] [--python-prefilter]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from log_shapes import SHAPES, write

BIN = Path(sys.executable).parent
TRIGGERS = "Traceback|Error|error|out of memory|OOM|Killed|NCCL|preempted|Exception|FATAL"
MB = 1024**2
ENV = dict(os.environ)  # the analyze children's (main() sets the cache folders: see the docstring)
# analyze with external_prefilter.find_tool finding nothing: the pure-Python prefilter on every block
PYTHON_ONLY = ("from llm_doctor.logparse import external_prefilter as x; x.find_tool = lambda: None; "
               "from llm_doctor.cli import main; main()")


@dataclass
class Run:
    """One child process: how long it took, its peak memory, and what it printed."""

    tool: str
    seconds: float
    cpu: float
    rss_mb: float
    rc: int
    out: str

    def report(self) -> tuple[str, str]:
        """(status, rank-1 code) of an analyze run; a report that does not parse says so."""
        try:
            doc = json.loads(self.out)
        except ValueError:
            return f"rc={self.rc}, no report", "-"
        findings = doc.get("findings") or []
        return doc.get("status", "?"), findings[0]["code"] if findings else "-"


def run(tool: str, argv: list[str], out: Path) -> Run:
    """Run argv with stdout to a file; wall time, and CPU time and peak RSS from /usr/bin/time when present.

    Without it, ru_maxrss of the child (os.wait4) is used: it has a floor of the forked Python
    (about 16 MB here) because the child's pages before exec count.
    """
    rss = out.with_suffix(".rss")
    timer = ["/usr/bin/time", "-f", "%U %S %M", "-o", str(rss)] if Path("/usr/bin/time").exists() else []
    with open(out, "wb") as fh:
        start = time.perf_counter()
        child = subprocess.Popen([*timer, *argv], stdout=fh, stderr=subprocess.DEVNULL, env=ENV)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if timer:
        user, system, kb = rss.read_text().split()[-3:]
        cpu, kb = float(user) + float(system), int(kb)
    else:
        cpu, kb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    return Run(tool, seconds, cpu, kb / 1024, child.returncode, out.read_text(errors="replace").strip())


def crash_code(shape: str, tmp: Path) -> str:
    """Rank-1 of analyze on the shape with no steady-state lines: what finding the crash itself is."""
    path = write(shape, tmp / f"{shape}-crash-only.log", 0)
    return run("analyze", [str(BIN / "llm-doctor"), "analyze", str(path), "--format", "json"], tmp / "out.json").report()[1]


def measure(shape: str, size_mb: int, tmp: Path, rg: str | None, python: bool) -> list[Run]:
    path = write(shape, tmp / f"{shape}-{size_mb}mb.log", size_mb * MB)
    runs = [run("grep -E -c", ["grep", "-E", "-c", TRIGGERS, str(path)], tmp / "grep.out")]
    if rg:
        runs.append(run("rg -c", [rg, "-c", TRIGGERS, str(path)], tmp / "rg.out"))
    analyze = [str(BIN / "llm-doctor"), "analyze", str(path), "--format", "json"]
    runs.append(run("analyze", analyze, tmp / "default.json"))
    runs.append(run("analyze --deadline 600", [*analyze, "--deadline", "600"], tmp / "600.json"))
    if python:
        argv = [sys.executable, "-c", PYTHON_ONLY, "analyze", str(path), "--format", "json", "--deadline", "600"]
        runs.append(run("analyze 600, Python pf", argv, tmp / "python.json"))
    path.unlink()
    return runs


def table(shape: str, size_mb: int, crash: str, runs: list[Run]) -> list[str]:
    grep, grep_cpu = runs[0].seconds, max(runs[0].cpu, 0.01)  # /usr/bin/time counts in hundredths
    rg = next((r.seconds for r in runs if r.tool == "rg -c"), None)
    rows = []
    for r in runs:
        status, code = r.report() if r.tool.startswith("analyze") else (f"{r.out} lines", "")
        found = "" if not r.tool.startswith("analyze") else f"{r.seconds:.2f}" if code == crash else "not found"
        rows.append(f"{shape:<14}{size_mb:>6} {r.tool:<23}{r.seconds:>8.3f}{size_mb / r.seconds:>9.1f}{r.seconds / grep:>8.1f}"
                    f"{(f'{r.seconds / rg:.1f}' if rg else '-'):>8}{r.cpu:>8.2f}{r.cpu / grep_cpu:>8.1f}{r.rss_mb:>9.0f}  {status:<12} {code:<24} {found}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, nargs="+", choices=(10, 64, 512, 2048), default=[10, 512])
    ap.add_argument("--big", action="store_true", help="also 2 GB (2048 MB) logs")
    ap.add_argument("--shape", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    ap.add_argument("--python-prefilter", action="store_true", help="also analyze without an external prefilter tool")
    args = ap.parse_args()
    sizes = sorted(set(args.size_mb) | ({2048} if args.big else set()))
    rg = shutil.which("rg") or shutil.which("rg", path=str(BIN))
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"grep: {subprocess.run(['grep', '-V'], capture_output=True, text=True).stdout.splitlines()[0]}; "
          f"rg: {rg or 'absent'}; trigger words: {TRIGGERS}")
    which = "from llm_doctor.logparse import external_prefilter as x; print((x.find_tool() or ['python'])[0], x.MIN_BYTES >> 20)"
    tool, least = subprocess.run([sys.executable, "-c", which], capture_output=True, text=True).stdout.split()
    print(f"analyze prefilters files of {least} MB and more with: {tool}")
    print(f"{'shape':<14}{'MB':>6} {'tool':<23}{'s':>8}{'MB/s':>9}{'x grep':>8}{'x rg':>8}{'cpu s':>8}{'cpu x':>8}{'RSS MB':>9}  "
          f"{'status':<12} {'rank-1':<24} crash found (s)")
    with tempfile.TemporaryDirectory(prefix="llm-doctor-bench-") as name:
        tmp = Path(name)
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV.update(LLM_DOCTOR_CACHE=str(tmp / "cache"), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
        for shape in args.shape:
            crash = crash_code(shape, tmp)
            for size_mb in sizes:
                print("\n".join(table(shape, size_mb, crash, measure(shape, size_mb, tmp, rg, args.python_prefilter))), flush=True)
            print(f"{'':<14}(the crash alone ranks {crash} first)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
