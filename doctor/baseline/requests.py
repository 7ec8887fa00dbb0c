"""The request set a baseline sends, and how an expected answer is scored.

The shipped set (doctor/data/baseline_requests.json) is versioned: a recording names the set and
its version, and `compare` refuses to score two recordings of different sets as if they were one.
`--prompts FILE` takes the user's own set as JSONL, one request a line:
    {"id": "q1", "messages": [{"role": "user", "content": "..."}], "max_tokens": 64,
     "expect": {"kind": "number", "value": 42}}
(`prompt` may stand for a single user message; `expect` may be a plain string, meaning "contains").

Expected answers are checked, never judged by taste: `exact` (the whole answer, case and outer
whitespace/punctuation ignored), `contains` (case-insensitive substring), `number` (the last number
in the answer), `regex` (searched, case-insensitive), `json` (the answer parses as a JSON object
holding these keys and values; a ```json fence is allowed).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA = "llm-doctor.requests/1"
KINDS = ("exact", "contains", "number", "regex", "json")
DEFAULT_MAX_TOKENS = 64
MAX_REQUESTS = 1000
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


class RequestSetError(ValueError):
    """The request set cannot be used: a usage error (exit 2) naming the file and line."""


@dataclass
class Expect:
    kind: str
    value: Any


@dataclass
class Request:
    id: str
    messages: list[dict[str, str]]
    max_tokens: int = DEFAULT_MAX_TOKENS
    expect: Expect | None = None


@dataclass
class RequestSet:
    name: str
    version: str
    source: str  # "built-in" or the path given
    sha256: str  # of the requests as sent, so two recordings of "the same" set can be told apart
    requests: list[Request] = field(default_factory=list)


def builtin() -> RequestSet:
    text = resources.files("llm_doctor").joinpath("data/baseline_requests.json").read_text(encoding="utf-8")
    data = json.loads(text)
    requests = [_request(item, f"request {i + 1}") for i, item in enumerate(data["requests"])]
    return _finish(data["name"], str(data["version"]), "built-in", requests)


def load(path: str) -> RequestSet:
    """The user's JSONL (or a JSON document shaped like the shipped set)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RequestSetError(f"--prompts {path}: cannot read it ({exc})") from None
    stripped = text.lstrip()
    if stripped.startswith("{") and '"requests"' in stripped[:4096] and stripped.rstrip().endswith("}"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("requests"), list):
            requests = [_request(item, f"{path}: request {i + 1}") for i, item in enumerate(data["requests"])]
            name = str(data.get("name") or Path(path).name)
            return _finish(name, str(data.get("version", "")), path, requests)
    requests = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise RequestSetError(f"{path}:{no}: not JSON ({exc.args[0]})") from None
        requests.append(_request(item, f"{path}:{no}", default_id=f"line-{no}"))
    return _finish(Path(path).name, "", path, requests)


def _finish(name: str, version: str, source: str, requests: list[Request]) -> RequestSet:
    if not requests:
        raise RequestSetError(f"{source}: no requests in it")
    if len(requests) > MAX_REQUESTS:
        raise RequestSetError(f"{source}: {len(requests)} requests; at most {MAX_REQUESTS}")
    ids = [r.id for r in requests]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise RequestSetError(f"{source}: request ids repeat: {', '.join(dup)}")
    canon = json.dumps(
        [[r.id, r.messages, r.max_tokens, r.expect and [r.expect.kind, r.expect.value]] for r in requests], sort_keys=True
    )
    return RequestSet(name, version, source, hashlib.sha256(canon.encode()).hexdigest()[:16], requests)


def _request(item: Any, where: str, default_id: str = "") -> Request:
    if not isinstance(item, dict):
        raise RequestSetError(f"{where}: a request is a JSON object")
    messages = item.get("messages")
    if messages is None and isinstance(item.get("prompt"), str):
        messages = [{"role": "user", "content": item["prompt"]}]
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
    ):
        raise RequestSetError(f"{where}: `messages` must be a non-empty list of {{\"role\", \"content\"}} strings")
    rid = item.get("id", default_id)
    if not isinstance(rid, (str, int)) or str(rid) == "":
        raise RequestSetError(f"{where}: `id` must be a non-empty string")
    max_tokens = item.get("max_tokens", DEFAULT_MAX_TOKENS)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or not 1 <= max_tokens <= 4096:
        raise RequestSetError(f"{where}: `max_tokens` must be an integer from 1 to 4096")
    return Request(str(rid), [{"role": m["role"], "content": m["content"]} for m in messages], max_tokens, _expect(item.get("expect"), where))


def _expect(raw: Any, where: str) -> Expect | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"kind": "contains", "value": raw}
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS or "value" not in raw:
        raise RequestSetError(f"{where}: `expect` must be a string or {{\"kind\": one of {', '.join(KINDS)}, \"value\": ...}}")
    kind, value = raw["kind"], raw["value"]
    valid = {
        "exact": lambda v: isinstance(v, str) and v.strip() != "",
        "contains": lambda v: isinstance(v, str) and v.strip() != "",
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "regex": _compiles,
        "json": lambda v: isinstance(v, dict) and bool(v),
    }[kind]
    if not valid(value):
        raise RequestSetError(f"{where}: `expect` {kind} cannot check the value {value!r}")
    return Expect(kind, value)


def _compiles(value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def score(expect: Expect, answer: str) -> bool:
    """Whether `answer` is right by `expect`. Pure and strict: a missing answer is wrong."""
    text = answer.strip()
    if expect.kind == "exact":
        return _bare(text) == _bare(str(expect.value))
    if expect.kind == "contains":
        return str(expect.value).casefold() in text.casefold()
    if expect.kind == "number":
        numbers = _NUMBER.findall(text)
        if not numbers:
            return False
        try:
            return float(numbers[-1].replace(",", "")) == float(expect.value)
        except ValueError:
            return False
    if expect.kind == "regex":
        return re.search(str(expect.value), text, re.I | re.M) is not None
    fenced = _FENCE.match(text)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        return False
    return isinstance(data, dict) and all(data.get(k) == v for k, v in expect.value.items())


def _bare(s: str) -> str:
    return s.strip().strip(".!\"'`*").strip().casefold()
