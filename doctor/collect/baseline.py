"""`llm-doctor baseline record`: send the request set to the endpoint and keep what came back.

After one warm-up pass that is not kept (so the first repeat does not pay alone for cold caches
and kernels, which would read as noise), per request, `repeat` times, one at a time: the answer,
its tokens, time to first token, the mean inter-token latency and the end-to-end time, from a
real SSE stream (temperature 0, a fixed seed).
Each pass over the set is one tokens/s sample at concurrency 1; then `repeat` rounds of the whole
set with N requests in flight give the samples at concurrency N. Repeats are what let `compare`
tell a regression from noise, so every sample is kept.

The server's own state, read where it can be: vLLM/SGLang /metrics (cache_config_info: KV cache
dtype, blocks, block size, memory fraction), /version, llama-server's /props (n_ctx, slots,
build), the engine process' command line when it runs here, the engine log (--log), and NVML's
GPU memory at the start and end of each model's run (only when the endpoint is this machine).
Bounded by one deadline: when it runs out, the record says it is incomplete and what is missing.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from llm_doctor import __version__
from llm_doctor.baseline.model import Baseline, RequestResult, Run, ServerState, Throughput
from llm_doctor.baseline.requests import Request, RequestSet, score
from llm_doctor.collect import now
from llm_doctor.engine import Deadline
from llm_doctor.facts.deployment import EngineConfig
from llm_doctor.facts.host import EngineProcess
from llm_doctor.redact import Redactor, mask
from llm_doctor.settings import Settings, clean_key

Progress = Callable[[str, int, int], None]  # (what, done, total)
MAX_ERROR_EXCERPT = 300
MIN_REQUEST_S = 0.5  # no request is started with less time left than this


@dataclass
class RecordOptions:
    models: list[str]
    repeat: int = 3
    concurrency: int = 4
    timeout: float = 120.0  # per request
    seed: int = 0
    metrics_url: str | None = None
    logs: list[str] = field(default_factory=list)
    optional_fields: bool = True  # send `seed` and `stream_options`; off once the server refuses them


@dataclass
class Sample:
    text: str = ""
    tokens: int = 0
    ttft_ms: float | None = None
    itl_ms: float | None = None
    e2e_ms: float | None = None
    error: str = ""


@dataclass
class _Steps:
    """Progress over every request the recording will send."""

    total: int
    say: Progress
    done: int = 0

    def step(self, what: str, n: int = 1) -> None:
        self.say(what, self.done, self.total)
        self.done += n


def record(settings: Settings, rset: RequestSet, opts: RecordOptions, deadline: Deadline, progress: Progress | None = None) -> Baseline:
    key = clean_key(settings.api_key.value) if settings.api_key.value else None
    base = settings.base_url.value or ""
    out = Baseline(
        tool_version=__version__,
        recorded_at=now(),
        base_url=Redactor([key]).text(base),
        api_key=mask(key) if key else None,
        request_set={"name": rset.name, "version": rset.version, "source": rset.source, "sha256": rset.sha256},
        options={"repeat": opts.repeat, "concurrency": opts.concurrency, "temperature": 0, "seed": opts.seed,
                 "deadline_s": deadline.seconds},  # fmt: skip
    )
    per_model = len(rset.requests) * (1 + opts.repeat * (2 if opts.concurrency > 1 else 1))
    steps = _Steps(per_model * len(opts.models), progress or (lambda what, done, total: None))
    send = _Sender(_client(opts.concurrency), base, {"Authorization": f"Bearer {key}"} if key else {}, opts, deadline)
    with send.client:
        for model in opts.models:
            out.runs.append(_record_model(send, model, rset, key, steps))
    if not opts.optional_fields:
        out.options["seed"] = None  # the server refused `seed` / `stream_options`: sent without them
    _problems(out, deadline)
    return out


@dataclass
class _Sender:
    client: Any
    base: str
    headers: dict[str, str]
    opts: RecordOptions
    deadline: Deadline

    def __call__(self, model: str, req: Request) -> Sample:
        return one(self.client, self.base, self.headers, model, req, self.opts, self.deadline)


def _record_model(send: _Sender, model: str, rset: RequestSet, key: str | None, steps: _Steps) -> Run:
    opts = send.opts
    run = Run(model=model, requests=[RequestResult(r.id, _expect(r)) for r in rset.requests])
    for req in rset.requests:  # warm-up, not kept: caches, compiled kernels, loaded adapters
        steps.step(f"{model}: warm-up {req.id}")
        send(model, req)
    local = is_local(send.base)
    proc = engine_process(send.base) if local else None
    pids = {proc.pid, *proc.children} if proc else set()
    memory_start = gpu_memory(pids) if local else "the endpoint is not on this machine"
    for p in range(opts.repeat):
        samples = []
        for req, result in zip(rset.requests, run.requests, strict=True):
            steps.step(f"{model}: pass {p + 1}/{opts.repeat} {req.id}")
            samples.append(send(model, req))
            _keep(result, samples[-1], first=p == 0)
        _tally(_throughput(run, 1), samples, sum((s.e2e_ms or 0.0) for s in samples) / 1000)
    if opts.concurrency > 1:
        for p in range(opts.repeat):
            steps.step(f"{model}: {opts.concurrency} in flight, round {p + 1}/{opts.repeat}", len(rset.requests))
            start = time.perf_counter()
            with ThreadPoolExecutor(max_workers=opts.concurrency) as pool:
                samples = list(pool.map(lambda r: send(model, r), rset.requests))
            _tally(_throughput(run, opts.concurrency), samples, time.perf_counter() - start)
    steps.say(f"{model}: reading the server's state", steps.done, steps.total)
    run.server = server_state(send.base, key, opts, send.deadline, proc)
    if isinstance(memory_start, str):
        run.server.notes.append(f"GPU memory not read: {memory_start}")
    else:
        end = gpu_memory(pids)
        run.server.gpu_memory_used_mib = [memory_start[0]] + ([end[0]] if isinstance(end, tuple) and end[2] == memory_start[2] else [])
        run.server.gpu_memory_total_mib, run.server.gpu_memory_scope = memory_start[1], memory_start[2]
    _scores(run, rset)
    return run


def _client(concurrency: int) -> Any:
    import httpx

    n = max(1, concurrency)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    # redirects are never followed with the key; the environment's proxies apply as for any client
    return httpx.Client(follow_redirects=False, limits=limits, trust_env=True)


def _expect(r: Request) -> dict[str, Any] | None:
    return {"kind": r.expect.kind, "value": r.expect.value} if r.expect else None


def chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base + "/chat/completions" if base.endswith("/v1") else base + "/v1/chat/completions"


def one(client: Any, base: str, headers: dict[str, str], model: str, req: Request, opts: RecordOptions, deadline: Deadline) -> Sample:
    """One streamed chat completion, timed: TTFT at the first content, ITL over the rest."""
    import httpx

    if deadline.remaining() < MIN_REQUEST_S:
        return Sample(error="deadline reached before this request")
    body: dict[str, Any] = {"model": model, "messages": req.messages, "max_tokens": req.max_tokens, "temperature": 0, "stream": True}
    if opts.optional_fields:
        body |= {"seed": opts.seed, "stream_options": {"include_usage": True}}
    parts: list[str] = []
    chunks, usage_tokens = 0, None
    first = last = None
    t0 = time.perf_counter()
    try:
        with client.stream("POST", chat_url(base), json=body, headers=headers, timeout=deadline.cap(opts.timeout)) as resp:
            if resp.status_code != 200:
                excerpt = " ".join(resp.read()[:MAX_ERROR_EXCERPT].decode("utf-8", "replace").split())
                if resp.status_code in (400, 422) and opts.optional_fields and ("seed" in excerpt or "stream_options" in excerpt):
                    opts.optional_fields = False  # a strict server that rejects them: the rest goes without
                    return one(client, base, headers, model, req, opts, deadline)
                return Sample(error=f"HTTP {resp.status_code}: {excerpt}")
            if "event-stream" not in resp.headers.get("content-type", ""):
                return _unstreamed(resp.read(), t0)
            for line in resp.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    event = json.loads(data)
                except ValueError:
                    return Sample(error=f"a stream event is not JSON: {data[:MAX_ERROR_EXCERPT]}")
                if not isinstance(event, dict):
                    continue
                if event.get("error"):
                    return Sample(error=f"error in the stream: {json.dumps(event['error'])[:MAX_ERROR_EXCERPT]}")
                tokens = (event.get("usage") or {}).get("completion_tokens")
                if isinstance(tokens, int):
                    usage_tokens = tokens
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {} if isinstance(choice, dict) else {}
                    content = delta.get("content") or ""
                    if content or delta.get("reasoning_content"):
                        last = time.perf_counter()
                        first = first or last
                        chunks += 1
                        parts.append(content)
    except httpx.HTTPError as exc:
        return Sample(error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR_EXCERPT])
    end = time.perf_counter()
    tokens = usage_tokens if usage_tokens is not None else chunks
    sample = Sample(text="".join(parts), tokens=tokens, e2e_ms=_ms(end - t0))
    if first is not None and last is not None:
        sample.ttft_ms = _ms(first - t0)
        if tokens > 1:
            sample.itl_ms = _ms((last - first) / (tokens - 1))
    return sample


def _unstreamed(raw: bytes, t0: float) -> Sample:
    """A server (or proxy) that answers a streamed request with one JSON body: the whole answer
    arrives at once, so TTFT is the end-to-end time and ITL cannot be measured."""
    end = time.perf_counter()
    try:
        data = json.loads(raw)
        text = data["choices"][0]["message"].get("content") or ""
        tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return Sample(error=f"the answer is neither SSE nor a chat completion: {raw[:MAX_ERROR_EXCERPT]!r}")
    return Sample(text=text, tokens=tokens, ttft_ms=_ms(end - t0), e2e_ms=_ms(end - t0))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _keep(result: RequestResult, sample: Sample, first: bool) -> None:
    if sample.error:
        if sample.error not in result.errors:
            result.errors.append(sample.error)
        return
    if first or (not result.output and not result.e2e_ms):
        result.output = sample.text
    elif sample.text != result.output:
        result.consistent = False
    result.completion_tokens.append(sample.tokens)
    for name in ("ttft_ms", "itl_ms", "e2e_ms"):
        value = getattr(sample, name)
        if value is not None:
            getattr(result, name).append(value)


def _throughput(run: Run, concurrency: int) -> Throughput:
    found = next((t for t in run.throughput if t.concurrency == concurrency), None)
    if found is None:
        found = Throughput(concurrency)
        run.throughput.append(found)
    return found


def _tally(into: Throughput, samples: list[Sample], seconds: float) -> None:
    """One tokens/s sample from one pass or round; a pass with a failed request gives none, since
    its tokens/s would count the failure as speed."""
    into.requests += len(samples)
    into.errors += sum(1 for s in samples if s.error)
    if seconds > 0 and not any(s.error for s in samples):
        into.tokens_per_s.append(round(sum(s.tokens for s in samples) / seconds, 2))


def _scores(run: Run, rset: RequestSet) -> None:
    for req, result in zip(rset.requests, run.requests, strict=True):
        if req.expect is not None and (result.e2e_ms or result.output):
            result.correct = score(req.expect, result.output)


def _problems(out: Baseline, deadline: Deadline) -> None:
    for run in out.runs:
        failed = [r for r in run.requests if r.errors]
        for r in failed[:5]:
            out.problems.append(f"{run.model}: request {r.id}: {r.errors[0]}")
        if len(failed) > 5:
            out.problems.append(f"{run.model}: {len(failed) - 5} more requests failed")
        for t in run.throughput:
            if t.errors:
                out.problems.append(f"{run.model}: {t.errors} of {t.requests} requests at concurrency {t.concurrency} failed")
    if deadline.expired():
        out.problems.append(f"the --deadline of {deadline.seconds:g} s ran out before every request was sent")
    out.complete = not out.problems


def origin(base_url: str) -> str:
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme or "http", parts.netloc, "", "", ""))


def is_local(base_url: str) -> bool:
    """The endpoint runs on this machine (so its GPUs and processes are ours to read)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
        return True
    try:
        import psutil

        mine = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs}
        return host in mine or host in (socket.gethostname().lower(), socket.getfqdn().lower())
    except (OSError, ImportError):
        return False


def gpu_memory(pids: set[int]) -> tuple[float, float | None, str] | str:
    """(used MiB, total MiB, what was counted) from NVML, or why it cannot be read. The engine's
    own processes when NVML lists them (another server starting on the same GPUs between two
    recordings must not read as growth); all GPUs' used memory otherwise (NVML in a container
    often lists no processes)."""
    from llm_doctor.collect import gpu

    facts = gpu.collect(sample_s=0.0)
    used = [g.memory_used_mib for g in facts.gpus if g.memory_used_mib is not None]
    if not facts.available or not used:
        return facts.reason or "NVML reports no GPU memory"
    total = [g.memory_total_mib for g in facts.gpus if g.memory_total_mib is not None]
    total_mib = round(sum(total), 1) if total else None
    mine = [p for g in facts.gpus for p in g.processes if p.pid in pids and p.used_mib is not None]
    if mine:
        shown = ", ".join(str(pid) for pid in sorted({p.pid for p in mine}))
        return round(sum(p.used_mib or 0.0 for p in mine), 1), total_mib, f"engine processes {shown}"
    return round(sum(used), 1), total_mib, "all GPUs (every process)"


def engine_process(base: str) -> EngineProcess | None:
    """The engine process serving this port on this machine, when exactly one can."""
    from llm_doctor.collect import host

    port = urlsplit(base).port or (443 if base.startswith("https") else 80)
    procs = [p for p in host.engine_processes() if p.config is not None and p.config.port in (port, None)]
    return procs[0] if len(procs) == 1 else None


def server_state(base: str, key: str | None, opts: RecordOptions, deadline: Deadline, proc: EngineProcess | None) -> ServerState:
    """Everything the server says about its configuration; later sources fill only the gaps, so
    what the engine reports about itself (/metrics) outranks what it was asked (command line, log)."""
    state = ServerState()
    _from_metrics(state, opts.metrics_url or _metrics_url(base), key, opts, deadline)
    _from_http(state, base, key, deadline)
    if proc is not None and proc.config is not None:
        state.engine = state.engine or proc.config.engine
        _put(state, "command_line", proc.cmdline, "process")
        _config_args(state, proc.config, "process")
    if opts.logs:
        _from_logs(state, opts.logs, deadline)
    return state


def _metrics_url(base: str) -> str:
    from llm_doctor.collect import metrics

    return metrics.default_url(base)


def _put(state: ServerState, name: str, value: Any, source: str) -> None:
    """Keep the first source's value. A flag the engine was given (command line, log) that its own
    report (/metrics) contradicts was not applied: kept in `unapplied` as the evidence."""
    if value in (None, ""):
        return
    if name not in state.args:
        state.args[name] = str(value)
        state.args_source[name] = source
    elif state.args_source[name] == "metrics" and source in ("process", "log") and not _same(state.args[name], str(value)):
        state.unapplied[name] = f"{value} ({'command line' if source == 'process' else 'log'})"


def _same(reported: str, asked: str) -> bool:
    try:
        return float(reported) == float(asked)
    except ValueError:
        return reported.casefold() == asked.casefold()


def _kv(state: ServerState, tokens: int | None, source: str) -> None:
    if tokens and state.kv_cache_tokens is None:
        state.kv_cache_tokens, state.kv_cache_tokens_source = int(tokens), source


def _from_metrics(state: ServerState, url: str, key: str | None, opts: RecordOptions, deadline: Deadline) -> None:
    from llm_doctor.collect import metrics

    m = metrics.collect(url, key, sample_s=0.0, timeout=min(opts.timeout, 10.0), deadline=deadline)
    if not m.available:
        state.notes.append(f"/metrics not read: {m.reason}")
        return
    state.engine = m.engine
    c = m.cache_config
    names = {"cache_dtype": "kv_cache_dtype", "gpu_memory_utilization": "gpu_memory_utilization",
             "block_size": "block_size", "enable_prefix_caching": "enable_prefix_caching",
             "num_gpu_blocks": "num_gpu_blocks", "cpu_offload_gb": "cpu_offload_gb"}  # fmt: skip
    for label, name in names.items():
        if c.get(label) not in (None, "", "None"):
            _put(state, name, c[label], "metrics")
    blocks, block = c.get("num_gpu_blocks") or "", c.get("block_size") or ""
    if blocks.isdigit() and block.isdigit():
        _kv(state, int(blocks) * int(block), "metrics vllm:cache_config_info num_gpu_blocks x block_size")
    if "max_total_tokens" in m.values:
        _kv(state, int(m.values["max_total_tokens"]), "metrics sglang:max_total_num_tokens")
        _put(state, "max_total_tokens", int(m.values["max_total_tokens"]), "metrics")


def _get_json(url: str, key: str | None, deadline: Deadline) -> Any:
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with httpx.Client(follow_redirects=False, trust_env=True) as client:
            resp = client.get(url, headers=headers, timeout=deadline.cap(5.0))
        return resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def _from_http(state: ServerState, base: str, key: str | None, deadline: Deadline) -> None:
    """vLLM's GET /version; llama-server's GET /props (its context size is its KV capacity)."""
    root = origin(base)
    version = _get_json(root + "/version", key, deadline)
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        state.engine_version = state.engine_version or version["version"]
    props = _get_json(root + "/props", key, deadline)
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        state.engine = state.engine or "llamacpp"
        if isinstance(props.get("build_info"), str):
            state.engine_version = state.engine_version or props["build_info"]
        n_ctx = props["default_generation_settings"].get("n_ctx")
        if isinstance(n_ctx, int):
            _put(state, "n_ctx", n_ctx, "props")
            _kv(state, n_ctx, "llama-server /props n_ctx")
        if isinstance(props.get("total_slots"), int):
            _put(state, "total_slots", props["total_slots"], "props")


def _config_args(state: ServerState, cfg: EngineConfig, source: str) -> None:
    import dataclasses

    skip = {"env", "extra", "unknown_flags", "sources", "host", "port", "api_key_set", "engine", "engine_version", "engine_generation"}
    for f in dataclasses.fields(cfg):
        if f.name not in skip and cfg.is_set(f.name):
            _put(state, f.name, getattr(cfg, f.name), source)
    for flag, value in sorted(cfg.extra.items()):
        _put(state, flag.lstrip("-"), value if value != "" else "true", source)


def _from_logs(state: ServerState, paths: list[str], deadline: Deadline) -> None:
    from llm_doctor.collect import logs
    from llm_doctor.facts import Facts

    facts = Facts()
    logs.collect(paths, None, None, None, False, facts, deadline)
    if facts.logs is None:
        state.notes.append("--log: nothing read")
        return
    state.notes += [f"--log: {p}" for p in facts.logs.problems]
    state.engine = state.engine or facts.logs.engine
    state.engine_version = state.engine_version or facts.logs.engine_version
    setup = facts.logs.setup
    _kv(state, setup.kv_cache_tokens, "log: GPU KV cache size")
    if facts.deployment is not None:
        _config_args(state, facts.deployment, "log")
        block = facts.deployment.block_size
        if setup.gpu_blocks and block:
            _kv(state, setup.gpu_blocks * block, "log: GPU blocks x block_size")
    if setup.gpu_blocks:
        _put(state, "num_gpu_blocks", setup.gpu_blocks, "log")
