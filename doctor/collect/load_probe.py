"""The opt-in concurrency probe (`--probe-load N`, N <= 16, at most 10 s, short prompts).

Generation throughput at concurrency 1 vs N says whether the server batches: a batching engine
gives several times the tokens/s at N; a server with one slot (llama-server --parallel 1, a
gateway that serialises) gives the same. Short prompts and max_tokens keep the load small and
bounded; the probe is never run unless asked for.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from llm_doctor.engine import Deadline
from llm_doctor.facts.host import ProbeFacts

MAX_CONCURRENCY = 16
MAX_SECONDS = 10.0
MAX_TOKENS = 32
PROMPT = "Count from 1 to 50, separated by spaces."
MAX_ANSWER = 1024 * 1024  # bytes read of one answer: 32 tokens never need more


def chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base + "/chat/completions" if base.endswith("/v1") else base + "/v1/chat/completions"


def _llamacpp_slots(client: Any, base_url: str, headers: dict[str, str], timeout: float) -> int | None:
    """llama-server's slot count (`total_slots` in GET /props): with slots >= N, a flat probe means
    the compute is the limit, not the number of requests admitted."""
    import httpx

    from llm_doctor.collect import safe_http

    origin = base_url.rstrip("/").removesuffix("/v1")
    try:
        resp = safe_http.fetch(client, "GET", origin + "/props", min(timeout, 2.0), MAX_ANSWER, headers=headers)
        slots = resp.json().get("total_slots") if resp.status == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return slots if isinstance(slots, int) else None


def _ttft(client: Any, url: str, body: dict[str, Any], headers: dict[str, str], seconds: float) -> float | None:
    """Milliseconds from sending one streamed request to its first generated text (an SSE event
    with delta content), within `seconds` of wall-clock time; None when none came."""
    import httpx

    from llm_doctor.collect.safe_http import Watchdog

    if seconds <= 0.2:
        return None
    start = time.perf_counter()
    try:
        with Watchdog(seconds, grace=0.0) as dog, client.stream(
            "POST", url, json={**body, "stream": True}, headers=headers, timeout=httpx.Timeout(seconds), extensions=dog.extensions
        ) as resp:
            if resp.status_code != 200:
                return None
            for line in resp.iter_lines():
                if _has_text(line):
                    return round((time.perf_counter() - start) * 1000, 1)
    except httpx.HTTPError:
        return None
    return None


def _has_text(line: str) -> bool:
    if not line.startswith("data:") or line[5:].strip() == "[DONE]":
        return False
    try:
        event = json.loads(line[5:])
        choice = event["choices"][0]
        return bool((choice.get("delta") or {}).get("content") or choice.get("text"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return False


def probe(base_url: str, api_key: str | None, model: str | None, concurrency: int, deadline: Deadline | None = None) -> ProbeFacts:
    import httpx

    from llm_doctor.collect import safe_http

    n = max(2, min(int(concurrency), MAX_CONCURRENCY))
    budget = min(MAX_SECONDS, deadline.remaining() * 0.5) if deadline else MAX_SECONDS
    end = time.monotonic() + budget
    result = ProbeFacts(concurrency=n)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = chat_url(base_url)
    body = {"model": model or "default", "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": MAX_TOKENS, "temperature": 0, "stream": False}
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)  # each request's own socket, watched
    with safe_http.client(timeout=max(1.0, budget), limits=limits) as client:

        def one() -> tuple[int, dict[str, Any] | None, str]:
            left = end - time.monotonic()
            if left <= 0.2:
                return 0, None, "probe time is up"
            try:
                resp = safe_http.fetch(client, "POST", url, left, MAX_ANSWER, json=body, headers=headers)
            except httpx.HTTPError as exc:
                return 0, None, f"{type(exc).__name__}: {exc}"
            if resp.status != 200:
                return 0, None, f"HTTP {resp.status}"
            try:
                data = resp.json()
            except ValueError:
                return 0, None, "answer is not JSON"
            if not isinstance(data, dict):
                return 0, None, "answer is not a JSON object"
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            count = usage.get("completion_tokens")
            tokens = int(count) if isinstance(count, (int, float)) and count > 0 else 0
            return tokens, data, ""

        def phase(parallel: int, rounds: int) -> float | None:
            start = time.monotonic()
            tokens = 0
            with ThreadPoolExecutor(max_workers=parallel) as pool:
                for _ in range(rounds):
                    outs = list(pool.map(lambda _: one(), range(parallel)))
                    for t, data, err in outs:
                        result.requests += 1
                        if err:
                            result.errors += 1
                            if err not in result.notes:
                                result.notes.append(err)
                        tokens += t
                        if data is not None and not result.server_hint:
                            result.server_hint = "llamacpp" if "timings" in data else "openai-compatible"
            elapsed = time.monotonic() - start
            return tokens / elapsed if tokens and elapsed > 0 else None

        t0 = time.monotonic()
        result.tps_1 = phase(1, 2)
        if result.tps_1 is not None:
            result.tps_n = phase(n, 1)
            result.ttft_ms = _ttft(client, url, body, headers, end - time.monotonic())
        result.seconds = round(time.monotonic() - t0, 2)
        if result.server_hint == "llamacpp":
            result.slots = _llamacpp_slots(client, base_url, headers, max(0.5, end - time.monotonic()))
    if result.tps_1:
        result.tps_1 = round(result.tps_1, 2)
    if result.tps_n:
        result.tps_n = round(result.tps_n, 2)
    return result
