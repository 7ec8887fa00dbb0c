"""An OpenAI-style engine whose timing, capacity, answers and /metrics the tests set: it streams
real SSE over a real socket, one word a token.

- `ttft_s` before the first token and `itl_s` between tokens; `jitter` spreads TTFT by a fixed
  cycle (-j, 0, +j of it) over the repeats of one prompt, so noise is real but reproducible;
- `slots`: requests generated at once; more wait for a slot, as on an engine with --parallel 1;
- `answers`: prompt substring -> answer (else "OK"), per model when `by_model` is given;
- `cache_config`: the vllm:cache_config_info labels /metrics reports, or `metrics_text` a whole
  scrape verbatim (neither: /metrics is 404);
- `strict`: refuse fields it does not know (`seed`, `stream_options`) with a 422, as a server
  validating with pydantic's extra="forbid" does, and send no usage.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.servers.http import Reply, Request

JITTER_CYCLE = (-1.0, 0.0, 1.0)


@dataclass
class StreamingEngine:
    ttft_s: float = 0.05
    itl_s: float = 0.01
    jitter: float = 0.0
    slots: int = 64
    answers: dict[str, str] = field(default_factory=dict)
    by_model: dict[str, StreamingEngine] = field(default_factory=dict)
    cache_config: dict[str, str] | None = None
    metrics_text: str | None = None
    version: str = "0.10.1.1"
    strict: bool = False

    def __post_init__(self) -> None:
        self._slots = threading.Semaphore(self.slots)
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, req: Request) -> Reply:
        path = req.path.split("?")[0]
        if req.method == "GET" and path == "/metrics":
            if self.metrics_text is not None:
                return Reply(200, self.metrics_text, "text/plain; version=0.0.4")
            if self.cache_config is None:
                return Reply(404, {"detail": "Not Found"})
            labels = ",".join(f'{k}="{v}"' for k, v in self.cache_config.items())
            text = ("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
                    "# TYPE vllm:cache_config_info gauge\n"
                    f"vllm:cache_config_info{{{labels}}} 1.0\n")  # fmt: skip
            return Reply(200, text, "text/plain; version=0.0.4")
        if req.method == "GET" and path == "/version":
            return Reply(200, {"version": self.version})
        if req.method == "POST" and path == "/v1/chat/completions":
            body = req.json or {}
            engine = self.by_model.get(str(body.get("model")), self)
            extra = sorted({"seed", "stream_options"} & set(body))
            if engine.strict and extra:
                return Reply(422, {"detail": [{"type": "extra_forbidden", "loc": ["body", extra[0]],
                                               "msg": "Extra inputs are not permitted"}]})  # fmt: skip
            return engine.stream(body)
        return Reply(404, {"detail": "Not Found"})

    def answer(self, prompt: str) -> str:
        return next((a for key, a in self.answers.items() if key in prompt), "OK")

    def stream(self, body: dict) -> Reply:
        prompt = " ".join(str(m.get("content")) for m in body.get("messages") or [])
        with self._lock:
            nth = self._seen[prompt]
            self._seen[prompt] += 1
        ttft = self.ttft_s * (1 + self.jitter * JITTER_CYCLE[nth % len(JITTER_CYCLE)])
        words = self.answer(prompt).split(" ")[: int(body.get("max_tokens") or 16)]

        def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
            event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": body.get("model"),
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else [],
                     **({"usage": usage} if usage else {})}  # fmt: skip
            return f"data: {json.dumps(event)}\n\n".encode()

        def events() -> Iterator[bytes]:
            with self._slots:
                time.sleep(ttft)
                yield chunk({"role": "assistant", "content": ""})
                for i, word in enumerate(words):
                    if i:
                        time.sleep(self.itl_s)
                    yield chunk({"content": word if i == 0 else " " + word})
                yield chunk({}, "stop")
                if not self.strict:
                    yield chunk({}, usage={"prompt_tokens": len(prompt.split()), "completion_tokens": len(words),
                                           "total_tokens": len(prompt.split()) + len(words)})  # fmt: skip
                yield b"data: [DONE]\n\n"

        return Reply(200, chunks=events(), content_type="text/event-stream")
