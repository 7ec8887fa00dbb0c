"""Engines' periodic stat lines and benchmark summaries -> the metrics facts a /metrics scrape fills.

A log on its own says how loaded the engine was: vLLM prints a stat line every few seconds, SGLang
one per prefill and every few decode steps, TGI one per finished request, llama-server a timing
block per request, and `vllm bench serve` / `benchmark_serving.py` a summary. Read into the same
engine-neutral names doctor/logparse/metrics_text.py gives a scrape (`running`, `waiting`,
`kv_cache_usage`, `ttft_mean_s`, `itl_mean_s`, ...), the perf checks judge a log exactly as they
judge a scrape. A log is a series, not one reading: the checks need to know whether the cache was
full for a moment or for the whole run, so we keep counts over all samples (samples with the cache
>= 90%, with requests waiting, both at once), peaks, and one sample as the snapshot (the fullest
moment of a sustained pressure, else the busiest; its line is the evidence). Memory is flat: a few numbers, whatever the length of the log.

The formats, as the engines' sources write them:
- vLLM V0 (vllm/engine/metrics.py, llm_engine.py in 0.2.x): "Avg prompt throughput: %.1f tokens/s,
  Avg generation throughput: %.1f tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs,
  GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%."
- vLLM V1 (vllm/v1/metrics/loggers.py): "Engine %03d: Avg prompt throughput: ... Running: %d reqs,
  Waiting: %d reqs, [Preemptions: %d, ]GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%"
  (newer ones print "n/a" for an unknown usage).
- SGLang (srt/managers/scheduler.py): "Decode batch. #running-req: %d, #token: %d, token usage:
  %.2f, [cuda graph: ..., ]gen throughput (token/s): %.2f, #queue-req: %d" and "Prefill batch.
  #new-seq: ..., #new-token: ..., #cached-token: ..., token usage: %.2f, #running-req: %d,
  #queue-req: %d"; newer: "Decode batch," and "#full token: ..., full token usage: ...".
- TGI (router/src/server.rs): the span of each finished request, `queue_time="1.2ms"
  ... time_per_token="41.3ms"` (Rust's Debug format of a Duration).
- LMDeploy (lmdeploy/metrics/loggers.py LoggingStatLogger.log, both engines): until 2026-01 vLLM's fields with
  "Finished: %d reqs, Unfinished: %d reqs, " before "Running:" (read as vLLM's are); since 2026-02 "Avg thr
  (in/out): %.1f / %.1f tokens/s, API server (completed/routed/waiting): ... (later "Server
  (succeeded/failed/routed/waiting): ..."), Engine (running/waiting): %d / %d, KV cache: %.1f%%, [Prefix cache
  hit rate: %.1f%%, ]".
- llama.cpp / llama-server (print_timings / llama_perf_context_print): "eval time = %.2f ms / %d
  tokens (%.2f ms per token, %.2f tokens per second)".
- Ollama (llm/memory.go): "offload to cuda" with memory.required.full / memory.available, next to
  llama.cpp's "offloaded 29/41 layers to GPU" (an event of doctor/logparse/events.py).
- vLLM `benchmark_serving.py` / `vllm bench serve` and SGLang `bench_serving`: "Mean TTFT (ms):",
  "Median TPOT (ms):", "P99 ITL (ms):", "Request throughput (req/s):", "Max request concurrency:".
"""

from __future__ import annotations

import operator
import random
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from itertools import compress

from llm_doctor.facts import Facts
from llm_doctor.facts.metrics import MetricsFacts
from llm_doctor.logparse import prefilter as pf
from llm_doctor.logparse.lines import LineNumbers

# the literals every stat line holds, as the engines print them: the search is case-sensitive, as
# feed_line is (a line in another casing gives it nothing), which is what lets rg use its fastest
# search for them (doctor.logparse.external_prefilter); the benchmark summaries' labels, which
# _BENCH and _RATE read in any casing, also in lower case. Searched one single-first-byte regex per
# group, so a block without stat lines costs a few C-speed passes.
_BENCH_LABELS = (" (ms):", "(req/s):", "(tok/s):", "Concurrency:", "concurrency:", "request rate:", "Request rate:", "configured (RPS):")
LITERALS = (
    "Avg prompt throughput", "GPU KV cache usage:", "Decode batch", "Prefill batch", "time_per_token=", "eval time",
    "memory.required", "benchmark_serving", "bench serve", "bench_serving", "kv cache rm [", "kv cache rm - [", "tokens in cache)", ": in cache: ", "--request-rate", "--request_rate",
    "--max-concurrency", "--max_concurrency", "Engine (running/waiting):", *_BENCH_LABELS, *sorted({label.lower() for label in _BENCH_LABELS} - set(_BENCH_LABELS)),
)
LOWER_LITERALS = tuple(sorted({lit.lower() for lit in LITERALS}))  # for text searched lower-cased (perf_prose)
TRIGGERS = pf.compile_groups(LITERALS)

FULL = 0.90  # KV usage at or above: the cache is full (what perf.kv_cache_metrics calls full)
ROOM = 0.70  # KV usage below: the cache has room (what perf.batching calls room)
SUSTAINED = 0.10  # share of the samples a state must hold to be the run's, not a moment's
MAX_LINE = 4096
# a long series is read as a sample: after the first SAMPLE_AFTER stat lines a block of one wording
# (StatLines._batch) has one line in SAMPLE_EVERY read (a busy SGLang log is ~7,000 stat lines a MB, ~3 µs
# each: most of the scan of a big one). The checks judge shares of the samples (is_sustained), which a
# regular sample keeps; counts say how many were read and how many were not (the evidence says sampled)
SAMPLE_AFTER = 20_000
SAMPLE_EVERY = 10
# which lines a sample reads: a fixed pseudo-random pattern over a prime period, one line in SAMPLE_EVERY, not
# every tenth line: a regular stride reads one phase of a periodic series (prefill and decode lines alternating:
# the decode ones only)
_PERIOD = 9973
_PICKED = frozenset(random.Random(10).sample(range(_PERIOD), _PERIOD // SAMPLE_EVERY))
_PICK = bytes(i in _PICKED for i in range(_PERIOD))
_WEIGHT = _PERIOD / len(_PICKED)  # lines of the series each line read stands for

# the "Name: number" fields each engine prints, found by name (a C-speed find, then a match at that
# spot), so their order and the fields a version adds or drops do not matter (V1 dropped Swapped and
# added Preemptions; SGLang added "cuda graph", "full"/"swa" token usage: the first is the full one)
_VLLM = (
    ("Avg prompt throughput: ", "prompt_throughput"), ("Avg generation throughput: ", "gen_throughput"),
    ("Running: ", "running"), ("Waiting: ", "waiting"), ("Pending: ", "waiting"), ("Swapped: ", "swapped"),
    ("Preemptions: ", "preemptions"), ("GPU KV cache usage: ", "kv_pct"), ("Prefix cache hit rate: ", "prefix_pct"),
)
_SGLANG = (
    ("#running-req: ", "running"), ("#queue-req: ", "waiting"), ("token usage: ", "kv"),
    ("gen throughput (token/s): ", "gen_throughput"), ("input throughput (token/s): ", "prompt_throughput"),
)
_NUMBER = re.compile(r"(?:active |GPU: )?(\d+(?:\.\d+)?)")
# ... and, first, the wordings the sources print most (one search instead of one per field: stat lines
# are a big share of a busy log); a line they do not fit is read field by field
_N = r"(\d+(?:\.\d+)?)"
_VLLM_LINE = re.compile(
    r"Avg prompt throughput: " + _N + r" tokens/s, Avg generation throughput: " + _N + r" tokens/s, Running: (\d+) reqs, "
    r"(?:Swapped: (\d+) reqs, )?(?:Pending|Waiting): (\d+) reqs, (?:Preemptions: (\d+), )?GPU KV cache usage: " + _N + "%"
    r"(?:, (?:CPU KV cache usage: [\d.]+%, )?Prefix cache hit rate: (?:GPU: )?" + _N + "%)?"
)
_VLLM_KEYS = ("prompt_throughput", "gen_throughput", "running", "swapped", "waiting", "preemptions", "kv_pct", "prefix_pct")
_SGLANG_DECODE = re.compile(
    r"#running-req: (\d+), #(?:full )?token: \d+, (?:full )?token usage: " + _N + r",.*?gen throughput \(token/s\): " + _N
    + r", #queue-req: (\d+)"
)
_SGLANG_DECODE_KEYS = ("running", "kv", "gen_throughput", "waiting")
_SGLANG_RUNNING = re.compile(r"#running-req: (\d+)")
_LMDEPLOY = re.compile(r"Avg thr \(in/out\): " + _N + " / " + _N + r" tokens/s|Engine \(running/waiting\): (\d+) / (\d+)|"
                       r"KV cache: " + _N + r"%|Prefix cache hit rate: " + _N + "%")
_LMDEPLOY_KEYS = ("prompt_throughput", "gen_throughput", "running", "waiting", "kv_pct", "prefix_pct")
_TGI_DURATION = re.compile(r'(?P<name>time_per_token|queue_time)="?(?P<value>\d+(?:\.\d+)?)(?P<unit>ns|µs|us|ms|s)"?')
_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_LLAMACPP = re.compile(r"(?P<prompt>prompt )?eval time\s*=\s*[\d.]+ ms /\s*(?P<n>\d+) (?:tokens|runs)\s*\(\s*(?P<ms>[\d.]+) ms per token")
# llama-server (tools/server/server.cpp): "kv cache rm [%d, end)" with n_past, the prompt tokens kept from the slot's
# cache, then again per prompt chunk; older builds: "kv cache rm [p0, end) | ... id_task=7 p0=0". A task's first one
# says whether its prompt reused a cached prefix
# ... and the builds of late 2023 (examples/server/server.cpp): "slot %d : kv cache rm - [%d, end)", after "slot %d : in
# cache: %i tokens | to process: %i tokens" only when the request asked for the prompt cache (cache_prompt), and
# "slot %d released (%d tokens in cache)" when a task ends: a slot that held tokens and evaluates its next prompt
# from 0 without that line dropped its cache
_KV_RM = re.compile(r"kv cache rm (?:- )?\[(?:(?P<at>\d+)|p0), end\)")
_SLOT_RM = re.compile(r"\bslot (?P<slot>\d+) : kv cache rm - \[(?P<at>\d+), end\)")
_SLOT_IN_CACHE = re.compile(r"\bslot (?P<slot>\d+) : in cache: \d+ tokens \| to process")
_SLOT_RELEASED = re.compile(r"\bslot (?P<slot>\d+) released \((?P<n>\d+) tokens in cache\)")
_TASK = re.compile(r"\btask (\d+)\b|\bid_task=(\d+)")
_P0 = re.compile(r"\bp0=(\d+)")
REPEAT_MIN = 64  # prompt tokens: a prompt this long evaluated again at the same length is the same prompt again
_OLLAMA = re.compile(r'msg="offload to \w+".*?memory\.available="\[(?P<avail>[^\]]*)\]".*?memory\.required\.full="(?P<full>[\d.]+ [KMGT]i?B)"')
# llm/memory.go logs the layers it will put on the GPUs next to the model's ("layers.model=43 layers.offload=42")
_OLLAMA_LAYERS = re.compile(r"layers\.model=(?P<model>\d+) layers\.offload=(?P<offload>\d+)")
_BENCH = re.compile(
    r"^(?P<stat>Mean|Median|P\d+(?:\.\d+)?) (?P<what>TTFT|TPOT|ITL|E2EL|E2E Latency) \(ms\):\s+(?P<value>[\d.]+)"
    r"|^(?P<name>Request throughput \(req/s\)|Output token throughput \(tok/s\)|(?:Max|Maximum) request concurrency|Concurrency):\s+(?P<v2>[\d.]+)",
    re.I,
)
_BENCH_NAMES = {"ttft": "ttft", "tpot": "itl", "itl": "itl_token", "e2el": "e2e", "e2e latency": "e2e"}
_BENCH_VALUES = {
    "request throughput (req/s)": "request_throughput",
    "output token throughput (tok/s)": "bench_output_throughput",
    "max request concurrency": "bench_concurrency",  # SGLang's bench_serving
    "maximum request concurrency": "bench_concurrency",  # vLLM's benchmark_serving / vllm bench serve
    "concurrency": "bench_concurrency",
}
# a benchmark that sends every request at once (request rate inf, no concurrency cap) measures its own
# queue in TTFT; the command line and the summary's header say which it was
# (newer summaries print "Request rate configured (RPS):" only for a finite rate: vllm/benchmarks/serve.py)
_RATE = re.compile(r"^(?:Traffic request rate|Request rate configured \(RPS\)):\s+(?P<rate>\S+)"
                   r"|^(?:Max|Maximum) request concurrency:\s+(?P<cap>\S+)", re.I)
_BENCH_COMMAND = re.compile(r"benchmark_serving\.py|vllm bench serve|sglang\.bench_serving|bench_serving\.py")
_BOUNDED = re.compile(r"--request[-_]rate[ =](?!inf\b)\d|--max[-_]concurrency[ =]\d")
# a bench command continued over lines ("vllm bench serve \" then "  --request-rate 10 \"): the flag's own line
_RATE_ARG = re.compile(r"--request[-_]rate[ =](\d+(?:\.\d+)?)\b")
_CONTINUED = re.compile(r"^\s*--(?:request[-_]rate|max[-_]concurrency)[ =]\S")
_SIZE = re.compile(r"([\d.]+) ([KMGT])i?B")


def is_sustained(count: float, samples: float) -> bool:
    """A state seen in at least SUSTAINED of the samples (and twice, when there are two or more):
    the run's state, not one busy moment. A single pasted stat line is all the log says: it stands."""
    return count >= max(min(2, samples), SUSTAINED * samples, 1)


@dataclass
class Sample:
    """One engine stat line: where it is and what it says."""

    where: str
    text: str
    running: float | None = None
    waiting: float | None = None
    kv: float | None = None  # fraction
    swapped: float | None = None

    @property
    def load(self) -> tuple[float, float]:
        return (self.waiting or 0.0, self.kv or 0.0)


@dataclass
class StatLines:
    """Aggregates over every stat line of a log (counts, peaks, the busiest sample)."""

    engine: str = ""
    samples: int = 0  # stat lines that report a batch (running / waiting / KV usage)
    kv_samples: int = 0
    kv_full: int = 0  # ... with KV usage >= FULL
    queued: int = 0  # ... with requests waiting
    pressed: int = 0  # ... both: the cache is full and requests wait for it
    capped: int = 0  # decode-time samples with requests waiting while the cache has room
    kv_max: float = 0.0
    waiting_max: float = 0.0
    running_max: float = 0.0
    swapped_max: float = 0.0
    preemptions: float = 0.0
    gen_sum: float = 0.0
    gen_n: int = 0
    gen_max: float = 0.0
    prompt_max: float = 0.0
    prefix_hit: float | None = None  # the last one the engine printed (its own running window)
    # the busiest sample of all, of the pressed ones and of the capped ones (most waiting, then fullest)
    peaks: dict[str, Sample] = field(default_factory=dict)
    itl_sum: float = 0.0  # per-request time per output token (TGI, llama.cpp): seconds
    itl_n: int = 0
    itl_max: float = 0.0
    itl_where: str = ""
    queue_sum: float = 0.0
    queue_n: int = 0
    bench: dict[str, float] = field(default_factory=dict)  # the last benchmark summary's numbers
    bench_where: dict[str, str] = field(default_factory=dict)
    offload: dict[str, float] = field(default_factory=dict)  # Ollama's memory estimate at load
    offload_where: str = ""
    prompt_fresh: int = 0  # llama-server tasks whose prompt reused no cached token (their first "kv cache rm [0, end)")
    prompt_reused: int = 0  # ... and those that kept a cached prefix
    prompt_repeat: int = 0  # prompts evaluated from scratch at the same length as the one before (>= REPEAT_MIN tokens)
    fresh_where: str = ""
    prompt_dropped: int = 0  # ... of them, prompts a slot evaluated from 0 without the prompt cache while holding cached tokens
    dropped_where: str = ""
    slot_cached: dict[str, int] = field(default_factory=dict)  # tokens each slot held when its last task ended
    cache_asked: str = ""  # the slot whose current task asked for the prompt cache ("in cache: ... | to process")
    # SGLang's decode line says whether the batch ran its captured CUDA graph ("cuda graph: False": a batch
    # above --cuda-graph-max-bs, or graphs off, decodes eager); counts, the largest eager batch, its line
    graph_off: int = 0
    graph_on: int = 0
    graph_off_running_max: float = 0.0
    graph_off_where: str = ""
    last_task: str = ""
    seen: int = 0  # lines holding a stat literal, read or not (where a sample starts, and its place in the series)
    unread: int = 0  # ... of them, those a sample did not read (SAMPLE_EVERY)
    last_fresh: bool = False
    last_prompt_n: int = 0

    def feed_block(self, block: bytes, source: str, first_no: int, starts: Collection[int] | None = None,
                   known: Sequence[tuple[list[int], list[int]]] = ()) -> None:
        """Every stat line in a block of whole lines (`first_no` the number of its first line), or
        those starting at `starts` when a prefilter found them (`known`: the numbers of lines it numbered, see LineNumbers)."""
        if starts is None:
            starts = pf.line_starts(block, TRIGGERS)
        if not starts:
            return
        ordered = sorted(starts)
        numbers = LineNumbers(block, first_no, known)
        before, self.seen = self.seen, self.seen + len(ordered)
        if self._batch(block, ordered, source, numbers, before):
            return
        for start in ordered:
            end = block.find(b"\n", start)
            end = len(block) if end < 0 else end
            no = numbers.at(start)
            text = _text(block, start, end)
            self.feed_line(text, source, no)

    def _batch(self, block: bytes, starts: list[int], source: str, numbers: LineNumbers, seen: int) -> bool:
        """The stat lines of a block read by one findall and added up column by column (a busy
        SGLang log is mostly stat lines: each read in Python cost ~8 µs), when every one of them is
        in a wording findall reads exactly as feed_line does, all of one engine (_Wording); False,
        having read nothing, when not. Sums are added in line order and a peak is the first line of
        the highest load, as feed_line gives them. Past SAMPLE_AFTER stat lines (`seen`: those before
        the block), a sample of them is read."""
        whole, sampled = starts, seen >= SAMPLE_AFTER
        if sampled:
            # each line the prefilter found holds a stat literal (LITERALS): when the wording's own ones are
            # there once per line, none is of another kind (a line holds two only where a paste glued lines,
            # and a paste is never SAMPLE_AFTER stat lines long), so the lines not read are of this wording too
            wording = next((w for w in _WORDINGS if w.needs.encode() in block), None)
            if wording is None or sum(block.count(lit) for lit in wording.own) != len(starts):
                return False  # every line is read (feed_line, or this without a sample)
            at = seen % _PERIOD
            starts = list(compress(whole, (_PICK * (len(whole) // _PERIOD + 2))[at : at + len(whole)]))
            if not starts:
                self.unread += len(whole)
                return True
        ends = [block.find(b"\n", start) for start in starts]
        if ends[-1] < 0:
            ends[-1] = len(block)
        if max(map(operator.sub, ends, starts)) > MAX_LINE:  # (per-line work in C, here and in _series: ~7,000 lines a MB)
            return False
        text = b"\n".join([block[start:end] for start, end in zip(starts, ends, strict=True)]).decode("utf-8", errors="replace")
        for wording in _WORDINGS:
            if wording.needs not in text:
                continue
            rows = wording.pattern.findall(text)
            if len(rows) != len(starts) or not wording.exact(text, rows):
                return False
            self.unread += len(whole) - len(starts)
            peaks = self._series(wording, rows, _WEIGHT if sampled else 1.0)
            if wording.engine == "sglang" and "cuda graph: " in text:
                counter = LineNumbers(block, numbers.no, numbers.known)  # a second counter from the same place: the peaks' is asked below
                counter.pos = numbers.pos
                self._graph_lines(text, lambda i, counter=counter: f"{source}:{counter.at(starts[i])}")
            for kind, i, sample in sorted(peaks, key=lambda peak: peak[1]):  # line numbers are counted forward
                where = f"{source}:{numbers.at(starts[i])}"
                self.peaks[kind] = Sample(where, _text(block, starts[i], ends[i]), *sample)
            return True
        return False

    def _graph_lines(self, text: str, where: Callable[[int], str]) -> None:
        """The decode lines' "cuda graph: True/False" over lines joined by newlines (`where(i)`: line i's place)."""
        self.graph_on += text.count("cuda graph: True")
        if "cuda graph: False" not in text:
            return
        for i, line in enumerate(text.split("\n")):
            if "cuda graph: False" in line:
                self._graph_off(line, where(i))

    def _graph_off(self, line: str, where: str) -> None:
        self.graph_off += 1
        running = _SGLANG_RUNNING.search(line)
        n = float(running.group(1)) if running else 0.0
        if n > self.graph_off_running_max or not self.graph_off_where:
            self.graph_off_running_max, self.graph_off_where = max(n, self.graph_off_running_max), f"{where}: {line.strip()[:300]}"

    def _series(self, wording: _Wording, rows: list[tuple[str, ...]], weight: float = 1.0) -> list[tuple[str, int, tuple[float | None, ...]]]:
        """What _sample and _throughput do line by line, over the columns of the lines' values;
        the new peaks: (kind, the line's index, running / waiting / KV usage / swapped). `weight`: the
        lines of the series each row stands for (a sample): the preemptions, a count per interval, are multiplied."""
        n = len(rows)
        running, waiting, kv, swapped, decode, gens, prompts, preemptions, prefix = wording.columns(rows)
        self.engine = self.engine or wording.engine
        gens = list(filter(None, gens))
        for gen in gens:  # in line order, as _throughput adds them: the same float sum
            self.gen_sum += gen
        self.gen_n += len(gens)
        self.gen_max = max([self.gen_max, *gens])
        self.prompt_max = max([self.prompt_max, *filter(None, prompts)])
        for x in filter(None, preemptions):  # (adding a None or 0.0 as 0.0 changes no sum)
            self.preemptions += x * weight if weight != 1.0 else x
        last = next((x for x in reversed(prefix) if x is not None), None)
        if last is not None:
            self.prefix_hit = round(last / 100, 6)
        # every line of these wordings states running, waiting and the KV usage (numbers, never None): each
        # is a sample; the per-line tests run in C (map over the columns: a busy SGLang log is ~7,000 lines a MB)
        queued = list(map((0.0).__lt__, waiting))
        full = list(map(FULL.__le__, kv))
        pressed = list(map(operator.and_, full, queued))
        # capped: decode-time, queued, running and the cache below ROOM (so not full: ROOM < FULL)
        capped = list(map(all, zip(decode, queued, running, map(ROOM.__gt__, kv), strict=True)))
        self.samples += n
        self.kv_samples += n
        self.queued += sum(queued)
        self.kv_full += sum(full)
        self.pressed += sum(pressed)
        self.capped += sum(capped)
        self.kv_max = max([self.kv_max, *kv])
        self.waiting_max = max([self.waiting_max, *waiting])
        self.running_max = max([self.running_max, *running])
        self.swapped_max = max([self.swapped_max, *filter(None, swapped)])  # (a None or 0 is never above it: it starts at 0.0)
        loads = list(zip(waiting, kv, strict=True))
        peaks = []
        for kind, chosen in (("busiest", range(n)), ("pressed", list(compress(range(n), pressed))),
                             ("capped", list(compress(range(n), capped)))):
            if chosen:
                i = max(chosen, key=loads.__getitem__)  # the first of the highest load
                if kind not in self.peaks or loads[i] > self.peaks[kind].load:
                    peaks.append((kind, i, (running[i], waiting[i], kv[i], swapped[i])))
        return peaks

    def feed_line(self, text: str, source: str, no: int) -> None:
        def quote() -> tuple[str, str]:
            return f"{source}:{no}", text

        where = f"{source}:{no}"
        if len(pieces := _glued(text)) > 1:  # a paste that lost its newlines: several stat lines on one
            for piece in pieces:
                self.feed_line(piece, source, no)
            return
        if "Engine (running/waiting): " in text:
            self._lmdeploy(text, quote)
        elif "Avg prompt throughput" in text or "Avg generation throughput" in text or "GPU KV cache usage: " in text:
            self._vllm(text, quote)
            if "Unfinished: " in text and self.engine == "vllm":  # LMDeploy's wording before 2026-02: vLLM never prints it
                self.engine = "lmdeploy"
        elif "Decode batch" in text or "Prefill batch" in text:
            self._sglang(text, quote)
        elif "time_per_token=" in text or "queue_time=" in text:
            self._tgi(text, where)
        elif "kv cache rm [" in text or "kv cache rm - [" in text:
            self._kv_rm(text, where)
        elif "tokens in cache)" in text or ": in cache: " in text:
            self._slot(text)
        elif "eval time" in text:
            self._llamacpp(text, where)
        elif "memory.required" in text:
            self._ollama(text, where)
        elif _BENCH_COMMAND.search(text):
            if "bench_burst" not in self.bench or self.bench_where.get("bench_burst", "").endswith("(command)"):
                self.bench["bench_burst"] = 0.0 if _BOUNDED.search(text) else 1.0
                self.bench_where["bench_burst"] = f"{where}: {text[:300]} (command)"
                self._offered(_RATE_ARG.search(text), where, text)
        elif _CONTINUED.match(text):
            if self.bench_where.get("bench_burst", "").endswith("(command)") and _BOUNDED.search(text):
                self.bench["bench_burst"] = 0.0
                self.bench_where["bench_burst"] = f"{where}: {text[:300]} (command)"
                self._offered(_RATE_ARG.search(text), where, text)
        elif m := _RATE.search(text):
            value = (m.group("rate") or m.group("cap") or "").lower()
            if value == "inf" or value.replace(".", "", 1).isdigit():
                self.bench["bench_burst"] = 1.0 if value == "inf" else 0.0
                self.bench_where["bench_burst"] = f"{where}: {text}"
                if m.group("rate") and value != "inf":
                    self.bench["bench_rate"] = float(value)
                    self.bench_where["bench_rate"] = f"{where}: {text}"
            if m.group("cap") and value.isdigit():
                self._bench(text, where)
        else:
            self._bench(text, where)

    def _vllm(self, text: str, quote: Quote) -> None:
        self._vllm_values(_template(_VLLM_LINE, _VLLM_KEYS, text) or _fields(text, _VLLM), quote)

    def _vllm_values(self, got: dict[str, float | None], quote: Quote) -> None:
        self.engine = self.engine or "vllm"
        self._throughput(got.get("gen_throughput"), got.get("prompt_throughput"))
        self.preemptions += got.get("preemptions") or 0.0
        if got.get("prefix_pct") is not None:
            self.prefix_hit = round(got["prefix_pct"] / 100, 6)  # type: ignore[operator]
        kv = round(got["kv_pct"] / 100, 6) if got.get("kv_pct") is not None else None  # type: ignore[operator]  # printed with one decimal
        self._sample(quote, got.get("running"), got.get("waiting"), kv, got.get("swapped"), decode=True)

    def _lmdeploy(self, text: str, quote: Quote) -> None:
        got: dict[str, float | None] = {}
        for m in _LMDEPLOY.finditer(text):
            got.update((k, float(v)) for k, v in zip(_LMDEPLOY_KEYS, m.groups(), strict=True) if v is not None)
        self.engine = self.engine or "lmdeploy"
        self._vllm_values(got, quote)

    def _sglang(self, text: str, quote: Quote) -> None:
        got = _template(_SGLANG_DECODE, _SGLANG_DECODE_KEYS, text) or _fields(text, _SGLANG)
        # a prefill line with a queue is a burst being admitted chunk by chunk, not a capped batch
        self._sglang_values(got, quote, decode="Decode batch" in text)
        if "cuda graph: " in text:
            self._graph_lines(text, lambda _: quote()[0])

    def _sglang_values(self, got: dict[str, float | None], quote: Quote, decode: bool) -> None:
        self.engine = self.engine or "sglang"
        self._throughput(got.get("gen_throughput"), got.get("prompt_throughput"))
        self._sample(quote, got.get("running"), got.get("waiting"), got.get("kv"), None, decode=decode)

    def _tgi(self, text: str, where: str) -> None:
        self.engine = self.engine or "tgi"
        for m in _TGI_DURATION.finditer(text):
            seconds = float(m.group("value")) * _UNITS[m.group("unit")]
            if m.group("name") == "time_per_token":
                self._itl(seconds, where)
            else:
                self.queue_sum += seconds
                self.queue_n += 1

    def _kv_rm(self, text: str, where: str) -> None:
        m = _KV_RM.search(text)
        if m is None:
            return
        task = _TASK.search(text)
        key = (task.group(1) or task.group(2)) if task else where  # no task id: each line is its own request
        if key == self.last_task:
            return  # the next chunk of the same prompt
        self.engine = self.engine or "llamacpp"
        self.last_task = key
        p0 = m.group("at") or ((p := _P0.search(text)) and p.group(1)) or "0"
        self.last_fresh = int(p0) == 0
        if self.last_fresh:
            self.prompt_fresh += 1
            self.fresh_where = self.fresh_where or f"{where}: {text[:300]}"
        else:
            self.prompt_reused += 1
        if (old := _SLOT_RM.search(text)) is not None:
            slot, asked = old.group("slot"), self.cache_asked == old.group("slot")
            held = self.slot_cached.pop(slot, 0)
            if self.last_fresh and held and not asked:
                self.prompt_dropped += 1
                self.dropped_where = self.dropped_where or f"{where}: {text[:300]} (the slot held {held} tokens)"
            self.cache_asked = ""

    def _slot(self, text: str) -> None:
        """A late-2023 llama-server slot's cache: what it held when its task ended, and whether the next task asked for it."""
        if (released := _SLOT_RELEASED.search(text)) is not None:
            self.slot_cached[released.group("slot")] = int(released.group("n"))
        elif (asked := _SLOT_IN_CACHE.search(text)) is not None:
            self.cache_asked = asked.group("slot")

    def _llamacpp(self, text: str, where: str) -> None:
        m = _LLAMACPP.search(text)
        if m is not None and m.group("prompt"):
            n = int(m.group("n"))
            if self.last_fresh and n >= REPEAT_MIN and n == self.last_prompt_n:
                self.prompt_repeat += 1
            self.last_prompt_n = n
            return  # the prompt's time is prefill
        if m is None or int(m.group("n")) < 2:
            return  # one token says nothing about decode
        self.engine = self.engine or "llamacpp"
        self._itl(float(m.group("ms")) / 1000, where)

    def _ollama(self, text: str, where: str) -> None:
        m = _OLLAMA.search(text)
        if m is None:
            return
        avail = [_gib(x) for x in m.group("avail").split(",")]
        full = _gib(m.group("full"))
        if full is not None and all(a is not None for a in avail) and avail:
            self.offload = {"offload_required_gib": full, "offload_available_gib": sum(a for a in avail if a is not None)}
            if layers := _OLLAMA_LAYERS.search(text):
                self.offload.update(offload_layers_model=float(layers.group("model")), offload_layers_gpu=float(layers.group("offload")))
            self.offload_where = f"{where}: {text[:300]}"

    def _bench(self, text: str, where: str) -> None:
        m = _BENCH.search(text)
        if m is None:
            return
        if m.group("stat"):
            stat = m.group("stat").lower()
            label = "mean" if stat == "mean" else "p50" if stat == "median" else stat
            name = f"{_BENCH_NAMES[m.group('what').lower()]}_{label}_s"
            self.bench[name] = float(m.group("value")) / 1000
        else:
            name = _BENCH_VALUES[m.group("name").lower()]
            self.bench[name] = float(m.group("v2"))
        self.bench_where[name] = f"{where}: {text}"

    def _offered(self, m: re.Match[str] | None, where: str, text: str) -> None:
        """The request rate a bench command offers (--request-rate N): what the server must keep up with."""
        if m is not None:
            self.bench["bench_rate"] = float(m.group(1))
            self.bench_where["bench_rate"] = f"{where}: {text[:300]} (command)"

    def _throughput(self, gen: float | None, prompt: float | None) -> None:
        if gen:
            self.gen_sum += gen
            self.gen_n += 1
            self.gen_max = max(self.gen_max, gen)
        if prompt:
            self.prompt_max = max(self.prompt_max, prompt)

    def _itl(self, seconds: float, where: str) -> None:
        self.itl_sum += seconds
        self.itl_n += 1
        if seconds >= self.itl_max:
            self.itl_max, self.itl_where = seconds, where

    def _sample(self, quote: Quote, running: float | None, waiting: float | None, kv: float | None,
                swapped: float | None, decode: bool) -> None:
        """`quote`: where the line is and its text, asked only for a new peak (most lines are none)."""
        if running is None and waiting is None and kv is None:
            return
        self.samples += 1
        queued = (waiting or 0) > 0
        self.queued += queued
        kinds = ["busiest"]
        if kv is not None:
            self.kv_samples += 1
            self.kv_full += kv >= FULL
            self.kv_max = max(self.kv_max, kv)
            if kv >= FULL and queued:
                self.pressed += 1
                kinds.append("pressed")
            elif decode and queued and running and kv < ROOM:
                self.capped += 1
                kinds.append("capped")
        self.waiting_max = max(self.waiting_max, waiting or 0)
        self.running_max = max(self.running_max, running or 0)
        self.swapped_max = max(self.swapped_max, swapped or 0)
        load = (waiting or 0.0, kv or 0.0)
        for kind in kinds:  # a Sample is built only for a new peak: most lines cost a few comparisons
            if kind not in self.peaks or load > self.peaks[kind].load:
                where, text = quote()
                self.peaks[kind] = Sample(where, text, running, waiting, kv, swapped)

    def absorb(self, other: StatLines, offset: int = 0) -> None:
        """Add what another scanner of the same source found (a big log is read tail first); its
        line numbers move by `offset` (the head's lines, when the head was read up to the tail)."""
        if offset:
            other.shift(offset)
        for name in ("samples", "kv_samples", "kv_full", "queued", "pressed", "capped", "preemptions", "gen_sum", "gen_n",
                     "itl_sum", "itl_n", "queue_sum", "queue_n", "prompt_fresh", "prompt_reused", "prompt_repeat", "prompt_dropped", "graph_off",
                     "graph_on", "seen", "unread"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("kv_max", "waiting_max", "running_max", "swapped_max", "gen_max", "prompt_max"):
            setattr(self, name, max(getattr(self, name), getattr(other, name)))
        if other.itl_max >= self.itl_max and other.itl_n:
            self.itl_max, self.itl_where = other.itl_max, other.itl_where
        for kind, sample in other.peaks.items():
            if kind not in self.peaks or sample.load > self.peaks[kind].load:
                self.peaks[kind] = sample
        self.engine = self.engine or other.engine
        self.prefix_hit = other.prefix_hit if other.prefix_hit is not None else self.prefix_hit
        self.bench.update(other.bench)
        self.bench_where.update(other.bench_where)
        if other.offload:
            self.offload, self.offload_where = other.offload, other.offload_where
        self.fresh_where = self.fresh_where or other.fresh_where
        self.dropped_where = self.dropped_where or other.dropped_where
        if other.graph_off_where and (other.graph_off_running_max > self.graph_off_running_max or not self.graph_off_where):
            self.graph_off_running_max, self.graph_off_where = other.graph_off_running_max, other.graph_off_where

    def shift(self, offset: int) -> None:
        """Move every quoted "source:line" by `offset` lines."""
        for sample in self.peaks.values():
            sample.where = _shift(sample.where, offset)
        self.itl_where = _shift(self.itl_where, offset)
        self.bench_where = {k: _shift(w, offset) for k, w in self.bench_where.items()}
        self.offload_where = _shift(self.offload_where, offset)
        self.fresh_where = _shift(self.fresh_where, offset)
        self.dropped_where = _shift(self.dropped_where, offset)
        self.graph_off_where = _shift(self.graph_off_where, offset)

    def snapshot(self) -> Sample | None:
        """The sample the checks read as "the" reading: the fullest moment of a sustained
        pressure, else the worst moment of a sustained capped queue, else the busiest."""
        if is_sustained(self.pressed, self.samples) and "pressed" in self.peaks:
            return self.peaks["pressed"]
        if is_sustained(self.capped, self.samples) and "capped" in self.peaks:
            return self.peaks["capped"]
        return self.peaks.get("busiest")

    def metrics(self, engine: str = "") -> MetricsFacts | None:
        """The metrics facts these lines give; None when the log held none."""
        if not (self.samples or self.itl_n or self.queue_n or self.bench or self.offload or self.prompt_fresh or self.prompt_reused):
            return None
        v: dict[str, float] = {}
        raw: dict[str, str] = {}
        s = self.snapshot()
        if s is not None:
            for name, value in (("running", s.running), ("waiting", s.waiting), ("kv_cache_usage", s.kv), ("swapped", s.swapped)):
                if value is not None:
                    v[name] = value
                    raw[name] = f"{s.where}: {s.text}"
            v.update(stat_samples=self.samples, kv_samples=self.kv_samples, kv_full_samples=self.kv_full,
                     queued_samples=self.queued, pressed_samples=self.pressed, capped_samples=self.capped,
                     waiting_max=self.waiting_max, running_max=self.running_max)
            if self.unread:  # a sample of a long series (SAMPLE_EVERY): the counts are of the lines read
                v["stat_lines_unread"] = self.unread
            if self.kv_samples:
                v["kv_cache_usage_max"] = self.kv_max
            if self.swapped_max:
                v["swapped_max"] = self.swapped_max
        if self.preemptions:
            v["preemptions_total"] = self.preemptions
        if self.gen_n:
            v["gen_throughput"] = self.gen_sum / self.gen_n
            v["gen_throughput_max"] = self.gen_max
        if self.prompt_max:
            v["prompt_throughput_max"] = self.prompt_max
        if self.prefix_hit is not None:
            v["prefix_cache_hit_rate"] = self.prefix_hit
        if self.itl_n:
            v.update(itl_count=self.itl_n, itl_mean_s=self.itl_sum / self.itl_n, itl_max_s=self.itl_max)
            raw["itl"] = f"{self.itl_where} (the slowest of {self.itl_n} request(s))"
        if self.queue_n:
            v.update(queue_count=self.queue_n, queue_mean_s=self.queue_sum / self.queue_n)
        v.update(self.bench)
        raw.update({f"bench:{k}": w for k, w in self.bench_where.items()})
        v.update(self.offload)
        if self.prompt_fresh or self.prompt_reused:
            v.update(prompt_fresh=self.prompt_fresh, prompt_reused=self.prompt_reused, prompt_repeat=self.prompt_repeat)
            if self.fresh_where:
                raw["prompt_fresh"] = self.fresh_where
            if self.prompt_dropped:
                v["prompt_dropped"] = self.prompt_dropped
                raw["prompt_dropped"] = self.dropped_where
        if self.offload_where:
            raw["offload"] = self.offload_where
        if self.graph_off:
            v.update(graph_off_samples=self.graph_off, graph_on_samples=self.graph_on, graph_off_running_max=self.graph_off_running_max)
            raw["graph_off"] = self.graph_off_where
        return MetricsFacts(source="log", engine=engine or self.engine, available=True, values=v, raw=raw,
                            origin="log")


def into_facts(facts: Facts, found: MetricsFacts | None) -> None:
    """Put what a log's stat lines say into facts.metrics. A real scrape stays what it is (the log
    only fills the names it lacks); two logs add up: counts add, peaks take the larger, the busier
    snapshot wins."""
    if found is None:
        return
    from llm_doctor.redact import Redactor

    redactor = Redactor()  # the quoted lines are log text: a bench command may carry --api-key
    found.raw = {k: redactor.text(text) for k, text in found.raw.items()}
    m = facts.metrics
    if m is None or not m.available:
        facts.metrics = found
        return
    if m.origin != "log":
        for k, val in found.values.items():
            m.values.setdefault(k, val)
        for k, text in found.raw.items():
            m.raw.setdefault(k, text)
        return
    old, new = m.values, found.values
    busier = (new.get("waiting", 0), new.get("kv_cache_usage", 0)) > (old.get("waiting", 0), old.get("kv_cache_usage", 0))
    merged = dict(new if busier else old)
    for k in old.keys() | new.keys():
        a, b = old.get(k), new.get(k)
        if a is None or b is None:
            merged[k] = b if a is None else a
        elif k.endswith(("_samples", "_count", "preemptions_total")):
            merged[k] = a + b
        elif k.endswith("_max") or k.endswith("_max_s"):
            merged[k] = max(a, b)
    m.values = merged
    m.raw = {**m.raw, **found.raw} if busier else {**found.raw, **m.raw}
    m.engine = m.engine or found.engine


_GLUE_MARKS = ("Avg prompt throughput", "Decode batch", "Prefill batch")


def _glued(text: str) -> list[str]:
    """The stat lines a paste glued into one line ("... Prefix cache hit rate: 0.0%INFO 07-28 ...
    Avg prompt throughput: ..."), cut before each engine's first word; one piece when none are glued."""
    if sum(text.count(mark) for mark in _GLUE_MARKS) < 2:
        return [text]
    cuts = sorted(at for mark in _GLUE_MARKS for at in _starts(text, mark))
    return [text[a:b] for a, b in zip([0, *cuts[1:]], [*cuts[1:], len(text)], strict=True)]


def _starts(text: str, mark: str) -> list[int]:
    out, at = [], text.find(mark)
    while at >= 0:
        out.append(at)
        at = text.find(mark, at + 1)
    return out


def _shift(where: str, offset: int) -> str:
    """"src:12" or "src:12: text" -> the line number plus offset."""
    head, sep, text = where.partition(": ")
    source, colon, no = head.rpartition(":")
    return f"{source}:{int(no) + offset}{sep}{text}" if colon and no.isdigit() else where


def _template(rx: re.Pattern[str], keys: tuple[str, ...], text: str) -> dict[str, float] | None:
    m = rx.search(text)
    return None if m is None else {k: float(x) for k, x in zip(keys, m.groups(), strict=True) if x is not None}


def _fields(text: str, names: tuple[tuple[str, str], ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, key in names:
        at = text.find(label)
        if at >= 0 and (m := _NUMBER.match(text, at + len(label))):
            out[key] = float(m.group(1))
    return out


def _gib(text: str) -> float | None:
    m = _SIZE.search(text)
    if m is None:
        return None
    return float(m.group(1)) * {"K": 1 / 1024**2, "M": 1 / 1024, "G": 1.0, "T": 1024.0}[m.group(2)]


Quote = Callable[[], tuple[str, str]]


def _text(block: bytes, start: int, end: int) -> str:
    return block[start : min(end, start + MAX_LINE)].decode("utf-8", errors="replace").strip()


class _Wording:
    """Stat lines of one engine read by one findall over them (StatLines._batch): the pattern is
    feed_line's own, with the rest of the line after it (one match per line, its first), and
    `exact` proves from counts of labels over the lines that feed_line reads each line so: every
    label it would look for is the one the pattern holds."""

    engine = ""
    needs = ""  # lines without it hold none of these
    pattern: re.Pattern[str]
    own: tuple[bytes, ...] = ()  # the stat literals (LITERALS) its lines hold, one of them once on each line

    def exact(self, text: str, rows: list[tuple[str, ...]]) -> bool:
        raise NotImplementedError

    def columns(self, rows: list[tuple[str, ...]]) -> tuple[list, ...]:
        """running, waiting, KV usage (a fraction), swapped, decode-time, generation and prompt
        throughputs, preemptions, prefix hit rate (%): one value per line (the last four may be empty);
        running, waiting and the KV usage are numbers on every line (_series relies on it)."""
        raise NotImplementedError


def _floats(column: tuple[str, ...]) -> list[float | None]:
    return [float(x) if x else None for x in column]


class _VllmWording(_Wording):
    """_VLLM_LINE: feed_line reads any line holding the vLLM words with it, first match."""

    engine, needs, own = "vllm", "Avg prompt throughput: ", (b"Avg prompt throughput",)
    pattern = re.compile(_VLLM_LINE.pattern + r"([^\n]*)")

    def exact(self, text: str, rows: list[tuple[str, ...]]) -> bool:
        # each line matched, at its first match: _vllm reads just that, unless a paste glued two lines into one
        return text.count("Avg prompt throughput") == len(rows)

    def columns(self, rows: list[tuple[str, ...]]) -> tuple[list, ...]:
        prompt, gen, running, swapped, waiting, preemptions, kv_pct, prefix, _ = zip(*rows, strict=True)
        kv = [round(float(x) / 100, 6) for x in kv_pct]
        return (list(map(float, running)), list(map(float, waiting)), kv, _floats(swapped), [True] * len(rows),
                list(map(float, gen)), list(map(float, prompt)), _floats(preemptions), _floats(prefix))


class _SglangWording(_Wording):
    """SGLang's decode line (_SGLANG_DECODE after "Decode batch") and prefill line (which _fields
    reads label by label), as one alternation: a line is matched once."""

    engine, needs, own = "sglang", " batch", (b"Decode batch", b"Prefill batch")
    pattern = re.compile(
        r"(?:Decode batch[.,] " + _SGLANG_DECODE.pattern + r"|Prefill batch\. #new-seq: \d+, #new-token: \d+, #cached-token: \d+, "
        r"(?:cache hit rate: \d+\.\d+%, )?token usage: (\d+(?:\.\d+)?), #running-req: (\d+), #queue-req: (\d+))([^\n]*)"
    )

    def exact(self, text: str, rows: list[tuple[str, ...]]) -> bool:
        n = len(rows)
        decode = n - list(map(operator.itemgetter(0), rows)).count("")
        if any(word in text for word in ("Avg prompt throughput", "Avg generation throughput", "GPU KV cache usage: ")):
            return False  # feed_line would read such a line as vLLM's
        # each label once per line, where the pattern has it: _SGLANG_DECODE's first match and _fields' first labels are the pattern's
        return (text.count("Decode batch") == decode and text.count("Prefill batch") == n - decode
                and text.count("#running-req: ") == n and text.count("#queue-req: ") == n and text.count("token usage: ") == n
                and text.count("#token: ") + text.count("#full token: ") == decode and text.count("throughput (token/s): ") == decode)

    def columns(self, rows: list[tuple[str, ...]]) -> tuple[list, ...]:
        d_running, d_kv, d_gen, d_waiting, p_kv, p_running, p_waiting, _ = zip(*rows, strict=True)
        # a row is a decode line's or a prefill line's: of each pair of its columns one is "" (joined in C)
        return (list(map(float, map(operator.add, d_running, p_running))),
                list(map(float, map(operator.add, d_waiting, p_waiting))),
                list(map(float, map(operator.add, d_kv, p_kv))), [None] * len(rows), list(map(bool, d_running)),
                [float(x) for x in d_gen if x], [], [], [])


_WORDINGS = (_VllmWording(), _SglangWording())
