"""Representative server logs for the scan benchmark (issue #10), generated into a temp folder.

A real log an on-call engineer hands us ran for days: a start-up header, steady-state noise (stat
lines, access lines, request logs), warnings, restarts, and the crash at the very end. A benchmark
log without that mix measures nothing (the old one let 0.06% of its lines through the prefilter; a
real busy vLLM server lets about 3% of its lines, 6% of its bytes, through).

Every line shape comes from a real output, never an invented format:
- the start-up headers and crashes are read verbatim from the repository's own copies of real logs
  (fixtures/ and corpus/, each with its source line), so they are exactly what an engine printed;
- the steady-state lines are templates of real lines whose numbers and ids vary (the source of each
  is named next to it).

Shapes: `vllm-busy` (vLLM V1 under load, two restarts, CUDA OOM traceback last), `vllm-worst` (every
other line a matching preemption warning, same crash), `sglang-busy` (Prefill/Decode batch lines,
crash last), `k8s-crashloop` (the container's log over many restarts, each start-up dying in a CUDA
OOM while loading weights), `sglang-init-cascade` (an SGLang TP=8 launch restarted over and over, every
rank's scheduler traceback, the launcher's sigquit line and its `Initialization failed` traceback).

    .venv/bin/python bench/log_shapes.py vllm-busy /tmp/x.log --size-mb 10
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# vLLM 0.10.1.1 V1 start-up, TP=4 over Ray, ANSI prefixes (source: its .source.txt sidecar).
VLLM_HEADER = ROOT / "fixtures/engine_args/v0.10.1.1-v1-tp4-ray-4nodes-gptoss120b-ansi.log"
# vLLM V1 worker: CUDA OOM traceback while creating the MoE weights, then `Killed` (corpus/z003.log, see corpus/cases.jsonl).
VLLM_CRASH = ROOT / "corpus/z003.log"
# SGLang 0.4.3 TP=2 start-up up to the first Prefill batch.
SGLANG_HEADER = ROOT / "fixtures/engine_args/sglang-0.4.3-tp2-startup-kv-cache-allocated.log"
# SGLang: CUDA OOM in a prefill batch (shared/corpus d012), from `Exception in ModelTpServer:` on.
SGLANG_CRASH = ROOT / "fixtures/logs/sglang-a10g-prefill-oom.log"
# SGLang 0.4.4 scheduler: `Scheduler hit an exception:` traceback, then the launcher's sigquit line (sgl-project/sglang#4778).
SGLANG_SCHEDULER_DIES = ROOT / "fixtures/logs/chains/sglang-scheduler-libcuda-importerror-sigquit.log"
# What the launcher raises when a rank's pipe says not ready: sglang/srt/entrypoints/engine.py `_launch_subprocesses`
# (v0.4.4, `raise RuntimeError("Initialization failed. Please see the error messages above.")`), called from
# http_server.py `launch_server`, called from sglang/launch_server.py; the frames are those files' own lines.
SGLANG_LAUNCHER_RAISES = """Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code
    exec(code, run_globals)
  File "/usr/local/lib/python3.10/dist-packages/sglang/launch_server.py", line 14, in <module>
    launch_server(server_args)
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/entrypoints/http_server.py", line 679, in launch_server
    tokenizer_manager, scheduler_info = _launch_subprocesses(server_args=server_args)
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/entrypoints/engine.py", line 532, in _launch_subprocesses
    raise RuntimeError(
RuntimeError: Initialization failed. Please see the error messages above.
"""

API = "\x1b[1;36m(APIServer pid=1009)\x1b[0;0m "  # the header's own API-server prefix


def _real(path: Path, start: str = "") -> str:
    """Lines of a real log, from the first line containing `start` (the whole file when empty)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    text = text[text.index(start):] if start else text
    return text if text.endswith("\n") else text + "\n"


def _hex(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def _ip(rng: random.Random) -> str:
    return f"172.20.{rng.randint(0, 255)}.{rng.randint(1, 254)}:{rng.randint(1024, 65535)}"


class Clock:
    """Log time that moves forward a little per line (stat lines come every few seconds)."""

    def __init__(self) -> None:
        self.s = 23 * 3600 + 40 * 60  # just after the header's 09-10 23:2x

    def tick(self, rng: random.Random) -> None:
        self.s += rng.random() < 0.02

    def vllm(self) -> str:
        d, s = divmod(self.s, 86400)
        return f"{9 + d // 30:02d}-{10 + d % 30:02d} {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"

    def sglang(self) -> str:
        d, s = divmod(self.s, 86400)
        return f"2025-03-{10 + d % 20:02d} {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def _vllm_line(rng: random.Random, t: str, preempt: float) -> str:
    r = rng.random()
    if r < preempt:
        # corpus/x019.log (vLLM scheduler, GAIR-NLP/LIMO#29), with the V1 process prefix
        return (f"{API}WARNING {t} [scheduler.py:1560] Sequence group {rng.randint(1, 99999)} is preempted by "
                "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end "
                "performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
                f"total_num_cumulative_preemption={rng.randint(1, 50000)}\n")
    r = rng.random()
    if r < 0.05:  # shared/real/vllm-startup/v0.8.4-v1-deepseek-r1-tp16-ray-2nodes-stats.txt
        return (f"{API}INFO {t} [loggers.py:123] Engine 000: Avg prompt throughput: {rng.uniform(0, 9000):.1f} tokens/s, "
                f"Avg generation throughput: {rng.uniform(0, 3000):.1f} tokens/s, Running: {rng.randint(0, 256)} reqs, "
                f"Waiting: {rng.randint(0, 40)} reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, "
                f"Prefix cache hit rate: {rng.uniform(0, 80):.1f}%\n")
    if r < 0.32:  # uvicorn access line (same file; POST shape from the SGLang 0.4.3 real log)
        path = "GET /health" if r < 0.08 else "POST /v1/chat/completions"
        return f'{API}INFO:     {_ip(rng)} - "{path} HTTP/1.1" 200 OK\n'
    if r < 0.42:  # v0.8.4 real log: logger.py Received request (the prompt and max_tokens vary)
        return (f"{API}INFO {t} [logger.py:39] Received request chatcmpl-{_hex(rng)}: prompt: '<｜begin▁of▁sentence｜><｜User｜>"
                f"Question {rng.randint(1, 10**6)}: summarise the attached report.<｜Assistant｜>', params: SamplingParams(n=1, "
                "presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=-1, "
                "min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, "
                f"ignore_eos=False, max_tokens={rng.randint(64, 8192)}, min_tokens=0, logprobs=None, prompt_logprobs=None, "
                "skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, "
                "guided_decoding=None, extra_args=None), "
                "prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.\n")
    if r < 0.72:  # v0.8.4 real log: async_llm.py Added request
        return f"{API}INFO {t} [async_llm.py:228] Added request chatcmpl-{_hex(rng)}.\n"
    # the Finished request shape of doctor/logparse/prefilter.py NOISE_SAMPLE (not found verbatim in shared/real)
    return f"{API}INFO {t} [loggers.py:87] Finished request chatcmpl-{_hex(rng)}.\n"


def _body(rng: random.Random, clock: Clock, size: int, line: Callable[[random.Random, Clock], str]) -> Iterator[str]:
    written = 0
    while written < size:
        clock.tick(rng)
        text = line(rng, clock)
        written += len(text.encode())
        yield text


def vllm_busy(size: int, rng: random.Random) -> Iterator[str]:
    """Header, a third of the noise, a restart (header again), ..., the OOM traceback last."""
    clock, header = Clock(), _real(VLLM_HEADER)
    for _ in range(3):
        yield header
        yield from _body(rng, clock, size // 3, lambda r, c: _vllm_line(r, c.vllm(), 0.028))
    yield _real(VLLM_CRASH, "(VllmWorker")


def vllm_worst(size: int, rng: random.Random) -> Iterator[str]:
    """Every other line a preemption warning (a matching line), the same crash last."""
    clock = Clock()
    yield _real(VLLM_HEADER)
    yield from _body(rng, clock, size, lambda r, c: _vllm_line(r, c.vllm(), 0.0) + _vllm_line(r, c.vllm(), 1.0))
    yield _real(VLLM_CRASH, "(VllmWorker")


def _sglang_line(rng: random.Random, clock: Clock) -> str:
    t, r = clock.sglang(), rng.random()
    if r < 0.35:  # shared/real/other-engines/sglang-0.4.3-deepseek-r1-tp8-startup-decode-batches.txt
        return (f"[{t} TP0] Prefill batch. #new-seq: {rng.randint(1, 8)}, #new-token: {rng.randint(1, 8192)}, "
                f"#cached-token: {rng.randint(0, 4096)}, cache hit rate: {rng.uniform(0, 60):.2f}%, token usage: "
                f"{rng.uniform(0, 0.9):.2f}, #running-req: {rng.randint(0, 64)}, #queue-req: {rng.randint(0, 40)}\n")
    if r < 0.70:
        return (f"[{t} TP0] Decode batch. #running-req: {rng.randint(1, 64)}, #token: {rng.randint(1, 10240)}, token usage: "
                f"{rng.uniform(0, 0.9):.2f}, gen throughput (token/s): {rng.uniform(0, 900):.2f}, #queue-req: {rng.randint(0, 40)}\n")
    return f'[{t}] INFO:     127.0.0.1:{rng.randint(1024, 65535)} - "POST /generate HTTP/1.1" 200 OK\n'


def sglang_busy(size: int, rng: random.Random) -> Iterator[str]:
    yield _real(SGLANG_HEADER)
    yield from _body(rng, Clock(), size, _sglang_line)
    yield _real(SGLANG_CRASH, "Exception in ModelTpServer:")


def k8s_crashloop(size: int, rng: random.Random) -> Iterator[str]:
    """The same start-up dying the same way, over and over, as `kubectl logs` of a CrashLoopBackOff pod shows."""
    restart = _real(VLLM_HEADER) + _real(VLLM_CRASH, "(VllmWorker")
    for _ in range(max(1, -(-size // len(restart.encode())))):  # rounded up: at least `size` bytes
        yield restart


def sglang_init_cascade(size: int, rng: random.Random, tp: int = 8) -> Iterator[str]:
    """A restart loop of an SGLang TP=8 launch whose every rank dies at start-up (sgl-project/sglang#4778's failure).

    Each start: the header, then each TP rank's `Scheduler hit an exception:` traceback followed by the
    launcher's `Received sigquit from a child process` line (every dying rank sends SIGQUIT), then the
    launcher's own `Initialization failed. Please see the error messages above.` traceback.
    """
    rank, header = _real(SGLANG_SCHEDULER_DIES), _real(SGLANG_HEADER)
    start = header + "".join(rank.replace(" TP0]", f" TP{r}]") for r in range(tp)) + SGLANG_LAUNCHER_RAISES
    for _ in range(max(1, -(-size // len(start.encode())))):
        yield start


SHAPES: dict[str, Callable[[int, random.Random], Iterator[str]]] = {
    "vllm-busy": vllm_busy,
    "vllm-worst": vllm_worst,
    "sglang-busy": sglang_busy,
    "k8s-crashloop": k8s_crashloop,
    "sglang-init-cascade": sglang_init_cascade,
}


def write(shape: str, path: Path, size: int, seed: int = 10) -> Path:
    """Write `shape` of about `size` bytes to `path` (buffered: memory stays flat at any size)."""
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as fh:
        for chunk in SHAPES[shape](size, random.Random(seed)):
            fh.write(chunk)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("path", type=Path)
    ap.add_argument("--size-mb", type=float, default=10)
    args = ap.parse_args()
    write(args.shape, args.path, int(args.size_mb * 1024**2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
