"""Failures no rule of the grammar recognises, read the way an engineer scans a crash.

The event grammar (events.py) knows the causes; this module knows the *shape* of a failure, so a
new exception class, another engine's wording or a crash without a message still leaves a trace:
- an uncaught Python exception: `Traceback (most recent call last):`, its frames, and the final
  `Type: message` line (chained tracebacks give several; the first is often the cause);
- an exception line pasted without its traceback (`ValueError: ...`, Rust's `Error: ShardCannotStart`);
- a crash signal: a Rust or Go panic, a C++ `terminate called ... what():`, a segfault or abort,
  `GGML_ASSERT`, `Fatal Python error`, a non-zero exit status, a container restarting in a loop;
- a line logged at ERROR / CRITICAL / FATAL level;
- a failure a person states in prose (PROSE: an issue's title, a sentence around a pasted error, a
  markdown label, a 5xx told in words): the error it quotes (a code span, a quoted string) is read
  first; a sentence that quotes none is marked as read after any error the text pastes, and advice,
  fixes and possibilities ("to avoid OOM", "may crash") state no failure.
The scanner turns these into events of the kinds `exception`, `crash_signal` and `error_line`,
only for lines no specific rule matched; the engine (doctor/unrecognized.py) reports them when no
check recognised the failure. Before that, the failure is read as a chain (doctor/logparse/chains.py):
a wrapper printed because something else failed first is marked `cascade` (never the root), and a
line whose words belong to a keyword family ("out of memory", "NCCL", "certificate" ...; the families are
data, doctor/data/families.jsonl) becomes an event of the family's kind, so the check that knows its fix
judges it; when its words name none, the frame it was raised in may (a KeyError in transformers' config
registry).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from llm_doctor.logparse import chains
from llm_doctor.logparse.lines import STAMP, Line

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
    # a native backtrace's frames (BACKTRACE): a user-space library address, gdb's zero-padded one
    "0x7f", "0x0000",
    # the shapes of CRASH / ERROR_IN_LINE / ERROR_LEVEL below that hold none of the words above
    "killed", "status code", "http/1.0 4", "http/1.0 5", "http/1.1 4", "http/1.1 5", "http/2 4", "http/2 5", "severe:",
    "cant ", "couldnt ",
    # Go's *url.Error (_ANSWER)
    "get \"", "post \"", "put \"", "patch \"", "delete \"", "head \"", "parse \"",
    # transformers' configuration_auto.py "... but Transformers does not recognize this architecture", as titles retell it
    "recogni",
    # a person stating the failure in prose (PROSE below): verbs no log line above needs
    "crash", " hang", "hung ", "stuck", "freez", "froze", "segfault", " dies", " died", "not working", "n't work", "won't",
    "wont ", "broken", " oom", "fails", "failing", "please upgrade", "please update", "newer", "is required", "bad gateway", "service unavailable",
    "gateway time",
    # a status line's reason phrases (_ANSWER) that hold none of the words above
    "bad request", "unauthorized", "payment required", "forbidden", "method not allowed", "request time", "too large",
    "unsupported media", "unprocessable", "too many requests", "not implemented",
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
# the JVM prints an uncaught exception as `Exception in thread "main" java.net.ConnectException: ...` and each
# cause of a chain as `Caused by: java.io.InterruptedIOException: timeout` (java.lang.Throwable#printStackTrace)
JAVA_PREFIX = re.compile(r'^(?:Caused by: |Exception in thread "[^"]*" )(?=[a-z][\w$]*\.)')
# the first call a frame's statement makes (`x = self.loader.resolve(`, `return f(a, b)`): a traceback cut right after
# that statement was cut inside the call
CALL = re.compile(r"(?:^|[^\w.])(?:[A-Za-z_]\w*\.)*(?P<fn>[A-Za-z_]\w*)\s*\(")
# after a traceback's frames any dotted name ending the traceback is its exception (torch._dynamo.exc.Unsupported)
EXCEPTION_AFTER_FRAMES = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(?P<message>.*)|\s*)$")
CRASH = re.compile(
    r"thread '(?P<thread>[^']*)' panicked at (?P<where>\S+)|^panic: (?P<panic>.+)|^fatal error: (?P<fatal>.+)|"
    r"terminate called after throwing an instance of '(?P<cxx>[^']+)'|^what\(\):\s+(?P<what>.+)|"
    r"Fatal Python error:\s*(?P<python>.+)|Segmentation fault|SIGSEGV|SIGABRT|SIGBUS|Bus error|core dumped|^Aborted\b|"
    r"GGML_ASSERT\b|GGML_ABORT|\b(?:CUDA|ROCm|HIP|Vulkan|cuBLAS|CUBLAS|cuDNN|Metal|SYCL) error\b|"
    r"(?:exited with (?:exit )?(?:code|status)|exit (?:code|status):?|returned non-zero exit status|returncode=|"
    r"code=exited, status=)\s*(?P<exit>-?[1-9]\d*|0x[0-9a-fA-F]+)|Result: exit-code|result 'exit-code'|"
    r"CrashLoopBackOff|Back-off restarting failed container|\bOOMKilled\b|"
    # bash reports a child it lost to SIGKILL (the kernel's OOM killer leaves no line in the program's
    # own output): `Killed`, `bash: line 1:  4242 Killed  python -m ...`, job control's `[1]+  Killed`
    r"^Killed$|^(?:[\w/.-]+: )?(?:line \d+: )?\s*\d+ Killed\s|^\[\d+\][+-]?\s+Killed\s|"
    # Ollama's runner (llm/status.go errorPrefixes): a Go crash inside the C++ runner
    r"signal arrived during cgo execution",
    re.I,
)
ERROR_LEVEL = re.compile(
    r"^(?:ERROR|FATAL|CRITICAL)\b[:\s]|\blevel=(?:ERROR|FATAL|error|fatal)\b|\"level\":\s*\"(?:error|fatal)\"|"
    r"\[(?:E|ERROR|FATAL|error|fatal)\]|(?:^|: )error(?: \w+){0,3}: \S|"
    # Java: logback/log4j's default layout (`[main] ERROR com.x.Client - msg`), java.util.logging's `SEVERE: msg`
    r"\] (?:ERROR|FATAL)\s+[\w.$]+\s+- |^SEVERE: "
)
# tags a client tool prints before its message, which the normaliser leaves in it: `[openai]`, `[Continue]`, `[ERROR] [cline]`
TAGS = r"(?:\[[^\[\]]{1,40}\]:?\s*)*"
# the 4xx/5xx reason phrases of RFC 9110 section 15 that clients print after the status
REASONS = (r"Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed|Proxy Authentication Required|"
           r"Request Time-?out|Payload Too Large|Content Too Large|Unsupported Media Type|Unprocessable (?:Entity|Content)|"
           r"Too Many Requests|Internal Server Error|Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out")
# a 4xx/5xx answer or an error object as clients state them: the status line (`curl -i`, `< HTTP/1.1 500`
# of `curl -v`), openai-node / anthropic-sdk-typescript APIError ("404 status code (no body)"),
# openai-python and anthropic-sdk-python ("Error code: 400 - {...}"), Claude Code ("API Error: 400 ..."), and the same
# words as other tools case and bracket them ("Anthropic API error: [422] Unprocessable Content"),
# axios ("Request failed with status code 502"), requests' raise_for_status ("404 Client Error: Not
# Found for url"), httpx's ("Client error '404 Not Found' for url"), .NET's EnsureSuccessStatusCode ("Response
# status code does not indicate success: 404 (Not Found)."); an error object's type (OpenAI,
# Anthropic, llama.cpp: `"type": "invalid_request_error"`, `"type":"server_error"`)
_ANSWER = (
    r"^TAGS(?:< )?HTTP/\d(?:\.\d)? [45]\d\d\b|\b[45]\d\d status code \(no body\)|\b(?:Error code|(?i:api error)|status code):? [\[(]?[45]\d\d\b|"
    r"\b[45]\d\d (?:Client|Server) Error\b|\b(?:Client|Server) error '[45]\d\d\b|\bdoes not indicate success: [45]\d\d\b|['\"]type['\"]\s*:\s*['\"]\w*_error['\"]|"
    r"^TAGS\{\s*\"error\"\s*:|^TAGScurl: \(\d+\)|"
    # botocore's ClientError (botocore/exceptions.py MSG_TEMPLATE): the AWS API's error code and message, as the SDK got them
    r"\bAn error occurred \(\w+\) when calling the \w+ operation\b|"
    # google-api-core's GoogleAPICallError ("{code} {message}" after its class): a Google API's answer
    r"\bgoogle\.api_core\.exceptions\.\w+: [45]\d\d\b|"
    # Go's *url.Error (net/url, net/http client.go: `%s %q: %s` of the method, or "parse", the URL and the cause)
    r"^TAGS(?:Get|Post|Put|Patch|Delete|Head|parse) \"[^\"\s]*\": \S|"
    # a status and its reason phrase (RFC 9110 section 15) opening the line or after "HTTP": a client printing the answer it got
    # ("400 Bad Request", "[openai] 404 Not Found", "HTTP 422 Unprocessable Entity"); openai-node's and anthropic-sdk-typescript's
    # APIError message `${status} ${message}` after its class ("Error: 400 This model's maximum context length is ...")
    r"(?:^TAGS|\bHTTP |\[)[45]\d\d\]? (?:REASONS)\b|^TAGS(?:[\w.]*Error: )[45]\d\d [A-Za-z{]"
).replace("TAGS", TAGS).replace("REASONS", REASONS)
# a failure stated inside a line: a client's answer (above), a JSON error body, `... Error: msg`
# (JavaScript, wrapped Python), a 5xx status
ERROR_IN_LINE = re.compile(
    _ANSWER + r"|^" + TAGS + r"\{\s*\"detail\"\s*:|\"object\"\s*:\s*\"error\"|\berror=\{|['\"]error['\"]\s*:\s*[{'\"]|"
    r"(?:^|[\s:(\[`'\"])(?P<type>(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)|Error): \S|\b(?:got |unhandled |uncaught )?exception: \S|"
    r"\b(?:HTTP|status code:?)\s*5\d\d\b"
)
# a failure only a client prints: the server's answer to its request or the request's connection
# failing (errno names of node and libc, openai-node's "Connection error.", node-fetch's FetchError,
# node's "socket hang up")
CLIENT = re.compile(
    _ANSWER + r"|\bE(?:CONNREFUSED|CONNRESET|TIMEDOUT|NOTFOUND|AI_AGAIN|HOSTUNREACH)\b|\bFetchError\b|socket hang up|"
    r"^Connection error\."
)
# a sentence about a failure seen from the client's side: a client tool, SDK or HTTP client, or the
# request itself, is what failed (the side of a prose failure no family places: access, not load)
CLIENT_SIDE = re.compile(
    r"\b(?:Cline|Roo ?Code|Continue(?:\.dev| extension)|Open ?WebUI|LangChain|LlamaIndex|LiteLLM|Claude Code|Cursor|Aider|OpenHands|"
    r"AnythingLLM|LobeChat|Chatbox|Postman|curl|httpx|python-requests|axios|undici|(?:openai|anthropic)[ -](?:python|node|sdk|client|library)|"
    r"(?:the|my|our|your|a) (?:client|SDK|request|API call|call|gateway|proxy)|"
    # an HTTP answer is what a client sees: a 5xx by its name, any error status after its word ("error 404", "HTTP 400"),
    # or a status a person calls an error ("results in a 400 error", "fails with 404 API")
    r"Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|(?:error|status|HTTP|code)\s*[45]\d\d|"
    r"(?:a|an|with|get|got|gets|returns?|returned|throws?) (?:HTTP )?[45]\d\d(?: \w+)? (?:error|API|response|status))\b", re.I)
# a sentence saying the engine itself went down: the load side, whoever noticed it
ENGINE_DOWN = re.compile(r"\b(?:crash\w*|segfault\w*|di(?:es|ed)|dying|killed|OOM\w*|out of memory|won'?t (?:start|load)|"
                         r"(?:fails?|failing|failed) to (?:start|load|launch|initiali[sz]e))\b", re.I)
# the words a failure is stated in when no rule knows its wording (a line at INFO/WARNING level never counts)
FAILURE_WORDS = re.compile(
    r"deadline exceeded|\b(?:couldn'?t|could not|can'?t|cannot|unable to|failed to) (?:connect|load|allocate|start|open|create|"
    r"initiali[sz]e|find|read|communicate|determine the device)\b|\b(?:request|allocation|load|startup|initiali[sz]ation) failed\b|Allocation of size \d+ failed|"
    r"is not possible!|exceeds the maximum|not enough memory|out of (?:device )?memory|OutOfDeviceMemory|"
    r"(?:process|runner|server|worker) (?:has )?(?:terminated|crashed|died)\b|"
    r"\b(?:failed|failure|not supported|unsupported|permission denied|no such file|timed out|not found|incompatible|"
    r"mismatch|refused|unreachable|aborted)\b|"
    # the client tools' and web UIs' catch-all before the error they relay ("Something went wrong: Insufficient Balance")
    r"\bsomething went wrong\b|"
    # a message that asks for a newer release (transformers' require_version, engines' version checks)
    r"\bplease (?:upgrade|update)\b|\brequires? (?:a )?newer\b|\bis required\b[^.]*\bbut found\b|"
    # a library that does not know what it was given (transformers: "does not recognize this architecture")
    r"\b(?:does|do|did) ?(?:not|n't) recogni[sz]e\b",
    re.I,
)
ERROR_LEVELS = ("ERROR", "CRITICAL", "FATAL")
# a line saying the engine carries on without something: a degraded start, not a failure's cause
GOES_ON = re.compile(r"sub-?optimal|\busing (?:the )?default\b|\bfall(?:ing|s)? ?back\b|\bdefaulting\b|\bskipp(?:ing|ed)\b|"
                     r"\bignor(?:ing|ed)\b|\bretrying\b|\bwill (?:be )?(?:use|retry)|"
                     # llama.cpp's LLAMA_LOG_WARN lines carry no level: "KV cache shifting is not supported for this context,
                     # disabling KV cache shifting", "SPM vocabulary, but newline token not found: ... Using special_pad_id instead."
                     r"\bdisabling\b|\busing [\w.-]+ instead\b|"
                     # ggml's pinned host buffer (ggml-cuda.cu / ggml-cann.cpp ggml_*_host_malloc: "failed to allocate %.2f MiB
                     # of pinned memory: %s", then the caller falls back to a pageable CPU buffer): a slower copy, not a failure
                     r"\bMiB of pinned memory\b", re.I)
# a stat line names its counters in one header, "Server (succeeded/failed/routed/waiting): 120 / 0 / 64 / 0"
# (LMDeploy's lmdeploy/metrics/loggers.py): the names of counts, not a failure stated
COUNTER_NAMES = re.compile(r"\((?:[a-z_]+/)+[a-z_]+\):")
NONE_COUNTED = re.compile(r"^[A-Za-z][\w ()/.-]*:\s+0(?:\.0+)?\s*$")  # a count of failures that is zero: `Failed requests: 0`
# a message that calls itself a warning is not a failure (Python's warnings name their class: `PythonDeprecationWarning:`)
WARNING = re.compile(r"\bwarning\b|\bwarn\b|[a-z]Warning\b", re.I)
# A failure a person states in prose (an issue's title, a sentence around a pasted error): the system
# crashed, hung, died or would not start, or the writer got, saw or was shown an error. Read only on
# lines with no log level of their own (a person's words carry none).
PROSE = re.compile(
    r"\b(?:crash(?:es|ed|ing)?|segfault\w*|seg ?faults?|hang(?:s|ing)?|hung|freez(?:es|ing)|froze(?:n)?|stuck|di(?:es|ed)|dying|"
    r"OOMs?|OOM-?ing)\b|"
    r"\b(?:won'?t|will not|(?:does|did|do)(?: not|n'?t)|can ?not|can'?t|fails? to|failing to|unable to|refuses? to) "
    r"(?:start|load|run|work|respond|serve|launch|boot|come up|initiali[sz]e|connect|stream)\b|"
    r"\b(?:not|no longer|stopp?(?:ed|s)?) (?:working|responding)\b|\bis broken\b|\bfail(?:s|ing)\b|"
    r"\bwith (?:an?|the|this|that|following|same|these) (?:\S+ ){0,2}?(?:errors?|exceptions?)\b|"
    # the writer got or was shown an error: `I get the error "..."`, "it throws an exception", "returns error 500"
    r"\b(?:get|gets|got|getting|see|sees|saw|seeing|throws?|threw|throwing|raises?|raised|raising|shows?|showed|showing|"
    r"returns?|returned|returning|hits?|hitting|encounter\w*|receiv\w*|gives?|gave|giving|ends? (?:up )?with|results? in)\b"
    r"(?: \S+){0,4}? (?:errors?|exceptions?|tracebacks?|failures?)\b|"
    # an error named in words and then quoted or given: `the error: ...`, "error message says '...'"
    r"\b(?:errors?|exceptions?)(?: (?:message|log|output|text))?\s*(?:[:=]|\bis\b|\bwas\b|\bsays?\b|\bsaid\b|\breads?\b)?\s*[`\"'“‘]\s*\S|"
    # a label in markdown or a form: `**Error**: ...`, "Error message: ..." (not a count: "errors: 0", "Error: none")
    r"\b(?:errors?|exceptions?)(?: (?:message|log|output|text|details?))?\**\s*[:=]\**\s*(?!(?:none|no|n/a|0)\b)[`\"'“‘A-Za-z]|"
    # an HTTP server error told in words: "Error 500 from the server", "I am seeing: Internal Server Error"
    r"\b(?:error|status|HTTP|code)\s*5\d\d\b|\b(?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out)\b",
    re.I,
)
# a sentence that names a failure without stating that it happened: advice ("to avoid OOM, lower ..."), a
# fix ("this fixes the hang in ..."), a possibility ("it may crash when ..."), a run said to have passed without it
# ("survives the concurrent prefills with zero OOM", "this isn't a crash or a hang")
HYPOTHETICAL = re.compile(r"\b(?:to (?:avoid|prevent)|avoid(?:s|ing)?|prevent(?:s|ing)?|fix(?:es|ed|ing)?|no longer|in case|"
                          r"might|may|would|zero (?:OOMs?|crash(?:es)?)|"
                          # a requirement and what happens if it is not met ("You'll need a model smaller than 2GB or it
                          # won't load all the layers"): advice about what would fail, not a failure seen
                          r"you(?:'ll| will)? (?:need|have) to|you(?:'ll| will) need|\bor (?:else )?(?:it|they|you) (?:won'?t|will not|can'?t|cannot)|without (?:an? |any )?(?:OOMs?|crash(?:es|ing)?)|"
                          r"(?:is|was)(?:n't| not) (?:an? )?(?:crash|hang|OOM))\b", re.I)
PROSE_CASCADE = "a sentence about it"  # the mark of a sentence that quotes no error (never the root while one is pasted)
# a person saying they cannot find or understand something is no failure of the system ("How do I set
# max-model-len? I can't find it in the docs")
PERSON = re.compile(r"\b(?:I|we|you)(?:'m| am| are| was| were)? (?:can'?t|cannot|can not|couldn'?t|could not|unable to) "
                    r"(?:find|figure|understand|see|tell|work out|get (?:it|how))\b", re.I)
# a code span or quoted string in prose that is a failure statement of its own (the error pasted
# inside the sentence): read before the sentence around it
QUOTED = re.compile(r"`(?P<code>[^`]{4,})`|[\"“](?P<dq>[^\"”]{8,})[\"”]|(?<!\w)'(?P<sq>[^']{8,})'(?!\w)")
QUIET_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "TRACE", "NOTICE")
# levels in shapes the normaliser leaves in the message: glog's severity letter as torch (c10d's `[W
# socket.cpp:663]`, `[W1015 10:00:00.123456 123 socket.cpp:697]`) and Kubernetes' klog (`E1015
# 10:00:00.123456  1 main.go:42]`) print it, and NCCL's `host:pid:tid [dev] NCCL INFO` (src/debug.cc: NCCL
# has no error level, its failures are WARN lines, so only INFO and TRACE are quiet)
GLOG_LEVEL = re.compile(r"^\[?(?P<glog>[IWEF])(?:\d{3,4} \d\d:\d\d:\d\d\.\d+(?:\s+\d+)?\s+| ?)[\w./\\-]+:\d+\]|"
                        r"^(?:\S+:\d+:\d+ \[\d+\] )?NCCL (?P<nccl>INFO|TRACE)\b")
GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
# a native backtrace's frame: TensorRT-LLM's TllmException stack (`17      0x7fd11211ce00 tensorrt_llm::batch_manager::GptManager::
# GptManager(...) + 336`, common/tllmException.cpp "%-3d %*p %s"), gdb's (`#3  0x00007f5c1e2c in ggml_abort () from libggml.so`, what
# ggml_print_backtrace runs) and glibc's backtrace_symbols (`libggml-base.so(ggml_abort+0x11a) [0x7f..]`, `... (+0x16d8b) [0x..]`)
BACKTRACE = re.compile(r"^(?:#?\d{1,3}\s+0x[0-9a-fA-F]{6,}\s+(?:in\s+)?[\w/.:~<>-]|[\w./+-]+\((?:\w+)?\+0x[0-9a-f]+\)\s*\[0x)")
FRAME_ADDRESS = re.compile(r"^#?\d{1,3}\s+0x[0-9a-fA-F]+\s+(?:in\s+)?")  # a frame's number and address: the rest is where it crashed
MAX_TRACEBACK_LINES = 400  # a traceback longer than this is not one (or the rest does not matter)


@dataclass
class Signal:
    kind: str  # one of KINDS
    values: dict[str, object]
    extra: list[str] = field(default_factory=list)  # evidence beyond the line itself (the last frames)
    # the line states the failure itself (an exception, a crash, an error level or object, failure words outside any
    # quote, a person's sentence that quotes none): its own words may name the family. A sentence around a quoted
    # failure names only what it quotes, and a quote no family places is said, not logged: no sign the engine stopped
    shaped: bool = True


class FailureReader:
    """Per source: follows tracebacks line by line (the scanner feeds every line while `open`)."""

    def __init__(self) -> None:
        self.reset()
        # a native backtrace is a crash only where nothing before it stated a failure: after a `what():`, a TllmException or a
        # GGML_ASSERT (read as themselves) its frames only say where
        self._failed = False

    def reset(self) -> None:
        self.open = False
        self._frames: list[str] = []
        self._expect_code = False
        self._code = ""  # the source line printed under the last frame
        self._lines = 0

    def feed(self, text: str, level: str, recognised: bool) -> Signal | None:
        """One normalised message. `recognised`: a rule already read it (then the traceback it ends
        is explained, and nothing generic is said)."""
        if not self.open and BACKTRACE.match(text):
            return self._native_frame(text, recognised)
        signal = self._read(text, level, recognised)
        self._failed = self._failed or recognised or signal is not None
        return None if signal is None else _classified(signal, text)

    def _native_frame(self, text: str, recognised: bool) -> Signal | None:
        """A frame of a native (C++) backtrace: the first one of a log where nothing stated a failure before is the crash
        itself (a paste that kept only the stack), never silence; its frames name where (`tensorrt_llm::runtime::...`)."""
        if self._failed or recognised:
            self._failed = True
            return None
        self._failed = True
        return Signal("crash_signal", {"summary": FRAME_ADDRESS.sub("", text.strip(), count=1)[:200]})

    def _read(self, text: str, level: str, recognised: bool) -> Signal | None:
        if TRACEBACK.search(text):
            self.reset()
            self.open = True
            return None
        if not self.open and FRAME.match(text):  # a traceback pasted from its middle, without its header: its frames still say where
            self.reset()
            self.open = True
        if self.open:
            return self._in_traceback(text, recognised)
        if recognised or CHAIN.match(text):
            return None
        return _line_signal(text, level) if len(text) <= MEMO_CHARS else _long_signal(text, level)

    def cut(self) -> Signal | None:
        """The input ends inside a traceback that has frames but no exception line yet (a paste or
        a log cut short): a failure all the same, never silence. Closes the traceback."""
        frames, code = (self._frames, self._code) if self.open else ([], "")
        self.reset()
        if not frames:
            return None
        last = FRAME.match(frames[-1])
        where = f"{last.group('file').rsplit('/', 1)[-1]}:{last.group('line')} in {last.group('func') or '?'}" if last else ""
        values: dict[str, object] = {"exc_type": "", "summary": "a traceback the input cuts before its exception line", "cut": True}
        if where:
            values["frame"] = where
            if call := CALL.search(code):  # the cut fell inside the call that frame's statement makes, which may name the cause
                values["calls"] = call.group("fn")
        # the last frame it shows may still name the cause: a function that raises one family only
        # (vLLM's _check_if_gpu_supports_dtype), or the one its statement calls (transformers' resolve_trust_remote_code);
        # doctor/data/families.jsonl reads them as "(cut in <frame>) -> <callee>"
        return classify(Signal("exception", values, [f"last frame: {frames[-1]}"]), str(values["summary"]))

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
            self._code = ""
            return None
        if not text or CARET.match(text):
            return None
        if recognised:
            self.reset()
            return None
        m = EXCEPTION.match(text) or (EXCEPTION_AFTER_FRAMES.match(text) if self._frames and not self._expect_code else None)
        if m is None and self._expect_code:  # the source line printed under a frame
            self._expect_code = False
            self._code = text.strip()[:300]
            return None
        if m is None:
            return None
        frames, code = self._frames, self._code
        self.reset()
        values = _exception_values(m, frames, code)
        extra = ([f"raised at: {frames[-1]}"] if frames else []) + ([f"statement: {code}"] if "source_line" in values else [])
        return Signal("exception", values, extra)


def _exception_values(m: re.Match[str], frames: list[str], code: str = "") -> dict[str, object]:
    exc_type, message = m.group("type"), (m.group("message") or "").strip()
    values: dict[str, object] = {"exc_type": exc_type, "summary": f"{exc_type}: {message}"[:200] if message else exc_type}
    if message:
        values["message"] = message[:300]
    elif code:  # a bare exception (`assert x % tp == 0` without a message): the statement that raised it is its words
        values["source_line"] = code
    if code and message:  # what the statement read, for the families when the words name no cause (`response.choices[0]`)
        values["statement"] = code
    # the library whose frame is last among those kept: a stdlib frame last (asyncio/timeouts.py raising for
    # asyncio.timeout) was entered from it
    if package := next((m["pkg"] for f in reversed(frames) if (m := PACKAGE_FILE.search(f))), ""):
        values["package"] = package
    if frames:
        last = FRAME.match(frames[-1])
        if last:
            values["frame"] = f"{last.group('file').rsplit('/', 1)[-1]}:{last.group('line')} in {last.group('func') or '?'}"
    return values


# the installed package a frame's file belongs to (`.../site-packages/aiohttp/helpers.py` -> aiohttp/helpers.py): the
# library that raised, when the exception's words name no cause
PACKAGE_FILE = re.compile(r'File "[^"]*?[/\\](?:site|dist)-packages[/\\](?P<pkg>[^"]+)"')


def classify(signal: Signal, text: str) -> Signal:
    """A failure whose words (or the words of the error it quotes) belong to a keyword family
    becomes an event of the family's kind, with the tier it was recognised by; a wrapper is marked
    as the cascade it is (vLLM's "Worker failed with error '<the worker's error>'" is both: the
    worker's own traceback may not be in the log, its error is)."""
    wrapper = chains.cascade(text)
    quoted = str(signal.values.get("summary") or "")
    inner = chains.inner_message(text) or ((quoted, "sentence") if quoted and quoted not in (text, text[:200]) else None)
    found = chains.family(text, inner, wrapper, whole=signal.shaped) if not wrapper or inner else None
    frame = str(signal.values.get("frame") or "")
    if found is None and frame and not wrapper and signal.shaped:  # the words name no cause: where it was raised may (a KeyError in the config registry)
        package = next((m["pkg"] for x in signal.extra if (m := PACKAGE_FILE.search(x))), "") or str(signal.values.get("package") or "")
        # a traceback cut before its exception line was not raised in its last frame, only cut there (or below it)
        verb = "cut in" if signal.values.get("cut") else "raised in"
        text = f"{text} ({verb} {frame}, {package})" if package else f"{text} ({verb} {frame})"
        if calls := signal.values.get("calls"):  # read as "(cut in <frame>) -> <the function it was calling>"
            text = f"{text} -> {calls}"
        if statement := signal.values.get("source_line") or signal.values.get("statement"):
            text = f"{text}: {statement}"
        found = chains.family(text)
    values = {**signal.values, "cascade": wrapper} if wrapper else dict(signal.values)
    if found is None:
        return Signal(signal.kind, values, signal.extra, signal.shaped)
    # a family placed it: a failure of that kind, whoever states it
    values["tier"] = f"family: {found.name}"
    m = found.pattern.search(inner[0]) if inner else None
    for name, value in ((m or found.pattern.search(text)).groupdict().items()):  # type: ignore[union-attr]
        if value is not None:
            values[name] = int(value) if value.isdigit() else value
    hint = chains.phase_hint(text) if found.kind == "cuda_oom" else ""
    if hint:
        values["phase_hint"] = hint
    return Signal(found.kind, values, signal.extra)


MEMO_CHARS = 2048  # the longest message whose line_signal is remembered


def _classified(signal: Signal, text: str) -> Signal:
    """classify, remembered by the signal and the message: every rank of a crash loop ends each start's
    traceback with the same exception line under the same frames, and the families' and wrappers'
    searches were most of what reading it cost. The caller (the scanner) copies the values."""
    key = (signal.kind, tuple(signal.values.items()), tuple(signal.extra), signal.shaped, text)
    try:
        hash(key)
    except TypeError:
        return classify(signal, text)
    return _classify_memo(*key) if len(text) <= MEMO_CHARS else classify(signal, text)


@functools.lru_cache(maxsize=1024)
def _classify_memo(kind: str, values: tuple[tuple[str, object], ...], extra: tuple[str, ...], shaped: bool, text: str) -> Signal:
    return classify(Signal(kind, dict(values), list(extra), shaped), text)


@functools.lru_cache(maxsize=4096)
def _line_signal(text: str, level: str) -> Signal | None:
    """line_signal remembered by the message: a crash loop prints the same start-up messages (their
    prefixes, times and pids peeled off) at every restart, and its ~40 µs a line were most of what a
    restart cost. The one caller (FailureReader.feed, through classify) copies the values."""
    return line_signal(text, level)


@functools.lru_cache(maxsize=64)
def _long_signal(text: str, level: str) -> Signal | None:
    """_line_signal for the longer messages, fewer of them: a start-up's argument dump (several KB)
    repeats at every restart of a crash loop (see scan.LONG_MEMO_SIZE)."""
    return line_signal(text, level)


def line_signal(text: str, level: str) -> Signal | None:
    """A failure stated on one line (outside a traceback)."""
    m = CRASH.search(text)
    if m:
        values: dict[str, object] = {"summary": quoted_failure(text) or text[:200]}
        if m.group("exit"):
            code = m.group("exit")
            values["exit_code"] = int(code, 16) if code.lower().startswith("0x") else int(code)
        return Signal("crash_signal", values)
    level = level or own_level(text)
    if level in QUIET_LEVELS:
        return None
    m = EXCEPTION.match(JAVA_PREFIX.sub("", text, count=1))
    if m and (m.group("message") or level in ERROR_LEVELS or m.group("type").endswith(("Error", "Exception"))):
        return Signal("exception", _exception_values(m, []))
    # a line that is a failure only by its words and says the engine goes on ("Config file not found ...
    # Performance might be sub-optimal", "falling back to ...") is a degraded start, not a failure
    words = (FAILURE_WORDS.search(COUNTER_NAMES.sub("", text)) and not WARNING.search(text) and not GOES_ON.search(text)
             and not NONE_COUNTED.match(text) and not PERSON.search(text))
    if stated(text, level) or words:
        # failure words only inside what the line quotes ("... rejects it (\"not supported on ...\"), so the traffic goes
        # through NCCL"): a sentence around the failure, whose other words name no cause
        shaped = stated(text, level) or bool(FAILURE_WORDS.search(QUOTED.sub(" ", text)))
        return Signal("error_line", {"summary": quoted_failure(text) or text[:200]}, shaped=shaped)
    if not level and PROSE.search(text) and not GOES_ON.search(text) and not WARNING.search(text):
        quoted = quoted_failure(text)
        if not quoted and HYPOTHETICAL.search(text):
            return None
        # a sentence about a failure that quotes none is read after any error the text pastes
        # (never the root while one is there): it says that something failed, the pasted error what
        values: dict[str, object] = {"summary": quoted} if quoted else {"summary": text[:200], "cascade": PROSE_CASCADE}
        return Signal("error_line", values, shaped=not quoted)
    return None


def quoted_failure(text: str) -> str:
    """The failure a sentence quotes (`I get "RuntimeError: ..." when ...`, a markdown code span
    holding the error), or "" when the line is the failure itself or quotes none."""
    if EXCEPTION.match(text) or CRASH.match(text):
        return ""
    for m in QUOTED.finditer(text):
        inner = (m.group("code") or m.group("dq") or m.group("sq") or "").strip()
        if inner != text.strip() and (EXCEPTION.match(inner) or CRASH.search(inner) or stated(inner) or FAILURE_WORDS.search(inner)):
            return inner[:200]
    return ""


def own_level(text: str) -> str:
    """The level a glog/klog or NCCL line gives itself, or ""."""
    m = GLOG_LEVEL.match(text)
    if m is None:
        return ""
    return m.group("nccl") or GLOG_LEVELS[m.group("glog")]


def is_record(line: Line) -> bool:
    """The line is a log record by its shape: a level, a process tag, a glog/NCCL level of its own, a leading
    timestamp (what a program logs, not prose, a table or a shell command)."""
    return bool(line.level or line.process or own_level(line.text) or STAMP.match(line.raw.strip()))


def stated(text: str, level: str = "") -> bool:
    """The line states a failure by its shape (an error level, an error object, a 4xx/5xx answer, an
    `Error:`), not only by words that a healthy line may hold too ("not found", "failed")."""
    return (level or own_level(text)) in ERROR_LEVELS or bool(ERROR_LEVEL.search(text) or ERROR_IN_LINE.search(text))
