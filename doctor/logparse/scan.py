"""Streaming scan of one or more logs into LogFacts: line by line, in bounded memory.

Nothing is dropped and memory stays flat: a repeated message (the same template, other numbers)
is one event with its count and its first and last lines, the starts of a long crash loop beyond
the last MAX_RUNS_KEPT are folded into counts, and the argument text handed to doctor.engine_args is
capped, so a 1 GB log costs the same memory as a 1 MB one and the last fatal error is always kept. A cheap byte-level
prefilter skips the lines no rule can match (throughput stats, request logs) before they are
decoded and normalised: most of a big log is such lines. A big file on disk can have that
prefilter run by rg or grep on another core (external_prefilter), and a message repeated with other
numbers is served by the plan of its template (template_cache): both give the same facts.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from llm_doctor.facts.logs import LogEvent, LogFacts
from llm_doctor.logparse import chains, stat_lines
from llm_doctor.logparse import events as ev
from llm_doctor.logparse import failures as fl
from llm_doctor.logparse import prefilter as pf
from llm_doctor.logparse import setup as st
from llm_doctor.logparse import template_cache as tc
from llm_doctor.logparse.lines import Line, LineNumbers, carried, joined, normalise
from llm_doctor.logparse.stat_lines import StatLines

# Traceback frames carry the phase of an OOM (PhaseTracker) and are never events themselves.
FRAME_LITERALS = ('file "', "frame #", ") [0x", "traceback (most recent call last)")
_PHASE_PATTERNS = [pattern for phase, pattern in ev.PHASES if phase != "serving"]
# every pattern that can turn a line into a fact; a line holding none of their literals cannot
GRAMMAR = [r.pattern for r in ev.RULES] + [p for _, p in st._SETUP] + [st.ARGS, st.STARTS, st.COMMAND, st.GPUSTACK_COMMAND] + _PHASE_PATTERNS
CANDIDATE_LITERALS = pf.literals(GRAMMAR, FRAME_LITERALS + fl.LITERALS)
CANDIDATE = pf.compile_groups(CANDIDATE_LITERALS)
# what an external prefilter searches a file for: the grammar's literals in any casing (CANDIDATE reads
# the block lower-cased), and the stat lines' as printed (one search each)
EXTERNAL_LITERALS = ((CANDIDATE_LITERALS, True), (stat_lines.LITERALS, False))
# steady-state lines (stats, batches, access log) only say "serving": they move the phase, nothing else
SERVING = pf.compile_groups(pf.literals([pattern for phase, pattern in ev.PHASES if phase == "serving"]))
_FRAME = re.compile(r'^File "[^"]*", line \d+|^\S+\.py:\d+ in \w|^frame #\d+:|^[\w.]+\(\S*\) \[0x')
# the patterns besides the rules that decide how a line is parsed (see template_cache)
TEMPLATE_DECIDERS = [st.COMMAND, st.GPUSTACK_COMMAND, st.STARTS, st.ARGS, _FRAME, *(p for _, p in st._SETUP), *(p for _, p in ev.PHASES)]
# the server said it is up (a start that never says so stopped during start-up) ...
# (FreeToken's server/api_server.py "API server is ready to serve on %s:%d", mistral.rs's "Serving on http://")
UP = rb"application startup complete|uvicorn running|the server is fired up|server is listening|all slots are idle|listening on|" \
     rb"api server is ready to serve on|serving on http|(?m:^connected\r?$)"
READY = re.compile(UP + rb"|avg prompt throughput|decode batch|generation throughput|engine \(running/waiting\):")
# ... and after a failure, it went on: up again, or answering requests (a stat line that only counts
# zeros is a server shutting down, not serving)
WENT_ON = re.compile(UP + rb"|running: [1-9]|engine \(running/waiting\): [1-9]|#running-req: [1-9]|http/1\.[01]\" 200|prefill batch\. #new-seq: [1-9]|slot \w+: id +\d+ \| task")


_COMMAND_FLAG = re.compile(ev.COMMAND_FLAG.pattern.encode(), re.I)


def _serving_said(low: bytes, start: int = 0, end: int | None = None) -> bool:
    """A line in low[start:end] says the engine is serving: it holds a serving literal and is no
    command or config line (events.COMMAND_FLAG)."""
    end = len(low) if end is None else end
    for rx in SERVING:
        for m in rx.finditer(low, start, end):
            first = max(start, low.rfind(b"\n", start, m.start()) + 1)
            last = low.find(b"\n", m.end(), end)
            if not _COMMAND_FLAG.search(low, first, end if last < 0 else last):
                return True
    return False


def _relaxed(literals: Iterable[str]) -> re.Pattern[bytes]:
    """The literals with each digit made any digit: what a line holds under any of its digits."""
    return re.compile("|".join("".join("[0-9]" if ch in "0123456789" else re.escape(ch) for ch in lit) for lit in literals).encode())


SERVING_ANY_DIGITS = _relaxed(pf.literals([pattern for phase, pattern in ev.PHASES if phase == "serving"]))


def _says(text: str) -> tuple[bool, bool]:
    """Of a message, digit-blind: whether it may say "serving" (_serving_said) whatever its digits
    are, and whether it says the server is up (READY is digit-blind). A template's lines share both,
    so a plan keeps them and _conclude asks _note_serving's searches only where they may answer."""
    low = text.lower().encode()
    return SERVING_ANY_DIGITS.search(low) is not None, READY.search(low) is not None


def _any(regexes: tuple[re.Pattern[bytes], ...], low: bytes, start: int = 0, end: int | None = None) -> bool:
    end = len(low) if end is None else end
    return any(rx.search(low, start, end) for rx in regexes)

MAX_VARIANTS = 8  # events kept per template with different values ("offloaded 0/33" vs "33/33"); more repeats count on the last
MAX_RUNS_KEPT = 32  # starts of the engine whose events are kept one by one; older ones are folded into counts
TEMPLATE = re.compile(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\d+")
_TEMPLATE_BYTES = re.compile(TEMPLATE.pattern.encode())
_HEX_MASK = bytes.maketrans(b"0123456789abcdefABCDEF", b"0" * 22)
_DIGIT_X = re.compile(r"\dx")
MAX_ARGS_CHARS = 256 * 1024
MEMO_SIZE, MEMO_CHARS = 4096, 2048  # messages whose parse is remembered (_match), and the longest one
# ... and the longer ones (up to MAX_LINE), fewer of them: a start-up's argument dump (SGLang's server_args, several KB)
# repeats at every restart of a crash loop, and its parse cost ~10 ms a time (64 x 64 KiB: memory stays bounded)
LONG_MEMO_SIZE = 64
MAX_LINE = 64 * 1024  # a longer line is cut here (a file without newlines cannot fill memory)
ARGS_FOLLOW_LINES = 120  # TGI pretty-prints `Args {` over many lines
MAX_COMMANDS = 8  # engine command lines kept (each with its `\` continuation lines)
# how many lines after an engine's launch command its first log record may come (a blank line, "and then:"): a
# command followed by that engine's records is a start even where the paste begins after the engine's start marker
LAUNCH_FOLLOW_LINES = 8
MAX_COMMAND_CHARS = 8192
ENGINE_SURE = 256  # engine markers after which the engine is known (see _detect)
DETECT_LINES = 256  # new lines _detect reads between two looks at ENGINE_SURE
PLACE_LINES = 300  # how far after an unplaced OOM a traceback may still place it (_place)
EXPIRY_LINES = 256  # parsed lines between two looks at the deadline
DETECT_BYTES = 4 * 1024 * 1024  # ... or after this much of a source: the markers are in its start-up header

_LAST_WINS = {"gpu_blocks", "kv_cache_tokens", "available_kv_gib", "max_concurrency", "cpu_blocks", "base_url", "stream_read", "sse_done",
              "proxy_named", "loopback_url", "docker_host_mapped"}


class LogScanner:
    def __init__(self, templates: bool = True) -> None:
        """`templates`: serve repeated messages from their template's plan (template_cache)."""
        self.facts = LogFacts()
        self.tracker = ev.PhaseTracker()
        self._events: dict[tuple[int, str, str], list[LogEvent]] = {}  # (run, kind, template) -> its variants
        self._undo: tuple[tuple[int, str, str], LogEvent, bool] | None = None  # the last generic event added
        self.failures = fl.FailureReader()
        self._traceback_line: Line | None = None  # the last line read inside an open traceback
        # failures not yet followed by a sign the engine went on, with the start-up milestone they happened at
        self._unserved: dict[int, tuple[LogEvent, int]] = {}
        self._run_fatal = False
        self._run_start_line = 0
        self._args: list[str] = []
        self._args_chars = 0
        self._args_follow = 0
        self.commands: list[str] = []  # engine command lines quoted in the log, for engine_args.parse_command
        self._cmd_open = False  # the last command line ended with `\`: the next line continues it
        self._launch_left = 0  # lines after a launch command in which a log record makes it a start (LAUNCH_FOLLOW_LINES)
        self._launch_engine = ""  # the engine the last launch command starts
        self._launched = ""  # the engine whose launch command a log record followed, while no start marker was seen
        self._marked = False  # a start marker (st.STARTS) was seen
        self._prev: Line | None = None
        self._engine_hits: dict[str, int] = {}
        self._v1 = self._v0 = 0
        self.source = ""
        self._source_no = 0
        self._detect_left = DETECT_BYTES
        self.stats = StatLines()  # the engine's periodic stat lines: series kept as counts and peaks
        self._detected: set[bytes] = set()  # templates of the lines _detect has seen in this source
        self._masked: set[bytes] = set()  # ... and those lines with their digits and hex letters made 0
        self.templates = tc.TemplateCache(TEMPLATE_DECIDERS, enabled=templates)
        self._plan_used: tc.Plan | None = None  # the plan that served the last line read, if one did
        self._counted: LogEvent | None = None  # the event the last event line counted on
        self._unplaced: LogEvent | None = None  # the last out-of-memory no milestone or frame placed (see _place)

    def sibling(self) -> LogScanner:
        """A scanner of another part of the same input (doctor.collect.logs reads a big file's tail
        first) that shares this one's template plans: a plan depends on its template alone (it is
        made and used only on a line with nothing open before it), and learning the plans of a
        start-up header costs ~1 ms a line, so the head would pay again for every plan the tail made."""
        other = LogScanner()
        other.templates = self.templates
        return other

    def start_source(self, name: str) -> None:
        self.source = name
        self.facts.sources.append(name)
        self._source_no = 0
        self._prev = None
        self._end_of_source()
        self._detect_left = DETECT_BYTES
        self._detected, self._masked = set(), set()

    @property
    def _must_read(self) -> bool:
        """The next line is read whatever it holds: a continuation, pretty-printed args, a traceback."""
        return self._args_follow > 0 or self._prev is not None or self._cmd_open or self.failures.open or self._launch_left > 0

    @property
    def _watching(self) -> bool:
        """Lines the prefilter skipped still matter (see _note_serving)."""
        return self.tracker.milestone != "serving" or not self.facts.ready or bool(self._unserved)

    def _note_serving(self, low: bytes, start: int = 0, end: int | None = None) -> None:
        """Lines the prefilter skipped: they may move the phase to serving, prove the server up, and
        show it answering after a failure."""
        end = len(low) if end is None else end
        if self.tracker.milestone != "serving" and _serving_said(low, start, end):
            self.tracker.milestone = "serving"
            self._progress()
        if not self.facts.ready and READY.search(low, start, end):
            self.facts.ready = True
        if self._unserved and WENT_ON.search(low, start, end):
            self._served()

    def _served(self) -> None:
        self.facts.ready = True
        for e, _ in self._unserved.values():
            e.values["then_served"] = True
        self._unserved = {}

    def _progress(self) -> None:
        """A failure after which the start-up reached a later milestone did not end the run."""
        now = ev.PROGRESS[self.tracker.milestone]
        for key, (e, at) in list(self._unserved.items()):
            if now > at:
                e.values["then_served"] = True
                del self._unserved[key]

    def feed(self, raw: bytes) -> None:
        """One raw line (the slow path: tests, small inputs; feed_block decides the same)."""
        self._source_no += 1
        self.facts.lines_read += 1
        self.facts.bytes_read += len(raw)
        if self._detecting:
            self._detect(raw)
        self.stats.feed_block(raw, self.source, self._source_no)
        if self._must_read or _any(CANDIDATE, raw.lower()):
            self._line(self._source_no, raw)
            return
        self._note_serving(raw.lower())
        self._prev = None

    def feed_block(self, block: bytes, expired: Callable[[], bool] | None = None,
                   hits: tuple[tuple[list[int], list[int]], tuple[list[int], list[int]]] | None = None) -> None:
        """Whole lines (the last may lack its newline): only the lines the prefilter hits are
        decoded and parsed, found by a few regex passes over the lower-cased block, or given as
        `hits`, the starts (ascending) of the lines holding the literals of EXTERNAL_LITERALS (the
        grammar's, the stat lines') that an external tool found (doctor.logparse.external_prefilter),
        each set with those lines' numbers (counted from the start of the source: a line's number is
        then read, not counted). `expired` is asked every EXPIRY_LINES parsed lines: a
        block of lines that all need parsing can take seconds, and the deadline must cut inside it
        (TimeoutError, with what was read counted)."""
        if not block:
            return
        if self._detecting:
            self._detect(block)
        first = self._source_no + 1
        if hits is None:
            starts, low = _candidates(block)
            self.stats.feed_block(block, self.source, first)
            numbers = LineNumbers(block, first)
        else:  # lower-cased only if a skipped line must be looked at (_watching)
            (starts, grammar), (stats, stat_numbers) = hits
            low = None
            known = ((starts, grammar), (stats, stat_numbers))
            self.stats.feed_block(block, self.source, first, stats, known)
            numbers = LineNumbers(block, first, known)
        no, pos = self._source_no, 0  # line number of the line before `pos`, byte offset of a line start
        size = len(block)
        repeat: _Repeat | None = None
        for parsed, start in enumerate(sorted(starts)):
            if start < pos:
                continue  # already handled as the continuation of the line before
            if expired is not None and parsed % EXPIRY_LINES == EXPIRY_LINES - 1 and expired():
                self._repeated(block, repeat, numbers)
                no = numbers.at(start) - 1
                self.facts.lines_read += no - self._source_no
                self.facts.bytes_read += start
                self._source_no = no
                raise TimeoutError("the deadline was reached while reading the log")
            end = block.find(b"\n", start) + 1 or size
            if repeat is not None:  # (a method call a line costs as much as the rest: inlined)
                key = block[start:end].translate(tc.DIGITS_MASK)
                held = repeat.keys.get(key)
                if held is None:
                    held = repeat.keys[key] = repeat.repeats(self.templates.plan(block[start:end]))
                if held:
                    repeat.starts.append(start)  # pos and no stay at the line that started holding (its number is read when it is)
                    continue
            if start > pos:  # lines nobody needs: they only end a hard-wrap and may say "serving"
                if repeat is None:  # (while repeats are held, no line must be read and none is watched: _Repeat)
                    pos, no = self._follow(block, pos, start, no)
                    if pos < start:
                        if self._watching:
                            low = low or block.lower()
                            self._note_serving(low, pos, start)
                        self._prev = None
                no = numbers.at(start) - 1
                pos = start
            no += 1
            self._repeated(block, repeat, numbers)
            self._plan_used = None
            self._line(no, block[start : min(end, start + MAX_LINE)])
            plan = self._plan_used
            repeat = (_Repeat(plan.repeats) if plan is not None and plan.repeats and not self._must_read and not self._watching
                      else None)
            pos = end
        if (last := self._repeated(block, repeat, numbers)) is not None:
            pos, no = last
        if pos < size:
            pos, no = self._follow(block, pos, size, no)
            if pos < size:
                if self._watching:
                    low = low or block.lower()
                    self._note_serving(low, pos, size)
                no = numbers.at(size) - (1 if block.endswith(b"\n") else 0)
                self._prev = None
        self.facts.lines_read += no - self._source_no
        self.facts.bytes_read += size
        self._source_no = no

    def _repeated(self, block: bytes, repeat: _Repeat | None, numbers: LineNumbers) -> tuple[int, int] | None:
        """The lines held back as repeats of a line a plan served (_Repeat): the last is read, the
        others only count on its event. Were the last the very line the event quotes first, the
        event's last line would be an earlier one: then they are all read, in order (the last one's
        count is the same wherever it is read, and it changes nothing else). Returns where the last
        ends and its line number (None when none was held)."""
        if repeat is None or not repeat.starts:
            return None
        *held, last = repeat.starts
        repeat.starts = []
        no = numbers.at(last)
        end = block.find(b"\n", last) + 1 or len(block)
        self._line(no, block[last : min(end, last + MAX_LINE)])
        event = self._counted
        if event.last_line_no == no:
            event.count += len(held)
            return end, no
        for start in held:
            self._line(numbers.at(start), block[start : min(block.find(b"\n", start) + 1 or len(block), start + MAX_LINE)])
        return end, no

    def _follow(self, block: bytes, pos: int, limit: int, no: int) -> tuple[int, int]:
        """Lines after `pos` that must be read whatever they hold: the continuation of a
        hard-wrapped line, the pretty-printed arguments after `Args {`."""
        while pos < limit and self._must_read:
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
        # nothing open before it (pretty-printed arguments aside: they are kept, then parsed as any
        # line; a line kept for a hard-wrap aside when this one does not complete it): the line may
        # be served by its template's plan
        unopened = not self._cmd_open and not self.failures.open and self._launch_left <= 0
        if unopened and (recalled := self.templates.recall(no, raw)) is not None and not self._completes(*recalled):
            self._recalled(*recalled)
            return
        plain = unopened
        line = _normalised(no, raw)
        text = line.text
        if not text:
            if unopened:
                self.templates.learn_empty(raw, line)
            self._prev = None
            self._cmd_open = False
            return
        shape = _shape(text) if len(text) <= MEMO_CHARS else _shape_long(text)
        launch = self._command(text, shape.command)
        plain = not launch and plain
        marked = shape.marked
        self._marked = self._marked or marked
        if marked:
            plain = False
            if self._run_fatal:
                self._new_run()
            self.facts.started = True
        elif self._launch_went_on(line, launch):  # (no new run: a paste's command is often quoted after the crash it led to)
            plain = False
            self.facts.started = True
        if shape.args and self._args_follow == 0:
            plain = False
            self._keep_args(raw)
            self._args_follow = ARGS_FOLLOW_LINES
        states = self._setup(text)  # setup facts: a plan of such a line reads them again from each line (Plan.setup)
        frame = shape.frame
        found = None if frame else _match(text)
        # a line cut by a terminal: the message may go on in this one (an echo names no cause: its rest may)
        open_ended = found is None or found[0].echo
        whole = joined(self._prev, line) if open_ended and self._prev is not None else None
        longer = _match(whole.text) if whole is not None else None
        if longer is not None and (found is None or not longer[0].echo):
            line, found = whole, longer  # type: ignore[assignment]
            self._take_back()
            plain = False  # a plan is of one line's template; this event is of two lines
        self._undo = None
        before = self.tracker.milestone
        move = _move(text)
        if move is _FEED:
            self.tracker.feed(text)
            self._place(no)
        elif move is not None:
            self.tracker.milestone = move
            if self.failures.open:  # a traceback's source line: the call it shows was on the stack
                self._place(no, move)
        if self.tracker.milestone != before and self._unserved:
            self._progress()
        rule = found[0] if found is not None else None
        signal = self.failures.feed(text, line.level, rule is not None and not rule.echo)
        self._traceback_line = line if self.failures.open else None
        if found is not None:
            self._add(line, rule.kind, rule.fatal, found[1])  # type: ignore[union-attr]
        self._conclude(line, found is not None, signal, echo=found is not None and found[0].echo)
        # a line read through its chain (a quoted error, a cascade) is not its rule's plain match: not cached
        read_as_chain = found is not None and not chains.ADDED_KEYS.isdisjoint(found[1])
        if plain and not frame and not self.failures.open and not (rule is not None and rule.echo) and not read_as_chain:
            self.templates.learn(raw, line, None if rule is None else ev.RULES.index(rule), found is None and signal is None,
                                 _template_key(line.text) if rule is not None else None, _says(text), states)

    def _completes(self, line: Line, plan: tc.Plan, values: dict[str, object] | None) -> bool:
        """Whether this line, which its plan serves alone, ends the message of the line kept before
        it (a hard-wrap): then _line parses it in full and reads the halves as one. A line a rule
        explains is never joined (plans hold no echo rule), and nothing else _line does depends on
        the kept line but carried(), which _conclude does for a served line too: so a start-up
        header's long lines (each kept in case the next one continues it) no longer make the next
        line a full parse, and a crash loop's repeated start-ups are served by their plans."""
        if self._prev is None or plan.rule is not None or plan.empty:
            return False
        whole = joined(self._prev, line)
        return whole is not None and _match(whole.text) is not None

    def _recalled(self, line: Line, plan: tc.Plan, values: dict[str, object] | None) -> None:
        """A line its template's plan parses: what _line would do, without the patterns whose
        answer the plan already knows."""
        if plan.empty:  # as _line does with a line of no message
            self._prev = None
            return
        if plan.setup:
            self._setup(line.text)
        self._undo = None
        self._plan_used = plan
        before = self.tracker.milestone
        if plan.tracker == "frame":
            self.tracker.feed(line.text)
            self._place(line.no)
        elif plan.tracker is not None:
            self.tracker.milestone = plan.tracker
            if self.failures.open:
                self._place(line.no, plan.tracker)
        if self.tracker.milestone != before and self._unserved:
            self._progress()
        if values is not None:  # a rule's line: the failure reader, closed, has nothing to say about it
            rule = ev.RULES[plan.rule]  # type: ignore[index]
            if rule.source:  # as events.match gives it: a repeat of the line must count on the same event
                values = {**values, "template_source": rule.source}
            self._add(line, rule.kind, rule.fatal, values, template=plan.key)
            self._prev = None
            return
        self._conclude(line, False, None if plan.quiet else self.failures.feed(line.text, line.level, False), says=plan.says)

    def _place(self, no: int, called: str = "") -> None:
        """An out-of-memory that nothing before it placed (its phase still "startup") takes the phase
        the frames printed after it name: an issue quotes the error line first, then the engine's
        traceback, and a worker's crash is followed by the traceback of the loop it killed (vLLM V1's
        engine core under run_busy_loop). `called`: the phase a traceback's source line names (the
        call into the next frame). Only within PLACE_LINES of the OOM, before the next one."""
        e = self._unplaced
        if e is None:
            return
        if no - e.line_no > PLACE_LINES or e.source != self.source:
            self._unplaced = None
            return
        named = [p for p in (self.tracker.frame_phase(), called, "" if e.phase == "startup" else e.phase) if p]
        if named:
            e.phase = min(named, key=ev.PHASE_RANK.__getitem__)

    def _conclude(self, line: Line, found: bool, signal: fl.Signal | None, echo: bool = False,
                  says: tuple[bool, bool] | None = None) -> None:
        """After the rules: the failure reader's signal, signs of serving, and the line kept for a hard-wrap.
        `says`: what _says answers on every line of this one's template (a plan's), when known."""
        if signal is not None:
            # a sentence around a quoted failure no family places says something failed, not that this engine stopped
            self._add(line, signal.kind, signal.shaped or signal.kind != "error_line", signal.values, signal.extra)
        elif not found and not self.failures.open:
            if says is None or self._unserved or (says[0] and self.tracker.milestone != "serving"):
                self._note_serving(line.text.lower().encode())
            elif says[1]:
                self.facts.ready = True  # all _note_serving would do: WENT_ON is asked only while a failure waits
        self._prev = carried(self._prev, line) if (not found or echo) and not self.failures.open else None

    def _command(self, text: str, cmd: str | None) -> bool:
        """Keep an engine command line quoted in the log (`cmd`: the one this line quotes, st.command);
        True if this line is (part of) one."""
        if self._cmd_open:
            self.commands[-1] = (self.commands[-1] + " " + text.rstrip("\\ "))[:MAX_COMMAND_CHARS]
            self._cmd_open = text.endswith("\\")
            return True
        if cmd is not None and len(self.commands) < MAX_COMMANDS:
            self.commands.append(cmd.rstrip("\\ ")[:MAX_COMMAND_CHARS])
            self._cmd_open = text.endswith("\\")
        return cmd is not None

    def _launch_went_on(self, line: Line, launch: bool) -> bool:
        """A log record within LAUNCH_FOLLOW_LINES of an engine's launch command: the engine started (a paste that
        begins with `vllm serve ...` and the workers' INFO lines, the API server's header left out). Which engine
        wrote the records is known only at the end (finish keeps the start if it is the command's engine)."""
        if launch:
            self._launch_left = 0 if self._cmd_open or self._marked else LAUNCH_FOLLOW_LINES
            if not self._cmd_open and not self._marked:
                self._launch_engine = st.command_engine(self.commands[-1]) if self.commands else ""
            return False
        if self._launch_left <= 0:
            return False
        self._launch_left -= 1
        if not fl.is_record(line):
            return False
        self._launch_left = 0
        self._launched = self._launched or self._launch_engine
        return bool(self._launch_engine)

    def _keep_args(self, raw: bytes) -> None:
        if self._args_chars < MAX_ARGS_CHARS:
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            self._args.append(text)
            self._args_chars += len(text)

    def _detect(self, raw: bytes) -> None:
        """Which engine (and vLLM generation) wrote this: marker counts over each source's first
        DETECT_BYTES until ENGINE_SURE markers are seen (the markers are in prefixes, paths and
        the start-up header, not in error lines, and one engine writes the whole log). Only the
        first line of each template counts: the markers' case-insensitive alternations read a few
        MB/s, and a busy log is the same few messages again and again. New lines are read DETECT_LINES
        at a time, so detection stops within that many lines of the ENGINE_SURE-th marker (a busy
        log's request ids make every request line new, and each costs TEMPLATE's ~20 µs)."""
        self._detect_left -= len(raw)
        new: list[bytes] = []
        # lines equal but in their digits and hex letters (request ids) have one template, or almost (a short
        # word of letters a-f for another): TEMPLATE (a slow regex) reads only the first of them
        for masked, line in zip(raw.translate(_HEX_MASK).split(b"\n"), raw.split(b"\n"), strict=True):
            if masked in self._masked:
                continue
            self._masked.add(masked)
            key = _TEMPLATE_BYTES.sub(b"#", line)
            if key not in self._detected:
                self._detected.add(key)
                new.append(line)
                if len(new) == DETECT_LINES:
                    self._count_markers(new)
                    new = []
                    if self._sure:
                        break
        self._count_markers(new)
        if not self._detecting:
            self._detected, self._masked = set(), set()  # memory back: they are read no more in this source

    def _count_markers(self, new: list[bytes]) -> None:
        text = b"\n".join(new).decode("utf-8", errors="replace")
        for engine, pattern in st.ENGINE_MARKERS:
            n = len(pattern.findall(text))
            if n:
                self._engine_hits[engine] = self._engine_hits.get(engine, 0) + n
        self._v1 += len(st.V1_MARKERS.findall(text))
        self._v0 += len(st.V0_MARKERS.findall(text))

    @property
    def _sure(self) -> bool:
        return sum(self._engine_hits.values()) >= ENGINE_SURE

    @property
    def _detecting(self) -> bool:
        return self._detect_left > 0 and not self._sure

    def _new_run(self) -> None:
        self.facts.runs += 1
        self._run_fatal = False
        self.facts.ready = False
        self._unserved = {}
        self._fold(self.facts.runs - 1 - MAX_RUNS_KEPT)
        self.tracker.reset()
        self._unplaced = None
        s = self.facts.setup  # capacities belong to the run that printed them
        s.gpu_blocks = s.kv_cache_tokens = s.available_kv_gib = s.max_concurrency = None

    def _setup(self, text: str) -> bool:
        """The setup facts this message states; True if it states any."""
        s = self.facts.setup
        found = _extract(text)
        for name, value, extra in found:
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
            if name == "checkpoint_gib" and s.available_ram_gib is None:
                s.available_ram_gib = extra.get("available_ram_gib")  # type: ignore[assignment]
            if name == "gpu_blocks" and "cpu_blocks" in extra:
                s.cpu_blocks = extra["cpu_blocks"]  # type: ignore[assignment]
            if hasattr(s, name) and (name in _LAST_WINS or getattr(s, name) in (None, "")):
                setattr(s, name, value)
        return bool(found)

    def _fold(self, run: int) -> None:
        """Fold one old start of a crash loop into counts: its fatal kinds are remembered, its events go."""
        if run < 0:
            return
        for key in [k for k in self._events if k[0] == run]:
            for e in self._events.pop(key):
                if e.fatal and e.kind not in self.facts.folded_kinds:
                    self.facts.folded_kinds.append(e.kind)
        self.facts.folded_runs += 1

    def _add(self, line: Line, kind: str, fatal: bool, values: dict[str, object], extra: list[str] | None = None,
             template: str | None = None) -> None:
        """One event. A message seen before with the same template counts on the event with the
        same values (TP ranks repeating a line); with other values it is a new variant, up to
        MAX_VARIANTS; past that, repeats count on the last variant, which takes their values and
        last line (the last attempt is what failed), so memory is bounded and nothing is lost.
        `template`: the line's template when known already (_template_key)."""
        run = self.facts.runs - 1
        key = (run, kind, template or TEMPLATE.sub("#", line.text[:300]))
        if fatal and kind not in fl.KINDS:  # a start after a recognised crash is a restart; after an ERROR line, maybe not
            self._run_fatal = True
        raw = line.raw.strip()[:600]
        variants = self._events.setdefault(key, [])
        known = next((e for e in variants if _same(e.values, values)), None)
        if known is None and len(variants) >= MAX_VARIANTS:
            known = variants[-1]
            known.values = dict(values)
        if known is not None:
            self._counted = known
            known.count += 1
            if raw != known.lines[0]:
                known.last_line, known.last_line_no = raw, line.no
            known.values.pop("then_served", None)  # a repeat after serving has not been served yet
            if known.phase == "startup" and kind in _PHASED:  # the traceback the repeat ends may place it
                known.phase = chains.phase(self.tracker.phase(), values)
            self._mark_unserved(key, known, False)
            return
        event = LogEvent(
            kind=kind,
            source=self.source,
            line_no=line.no,
            lines=[raw] + [x for x in extra or [] if x != raw],
            values=dict(values),
            run=run,
            process=line.process,
            phase=chains.phase(self.tracker.phase(), values) if kind in _PHASED else "",
            fatal=fatal,
            level=line.level,
        )
        if kind in _PHASED:
            self._unplaced = event if event.phase == "startup" else None
        variants.append(event)
        self._counted = event
        self._mark_unserved(key, event, True)

    def _mark_unserved(self, key: tuple[int, str, str], event: LogEvent, new: bool) -> None:
        if event.kind in fl.KINDS:
            self._unserved[id(event)] = (event, ev.PROGRESS[self.tracker.milestone])
            self._undo = (key, event, new)

    def _take_back(self) -> None:
        """The generic event of a line that turned out to be the first half of a hard-wrapped
        message a rule recognises: the rule's event replaces it."""
        if self._undo is None:
            return
        key, event, new = self._undo
        self._undo = None
        if new:
            self._events[key].remove(event)
            self._unserved.pop(id(event), None)
        else:
            event.count -= 1

    def absorb(self, tail: LogScanner, continuation: bool) -> None:
        """Append what a scanner of this source's tail found (a big file is read tail first): the
        tail's first start of the engine continues the head's last one. With `continuation` the head
        was read up to where the tail starts and the tail's line numbers follow the head's; without
        it a gap lies between, and they count from the tail's start."""
        t, f = tail.facts, self.facts
        shift = f.runs - 1
        offset = self._source_no if continuation else 0
        for (run, kind, template), variants in tail._events.items():
            mine = self._events.setdefault((run + shift, kind, template), [])
            for e in variants:
                e.run += shift
                e.line_no += offset
                e.last_line_no += offset if e.last_line_no else 0
                same = next((x for x in mine if _same(x.values, e.values)), None)
                if same is None:
                    mine.append(e)
                    continue
                same.count += e.count
                same.values = e.values
                same.last_line, same.last_line_no = e.last_line or e.lines[0], e.last_line_no or e.line_no
        f.runs = shift + t.runs
        # the tail ends the file: a cut in the head is followed by what the tail read, a cut in the tail is the last word
        f.cut_run = None if t.cut_run is None else t.cut_run + shift
        f.lines_read += t.lines_read
        f.bytes_read += t.bytes_read
        f.started = f.started or t.started
        f.ready = t.ready or (f.ready and continuation and t.runs == 1)
        f.folded_runs += t.folded_runs
        f.folded_kinds += [k for k in t.folded_kinds if k not in f.folded_kinds]
        f.problems += t.problems
        self._run_fatal = tail._run_fatal or (self._run_fatal and continuation and t.runs == 1)
        self._source_no += tail._source_no if continuation else 0
        for name, value in vars(t.setup).items():
            if value in (None, [], "", 0, {}, False):
                continue
            if name in _LAST_WINS or getattr(f.setup, name) in (None, [], "", 0, {}, False):
                setattr(f.setup, name, value)
        for engine, hits in tail._engine_hits.items():
            self._engine_hits[engine] = self._engine_hits.get(engine, 0) + hits
        self._v1 += tail._v1
        self._v0 += tail._v0
        f.engine_version = f.engine_version or t.engine_version
        self.commands += tail.commands[: max(0, MAX_COMMANDS - len(self.commands))]
        self._marked = self._marked or tail._marked
        self._launched = self._launched or tail._launched
        self._args += tail._args
        self.stats.absorb(tail.stats, offset)

    def stopped(self) -> None:
        """The deadline stopped the reading, not the input: a traceback left open there was cut by the
        doctor, and the rest of it is in the part not read (or in the tail, read first), so it is no
        failure of its own (FailureReader.cut is for input that ends inside one). Reported, it was an
        unrecognised exception in the last start, ranked above the crash the tail had found."""
        self.failures.reset()
        self._traceback_line = None

    def _end_of_source(self) -> None:
        """A source that ends inside a traceback still reports it (FailureReader.cut)."""
        signal = self.failures.cut()
        if signal is not None and self._traceback_line is not None:
            self._add(self._traceback_line, signal.kind, True, signal.values, signal.extra)
        self._traceback_line = None

    def finish(self) -> LogFacts:
        self._end_of_source()
        f = self.facts
        f.events = sorted((e for variants in self._events.values() for e in variants), key=lambda e: (e.run, f.sources.index(e.source), e.line_no))
        hits = {k: v for k, v in self._engine_hits.items() if k != "client"}
        if hits:
            f.engine = max(hits, key=lambda k: hits[k])
        elif self._engine_hits:
            f.engine = "client"
        if self._launched and not self._marked and f.engine != self._launched:
            f.started = False  # the records after the command are another program's (a client's, a shell's)
        if f.engine == "vllm" and (self._v1 or self._v0):
            f.engine_generation = "V1" if self._v1 >= self._v0 else "V0"
        return f

    def args_text(self) -> str:
        return "\n".join(self._args)


_PHASED = {"cuda_oom", "ggml_alloc_failed", "host_oom", "killed"}


@dataclass
class _Repeat:
    """Lines of one block that repeat an event of fixed values that a plan served, and do nothing
    else (tc.Plan.repeats): while nothing must be read between them (_must_read, _watching), each
    such line adds one to the count of that event and makes itself its last line, so they are held
    back and only the last is read (a worst-case log is millions of preemption warnings). Holding
    starts only when nothing must be read and nothing is watched, and holding reads nothing, so
    that stays so until a line of another template ends it: the held lines are not asked again."""

    sig: tuple[object, ...]
    starts: list[int] = field(default_factory=list)  # of the lines held
    keys: dict[bytes, bool] = field(default_factory=dict)  # templates seen while holding: whether their plan repeats sig

    def repeats(self, plan: tc.Plan | None) -> bool:
        """Whether a line of this plan is held (plans do not change while holding: nothing is read,
        so nothing is learned, and a template's answer is kept in `keys`)."""
        return plan is not None and plan.repeats == self.sig


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    if "then_served" not in a:
        return a == b
    return {k: v for k, v in a.items() if k != "then_served"} == b


def _candidates(block: bytes) -> tuple[set[int], bytes]:
    """Offsets of the lines of the block that hold a literal of the grammar (the Python prefilter),
    and the lower-cased block."""
    low = block.lower()
    starts: set[int] = set()
    for rx in CANDIDATE:
        pos = 0
        while (m := rx.search(low, pos)) is not None:
            starts.add(low.rfind(b"\n", 0, m.start()) + 1)
            end = low.find(b"\n", m.end())
            if end < 0:
                break
            pos = end + 1
    return starts, low


def _template_key(text: str) -> str | None:
    """The template _add files a line's event under, when every line that differs from this one in
    its digits only has the same: TEMPLATE reads all digits alike but in `0x`."""
    return None if _DIGIT_X.search(text, 0, 300) else TEMPLATE.sub("#", text[:300])


def _match(text: str) -> tuple[ev.Rule, dict[str, object]] | None:
    """chains.match, remembered by the exact message: a crash loop prints the same start-up messages
    (its prefixes, with their times and pids, peeled off) at every restart, and the grammar's ~1,000
    literal tests and dozens of searches were most of the cost of each restart. Callers copy the values."""
    return _match_memo(text) if len(text) <= MEMO_CHARS else _match_long(text)


def _extract(text: str) -> list[tuple[str, object, dict[str, object]]]:
    """setup.extract, remembered the same way (callers only read what it found)."""
    return _extract_memo(text) if len(text) <= MEMO_CHARS else _extract_long(text)


_FEED = "feed"  # _move: the tracker must read the line itself (a frame it keeps, a traceback that clears them)


def _move(text: str) -> str | None:
    """_moved, by the exact message: short ones in the big memo, long ones in the small (as _match)."""
    return _moved(text) if len(text) <= MEMO_CHARS else _moved_long(text)


def _tracker_move(text: str) -> str | None:
    """What PhaseTracker.feed does with this message, remembered like _match (its phases' patterns
    are long case-insensitive alternations): the milestone it moves to, None, or _FEED. Read off a
    fresh tracker whose milestone and frames are ones feed never sets, so every change shows."""
    tracker = ev.PhaseTracker()
    tracker.milestone = ""
    tracker.frames.append("")
    tracker.feed(text)
    if list(tracker.frames) != [""]:
        return _FEED
    return tracker.milestone or None


_moved = functools.lru_cache(maxsize=MEMO_SIZE)(_tracker_move)
_moved_long = functools.lru_cache(maxsize=LONG_MEMO_SIZE)(_tracker_move)
_match_memo = functools.lru_cache(maxsize=MEMO_SIZE)(chains.match)
_extract_memo = functools.lru_cache(maxsize=MEMO_SIZE)(st.extract)
_match_long = functools.lru_cache(maxsize=LONG_MEMO_SIZE)(chains.match)
_extract_long = functools.lru_cache(maxsize=LONG_MEMO_SIZE)(st.extract)


@dataclass(frozen=True)
class _Shape:
    """What a message is by the patterns _line asks of it before the rules: pure functions of its
    text, remembered like _match (a traceback's frames and source lines repeat byte for byte at every
    restart of a crash loop, and inside a traceback no plan serves them)."""

    command: str | None  # the engine command line it quotes (st.command)
    marked: bool  # an engine start marker (st.STARTS)
    args: bool  # the engine's printed arguments (st.ARGS)
    frame: bool  # a traceback frame (_is_frame)


def _shape_of(text: str) -> _Shape:
    return _Shape(st.command(text), st.STARTS.search(text) is not None, st.ARGS.search(text) is not None, _is_frame(text))


_shape = functools.lru_cache(maxsize=MEMO_SIZE)(_shape_of)
_shape_long = functools.lru_cache(maxsize=LONG_MEMO_SIZE)(_shape_of)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _peeled(raw: bytes) -> tuple[str, str, str, str]:
    line = normalise(0, raw)
    return line.text, line.raw, line.process, line.level


def _normalised(no: int, raw: bytes) -> Line:
    """lines.normalise, remembered by the raw bytes for lines up to MEMO_CHARS (a pure function of them but
    the number): the lines of a traceback repeat byte for byte at every restart of a crash loop."""
    if len(raw) > MEMO_CHARS:
        return normalise(no, raw)
    return Line(no, *_peeled(raw))


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
