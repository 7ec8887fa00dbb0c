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
from doctor.logparse import prefilter as pf
from doctor.logparse import setup as st
from doctor.logparse.lines import Line, normalise

# Traceback frames carry the phase of an OOM (PhaseTracker) and are never events themselves.
FRAME_LITERALS = ('file "', "frame #", ") [0x", "traceback (most recent call last)")
_PHASE_PATTERNS = [pattern for phase, pattern in ev.PHASES if phase != "serving"]
# every pattern that can turn a line into a fact; a line holding none of their literals cannot
GRAMMAR = [r.pattern for r in ev.RULES] + [p for _, p in st._SETUP] + [st.ARGS, st.STARTS, st.COMMAND] + _PHASE_PATTERNS
CANDIDATE_LITERALS = pf.literals(GRAMMAR, FRAME_LITERALS)
CANDIDATE = pf.compile_groups(CANDIDATE_LITERALS)
# steady-state lines (stats, batches, access log) only say "serving": they move the phase, nothing else
SERVING = pf.compile_groups(pf.literals([pattern for phase, pattern in ev.PHASES if phase == "serving"]))


def _any(regexes: tuple[re.Pattern[bytes], ...], low: bytes, start: int = 0, end: int | None = None) -> bool:
    end = len(low) if end is None else end
    return any(rx.search(low, start, end) for rx in regexes)

MAX_EVENTS = 400
MAX_ARGS_CHARS = 256 * 1024
MAX_LINE = 64 * 1024  # a longer line is cut here (a file without newlines cannot fill memory)
ARGS_FOLLOW_LINES = 120  # TGI pretty-prints `Args {` over many lines
WRAP_MIN = 100  # a line at least this long that ends unmatched may be hard-wrapped
MAX_COMMANDS = 8  # engine command lines kept (each with its `\` continuation lines)
MAX_COMMAND_CHARS = 8192
ENGINE_SURE = 256  # engine markers after which the engine is known (see _detect)

_LAST_WINS = {"gpu_blocks", "kv_cache_tokens", "available_kv_gib", "max_concurrency", "cpu_blocks", "base_url"}


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
        self.commands: list[str] = []  # engine command lines quoted in the log, for engine_args.parse_command
        self._cmd_open = False  # the last command line ended with `\`: the next line continues it
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
        """One raw line (the slow path: tests, small inputs; feed_block decides the same)."""
        self._source_no += 1
        self.facts.lines_read += 1
        self.facts.bytes_read += len(raw)
        if not self._sure:
            self._detect(raw.decode("utf-8", errors="replace"))
        if self._args_follow > 0 or self._prev is not None or self._cmd_open or _any(CANDIDATE, raw.lower()):
            self._line(self._source_no, raw)
            return
        if _any(SERVING, raw.lower()):
            self.tracker.milestone = "serving"
        self._prev = None

    def feed_block(self, block: bytes) -> None:
        """Whole lines (the last may lack its newline): only the lines the prefilter hits are
        decoded and parsed, found by a few regex passes over the lower-cased block."""
        if not block:
            return
        if not self._sure:
            self._detect(block.decode("utf-8", errors="replace"))
        low = block.lower()
        starts: set[int] = set()
        for rx in CANDIDATE:
            pos = 0
            while (m := rx.search(low, pos)) is not None:
                start = low.rfind(b"\n", 0, m.start()) + 1
                starts.add(start)
                end = low.find(b"\n", m.end())
                if end < 0:
                    break
                pos = end + 1
        no, pos = self._source_no, 0  # line number of the line before `pos`, byte offset of a line start
        size = len(block)
        for start in sorted(starts):
            if start < pos:
                continue  # already handled as the continuation of the line before
            if start > pos:  # lines nobody needs: they only end a hard-wrap and may say "serving"
                pos, no = self._follow(block, pos, start, no)
                if pos < start:
                    if self.tracker.milestone != "serving" and _any(SERVING, low, pos, start):
                        self.tracker.milestone = "serving"
                    no += block.count(b"\n", pos, start)
                    self._prev = None
                    pos = start
            end = block.find(b"\n", start)
            end = size if end < 0 else end + 1
            no += 1
            self._line(no, block[start : min(end, start + MAX_LINE)])
            pos = end
        if pos < size:
            pos, no = self._follow(block, pos, size, no)
            if pos < size:
                if self.tracker.milestone != "serving" and _any(SERVING, low, pos, size):
                    self.tracker.milestone = "serving"
                no += block.count(b"\n", pos, size) + (0 if block.endswith(b"\n") else 1)
                self._prev = None
        self.facts.lines_read += no - self._source_no
        self.facts.bytes_read += size
        self._source_no = no

    def _follow(self, block: bytes, pos: int, limit: int, no: int) -> tuple[int, int]:
        """Lines after `pos` that must be read whatever they hold: the continuation of a
        hard-wrapped line, the pretty-printed arguments after `Args {`."""
        while pos < limit and (self._args_follow > 0 or self._prev is not None or self._cmd_open):
            end = block.find(b"\n", pos, limit)
            end = limit if end < 0 else end + 1
            no += 1
            self._line(no, block[pos : min(end, pos + MAX_LINE)])
            pos = end
        return pos, no

    def _line(self, no: int, raw: bytes) -> None:
        if self._args_follow > 0:
            self._keep_args(raw)
            self._args_follow -= 1
        line = normalise(no, raw)
        text = line.text
        if not text:
            self._prev = None
            self._cmd_open = False
            return
        self._command(text)
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
            self._prev = line if len(text) >= WRAP_MIN else None

    def _command(self, text: str) -> None:
        if self._cmd_open:
            self.commands[-1] = (self.commands[-1] + " " + text.rstrip("\\ "))[:MAX_COMMAND_CHARS]
            self._cmd_open = text.endswith("\\")
            return
        m = st.COMMAND.search(text)
        if m and len(self.commands) < MAX_COMMANDS:
            self.commands.append(m.group("cmd").rstrip("\\ ")[:MAX_COMMAND_CHARS])
            self._cmd_open = text.endswith("\\")

    def _keep_args(self, raw: bytes) -> None:
        if self._args_chars < MAX_ARGS_CHARS:
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            self._args.append(text)
            self._args_chars += len(text)

    def _detect(self, text: str) -> None:
        """Which engine (and vLLM generation) wrote this: marker counts over every line until
        ENGINE_SURE markers are seen (the markers are in prefixes and paths, not in error lines,
        and one engine writes the whole log)."""
        for engine, pattern in st.ENGINE_MARKERS:
            n = len(pattern.findall(text))
            if n:
                self._engine_hits[engine] = self._engine_hits.get(engine, 0) + n
        self._v1 += len(st.V1_MARKERS.findall(text))
        self._v0 += len(st.V0_MARKERS.findall(text))

    @property
    def _sure(self) -> bool:
        return sum(self._engine_hits.values()) >= ENGINE_SURE

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
