"""Streaming scan speed and memory: our log scan vs `grep -E` on the same synthetic log.

Generates a log of --size-mb (default 1024) into /tmp from real vLLM line shapes (stat lines,
access-log lines, one OOM traceback every ~100k lines), then times `grep -E` for the error words
and `LogScanner` over the same file, and prints the ratio and the scan's peak RSS (a subprocess,
so the generator's memory does not count). Memory must not grow with the size of the log.

    .venv/bin/python bench/log_scan.py [--size-mb 1024]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOISE = [
    b"INFO 05-03 18:07:24 metrics.py:229] Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 1020.1 tokens/s, "
    b"Running: 37 reqs, Swapped: 0 reqs, Pending: 2 reqs, GPU KV cache usage: 61.2%, CPU KV cache usage: 0.0%\n",
    b'INFO:     10.1.2.3:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n',
    b"(VllmWorker rank=1 pid=4321) INFO 05-03 18:07:25 [gpu_model_runner.py:1203] step done in 31 ms\n",
]
CRASH = (
    b"ERROR 05-03 18:07:26 engine.py:157] Traceback (most recent call last):\n"
    b'ERROR 05-03 18:07:26 engine.py:157]   File "/vllm/worker/model_runner.py", line 1, in execute_model\n'
    b"ERROR 05-03 18:07:26 engine.py:157] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    b"total capacity of 79.25 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.21 GiB memory in use.\n"
)
GREP = r"out of memory|Error|error|NCCL|Killed|No available memory|KV cache \("


def generate(path: Path, size: int) -> None:
    block = b"".join(NOISE[i % 3] for i in range(100_000)) + CRASH
    with open(path, "wb") as fh:
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)


SCAN = """
import resource, sys, time
sys.path.insert(0, {root!r})
from doctor.collect.logs import read_lines
from doctor.logparse.scan import LogScanner
t = time.perf_counter()
s = LogScanner(); s.start_source("big.log")
with open({path!r}, "rb") as fh:
    for raw in read_lines(fh):
        s.feed(raw)
f = s.finish()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, f.lines_read, len(f.events), sum(e.count for e in f.events))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    args = ap.parse_args()
    path = Path("/tmp") / f"llm-doctor-bench-{args.size_mb}mb.log"
    if not path.exists() or path.stat().st_size < args.size_mb * 1024**2:
        generate(path, args.size_mb * 1024**2)
    size_mb = path.stat().st_size / 1024**2
    t = time.perf_counter()
    grep = subprocess.run(["grep", "-cE", GREP, str(path)], capture_output=True, text=True)
    grep_s = time.perf_counter() - t
    out = subprocess.run([sys.executable, "-c", SCAN.format(root=str(ROOT), path=str(path))], capture_output=True, text=True, check=True)
    scan_s, rss_kb, lines, events, hits = out.stdout.split()
    print(f"log: {path} ({size_mb:.0f} MiB, {int(lines)} lines)")
    print(f"grep -E: {grep_s:.2f} s ({grep.stdout.strip()} matching lines)")
    print(f"llm-doctor scan: {float(scan_s):.2f} s, {events} distinct events ({hits} occurrences), peak RSS {int(rss_kb) / 1024:.0f} MiB")
    print(f"ratio scan/grep: {float(scan_s) / max(grep_s, 1e-9):.1f}x; throughput {size_mb / float(scan_s):.0f} MiB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
