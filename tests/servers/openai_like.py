"""An app that answers like vLLM's OpenAI server (routes, auth middleware, error bodies from
fixtures/http), with switches for the faults the access tests plant."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tests.servers.http import Reply, Request, fixture

NOT_FOUND = Reply(404, {"detail": "Not Found"})  # FastAPI/Starlette route miss, as vLLM sends it


def sse(events: list[dict], done: bool = True) -> list[bytes]:
    chunks = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    return chunks + ([b"data: [DONE]\n\n"] if done else [])


@dataclass
class VllmLike:
    key: str | None = None
    models: list[str] = field(default_factory=lambda: ["meta-llama/Llama-3.1-8B-Instruct"])
    prefix: str = "/v1"
    stream: str = "ok"  # ok | buffered | held | json | no_done | stall
    reasoning: bool = False
    chat_override: Reply | None = None

    def __call__(self, req: Request) -> Reply:
        path = req.path.split("?")[0]
        if self.key is not None and path.startswith("/v1"):
            if req.headers.get("authorization") != f"Bearer {self.key}":
                return Reply(401, fixture("vllm-unauthorized.json"))
        if req.method == "GET" and path == f"{self.prefix}/models":
            return Reply(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1736792100, "owned_by": "vllm", "root": m, "parent": None, "max_model_len": 4096}
                for m in self.models]})  # fmt: skip
        if req.method == "POST" and path == f"{self.prefix}/chat/completions":
            return self.chat(req)
        return NOT_FOUND

    def chat(self, req: Request) -> Reply:
        body = req.json or {}
        model = body.get("model")
        if model not in self.models:
            text = fixture("vllm-model-not-found.json").decode().replace("Qwen1.5-14B-Chat-GPTQ-Int8", str(model))
            return Reply(404, text)
        if self.chat_override is not None:
            return self.chat_override
        if body.get("stream"):
            return self.streamed(model)
        message = {"role": "assistant", "content": "OK", "reasoning_content": None}
        finish = "stop"
        if self.reasoning:
            message = {"role": "assistant", "content": None, "reasoning_content": "Okay, the user wants the word OK. Let me"}
            finish = "length"
        return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1736792100, "model": model,
                           "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                           "usage": {"prompt_tokens": 15, "total_tokens": 17, "completion_tokens": 2}})  # fmt: skip

    def streamed(self, model: str) -> Reply:
        def delta(d: dict, finish: str | None = None) -> dict:
            return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1736792100, "model": model,
                    "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]}  # fmt: skip

        events = [delta({"role": "assistant", "content": ""}), delta({"content": "O"}), delta({"content": "K"}), delta({}, "stop")]
        headers = {"cache-control": "no-cache"}
        if self.stream == "json":
            return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "stop"}]})  # fmt: skip
        if self.stream == "buffered":  # what nginx with proxy_buffering on delivers: all at once, with a length
            data = b"".join(sse(events))
            return Reply(200, data, "text/event-stream", {**headers, "x-buffered-by": "test-proxy"}, delay=0.6)
        if self.stream == "held":  # buffered without a length: one write, late, then close
            return Reply(200, chunks=[b"".join(sse(events))], content_type="text/event-stream", headers=headers, delay=0.3)
        if self.stream == "no_done":
            return Reply(200, chunks=sse(events, done=False), content_type="text/event-stream", headers=headers, chunk_delay=0.02)
        if self.stream == "stall":
            return Reply(200, chunks=sse(events[:2], done=False), content_type="text/event-stream",
                         headers=headers, chunk_delay=30)  # fmt: skip
        return Reply(200, chunks=sse(events), content_type="text/event-stream", headers=headers, chunk_delay=0.02)


@dataclass
class AnthropicLike:
    """Only the Anthropic Messages API: POST /v1/messages with x-api-key; everything else 404."""

    key: str | None = None
    models: list[str] = field(default_factory=lambda: ["claude-sonnet-4-5"])

    def __call__(self, req: Request) -> Reply:
        path = req.path.split("?")[0]
        if req.method == "POST" and path == "/v1/messages":
            if self.key is not None and req.headers.get("x-api-key") != self.key:
                return Reply(401, fixture("anthropic-authentication-error.json"))
            body = req.json or {}
            if body.get("model") not in self.models:
                return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {body.get('model')}"}})
            if body.get("stream"):
                events = [
                    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}\n\n',
                    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"OK"}}\n\n',
                    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
                ]
                return Reply(200, chunks=events, content_type="text/event-stream", chunk_delay=0.02)
            return Reply(200, {"id": "msg_01", "type": "message", "role": "assistant", "model": body.get("model"),
                               "content": [{"type": "text", "text": "OK"}], "stop_reason": "end_turn", "stop_sequence": None,
                               "usage": {"input_tokens": 14, "output_tokens": 2}})  # fmt: skip
        return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}})
