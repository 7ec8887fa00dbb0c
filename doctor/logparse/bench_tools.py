"""Benchmark tools' summaries pasted into a perf thread -> the latency facts the perf checks judge.

`vllm bench serve` / SGLang `bench_serving` summaries are read with the engines' stat lines
(doctor/logparse/stat_lines.py). People paste other tools' summaries too; each says how long a user
waits for the first token (TTFT) and then for each next one (inter-token latency), the two numbers
perf.high_latency judges against what the GPU gives. Each reader below turns one tool's summary into
those two numbers (seconds), with the line each came from and how it was computed, so a pasted
benchmark is judged exactly as a /metrics scrape. A healthy benchmark gives healthy numbers and
stays quiet. No decisions here.

The formats, as the tools' sources print them:
- NVIDIA GenAI-Perf (triton-inference-server/perf_analyzer genai-perf/genai_perf/export_data/
  console_exporter.py; NVIDIA AIPerf prints the same table): a rich table titled `NVIDIA GenAI-Perf |
  LLM Metrics`, columns `Statistic ┃ avg ┃ min ┃ max ┃ p99 ┃ p90 ┃ p75`, rows named from the metric
  (`exporter_utils.format_metric_name`: "Time To First Token (ms)", "Inter Token Latency (ms)";
  before 2025-01 `.capitalize()`: "Time to first token (ms)"), values `f"{value:,.2f}"` (thousands
  commas). Its `profile_export_genai_perf.json` (json_exporter.py) holds the same stats:
  `"time_to_first_token": {"unit": "ms", "avg": ...}`, `"inter_token_latency": {...}`.
- ray-project/llmperf (token_benchmark_ray.py metrics_summary): each metric's name on its own line
  (`inter_token_latency_s`, `ttft_s`, seconds) then `    p25 = ...`, `    mean = ...` lines; the
  `*_summary.json` it writes flattens them (src/llmperf/utils.py flatten_dict):
  `"results_ttft_s_mean"`, `"results_inter_token_latency_s_mean"`.
- TGI `text-generation-benchmark` (benchmark/src/table.rs): a markdown latency table `| Step |
  Batch Size | Average | Lowest | Highest | p50 | p90 | p99 |` with rows "Prefill", "Decode
  (token)", "Decode (total)" per batch size, values `"{:.2} ms"`; `Merge::vertical` blanks a cell
  equal to the one above it (the step name on every row but the first, and equal values).
- SGLang `bench_one_batch` (python/sglang/bench_one_batch.py latency_test_run_once): "Prefill.
  latency: %6.5f s, throughput: %9.2f token/s", "Decode %d. Batch size: %d, latency: ..." (older:
  "Decode.  latency: ..."), "Decode.  median latency: %6.5f s, median throughput: %9.2f token/s";
  "Warmup ..." before the first run, "Benchmark ..." before each measured one.
- llama.cpp `llama-bench` (tools/llama-bench/llama-bench.cpp markdown_printer): `| model | size |
  params | backend | ngl | ... | test | t/s |`, a test `pp512` (a 512-token prompt), `tg128` (128
  tokens generated one by one), `pp512+tg128`, ` @ d4096` for a filled context (older: "pp 512"),
  t/s "%.2f ± %.2f". The backend column "CPU"/"BLAS" (no ngl column) is a CPU run.
- TensorRT-LLM `trtllm-bench throughput` (tensorrt_llm/bench/dataclasses/reporting.py): a "= PERFORMANCE
  OVERVIEW" block, with streaming "Average time-to-first-token [TTFT] (ms):" and "Average time-per-output-token
  [TPOT] (ms):" (`%.4f`), and under "= WORLD + RUNTIME INFORMATION" the "Issue Rate (req/sec):" (1E+17 and the
  like when every request was issued at once, without --concurrency).
- LMDeploy `benchmark/profile_throughput.py`, `profile_restful_api.py`, `profile_pipeline_api.py`: since 2025-01
  lmdeploy/profiler.py Profiler.summarize, rows "Time to First Token (TTFT)" and "Time per Output Token (TPOT)"
  then the mean and the percentiles, in seconds (`{:>10.3f}`), "Concurrency" among the rows above; 2023-12 to
  2024: "first token latency(s)(min, max, ave): %.3f, %.3f, %.3f" (its per-token percentiles count a token
  that came in the same tick as 0 and give no mean); 2023: "first_token latency(min, max, ave): %.3fs, %.3fs, %.3fs".
- Ollama `run --verbose` (api/types.go Metrics.Summary): "prompt eval count:    %d token(s)",
  "prompt eval duration: %s", "eval rate:            %.2f tokens/s" (durations in Go's format:
  "2m7.682s", "204.563ms").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_doctor.facts.metrics import MetricsFacts


@dataclass
class Reading:
    """What one tool's summary says: `values` in the neutral metric names (ttft_mean_s,
    itl_mean_s), `quotes` the line each came from and how it was computed."""

    tool: str
    engine: str = ""  # the engine, when the tool is one engine's own benchmark
    values: dict[str, float] = field(default_factory=dict)
    quotes: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, seconds: float, text: str, pos: int, how: str) -> None:
        """Record a value with the line at `pos` (its number and text) and how it was computed."""
        line = text.count("\n", 0, pos) + 1
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        quoted = text[start : end if end >= 0 else len(text)].strip()[:300]
        self.values[name] = seconds
        self.quotes[name] = f"{line}: {quoted} ({self.tool}: {how})"


def metrics(text: str, source: str) -> MetricsFacts | None:
    """The latency a benchmark tool's summary in `text` states, as log-origin metrics facts
    (doctor/logparse/stat_lines.into_facts merges them); None when the text holds none."""
    for reader in READERS:
        found = reader(text)
        if found is not None and found.values:
            raw = {f"bench:{name}": f"{source}:{quote}" for name, quote in found.quotes.items()}
            return MetricsFacts(source=found.tool, engine=found.engine, available=True, values=dict(found.values),
                                raw=raw, origin="log")
    return None


_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


# -------------------------------------------------------------------------------------------
# NVIDIA GenAI-Perf / AIPerf


_GENAI_TITLE = re.compile(r"NVIDIA (?:GenAI-Perf|AIPerf) \| LLM Metrics")
_GENAI_ROW = re.compile(
    r"^[ \t]*[│┃|][ \t]*(?P<name>Time to first token|Inter token latency)[ \t]*\((?P<unit>ns|us|ms|s)\)[ \t]*[│┃|]"
    r"[^\d│┃|\n]*(?P<avg>\d[\d,]*(?:\.\d+)?)",
    re.M | re.I,
)
_GENAI_JSON = {"time_to_first_token": "ttft_mean_s", "inter_token_latency": "itl_mean_s"}


def genai_perf(text: str) -> Reading | None:
    """The avg column of the TTFT and inter-token latency rows of the console table."""
    if "LLM Metrics" not in text or _GENAI_TITLE.search(text) is None:
        return None
    found = Reading("genai-perf")
    for m in _GENAI_ROW.finditer(text):
        name = "ttft_mean_s" if m.group("name").lower().startswith("time") else "itl_mean_s"
        if name not in found.values:
            avg = float(m.group("avg").replace(",", ""))
            found.put(name, avg * _UNIT_S[m.group("unit")], text, m.start(), f"avg {m.group('avg')} {m.group('unit')}")
    return found


def genai_perf_json(text: str) -> Reading | None:
    """profile_export_genai_perf.json: the avg of time_to_first_token and inter_token_latency."""
    if '"inter_token_latency"' not in text or not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    found = Reading("genai-perf")
    for key, name in _GENAI_JSON.items():
        stat = data.get(key) if isinstance(data, dict) else None
        if isinstance(stat, dict) and isinstance(stat.get("avg"), (int, float)) and stat.get("unit") in _UNIT_S:
            found.put(name, stat["avg"] * _UNIT_S[stat["unit"]], text, text.find(f'"{key}"'), f"avg {stat['avg']:g} {stat['unit']}")
    return found


# -------------------------------------------------------------------------------------------
# ray-project/llmperf

# the four-space indent is often lost in a markdown paste
_LLMPERF_BLOCK = re.compile(r"^(?P<key>inter_token_latency_s|ttft_s)[ \t]*\n(?:[ \t]*p\d+ = \S+[ \t]*\n)*[ \t]*mean = (?P<mean>[\d.eE+-]+)", re.M)
_LLMPERF_JSON = re.compile(r'"results_(?P<key>inter_token_latency_s|ttft_s)_mean"\s*:\s*(?P<mean>[\d.eE+-]+)')
_LLMPERF_NAMES = {"inter_token_latency_s": "itl_mean_s", "ttft_s": "ttft_mean_s"}


def llmperf(text: str) -> Reading | None:
    """The mean of inter_token_latency_s and ttft_s, printed or in the summary JSON (seconds)."""
    if "ttft_s" not in text and "inter_token_latency_s" not in text:
        return None
    found = Reading("llmperf")
    for rx in (_LLMPERF_BLOCK, _LLMPERF_JSON):
        for m in rx.finditer(text):
            name = _LLMPERF_NAMES[m.group("key")]
            if name not in found.values:
                try:
                    mean = float(m.group("mean"))
                except ValueError:
                    continue
                found.put(name, mean, text, m.start("mean"), f"mean {m.group('key')} = {m.group('mean')}")
    return found


# -------------------------------------------------------------------------------------------
# TGI text-generation-benchmark

_TGI_HEADER = re.compile(r"^[ \t]*\|[ \t]*Step[ \t]*\|[ \t]*Batch Size[ \t]*\|[ \t]*Average[ \t]*\|", re.M)
_TGI_VALUE = re.compile(r"^(\d+(?:\.\d+)?) (ns|us|µs|ms|s)$")


def tgi_benchmark(text: str) -> Reading | None:
    """The latency table: Decode (token) at the smallest batch is the inter-token latency, Prefill
    at batch size 1 the TTFT (a bigger batch's prefill is the batch's, not one request's)."""
    if "| Batch Size" not in text:  # a C-speed look first: most logs hold no such table
        return None
    rows: dict[str, list[tuple[int, str, int]]] = {}  # step -> (batch size, Average cell, position)
    for header in _TGI_HEADER.finditer(text):  # the latency table, then the throughput table (tokens/secs)
        step, average = "", ""
        pos = text.find("\n", header.end()) + 1
        while 0 < pos < len(text):
            end = text.find("\n", pos)
            line = text[pos : end if end >= 0 else len(text)]
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.strip().startswith("|") or len(cells) < 3:
                break
            if not (cells[0] and set(cells[0]) <= {"-", ":"}):  # not the |---| line
                step = cells[0] or step  # Merge::vertical blanks a repeated step name ...
                average = cells[2] or average  # ... and a repeated value
                if cells[1].isdigit():
                    rows.setdefault(step, []).append((int(cells[1]), average, pos))
            pos = end + 1 if end >= 0 else len(text)
    if not rows:
        return None
    found = Reading("text-generation-benchmark", engine="tgi")
    for step_name, name in (("Decode (token)", "itl_mean_s"), ("Prefill", "ttft_mean_s")):
        measured = [(b, m, p) for b, cell, p in rows.get(step_name, []) if (m := _TGI_VALUE.match(cell))]
        if not measured:
            continue
        batch, m, p = min(measured, key=lambda r: r[0])
        if name == "ttft_mean_s" and batch != 1:
            continue
        found.put(name, float(m.group(1)) * _UNIT_S[m.group(2)], text, p, f"{step_name} average at batch size {batch}")
    return found


# -------------------------------------------------------------------------------------------
# SGLang bench_one_batch

_SGL_PREFILL = re.compile(r"Prefill\. latency: *(?P<s>[\d.]+) s, throughput: *[\d.]+ token/s")
_SGL_DECODE = re.compile(r"Decode\. +median latency: *(?P<s>[\d.]+) s, median throughput: *[\d.]+ token/s")
_SGL_BATCH = re.compile(r"Decode \d+\. Batch size: (\d+), latency:")


def sglang_one_batch(text: str) -> Reading | None:
    """Of the measured runs (after "Benchmark ..."; the warm-up's first step compiles), the one of
    the smallest batch: its median decode step is the inter-token latency, and at batch size 1 its
    prefill is the TTFT."""
    if "median latency" not in text or "Prefill. latency" not in text:
        return None
    parts = text.split("Benchmark ...")
    offset = len(parts[0]) + len("Benchmark ...") if len(parts) > 1 else 0
    runs = []
    for part in parts[1:] if len(parts) > 1 else parts:
        decode = _SGL_DECODE.search(part)
        if decode is not None:
            batch = _SGL_BATCH.search(part)
            runs.append((int(batch.group(1)) if batch else None, offset, part, decode))
        offset += len(part) + len("Benchmark ...")
    if not runs:
        return None
    batch, base, part, decode = min(runs, key=lambda r: r[0] if r[0] is not None else 1 << 30)
    found = Reading("bench_one_batch", engine="sglang")
    at = f" at batch size {batch}" if batch else ""
    found.put("itl_mean_s", float(decode.group("s")), text, base + decode.start(), f"median decode step{at}")
    prefill = _SGL_PREFILL.search(part)
    if prefill is not None and batch == 1:
        found.put("ttft_mean_s", float(prefill.group("s")), text, base + prefill.start(), "prefill of one request")
    return found


# -------------------------------------------------------------------------------------------
# llama.cpp llama-bench

_LB_TEST = re.compile(r"^(?P<kind>pp|tg) ?(?P<n>\d+)$")
_LB_RATE = re.compile(r"^(\d+(?:\.\d+)?)")
_CPU_BACKENDS = {"cpu", "blas", "accelerate"}


def llama_bench(text: str) -> Reading | None:
    """The fastest GPU tg row is the inter-token latency (tokens made one at a time: 1 / t/s), the
    fastest pp row gives the time of its prompt (n / t/s). Rows at a filled context (`@ d`) and
    CPU-only runs are left out: a CPU is not judged against a GPU's latency."""
    if "t/s |" not in text or "test" not in text:
        return None
    best: dict[str, tuple[float, int, int]] = {}  # kind -> (t/s, tokens, position)
    names: list[str] = []
    pos = 0
    for line in text.split("\n"):
        at, pos = pos, pos + len(line) + 1
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if "test" in cells and "t/s" in cells:
            names = cells
            continue
        if not names or len(cells) != len(names):
            continue
        row = dict(zip(names, cells, strict=True))
        test, rate = _LB_TEST.match(row["test"]), _LB_RATE.match(row["t/s"])
        backends = {b.strip().lower() for b in row.get("backend", "").split(",")}
        if test is None or rate is None or backends <= _CPU_BACKENDS or row.get("ngl") == "0":
            continue
        tps = float(rate.group(1))
        if tps > 0 and tps > best.get(test.group("kind"), (0.0, 0, 0))[0]:
            best[test.group("kind")] = (tps, int(test.group("n")), at)
    found = Reading("llama-bench", engine="llamacpp")
    if "tg" in best:
        tps, n, at = best["tg"]
        found.put("itl_mean_s", 1 / tps, text, at, f"tg{n} at {tps:g} t/s: 1 / {tps:g} = {1000 / tps:.1f} ms per token")
    if "pp" in best:
        tps, n, at = best["pp"]
        found.put("ttft_mean_s", n / tps, text, at, f"pp{n} at {tps:g} t/s: a {n}-token prompt takes {n / tps:.2f} s")
    return found


# -------------------------------------------------------------------------------------------
# Ollama run --verbose

_OLLAMA_RATE = re.compile(r"^[ \t]*eval rate:[ \t]+(?P<rate>\d+(?:\.\d+)?) tokens/s", re.M)
_OLLAMA_PROMPT = re.compile(r"^[ \t]*prompt eval duration:[ \t]+(?P<d>\S+)", re.M)
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|µs|us|ns|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, **_UNIT_S}


def ollama_verbose(text: str) -> Reading | None:
    """Each response's `eval rate` (1 / rate per token) and `prompt eval duration` (its prefill),
    averaged over the responses pasted; the slowest one is quoted."""
    if "eval rate:" not in text:
        return None
    found = Reading("ollama --verbose", engine="ollama")
    rates = [m for m in _OLLAMA_RATE.finditer(text) if float(m.group("rate")) > 0]
    if rates:
        slowest = min(rates, key=lambda m: float(m.group("rate")))
        itl = sum(1 / float(m.group("rate")) for m in rates) / len(rates)
        how = f"1 / {slowest.group('rate')} tokens/s" if len(rates) == 1 else f"mean of 1 / eval rate over {len(rates)} responses; the slowest"
        found.put("itl_mean_s", itl, text, slowest.start(), how)
    prompts = [(m, s) for m in _OLLAMA_PROMPT.finditer(text) if (s := _go_seconds(m.group("d"))) is not None]
    if prompts:
        slowest_prompt = max(prompts, key=lambda p: p[1])[0]
        ttft = sum(s for _, s in prompts) / len(prompts)
        how = "the prompt's evaluation (prefill)" + ("" if len(prompts) == 1 else f", mean over {len(prompts)} responses; the slowest")
        found.put("ttft_mean_s", ttft, text, slowest_prompt.start(), how)
    return found


def _go_seconds(duration: str) -> float | None:
    """Go's time.Duration.String(): '2m7.682s' -> 127.682, '204.563ms' -> 0.204563."""
    parts = _GO_DURATION.findall(duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


# -------------------------------------------------------------------------------------------
# TensorRT-LLM trtllm-bench

_TRTLLM_ROW = re.compile(r"^[ \t]*Average (?P<what>time-to-first-token \[TTFT\]|time-per-output-token \[TPOT\]) \(ms\):[ \t]*"
                         r"(?P<ms>\d+(?:\.\d+)?)", re.M)
_TRTLLM_ISSUE = re.compile(r"^[ \t]*Issue Rate \(req/sec\):[ \t]*(?P<rate>\d+(?:\.\d+)?(?:E[+-]?\d+)?)", re.M | re.I)
BURST_RATE = 1e6  # requests issued per second: no client paces that; every request was queued at once


def trtllm_bench(text: str) -> Reading | None:
    """The streaming averages of the PERFORMANCE OVERVIEW block; an issue rate no client paces marks the run a burst,
    whose TTFT measures its own queue."""
    if "PERFORMANCE OVERVIEW" not in text or "[TPOT]" not in text and "[TTFT]" not in text:
        return None
    found = Reading("trtllm-bench", engine="trtllm")
    for m in _TRTLLM_ROW.finditer(text):
        name = "ttft_mean_s" if "TTFT" in m.group("what") else "itl_mean_s"
        if name not in found.values:
            found.put(name, float(m.group("ms")) / 1000, text, m.start(), f"average {m.group('what')} {m.group('ms')} ms")
    issue = _TRTLLM_ISSUE.search(text)
    if issue is not None and found.values:
        burst = float(issue.group("rate")) >= BURST_RATE
        found.put("bench_burst", 1.0 if burst else 0.0, text, issue.start(), "every request issued at once" if burst else "a paced issue rate")
    return found


# -------------------------------------------------------------------------------------------
# LMDeploy benchmark/profile_*.py

_LMD_TABLE = re.compile(r"^[ \t]*(?P<what>Time to First Token \(TTFT\)|Time per Output Token \(TPOT\))[ \t]+(?P<mean>\d+(?:\.\d+)?)\b", re.M)
_LMD_FIRST = re.compile(r"^[ \t]*first[ _]token latency(?:\(s\))?\(min, max, ave\):[ \t]*[\d.]+s?,[ \t]*[\d.]+s?,[ \t]*(?P<ave>\d+(?:\.\d+)?)s?", re.M)


def lmdeploy_profile(text: str) -> Reading | None:
    """The mean TTFT and TPOT of the profiler's table (seconds), or the average first-token latency of the older
    summaries (their per-token percentiles give no mean: no inter-token latency from them)."""
    if "Time to First Token (TTFT)" not in text and "Time per Output Token (TPOT)" not in text and "token latency" not in text:
        return None
    found = Reading("lmdeploy profile", engine="lmdeploy")
    for m in _LMD_TABLE.finditer(text):
        name = "ttft_mean_s" if "TTFT" in m.group("what") else "itl_mean_s"
        if name not in found.values:
            found.put(name, float(m.group("mean")), text, m.start(), f"{m.group('what')} mean {m.group('mean')} s")
    first = _LMD_FIRST.search(text)
    if first is not None and "ttft_mean_s" not in found.values:
        found.put("ttft_mean_s", float(first.group("ave")), text, first.start(), f"first token latency, ave {first.group('ave')} s")
    return found


READERS: tuple[Callable[[str], Reading | None], ...] = (
    genai_perf, genai_perf_json, llmperf, tgi_benchmark, sglang_one_batch, llama_bench, ollama_verbose, trtllm_bench,
    lmdeploy_profile,
)
