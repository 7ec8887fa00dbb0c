"""Failures no rule of the grammar recognises, read the way an engineer scans a crash.

The event grammar (events.py) knows the causes; this module knows the *shape* of a failure, so a
new exception class, another engine's wording or a crash without a message still leaves a trace:
- an uncaught Python exception: `Traceback (most recent call last):`, its frames, and the final
  `Type: message` line (chained tracebacks give several; the first is often the cause);
- an exception line pasted without its traceback (`ValueError: ...`, Rust's `Error: ShardCannotStart`);
- a crash signal: a Rust or Go panic, a C++ `terminate called ... what():`, a segfault or abort,
  `GGML_ASSERT`, `Fatal Python error`, a non-zero exit status, a container restarting in a loop;
- a line logged at ERROR / CRITICAL / FATAL level.
The scanner turns these into events of the kinds `exception`, `crash_signal` and `error_line`,
only for lines no specific rule matched; the engine (doctor/unrecognized.py) reports them when no
check recognised the failure. Before that, the failure is read as a chain (doctor/logparse/chains.py):
a wrapper printed because something else failed first is marked `cascade` (never the root), and a
line whose words belong to a keyword family ("out of memory", "NCCL", "certificate" ...) becomes an
event of the family's kind, so the check that knows its fix judges it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from doctor.logparse import chains

KINDS = ("exception", "crash_signal", "error_line")
# lower-case literals one of which every line this module reacts to contains (the scanner's prefilter)
LITERALS = (
    "error", "exception", "fatal", "critical", "panic", "traceback", "terminate called", "what():",
    "segmentation fault", "core dumped", "aborted", "sigsegv", "sigabrt", "ggml_assert", "ggml_abort",
    "exit code", "exit status", "exited with", "crashloopbackoff", "back-off restarting", "interrupt",
    "systemexit", "non-zero exit", "curl: (", "status code 5", "http 5", "bus error", "code=exited", "exit-code",
    "[e]", "deadline exceeded", "connect", "not possible", "exceeds the maximum", "not enough memory",
    "out of memory", "outofdevicememory", "failed", "unable to", "cannot ", "can't ", "terminated", "crash",
    "failure", "supported", "permission denied", "no such file", "timed out", "not found", "incompatible", "mismatch",
    "refused", "unreachable", "signal arrived",
)

TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
FRAME = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
CHAIN = re.compile(r"^(?:The above exception was the direct cause|During handling of the above exception)")
CARET = re.compile(r"^[\^~\s]+$")
# `pkg.mod.SomeError: message`, `KeyboardInterrupt`, `SystemExit: 1`, Rust's `Error: ShardCannotStart`
# `triton.runtime.errors.OutOfResources: ...`: any class raised from a module named errors/exceptions
EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure|Abort)|Error|"
    r"[A-Z]\w*(?:Error|Exception)\w*)|(?:[A-Za-z_]\w*\.)+(?:errors?|exceptions?|exc)\.[A-Z]\w*)(?::\s*(?P<message>.*)|\s*)$"
)
# after a traceback's frames any dotted name ending the traceback is its exception (torch._dynamo.exc.Unsupported)
EXCEPTION_AFTER_FRAMES = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(?P<message>.*)|\s*)$")
CRASH = re.compile(
    r"thread '(?P<thread>[^']*)' panicked at (?P<where>\S+)|^panic: (?P<panic>.+)|^fatal error: (?P<fatal>.+)|"
    r"terminate called after throwing an instance of '(?P<cxx>[^']+)'|^what\(\):\s+(?P<what>.+)|"
    r"Fatal Python error:\s*(?P<python>.+)|Segmentation fault|SIGSEGV|SIGABRT|SIGBUS|Bus error|core dumped|^Aborted\b|"
    r"GGML_ASSERT\b|GGML_ABORT|\b(?:CUDA|ROCm|HIP|Vulkan|cuBLAS|CUBLAS|cuDNN|Metal|SYCL) error\b|"
    r"(?:exited with (?:exit )?(?:code|status)|exit (?:code|status):?|returned non-zero exit status|returncode=|"
    r"code=exited, status=)\s*(?P<exit>-?[1-9]\d*|0x[0-9a-fA-F]+)|Result: exit-code|result 'exit-code'|"
    r"CrashLoopBackOff|Back-off restarting failed container|"
    # Ollama's runner (llm/status.go errorPrefixes): a Go crash inside the C++ runner
    r"signal arrived during cgo execution",
    re.I,
)
ERROR_LEVEL = re.compile(
    r"^(?:ERROR|FATAL|CRITICAL)\b[:\s]|\blevel=(?:ERROR|FATAL|error|fatal)\b|\"level\":\s*\"(?:error|fatal)\"|"
    r"\[(?:E|ERROR|FATAL|error|fatal)\]|(?:^|: )error(?: \w+){0,3}: \S"
)
# a failure stated inside a line: a JSON error body, `... Error: msg` (JavaScript, wrapped Python),
# curl's `curl: (N)`, a 5xx status a client reports
ERROR_IN_LINE = re.compile(
    r"^\{\s*\"(?:error|detail)\"\s*:|\"object\"\s*:\s*\"error\"|\berror=\{|['\"]error['\"]\s*:\s*[{'\"]|"
    r"(?:^|[\s:(\[`'\"])(?P<type>[A-Z]\w*(?:Error|Exception)|Error): \S|\b(?:got |unhandled |uncaught )?exception: \S|"
    r"^curl: \(\d+\)|\b(?:HTTP|status code:?)\s*5\d\d\b"
)
# the words a failure is stated in when no rule knows its wording (a line at INFO/WARNING level never counts)
FAILURE_WORDS = re.compile(
    r"deadline exceeded|(?:couldn't|could not|can't|cannot|unable to|failed to) (?:connect|load|allocate|start|open|create|"
    r"initiali[sz]e|find|read)\b|\b(?:request|allocation|load|startup|initiali[sz]ation) failed\b|Allocation of size \d+ failed|"
    r"is not possible!|exceeds the maximum|not enough memory|out of (?:device )?memory|OutOfDeviceMemory|"
    r"(?:process|runner|server|worker) (?:has )?(?:terminated|crashed|died)\b|"
    r"\b(?:failed|failure|not supported|unsupported|permission denied|no such file|timed out|not found|incompatible|"
    r"mismatch|refused|unreachable|aborted)\b",
    re.I,
)
ERROR_LEVELS = ("ERROR", "CRITICAL", "FATAL")
# a line saying the engine carries on without something: a degraded start, not a failure's cause
GOES_ON = re.compile(r"sub-?optimal|\busing (?:the )?default\b|\bfall(?:ing|s)? ?back\b|\bdefaulting\b|\bskipp(?:ing|ed)\b|"
                     r"\bignor(?:ing|ed)\b|\bretrying\b|\bwill (?:be )?(?:use|retry)", re.I)
WARNING = re.compile(r"\bwarning\b|\bwarn\b", re.I)  # a message that calls itself a warning is not a failure
QUIET_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "TRACE", "NOTICE")
MAX_TRACEBACK_LINES = 400  # a traceback longer than this is not one (or the rest does not matter)


@dataclass
class Signal:
    kind: str  # one of KINDS
    values: dict[str, object]
    extra: list[str] = field(default_factory=list)  # evidence beyond the line itself (the last frames)


class FailureReader:
    """Per source: follows tracebacks line by line (the scanner feeds every line while `open`)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.open = False
        self._frames: list[str] = []
        self._expect_code = False
        self._lines = 0

    def feed(self, text: str, level: str, recognised: bool) -> Signal | None:
        """One normalised message. `recognised`: a rule already read it (then the traceback it ends
        is explained, and nothing generic is said)."""
        signal = self._read(text, level, recognised)
        return None if signal is None else classify(signal, text, level)

    def _read(self, text: str, level: str, recognised: bool) -> Signal | None:
        if TRACEBACK.search(text):
            self.reset()
            self.open = True
            return None
        if self.open:
            return self._in_traceback(text, recognised)
        if recognised or CHAIN.match(text):
            return None
        return line_signal(text, level)

    def cut(self) -> Signal | None:
        """The input ends inside a traceback that has frames but no exception line yet (a paste or
        a log cut short): a failure all the same, never silence. Closes the traceback."""
        frames = self._frames if self.open else []
        self.reset()
        if not frames:
            return None
        last = FRAME.match(frames[-1])
        where = f"{last.group('file').rsplit('/', 1)[-1]}:{last.group('line')} in {last.group('func') or '?'}" if last else ""
        values: dict[str, object] = {"exc_type": "", "summary": "a traceback the input cuts before its exception line", "cut": True}
        if where:
            values["frame"] = where
        return Signal("exception", values, [f"last frame: {frames[-1]}"])

    def _in_traceback(self, text: str, recognised: bool) -> Signal | None:
        self._lines += 1
        if self._lines > MAX_TRACEBACK_LINES:
            self.reset()
            return None
        frame = FRAME.match(text)
        if frame:
            self._frames.append(text[:300])
            self._frames = self._frames[-2:]
            self._expect_code = True
            return None
        if not text or CARET.match(text):
            return None
        if recognised:
            self.reset()
            return None
        m = EXCEPTION.match(text) or (EXCEPTION_AFTER_FRAMES.match(text) if self._frames and not self._expect_code else None)
        if m is None and self._expect_code:  # the source line printed under a frame
            self._expect_code = False
            return None
        if m is None:
            return None
        frames = self._frames
        self.reset()
        return Signal("exception", _exception_values(m, frames), [f"raised at: {frames[-1]}"] if frames else [])


def _exception_values(m: re.Match[str], frames: list[str]) -> dict[str, object]:
    exc_type, message = m.group("type"), (m.group("message") or "").strip()
    values: dict[str, object] = {"exc_type": exc_type, "summary": f"{exc_type}: {message}"[:200] if message else exc_type}
    if message:
        values["message"] = message[:300]
    if frames:
        last = FRAME.match(frames[-1])
        if last:
            values["frame"] = f"{last.group('file').rsplit('/', 1)[-1]}:{last.group('line')} in {last.group('func') or '?'}"
    return values


def classify(signal: Signal, text: str, level: str = "") -> Signal:
    """A failure whose words (or the words of the error it quotes) belong to a keyword family
    becomes an event of the family's kind, with the tier it was recognised by; a wrapper is marked
    as the cascade it is (vLLM's "Worker failed with error '<the worker's error>'" is both: the
    worker's own traceback may not be in the log, its error is). A line that is a failure only by
    its words and says the engine goes on ("Config file not found ... Performance might be
    sub-optimal", "falling back to ...") names no cause."""
    wrapper = chains.cascade(text)
    inner = chains.inner_message(text)
    stated = signal.kind != "error_line" or level in ERROR_LEVELS or bool(ERROR_LEVEL.search(text) or ERROR_IN_LINE.search(text))
    goes_on = not stated and bool(GOES_ON.search(text))
    found = chains.family(text, inner) if not goes_on and (not wrapper or inner) else None
    values = {**signal.values, "cascade": wrapper} if wrapper else dict(signal.values)
    if found is None:
        return Signal(signal.kind, values, signal.extra)
    values["tier"] = f"family: {found.name}"
    hint = chains.phase_hint(text) if found.kind == "cuda_oom" else ""
    if hint:
        values["phase_hint"] = hint
    return Signal(found.kind, values, signal.extra)


def line_signal(text: str, level: str) -> Signal | None:
    """A failure stated on one line (outside a traceback)."""
    m = CRASH.search(text)
    if m:
        values: dict[str, object] = {"summary": text[:200]}
        if m.group("exit"):
            code = m.group("exit")
            values["exit_code"] = int(code, 16) if code.lower().startswith("0x") else int(code)
        return Signal("crash_signal", values)
    if level in QUIET_LEVELS:
        return None
    m = EXCEPTION.match(text)
    if m and (m.group("message") or level in ERROR_LEVELS or m.group("type").endswith(("Error", "Exception"))):
        return Signal("exception", _exception_values(m, []))
    words = FAILURE_WORDS.search(text) and not WARNING.search(text)
    if level in ERROR_LEVELS or ERROR_LEVEL.search(text) or ERROR_IN_LINE.search(text) or words:
        return Signal("error_line", {"summary": text[:200]})
    return None
