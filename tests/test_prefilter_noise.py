"""The scanner's prefilter against steady-state noise (issue #10): a busy server's log is stat lines,
access lines and request lines, millions of them, and a literal that one of them holds sends every
such line through the full parse. One literal-only TGI template whose literal was `decoding` (every
vLLM 0.8 request line says `guided_decoding=None`) made busy vLLM logs scan ~20x slower.

For each engine, a steady-state log is generated from real lines (each shape's source is named; the
numbers, ids, paths and prompts vary), and every catalogue entry's prefilter literals (the ones the
scanner searches for its pattern, doctor.logparse.scan.CANDIDATE_LITERALS) must admit at most a tiny
share of its lines. The test names the entries that do not; the fix is a literal the noise does not
hold (doctor.logparse.prefilter.NOISE_SAMPLE, which the literal choice avoids), never a looser bound.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from llm_doctor.logparse import events as ev
from llm_doctor.logparse import prefilter as pf
from llm_doctor.logparse import scan

LINES = 3000  # per engine
TINY = 0.002  # the share of steady-state lines one entry's literals may admit (6 of 3000)


def _hex(r: random.Random, n: int = 32) -> str:
    return f"{r.getrandbits(4 * n):0{n}x}"


def _ip(r: random.Random) -> str:
    return f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}:{r.randint(1024, 65535)}"


def _path(r: random.Random) -> str:
    return r.choice(["/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/v1/embeddings",
                     "/generate", "/ping", "/version", "/tokenize"])


def _access(r: random.Random) -> str:
    # uvicorn's access line (shared/real/vllm-startup/v0.8.4-v1-deepseek-r1-tp16-ray-2nodes-stats.txt, SGLang 0.4.3)
    return f'INFO:     {_ip(r)} - "{r.choice(["GET", "POST"])} {_path(r)} HTTP/1.1" 200 OK'


def _vllm_v0(r: random.Random) -> str:
    t = f"{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"
    return r.choice([
        # vLLM 0.6 metrics.py stat line (fixtures/stat_lines/vllm-0.2-v0-stat-lines.log shape)
        f"INFO {t} metrics.py:{r.randint(300, 400)}] Avg prompt throughput: {r.uniform(0, 9000):.1f} tokens/s, Avg generation "
        f"throughput: {r.uniform(0, 900):.1f} tokens/s, Running: {r.randint(0, 256)} reqs, Swapped: 0 reqs, Pending: "
        f"{r.randint(0, 40)} reqs, GPU KV cache usage: {r.uniform(0, 99):.1f}%, CPU KV cache usage: 0.0%.",
        # async_llm_engine.py request lines (prefilter.NOISE_SAMPLE's real V0 line)
        f"INFO {t} async_llm_engine.py:{r.randint(100, 700)}] Received request cmpl-{_hex(r)}-0: prompt: 'Question {r.randint(1, 10**6)}', "
        f"params: SamplingParams(n=1, best_of=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
        f"temperature={r.random():.1f}, top_p=1.0, top_k=-1, min_p=0.0, seed=None, use_beam_search=False, length_penalty=1.0, "
        f"early_stopping=False, stop=[], stop_token_ids=[], include_stop_str_in_output=False, ignore_eos=False, "
        f"max_tokens={r.randint(16, 8192)}, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
        f"spaces_between_special_tokens=True, truncate_prompt_tokens=None), prompt_token_ids: [{r.randint(1, 99999)}], lora_request: None.",
        f"INFO {t} async_llm_engine.py:{r.randint(100, 300)}] Finished request cmpl-{_hex(r)}-0.",
        _access(r),
    ])


def _vllm_v1(r: random.Random) -> str:
    t = f"{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"
    pid = f"(APIServer pid={r.randint(1, 9999)}) "
    return pid + r.choice([
        # shared/real/vllm-startup/v0.8.4-v1-deepseek-r1-tp16-ray-2nodes-stats.txt
        f"INFO {t} [loggers.py:{r.randint(80, 130)}] Engine 000: Avg prompt throughput: {r.uniform(0, 9000):.1f} tokens/s, Avg "
        f"generation throughput: {r.uniform(0, 3000):.1f} tokens/s, Running: {r.randint(0, 256)} reqs, Waiting: {r.randint(0, 40)} "
        f"reqs, GPU KV cache usage: {r.uniform(0, 99):.1f}%, Prefix cache hit rate: {r.uniform(0, 80):.1f}%",
        f"INFO {t} [logger.py:39] Received request chatcmpl-{_hex(r)}: prompt: '<|User|>Question {r.randint(1, 10**6)}: "
        f"summarise the attached report.<|Assistant|>', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
        f"repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
        f"bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens={r.randint(64, 8192)}, min_tokens=0, "
        "logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
        "truncate_prompt_tokens=None, guided_decoding=None, extra_args=None), prompt_token_ids: None, lora_request: None, "
        "prompt_adapter_request: None.",
        f"INFO {t} [async_llm.py:{r.randint(200, 300)}] Added request chatcmpl-{_hex(r)}.",
        f"INFO {t} [loggers.py:87] Finished request chatcmpl-{_hex(r)}.",
        _access(r),
    ])


def _sglang(r: random.Random) -> str:
    t = f"2025-03-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"
    return r.choice([
        # shared/real/other-engines/sglang-0.4.3-deepseek-r1-tp8-startup-decode-batches.txt
        f"[{t} TP0] Prefill batch. #new-seq: {r.randint(1, 8)}, #new-token: {r.randint(1, 8192)}, #cached-token: "
        f"{r.randint(0, 4096)}, cache hit rate: {r.uniform(0, 60):.2f}%, token usage: {r.uniform(0, 0.9):.2f}, "
        f"#running-req: {r.randint(0, 64)}, #queue-req: {r.randint(0, 40)}",
        f"[{t} TP0] Decode batch. #running-req: {r.randint(1, 64)}, #token: {r.randint(1, 10240)}, token usage: "
        f"{r.uniform(0, 0.9):.2f}, gen throughput (token/s): {r.uniform(0, 900):.2f}, #queue-req: {r.randint(0, 40)}",
        f"[{t}] " + _access(r),
    ])


def _tgi(r: random.Random) -> str:
    t = f"2024-12-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999999):06d}Z"
    span = r.choice(["chat_completions", "generate", "generate_stream", "completions"])
    # fixtures/stat_lines/tgi-success-line.log (TGI 2.x router, one per request)
    return (f'{t}  INFO {span}{{total_time="{r.uniform(1, 9000):.6f}ms" validation_time="{r.uniform(1, 999):.3f}µs" '
            f'queue_time="{r.uniform(1, 999):.3f}µs" inference_time="{r.uniform(1, 9000):.6f}ms" '
            f'time_per_token="{r.uniform(1, 90):.6f}ms" seed="Some({r.getrandbits(63)})"}}: text_generation_router::server: '
            f"router/src/server.rs:{r.randint(300, 2500)}: Success")


def _llamacpp(r: random.Random) -> str:
    slot, task = r.randint(0, 3), r.randint(0, 99999)
    n = r.randint(1, 32768)
    # shared/real/other-engines/llama-server-b5614-rtx3090-deepseek-r1-offload-slots-timings.txt
    return r.choice([
        f"slot update_slots: id  {slot} | task {task} | new prompt, n_ctx_slot = 32768, n_keep = 0, n_prompt_tokens = {n}",
        f"slot update_slots: id  {slot} | task {task} | kv cache rm [{n}, end)",
        f"slot update_slots: id  {slot} | task {task} | prompt processing progress, n_past = {n}, n_tokens = {r.randint(1, 2048)}, "
        f"progress = {r.random():.6f}",
        f"slot update_slots: id  {slot} | task {task} | prompt done, n_past = {n}, n_tokens = {r.randint(1, 2048)}",
        f"slot launch_slot_: id  {slot} | task {task} | processing task",
        f"slot      release: id  {slot} | task {task} | stop processing: n_past = {n}, truncated = 0",
        f"slot print_timing: id  {slot} | task {task} | ",
        f"prompt eval time =  {r.uniform(1, 99999):.2f} ms / {n} tokens (   {r.uniform(1, 99):.2f} ms per token,    "
        f"{r.uniform(1, 999):.2f} tokens per second)",
        f"       eval time =  {r.uniform(1, 99999):.2f} ms /   {n} tokens (  {r.uniform(1, 99):.2f} ms per token,     "
        f"{r.uniform(1, 99):.2f} tokens per second)",
        f"      total time =  {r.uniform(1, 99999):.2f} ms / {n} tokens",
        "srv  update_slots: all slots are idle",
        f"srv  log_server_r: request: {r.choice(['GET', 'POST'])} {_path(r)} 127.0.0.1 200",
        "srv  params_from_: Chat format: Content-only",
    ])


def _ollama(r: random.Random) -> str:
    # shared/real/other-engines/ollama-0.5.x-windows-rtx4060-full-offload-43of43.txt ([GIN] access lines)
    path = r.choice(['"/api/chat"', '"/api/generate"', '"/api/tags"', '"/api/show"', '"/v1/chat/completions"', '"/"'])
    return (f"[GIN] 2025/01/{r.randint(1, 28):02d} - {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d} | 200 | "
            f"{r.uniform(0, 60):>12.6f}s |       127.0.0.1 | {r.choice(['POST', 'GET', 'HEAD']):<8} {path}")


ENGINES: dict[str, Callable[[random.Random], str]] = {
    "vllm-v0": _vllm_v0, "vllm-v1": _vllm_v1, "sglang": _sglang, "tgi": _tgi, "llamacpp": _llamacpp, "ollama": _ollama,
}


def _steady(engine: str) -> list[bytes]:
    r = random.Random(engine)
    return [ENGINES[engine](r).lower().encode() for _ in range(LINES)]


STEADY = {engine: _steady(engine) for engine in ENGINES}


def _searched(pattern) -> list[str]:
    """The literals the scanner searches for this pattern (as scan.CANDIDATE_LITERALS holds them)."""
    return pf.literals([pattern])


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_no_catalogue_literal_admits_steady_state_lines(engine: str) -> None:
    lines = STEADY[engine]
    noisy = []
    for rule in ev.CATALOGUE_RULES:
        regex = pf.compile_literals(_searched(rule.pattern))
        hits = sum(1 for line in lines if regex.search(line))
        if hits > TINY * len(lines):
            noisy.append(f"{rule.source} {rule.pattern.pattern[:60]!r}: {_searched(rule.pattern)} admits {hits}/{len(lines)}")
    assert not noisy, "\n".join(noisy)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_the_scanner_skips_steady_state_lines(engine: str) -> None:
    """The whole grammar's literals (every rule, the set-up facts, the phases, the failure reader):
    steady-state lines are not parsed."""
    admitted = [line for line in STEADY[engine] if scan._any(scan.CANDIDATE, line)]
    if engine == "llamacpp":
        # the one kind read on purpose: llama-server's request line ends with its status, so the HTTP 4xx/5xx
        # rule (events.py) has no literal its 200 lines lack: `request: get /` it is, and nothing else
        admitted = [line for line in admitted if b"log_server_r: request: " not in line]
    if engine == "ollama":
        # the same for Ollama's request log (events.py http_response): gin prints the status between `|`s and the
        # prefilter is blind to digits, so `[GIN]` it is; its lines differ only in digits, so the template cache
        # parses each shape once
        admitted = [line for line in admitted if not line.startswith(b"[gin] ")]
    assert len(admitted) <= TINY * LINES, admitted[:3]


def test_a_literal_steady_state_holds_is_not_chosen() -> None:
    """TGI's `Flash decoding requires Flash Attention V2` (its only literal text): not `decoding`."""
    rule = next(r for r in ev.CATALOGUE_RULES if r.pattern.pattern.startswith(r"Flash\s*decoding\s*requires"))
    assert "decoding" not in _searched(rule.pattern)
    assert not any(pf.compile_literals(_searched(rule.pattern)).search(line) for line in STEADY["vllm-v1"])
