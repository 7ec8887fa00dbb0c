"""Streaming scan speed and memory: our log scan vs `grep` on the same synthetic log.

Generates a log of --size-mb (default 1024) into /tmp shaped like a real vLLM V1 server under
load (line shapes from shared/real: `(APIServer pid=1)` and ANSI-coloured `(VllmWorker rank=N
pid=M)` prefixes, `Engine 000: Avg prompt throughput` stat lines, uvicorn access lines, request
logs with user prompts, a few warnings and 4xx answers; a start-up header and one CUDA OOM
traceback every ~200k lines). Then times, in the same run:

  - `grep -ciF -f LITERALS`: grep with the very literals our prefilter searches (the fair baseline),
  - `grep -cE` with a handful of error words (what an engineer would type),
  - our scan (doctor.collect.logs.read_blocks -> LogScanner.feed_block, as `analyze` runs it),

and prints the ratios and the scan's peak RSS (in a subprocess, so the generator's memory does not
count). Memory must not grow with the size of the log: compare --size-mb 64 and 1024.

    .venv/bin/python bench/log_scan.py [--size-mb 1024]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPTS = [
    "Summarise the attached quarterly report in three bullet points.",
    "Write a haiku about the sea.",
    "Translate 'good morning' into French and German.",
    "Explain how a transformer model works to a ten year old.",
    "Why does my Python script fail with a KeyError when the dict has the key?",
    "List five uses of baking soda around the house.",
]
HEADER = (
    "(APIServer pid=1) INFO 05-03 18:00:01 [api_server.py:1896] vLLM API server version 0.10.1.1\n"
    "(APIServer pid=1) INFO 05-03 18:00:01 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-70B-Instruct', "
    "'tensor_parallel_size': 4, 'max_model_len': 32768, 'gpu_memory_utilization': 0.92}\n"
    "(EngineCore_0 pid=311) INFO 05-03 18:00:09 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: "
    "model='meta-llama/Llama-3.1-70B-Instruct', tensor_parallel_size=4, max_seq_len=32768\n"
    "\x1b[1;36m(VllmWorker rank=0 pid=402)\x1b[0;0m INFO 05-03 18:01:12 [gpu_model_runner.py:1892] Model loading took 32.8864 GiB "
    "and 61.23 seconds\n"
    "(EngineCore_0 pid=311) INFO 05-03 18:01:40 [kv_cache_utils.py:849] GPU KV cache size: 412,160 tokens\n"
    "(APIServer pid=1) INFO 05-03 18:02:05 [launcher.py:29] Available routes are:\n"
    "(APIServer pid=1) INFO:     Application startup complete.\n"
)
CRASH = (
    "\x1b[1;36m(VllmWorker rank=2 pid=404)\x1b[0;0m ERROR 05-03 19:07:26 [multiproc_executor.py:546] Traceback (most recent call last):\n"
    '\x1b[1;36m(VllmWorker rank=2 pid=404)\x1b[0;0m ERROR 05-03 19:07:26 [multiproc_executor.py:546]   File "/vllm/v1/worker/gpu_model_runner.py", '
    "line 1570, in execute_model\n"
    "\x1b[1;36m(VllmWorker rank=2 pid=404)\x1b[0;0m ERROR 05-03 19:07:26 [multiproc_executor.py:546] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.25 GiB of which 1.02 GiB is free. Including non-PyTorch memory, "
    "this process has 78.21 GiB memory in use.\n"
)
GREP_WORDS = r"out of memory|Error|error|NCCL|Killed|No available memory|KV cache \("


def _noise(rng: random.Random, t: int) -> str:
    r = rng.random()
    ts = f"{18 + (t // 3600) % 6:02d}:{(t // 60) % 60:02d}:{t % 60:02d}"
    if r < 0.25:
        return (f"(APIServer pid=1) INFO 05-03 {ts} [loggers.py:123] Engine 000: Avg prompt throughput: {rng.uniform(0, 9000):.1f} tokens/s, "
                f"Avg generation throughput: {rng.uniform(0, 3000):.1f} tokens/s, Running: {rng.randint(0, 256)} reqs, Waiting: "
                f"{rng.randint(0, 40)} reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache hit rate: {rng.uniform(0, 80):.1f}%\n")
    if r < 0.55:
        status = "200 OK" if rng.random() < 0.998 else "400 Bad Request"
        return (f'(APIServer pid=1) INFO:     10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.7:{rng.randint(1024, 65535)} - '
                f'"POST /v1/chat/completions HTTP/1.1" {status}\n')
    if r < 0.75:
        return (f"(APIServer pid=1) INFO 05-03 {ts} [logger.py:39] Received request chatcmpl-{rng.getrandbits(128):032x}: prompt: "
                f"'<|user|>{rng.choice(PROMPTS)}<|assistant|>', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
                f"repetition_penalty=1.0, temperature=0.7, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
                f"max_tokens=512, min_tokens=0, logprobs=None, skip_special_tokens=True), prompt_token_ids: None, lora_request: None.\n")
    if r < 0.95:
        return f"(APIServer pid=1) INFO 05-03 {ts} [async_llm.py:228] Added request chatcmpl-{rng.getrandbits(128):032x}.\n"
    if r < 0.99:
        return (f"\x1b[1;36m(VllmWorker rank={rng.randint(0, 3)} pid={402 + rng.randint(0, 3)})\x1b[0;0m INFO 05-03 {ts} "
                f"[custom_all_reduce.py:196] Registering {rng.randint(1000, 9000)} cuda graph addresses\n")
    return (f"(APIServer pid=1) WARNING 05-03 {ts} [protocol.py:58] The following fields were present in the request but ignored: "
            "{'stream_options'}\n")


def generate(path: Path, size: int) -> None:
    """A 200k-line block of noise, repeated (each copy ends with the crash) until `size` bytes."""
    rng = random.Random(4)
    block = ("".join(_noise(rng, t) for t in range(200_000)) + CRASH).encode()
    with open(path, "wb") as fh:
        fh.write(HEADER.encode())
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)


SCAN = """
import resource, sys, time
sys.path.insert(0, {root!r})
from doctor.collect.logs import read_blocks
from doctor.logparse.scan import LogScanner
t = time.perf_counter()
s = LogScanner(); s.start_source("big.log")
with open({path!r}, "rb") as fh:
    for block in read_blocks(fh):
        s.feed_block(block)
f = s.finish()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, f.lines_read, len(f.events),
      sum(e.count for e in f.events), f.engine, f.setup.kv_cache_tokens)
"""


def timed(argv: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True)
    return time.perf_counter() - t, out.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    args = ap.parse_args()
    path = Path("/tmp") / f"llm-doctor-bench-vllm-{args.size_mb}mb.log"
    if not path.exists() or path.stat().st_size < args.size_mb * 1024**2:
        generate(path, args.size_mb * 1024**2)
    size_mb = path.stat().st_size / 1024**2

    from doctor.logparse.scan import CANDIDATE_LITERALS

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        fh.write("\n".join(CANDIDATE_LITERALS) + "\n")
        literals = fh.name
    grep_same_s, grep_same = timed(["grep", "-ciF", "-f", literals, str(path)])
    grep_words_s, grep_words = timed(["grep", "-cE", GREP_WORDS, str(path)])
    Path(literals).unlink()
    out = subprocess.run([sys.executable, "-c", SCAN.format(root=str(ROOT), path=str(path))], capture_output=True, text=True, check=True)
    scan_s, rss_kb, lines, events, hits, engine, kv = out.stdout.split()
    scan = float(scan_s)
    print(f"log: {path} ({size_mb:.0f} MiB, {int(lines)} lines)")
    print(f"grep -ciF -f <{len(CANDIDATE_LITERALS)} prefilter literals>: {grep_same_s:.2f} s ({grep_same} lines)")
    print(f"grep -cE '{GREP_WORDS}': {grep_words_s:.2f} s ({grep_words} lines)")
    print(f"llm-doctor scan: {scan:.2f} s, {events} distinct events ({hits} occurrences), engine {engine}, "
          f"KV tokens {kv}, peak RSS {int(rss_kb) / 1024:.0f} MiB")
    print(f"ratio scan / grep same literals: {scan / max(grep_same_s, 1e-9):.1f}x; scan / grep error words: "
          f"{scan / max(grep_words_s, 1e-9):.1f}x; throughput {size_mb / scan:.0f} MiB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
