"""Failures the log shows that no check recognised: never silence, always a finding.

Three ways a failure escapes the checks, each turned into `load.unrecognized_failure` (an engine
log) or `access.unrecognized_failure` (a client's output):
- a fatal event of a kind the grammar knows, in the run being diagnosed, that no check turned into
  a finding (the checks that declare the kind did not run, were blocked, crashed, or found it
  harmless: "an illegal memory access" without an Xid is no hardware fault, but it is a crash);
- a generic failure the scanner saw where no rule matched (doctor/logparse/failures.py): the final
  line of an uncaught exception and its last frames, an ERROR/FATAL line, a panic, an abort, a
  non-zero exit; judged only when no check that reads the log found an error, because a
  recognised cause explains the cascade around it ("Engine core initialization failed");
- an answer a rule reads as harmless by itself (an access log's 4xx) printed in a client's own
  shape (curl -v's `< HTTP/2 409`), that no check judged;
- a start-up that the log shows beginning but never reaching "ready", with nothing else wrong.
An engine log is `load.`, a client's output `access.`; output of no known engine is `access.` when its
failure is one only a client prints (an HTTP answer, a refused connection: failures.CLIENT), and so is a
person's sentence about a failure told from the client's side (a client tool, SDK or the request failed)
that does not say the engine went down. A text in which nothing states a failure is no finding here:
the collector records it as a gap (doctor.input_incomplete).
Severity: error when the failure ended its run (nothing was served after it), else warn. The
report ranks these after every recognised root cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from llm_doctor.facts import Facts
from llm_doctor.facts.logs import LogEvent
from llm_doctor.findings import STATEMENT, Finding, Fix
from llm_doctor.logparse import chains
from llm_doctor.logparse.failures import CLIENT, CLIENT_SIDE, ENGINE_DOWN, GOES_ON, PROSE_CASCADE
from llm_doctor.logparse.failures import KINDS as GENERIC
from llm_doctor.logparse.lines import normalise
from llm_doctor.logparse.setup import CLIENT_FRAME
from llm_doctor.logview import evidence as quote
from llm_doctor.logview import judged_run, where

if TYPE_CHECKING:
    from llm_doctor.engine import CheckResult, CheckSpec

MAX_QUOTED = 3
ISSUE_TRACKERS = {
    "vllm": "vllm-project/vllm",
    "sglang": "sgl-project/sglang",
    "tgi": "huggingface/text-generation-inference",
    "llamacpp": "ggml-org/llama.cpp",
    "ollama": "ollama/ollama",
    "trtllm": "NVIDIA/TensorRT-LLM",
    "lmdeploy": "InternLM/lmdeploy",
}
DEBUG_ENV = {
    "vllm": "VLLM_LOGGING_LEVEL=DEBUG",
    "sglang": "--log-level debug",
    "tgi": "RUST_LOG=debug",
    "llamacpp": "--verbose",
    "ollama": "OLLAMA_DEBUG=1",
    "lmdeploy": "--log-level DEBUG",  # lmdeploy/cli/utils.py ArgumentHelper.log_level
    "trtllm": "TLLM_LOG_LEVEL=DEBUG",  # tensorrt_llm/logger.py reads it at import, in every rank
}


def findings(
    facts: Facts, specs: Sequence[CheckSpec], results: Sequence[CheckResult], registry: dict[str, CheckSpec]
) -> list[Finding]:
    logs = facts.logs
    if logs is None or not logs.sources:
        return []
    run = judged_run(logs)
    here = [e for e in logs.events if e.run == run]
    by_id = {r.id: r for r in results}
    log_checks = [s for s in specs if s.events and s.id in by_id]
    recognised = any(f.severity == "error" for s in log_checks for f in by_id[s.id].findings)
    # a wrapper's event no check took up (NCCL's watchdog after a rank's OOM) is the cascade of the cause a check recognised
    unjudged = [e for e in here if e.fatal and e.kind not in GENERIC and _unjudged(e, registry, by_id)
                and not (recognised and e.values.get("cascade"))]
    stated = _stated_access(facts)
    generic = [] if recognised else [e for e in here if (e.kind in GENERIC and not _recovered(e) and not _said_as(e, stated))
                                     or _answered(e, registry, by_id)]
    if unjudged or generic:
        return [_finding(facts, unjudged, generic, registry, by_id, logs.engine)]
    # (a note from the configuration beside it, prefix caching off at info, explains nothing of a start-up that never
    # finished; a problem a person states, even at info, tells of a run the log was cut before)
    judged = any(f.severity != "info" or f.tier == STATEMENT for r in results for f in r.findings)
    if not recognised and logs.started and not logs.ready and logs.engine != "client" and not judged:
        return [_stopped_in_startup(facts)]
    return []


def _recovered(e: LogEvent) -> bool:
    """An error line that says the engine goes on ("... retrying 1 of 2", "falling back to ...") and
    after which it did (vLLM's ERROR "Error retrieving safetensors: ..., retrying" on a healthy start):
    the retry worked. One that nothing followed is still the failure it may be."""
    return e.kind == "error_line" and bool(e.values.get("then_served")) and bool(GOES_ON.search(_summary(e)))


def _stated_access(facts: Facts) -> set[str]:
    """Where ("source:line") a person's sentence names an access failure (doctor/logparse/failure_prose.py)."""
    return {s.where for s in facts.said if s.code.startswith("access.")}


def _said_as(e: LogEvent, stated: set[str]) -> bool:
    """A sentence that quotes no error ("streaming doesn't work behind nginx") whose words name an access failure:
    checks/access/stated.py reports that cause, so the same sentence read as a failure is no unrecognised one."""
    return e.values.get("cascade") == PROSE_CASCADE and where(e) in stated


def _answered(e: LogEvent, registry: dict[str, CheckSpec], by_id: dict[str, CheckResult]) -> bool:
    """A line a rule read as harmless by itself (an access log's 4xx: someone asked for /favicon.ico)
    that is a client's own failure by its shape (`< HTTP/2 409` from curl -v) and no check judged."""
    return not e.fatal and e.kind not in GENERIC and bool(CLIENT.search(_summary(e))) and _unjudged(e, registry, by_id)


def _unjudged(e: LogEvent, registry: dict[str, CheckSpec], by_id: dict[str, CheckResult]) -> bool:
    """No check that declares this kind ran and found something. Checks the user left out with
    --only/--skip do not count against the input: they were not asked."""
    declaring = [s.id for s in registry.values() if e.kind in s.events]
    ran = [by_id[i] for i in declaring if i in by_id]
    if declaring and not ran:
        return False
    return not any(r.findings for r in ran)


def _why(e: LogEvent, registry: dict[str, CheckSpec], by_id: dict[str, CheckResult]) -> str:
    declaring = [s.id for s in registry.values() if e.kind in s.events]
    states = [f"{i} {by_id[i].status}" for i in declaring if i in by_id]
    if not declaring:
        return f"no check reads `{e.kind}` events"
    return f"`{e.kind}` is read by {', '.join(states)}, which found no known cause for it"


def _finding(
    facts: Facts,
    unjudged: list[LogEvent],
    generic: list[LogEvent],
    registry: dict[str, CheckSpec],
    by_id: dict[str, CheckResult],
    engine: str,
) -> Finding:
    logs = facts.logs
    assert logs is not None
    ended = [e for e in unjudged + generic if not e.values.get("then_served")]
    severity = "error" if ended else "warn"
    # the first failure that ended the run is its cause; what follows is mostly its cascade ("Engine
    # core initialization failed. See root cause above"), quoted after it
    pool = sorted(ended or unjudged + generic, key=lambda e: e.line_no)
    root = first_root(pool)
    # a client's output, or output of no known engine whose failure only a client prints (an HTTP
    # answer, a refused connection): the access layer's
    quoted = [root] + [e for e in pool[::-1] if e is not root][: MAX_QUOTED - 1]
    engines = _engines_answer(root, registry)
    client = (engine == "client" or _raised_by_client(quoted, engine, logs.started) or _client_sentence(root)) and not engines
    evidence = quote(sorted(quoted, key=lambda x: x.line_no), limit=MAX_QUOTED)
    evidence += [_why(e, registry, by_id) for e in unjudged[:2]]
    if not ended:
        evidence.append("the engine went on serving after it (it did not end the run)")
    summary = _summary(root)[:160]
    who = "the client" if client else "the engine"
    title = f"{who} failed and no known cause matches: {summary}" if ended else f"{who} logged an error no known cause matches: {summary}"
    code = "access.unrecognized_failure" if client else "load.unrecognized_failure"
    # the engine's failure the answer quoted explains what the client saw of it (the 5xx it came in)
    explains = list(ANSWER_SYMPTOMS) if engines else []
    return Finding(code, title, evidence, _fixes(facts, root, quoted, client), severity=severity, explains=explains)


def first_root(pool: list[LogEvent]) -> LogEvent:
    """The root of a failure among events in log order: the first exception that is no wrapper's
    cascade (doctor.logparse.chains.WRAPPERS), else the first failure that is none, else the first."""
    roots = [e for e in pool if not e.values.get("cascade")] or pool
    exceptions = [e for e in roots if e.kind == "exception"]
    return (exceptions or roots)[0]


# who raised a failure when no engine is seen running: an HTTP client's call or frames (urllib's urlopen, http.client,
# httpx/httpcore, requests, aiohttp, the OpenAI/Anthropic SDKs' request code, node's undici/fetch/axios), or the
# answer a client received (a status line's words, a JSON error body's status)
CLIENT_RAISED = re.compile(
    r"\burlopen\(|urllib/request\.py|http/client\.py|\bhttpx\b|\bhttpcore\b|requests/(?:adapters|sessions|api)\.py|aiohttp/client|"
    r"(?:openai|anthropic)/_base_client|"
    # the SDKs' request and answer code: openai-python 0.x (api_requestor.py, api_resources/), the 1.x SDKs' response
    # parsing and streaming (_response.py, _legacy_response.py, _streaming.py, _models.py) and resources/
    # (either path separator: a Windows traceback's backslashes)
    r"openai[/\\](?:api_requestor\.py|api_resources[/\\])|(?:openai|anthropic)[/\\](?:_response|_legacy_response|_streaming|_models)\.py|"
    r"(?:openai|anthropic)[/\\]resources[/\\]|node_modules/(?:openai|@anthropic-ai|axios|undici|node-fetch|@ai-sdk)/|node:internal/deps/undici|"
    r"\b[45]\d\d (?:Bad Request|Unauthorized|Forbidden|Not Found|Conflict|Unprocessable Entity|Too Many Requests|"
    r"Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out)\b|"
    r"[\"'](?:status|code|statusCode|status_code)[\"']\s*:\s*[\"']?[45]\d\d\b|"
    # undici's fetch() network error (lib/web/fetch/index.js: `new TypeError('fetch failed', { cause })`, its cause often not
    # printed), axios's in a browser (lib/adapters/xhr.js: `new AxiosError('Network Error', AxiosError.ERR_NETWORK)`), a connection to a URL that failed, and the client's own settings named in the failure (its base URL, its key)
    r"\bTypeError: fetch failed\b|\bNetwork Error\b|\bERR_NETWORK\b|\b(?:can'?t|cannot|could ?n[o']?t|unable to|failed to) connect to\b[^\n]{0,60}?https?://|"
    r"\bbase[ _-]?url\b|\bapi[ _-]?base\b",
    re.I,
)
# ... except fetching the model's files (the Hugging Face Hub over requests/httpx): the engine's own start-up
MODEL_DOWNLOAD = re.compile(r"huggingface|hf_hub|snapshot_download|from_pretrained|modelscope", re.I)


def _raised_by_client(quoted: list[LogEvent], engine: str, started: bool) -> bool:
    """A failure of output in which no engine is seen starting (a known engine may only be named in a
    sentence), raised by an HTTP client or a client's answer: the access layer's, not the engine's."""
    if engine and started:
        return False
    said = [_summary(e) for e in quoted] + [line for e in quoted for line in e.lines]
    if any(MODEL_DOWNLOAD.search(s) for s in said) or any(e.values.get("cascade") in chains.ENGINE_LOAD_WRAPPERS for e in quoted):
        return False
    frames = [str(e.values.get("frame", "")) for e in quoted]
    return any((not engine and CLIENT.search(s)) or CLIENT_RAISED.search(s) for s in said) or any(CLIENT_FRAME.search(f) for f in frames)


# what a client sees of an engine's failure in the answer it got
ANSWER_SYMPTOMS = ("access.server_error", "access.response_invalid", "access.timeout")


def _engines_answer(e: LogEvent, registry: dict[str, CheckSpec]) -> bool:
    """An engine's own failure quoted in the answer a client got (vLLM's "CUDA error: an illegal memory access" in a
    gateway's 503 body, doctor.logparse.chains.INNER): only the engine's checks read its kind, so the engine failed,
    whoever printed the answer; the client saw its symptom."""
    if e.kind in GENERIC or not str(e.values.get("tier", "")).startswith("template (inside the HTTP error body"):
        return False
    layers = {s.layer for s in registry.values() if e.kind in s.events}
    return layers == {"load"}


def _client_sentence(e: LogEvent) -> bool:
    """A person's sentence about a failure no family placed, told from the client's side ("Cline
    keeps failing with an error", "the request hangs", "it results in a 400 error"), that does not say the
    engine went down, nor that fetching the model's files failed (the Hub's 404 is the engine's start-up)."""
    said = " ".join([_summary(e), *e.lines[:1]])  # (the summary is cut at 200 characters; the sentence is the line)
    return (e.values.get("cascade") == PROSE_CASCADE and bool(CLIENT_SIDE.search(said)) and not ENGINE_DOWN.search(said)
            and not MODEL_DOWNLOAD.search(said))


def _summary(e: LogEvent) -> str:
    """The failure in words: the error a wrapper quotes when a rule read the line through it (the engine's
    message in an HTTP error body, not the client's exception class around it), the exception or line as the
    scanner summed it up, else the message of the quoted line without its prefixes."""
    if str(e.values.get("tier", "")).startswith("template (inside") and e.lines and (inner := chains.inner_message(e.lines[0])):
        return inner[0]
    if e.values.get("summary"):
        return str(e.values["summary"])
    return normalise(e.line_no, e.lines[0]).text if e.lines else e.kind


def _fixes(facts: Facts, root: LogEvent, quoted: list[LogEvent], client: bool) -> list[Fix]:
    logs = facts.logs
    engine = (facts.deployment.engine if facts.deployment and facts.deployment.engine else "") or (logs.engine if logs else "")
    if root.values.get("cut"):  # the exception line itself is missing: nothing to search for yet
        return [Fix("Get the rest of the log: the traceback stops before the line naming the error",
                    f"tail -n 60 {root.source}" if root.source and root.source != "-" else None)]
    query = search_query(_summary(root))
    said = " ".join(_summary(e) for e in quoted).lower()
    fixes = []
    repo = ISSUE_TRACKERS.get(engine)
    if repo and not client:
        fixes.append(Fix(f"Search {engine}'s issues for this exact error (a known bug usually has a fix or workaround)",
                         f'gh search issues --repo {repo} "{query}"'))
    else:
        fixes.append(Fix("Search for this exact error message", f'"{query}"'))
    if "illegal memory access" in said or "cuda error" in said:
        fixes.append(Fix("Rerun with synchronous CUDA calls so the failing kernel is the one reported", "CUDA_LAUNCH_BLOCKING=1"))
    elif engine in DEBUG_ENV and not client:
        fixes.append(Fix("Rerun with debug logging to see what led to it", DEBUG_ENV[engine]))
    return fixes


def search_query(summary: str, most: int = 80) -> str:
    """The words of an error that another report of it shares: no quotes, no numbers, paths or ids
    (they belong to this run), the first sentence, cut on a word."""
    words = [w for w in re.split(r"\s+", summary.replace('"', " ").replace("`", " ").replace("'", " "))
             if w and not re.search(r"\d|/", w)]
    text = " ".join(words)
    text = re.split(r"(?<=[a-z])\. ", text, maxsplit=1)[0]
    return text if len(text) <= most else text[:most].rsplit(" ", 1)[0]


def _stopped_in_startup(facts: Facts) -> Finding:
    logs = facts.logs
    assert logs is not None
    last = f"the log has {logs.lines_read} lines; the last start (start {logs.runs}) never logged that the server was ready"
    return Finding(
        "load.unrecognized_failure",
        "the log ends during start-up: the server never said it was ready",
        [last, "no error was recognised: the log may have been cut, or the engine hung or died without a message"],
        [Fix("Read the end of the full log, and the kernel's log for a kill (an OOM kill leaves no line in the engine's log)",
             "dmesg -T | grep -i -E 'killed process|out of memory'")],
        severity="warn",
    )
