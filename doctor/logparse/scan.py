"""Streaming scan of one or more logs into LogFacts: line by line, in bounded memory.

Everything kept is capped (distinct events, evidence lines, the argument text handed to
doctor.engine_args), so a 1 GB log costs the same memory as a 1 MB one. A cheap byte-level
prefilter skips the lines no rule can match (throughput stats, request logs) before they are
decoded and normalised: most of a big log is such lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from doctor.facts.logs import LogEvent, LogFacts
from doctor.logparse import events as ev
from doctor.logparse import setup as st
from doctor.logparse.lines import Line, normalise

MAX_EVENTS = 400
MAX_ARGS_CHARS = 256 * 1024
ARGS_FOLLOW_LINES = 120  # TGI pretty-prints `Args {` over many lines
WRAP_MIN = 100  # a line at least this long that ends unmatched may be hard-wrapped

# Lower-cased literals: any one of them lets a line through to the grammar. Plain `in` tests are
# ~20x faster than one case-insensitive regex alternation in Python's re.
PREFILTER = (
    b"error", b"exception", b"traceback", b"out of memory", b"oom", b"kill", b"fail", b"unable", b"cannot", b"can't",
    b"no such", b"not found", b"support", b"divisible", b"invalid", b"unknown", b"unrecogni", b"refused", b"no route",
    b"timed out", b"timeout", b"expired", b"probe", b"nccl", b"shm", b"xid", b"ecc", b"fallen off", b"remote_code",
    b"remote-code", b"architecture", b"quantiz", b"argument", b"ssl", b"certificate", b"proxy", b"quota", b"rate limit",
    b" 40", b" 429", b" 50", b"unauthori", b"api key", b"choices", b"<html", b"<!doctype", b"retract", b"preempt",
    b"offload", b"eager", b"free memory", b"no available memory", b"blocks:", b"blocks is", b"kv cache size",
    b"kv cache is allocated", b"available kv", b"took", b"maximum concurrency", b"max_total_num_tokens",
    b"total_gpu_memory", b"capacity", b"compute capability", b"gpu 0", b"gpu 1", b"gpu 2", b"gpu 3", b"gpu 4",
    b"gpu 5", b"gpu 6", b"gpu 7", b"gpu models", b"device ", b"found ", b"cuda_visible_devices", b"graph", b"captur",
    b"n_ctx", b"context_length", b"llama_model_loader", b"general.name", b"build", b"version", b"llm engine",
    b"server_args", b"text_generation", b"ollama", b"non-default args", b"namespace(", b"args {", b"mib", b"time =",
    b"n_threads", b"data: ", b"file \"", b"frame #", b"loading", b"load_", b"starting", b"launch", b"uvicorn",
    b"startup", b"fired up", b"prefill batch", b"decode batch", b"errno", b"connect", b"resolv", b"sigquit", b"abort",
    b"137", b"signal", b"warn",
)
SERVING = b"Avg prompt throughput"  # the stat line: too common to normalise, but it says "serving"

_LAST_WINS = {"gpu_blocks", "kv_cache_tokens", "available_kv_gib", "max_concurrency", "cpu_blocks"}


class LogScanner:
    def __init__(self) -> None:
        self.facts = LogFacts()
        self.tracker = ev.PhaseTracker()
        self._events: dict[tuple[int, str, str], LogEvent] = {}
        self._run_fatal = False
        self._run_start_line = 0
        self._args: list[str] = []
        self._args_chars = 0
        self._args_follow = 0
        self._prev: Line | None = None
        self._engine_hits: dict[str, int] = {}
        self._v1 = self._v0 = 0
        self.source = ""
        self._source_no = 0

    def start_source(self, name: str) -> None:
        self.source = name
        self.facts.sources.append(name)
        self._source_no = 0
        self._prev = None

    def feed(self, raw: bytes) -> None:
        self._source_no += 1
        self.facts.lines_read += 1
        self.facts.bytes_read += len(raw)
        if self._args_follow > 0:
            self._keep_args(raw)
            self._args_follow -= 1
        low = raw.lower()
        if not any(word in low for word in PREFILTER):
            if SERVING in raw:
                self.tracker.milestone = "serving"
            self._prev = None
            return
        line = normalise(self._source_no, raw)
        text = line.text
        if not text:
            return
        self._detect(text)
        if st.STARTS.search(text) and self._run_fatal:
            self._new_run()
        if st.ARGS.search(text) and self._args_follow == 0:
            self._keep_args(raw)
            self._args_follow = ARGS_FOLLOW_LINES
        self._setup(text)
        found = None if _is_frame(text) else ev.match(text)
        if found is None and self._prev is not None and len(self._prev.text) >= WRAP_MIN:
            found = ev.match(self._prev.text + text)
            if found is not None:
                line = Line(self._prev.no, self._prev.text + text, self._prev.raw + line.raw, line.process, line.level)
        self.tracker.feed(text)
        if found is not None:
            self._add(line, *found)
            self._prev = None
        else:
            self._prev = line

    def _keep_args(self, raw: bytes) -> None:
        if self._args_chars < MAX_ARGS_CHARS:
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            self._args.append(text)
            self._args_chars += len(text)

    def _detect(self, text: str) -> None:
        for engine, pattern in st.ENGINE_MARKERS:
            if pattern.search(text):
                self._engine_hits[engine] = self._engine_hits.get(engine, 0) + 1
        if st.V1_MARKERS.search(text):
            self._v1 += 1
        elif st.V0_MARKERS.search(text):
            self._v0 += 1

    def _new_run(self) -> None:
        self.facts.runs += 1
        self._run_fatal = False
        self.tracker.reset()
        s = self.facts.setup  # capacities belong to the run that printed them
        s.gpu_blocks = s.kv_cache_tokens = s.available_kv_gib = s.max_concurrency = None

    def _setup(self, text: str) -> None:
        s = self.facts.setup
        for name, value, extra in st.extract(text):
            if name == "gpu_name":
                if value not in s.gpu_names and len(s.gpu_names) < 64:
                    s.gpu_names.append(str(value))
                if "idx" in extra:
                    s.gpu_count = max(s.gpu_count or 0, int(extra["idx"]) + 1)  # type: ignore[call-overload]
                continue
            if name == "engine_version":
                self.facts.engine_version = self.facts.engine_version or str(value)
                continue
            if name == "model":
                continue  # engine_args reads the model from the printed arguments
            if name == "sse_chunks":
                s.sse_chunks += 1
                continue
            if name == "smi_used_mib":
                if s.smi_used_mib is None or int(value) > s.smi_used_mib:  # type: ignore[arg-type]
                    s.smi_used_mib, s.smi_total_mib = int(value), int(extra.get("total", 0)) or None  # type: ignore[arg-type]
                continue
            if name == "smi_process":
                if len(s.smi_processes) < 256:
                    s.smi_processes[f"{extra.get('gpu')}:{extra.get('pid')}"] = int(value)  # type: ignore[arg-type]
                continue
            if name == "free_at_start_gib" and s.gpu_total_gib is None:
                s.gpu_total_gib = extra.get("total")  # type: ignore[assignment]
            if name == "gpu_blocks" and "cpu_blocks" in extra:
                s.cpu_blocks = extra["cpu_blocks"]  # type: ignore[assignment]
            if hasattr(s, name) and (name in _LAST_WINS or getattr(s, name) in (None, "")):
                setattr(s, name, value)

    def _add(self, line: Line, rule: ev.Rule, values: dict[str, object]) -> None:
        run = self.facts.runs - 1
        key = (run, rule.kind, line.text[:300])
        if rule.fatal:
            self._run_fatal = True
        known = self._events.get(key)
        if known is not None:
            known.count += 1
            return
        if len(self._events) >= MAX_EVENTS:
            return
        phase = self.tracker.phase() if rule.kind in _PHASED else ""
        self._events[key] = LogEvent(
            kind=rule.kind,
            source=self.source,
            line_no=line.no,
            lines=[line.raw.strip()[:600]],
            values=values,
            run=run,
            process=line.process,
            phase=phase,
            fatal=rule.fatal,
        )

    def finish(self) -> LogFacts:
        f = self.facts
        f.events = sorted(self._events.values(), key=lambda e: (e.run, f.sources.index(e.source), e.line_no))
        hits = {k: v for k, v in self._engine_hits.items() if k != "client"}
        if hits:
            f.engine = max(hits, key=lambda k: hits[k])
        elif self._engine_hits:
            f.engine = "client"
        if f.engine == "vllm" and (self._v1 or self._v0):
            f.engine_generation = "V1" if self._v1 >= self._v0 else "V0"
        return f

    def args_text(self) -> str:
        return "\n".join(self._args)


_PHASED = {"cuda_oom", "ggml_alloc_failed", "host_oom", "killed"}
_FRAME = re.compile(r'^File "[^"]*", line \d+|^\S+\.py:\d+ in \w|^frame #\d+:|^[\w.]+\(\S*\) \[0x')


def _is_frame(text: str) -> bool:
    """Traceback frame lines name files and functions, not errors ("line 401" is no HTTP 401)."""
    return bool(_FRAME.match(text))


def scan_lines(lines: Iterable[bytes], name: str = "<log>") -> tuple[LogFacts, str]:
    """Scan one iterable of raw lines; returns the facts and the argument text for engine_args."""
    scanner = LogScanner()
    scanner.start_source(name)
    for raw in lines:
        scanner.feed(raw)
    return scanner.finish(), scanner.args_text()
