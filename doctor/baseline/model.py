"""The baseline file: plain JSON (schema `llm-doctor.baseline/1`) that a reviewer can read in a diff.

Keys come in the dataclasses' order, always the same; times are milliseconds rounded to 0.1,
throughputs tokens/s rounded to 0.01, so two recordings differ only where the service did. Every
raw sample is kept (not just percentiles): `compare` computes the statistics and the noise from
the samples themselves. The API key is never written, only its mask; everything else passes the
redactor too (a model may echo a secret, a command line may hold one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_doctor.facts import from_dict, to_dict
from llm_doctor.redact import Redactor

SCHEMA = "llm-doctor.baseline/1"


class BaselineFileError(ValueError):
    """The file is not a baseline this version can read: a usage error (exit 2)."""


@dataclass
class RequestResult:
    id: str
    expect: dict[str, Any] | None = None  # {"kind", "value"}, copied from the request set
    output: str = ""  # the first answer; decoding is deterministic
    consistent: bool = True  # every repeat answered the same text (False: the server is not deterministic)
    correct: bool | None = None  # scored against `expect`; None when there is nothing to score
    completion_tokens: list[int] = field(default_factory=list)
    ttft_ms: list[float] = field(default_factory=list)  # one per repeat
    itl_ms: list[float] = field(default_factory=list)  # mean inter-token latency of each repeat
    e2e_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class Throughput:
    concurrency: int
    tokens_per_s: list[float] = field(default_factory=list)  # one per round
    requests: int = 0
    errors: int = 0


@dataclass
class ServerState:
    """What the server says about itself, read where it can be: /metrics, /version, llama-server's
    /props, the engine process' command line, the engine log (--log), NVML."""

    engine: str = ""
    engine_version: str = ""
    args: dict[str, str] = field(default_factory=dict)  # engine arguments: name -> value
    args_source: dict[str, str] = field(default_factory=dict)  # name -> "metrics" | "process" | "log" | "props"
    unapplied: dict[str, str] = field(default_factory=dict)  # name -> what the engine was asked, where /metrics says otherwise
    kv_cache_tokens: int | None = None
    kv_cache_tokens_source: str = ""
    gpu_memory_used_mib: list[float] = field(default_factory=list)  # at the start and at the end
    gpu_memory_total_mib: float | None = None
    gpu_memory_scope: str = ""  # "engine processes PID, ..." or "all GPUs (every process)"
    notes: list[str] = field(default_factory=list)  # what could not be read, and why


@dataclass
class Run:
    """One model's recording."""

    model: str
    requests: list[RequestResult] = field(default_factory=list)
    throughput: list[Throughput] = field(default_factory=list)  # concurrency 1, then --concurrency N
    server: ServerState = field(default_factory=ServerState)


@dataclass
class Baseline:
    schema: str = SCHEMA
    tool_version: str = ""
    recorded_at: str = ""
    base_url: str = ""
    api_key: str | None = None  # masked
    request_set: dict[str, str] = field(default_factory=dict)  # name, version, source, sha256
    options: dict[str, Any] = field(default_factory=dict)  # repeat, concurrency, temperature, seed, deadline_s
    complete: bool = True
    problems: list[str] = field(default_factory=list)  # what was cut or failed: an incomplete record says so
    runs: list[Run] = field(default_factory=list)

    def dumps(self, redactor: Redactor) -> str:
        return _json(redactor.obj(to_dict(self))) + "\n"


def _json(value: Any, indent: str = "") -> str:
    """JSON with one key per line, but a list of plain values (the samples) on one line: a review
    diff then shows which figures moved, not a hundred lines of numbers."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + _json(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def load(path: str) -> Baseline:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BaselineFileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise BaselineFileError(f"{path}: not a baseline file (schema {found!r}, expected {SCHEMA!r})")
    try:
        baseline = from_dict(Baseline, data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise BaselineFileError(f"{path}: malformed baseline ({type(exc).__name__}: {exc})") from None
    problem = _malformed(baseline)
    if problem:
        raise BaselineFileError(f"{path}: malformed baseline ({problem})")
    return baseline


def _malformed(b: Baseline) -> str:
    """The first field whose type is wrong: compare does arithmetic on these, so a hand-edited
    file must fail here with its name, not with a TypeError later."""

    def numbers(values: Any) -> bool:
        return isinstance(values, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)

    if not isinstance(b.runs, list) or not all(isinstance(r, Run) for r in b.runs):
        return "runs"
    for run in b.runs:
        if not isinstance(run.model, str) or not isinstance(run.requests, list) or not isinstance(run.server, ServerState):
            return f"run {run.model!r}"
        for r in run.requests:
            if not isinstance(r, RequestResult) or not isinstance(r.output, str):
                return f"run {run.model!r}: requests"
            for name in ("completion_tokens", "ttft_ms", "itl_ms", "e2e_ms"):
                if not numbers(getattr(r, name)):
                    return f"run {run.model!r}: request {r.id!r}: {name}"
        if not all(isinstance(t, Throughput) and numbers(t.tokens_per_s) for t in run.throughput):
            return f"run {run.model!r}: throughput"
        s = run.server
        if not numbers(s.gpu_memory_used_mib) or not (s.kv_cache_tokens is None or numbers([s.kv_cache_tokens])):
            return f"run {run.model!r}: server"
        if not isinstance(s.args, dict):
            return f"run {run.model!r}: server args"
    return ""
