"""Which lines can matter at all, decided before any decoding or normalisation.

Most of a multi-GB engine log is steady-state noise (throughput stats, access-log lines, request
logs). The scanner must reject those at C speed, so it searches the lower-cased raw bytes of a
whole block with ONE compiled regex of literals and only touches the lines it hits.

The literals are not a hand-kept list (a list drifts from the grammar and silently drops lines):
they are DERIVED from the grammar's own regular expressions. For every pattern we compute a set
of literal strings such that any match must contain one of them (its "required factors", the
prefilter idea of RE2 / code search), walking the parsed regex: a literal run is exact, small
character classes and optional pieces expand into a few alternatives, alternations take the union
of their branches, and a sequence keeps its best factor. "Best" avoids factors that occur in a
sample of real serving noise, then prefers long ones, so a pattern like `"POST /x HTTP/1.1" 404`
filters on `http/1.1" 4`, not on `http/` (every access line). A match of the pattern is then
impossible on a line that holds none of the factors, so rejecting such lines changes no result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from llm_doctor.logparse import grammar_cache

try:  # Python >= 3.11
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

LIMIT = 128  # most alternatives one factor may have (cross products beyond it are cut)
MIN_LEN = 3  # a shorter factor would let too much through: such patterns are reported as weak

# Real steady-state lines (shared/real: vLLM V0/V1 stat and request lines, uvicorn access lines,
# SGLang batch lines, llama.cpp slot lines): a factor found in them would admit the whole log.
NOISE_SAMPLE = (
    "INFO 09-27 03:04:57 metrics.py:352] Avg prompt throughput: 0.1 tokens/s, Avg generation throughput: 0.0 tokens/s, "
    "Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%.",
    "INFO 04-16 10:32:27 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
    "0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
    'INFO:     127.0.0.6:0 - "POST /v1/embeddings HTTP/1.1" 200 OK',
    'INFO:     10.244.1.7:51234 - "GET /v1/models HTTP/1.1" 200 OK',
    '[2025-03-07 11:24:06] INFO:     127.0.0.1:54102 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO 04-16 10:35:13 [async_llm.py:228] Added request chatcmpl-8f878979543841479d089e13a1da85f4.",
    "INFO 01-27 01:18:41 async_llm_engine.py:433] Received request cmpl-cd9d75c607614e7db704b01164bc0c83-0: prompt: None, "
    "prefix_pos: None,sampling params: SamplingParams(n=1, best_of=1, presence_penalty=0.14000000000000012, "
    "frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.0, top_p=1.0, top_k=-1, min_p=0.0, use_beam_search=False, "
    "length_penalty=1.0, early_stopping=False, stop=[], stop_token_ids=[], include_stop_str_in_output=False, ignore_eos=False, "
    "max_tokens=512, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True), lora_request: None.",
    # vLLM 0.8's request line (shared/real/vllm-startup/v0.8.4-v1-deepseek-r1-tp16-ray-2nodes-stats.txt): one per request
    "INFO 04-16 10:35:13 [logger.py:39] Received request chatcmpl-8f878979543841479d089e13a1da85f4: params: SamplingParams(n=1, "
    "seed=None, bad_words=[], spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, "
    "extra_args=None), prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.",
    "INFO 04-16 10:35:20 [loggers.py:87] Finished request chatcmpl-8f878979543841479d089e13a1da85f4.",
    "[2025-03-07 11:02:38 TP0] Decode batch. #running-req: 1, #token: 44, token usage: 0.00, gen throughput (token/s): 0.01, #queue-req: 0",
    "[16:43:29 TP0] Prefill batch. #new-seq: 1, #new-token: 2062, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0",
    "(VllmWorker rank=1 pid=4321) INFO 05-03 18:07:25 [custom_all_reduce.py:196] Registering 8855 cuda graph addresses",
    "(EngineCore_0 pid=2881) INFO 09-04 01:29:00 [core.py:636] Waiting for init message from front-end.",
    "(APIServer pid=1) WARNING 05-03 18:07:25 [protocol.py:58] The following fields were present in the request but ignored: {'stream_options'}",
    "slot update_slots: id  0 | task 0 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 12",
    # uvicorn's access lines of the probes every load balancer sends (vLLM's /health, /version, /metrics routes)
    'INFO:     10.244.1.7:51234 - "GET /health HTTP/1.1" 200 OK',
    'INFO:     10.244.1.7:51236 - "GET /version HTTP/1.1" 200 OK',
    'INFO:     10.244.1.7:51238 - "GET /metrics HTTP/1.1" 200 OK',
    # TGI 2.x router, one per request (fixtures/stat_lines/tgi-success-line.log)
    '2024-12-10T21:50:03.478010Z  INFO chat_completions{total_time="735.200735ms" validation_time="955.594µs" '
    'queue_time="73.176µs" inference_time="734.172108ms" time_per_token="36.708605ms" seed="Some(13465365087046561476)"}: '
    "text_generation_router::server: router/src/server.rs:622: Success",
    # llama-server b5614, per request (shared/real/other-engines/llama-server-b5614-rtx3090-deepseek-r1-offload-slots-timings.txt;
    # not its `request: GET /props 127.0.0.1 200` line: the HTTP status rule has no other literal for it)
    "srv  params_from_: Chat format: Content-only",
    "slot launch_slot_: id  0 | task 0 | processing task",
    "slot update_slots: id  0 | task 0 | kv cache rm [2048, end)",
    "slot update_slots: id  0 | task 0 | prompt processing progress, n_past = 2048, n_tokens = 2048, progress = 0.188825",
    "slot update_slots: id  0 | task 0 | prompt done, n_past = 10846, n_tokens = 606",
    "slot      release: id  0 | task 0 | stop processing: n_past = 11656, truncated = 0",
    "slot print_timing: id  0 | task 0 | ",
    "prompt eval time =  961813.26 ms / 10846 tokens (   88.68 ms per token,    11.28 tokens per second)",
    "       eval time =  347536.86 ms /   811 tokens (  428.53 ms per token,     2.33 tokens per second)",
    "      total time = 1309350.13 ms / 11657 tokens",
    "srv  update_slots: all slots are idle",
    # (not Ollama's gin access lines: they are read on purpose, their 4xx/5xx name the failure (events.py
    # http_response), and its status, between `|`s, gives no literal that the 200 lines lack; they differ only in
    # digits, so the template cache parses each shape once)
)
_NOISE = "\n".join(NOISE_SAMPLE).lower()


@dataclass(frozen=True)
class _Info:
    """What a piece of a regex requires of its matches (lower-case strings; None = nothing known)."""

    exact: frozenset[str] | None  # every string it can match, when there are few
    prefix: frozenset[str] | None  # every match starts with one of these
    suffix: frozenset[str] | None  # ... and ends with one of these
    factor: frozenset[str] | None  # ... and contains one of these


def in_noise(literal: str) -> bool:
    """Whether real steady-state lines hold this (lower-case) literal: it would admit the whole log."""
    return literal in _NOISE


def _exact(strings: frozenset[str]) -> _Info:
    return _Info(strings, strings, strings, None)


_ANY = _Info(None, None, None, None)
_EMPTY = _exact(frozenset({""}))


_NONE = (-(10**9), 0, 0)  # the score of no factor


def _score(factor: frozenset[str] | None) -> tuple[int, int, int]:
    """Higher is better: fewest alternatives in the noise sample (none: clean), long, few alternatives.
    Of two noisy factors the one that admits fewer kinds of noise line wins (an access-log rule whose
    llama.cpp branch is noisy must not fall back to `"get /`, which every uvicorn access line holds)."""
    if not factor or "" in factor:
        return _NONE
    noisy = sum(f in _NOISE for f in factor)
    return (-noisy, min(8, min(len(f) for f in factor)), -len(factor))


def _best(*factors: frozenset[str] | None) -> frozenset[str] | None:
    best = max(factors, key=_score, default=None)
    return best if _score(best) != _NONE else None


def _chars(items: list) -> frozenset[str] | None:
    out: set[str] = set()
    for op, av in items:
        if op == sre_constants.LITERAL:
            out.add(chr(av).lower())
        elif op == sre_constants.RANGE and av[1] - av[0] < 16:
            out.update(chr(c).lower() for c in range(av[0], av[1] + 1))
        elif op == sre_constants.CATEGORY and av == sre_constants.CATEGORY_DIGIT:
            out.update("0123456789")
        else:  # NEGATE, big ranges, \w, \s ...
            return None
    return frozenset(out) if len(out) <= 16 else None


def _cross(a: frozenset[str], b: frozenset[str]) -> frozenset[str] | None:
    if len(a) * len(b) > LIMIT:
        return None
    return frozenset(x + y for x in a for y in b)


def _cross_head(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """a followed by the start of b, cutting b's strings short until the product is small enough
    (every match that starts with one of b also starts with one of b's first k characters)."""
    for k in range(max((len(s) for s in b), default=0), 0, -1):
        joined = _cross(a, frozenset(s[:k] for s in b))
        if joined is not None:
            return joined
    return a


def _union(sets: list[frozenset[str] | None]) -> frozenset[str] | None:
    if any(s is None for s in sets):
        return None
    out = frozenset().union(*sets)  # type: ignore[arg-type]
    return out if len(out) <= LIMIT else None


def _sequence(items: Iterable) -> _Info:
    """Concatenation: exact pieces extend the current literal run; any other piece closes it
    (its prefix joins the run first, its suffix starts the next one)."""
    run: frozenset[str] = frozenset({""})
    prefix: frozenset[str] | None = None  # set when the first run closes
    candidates: list[frozenset[str] | None] = []
    for op, av in items:
        info = _item(op, av)
        if info.exact is not None:
            joined = _cross(run, info.exact)
            if joined is not None:
                run = joined
                continue
            closing, after = _cross_head(run, info.exact), info.exact  # too many alternatives: start again here
        else:
            closing = _cross_head(run, info.prefix) if info.prefix is not None else run
            after = info.suffix if info.suffix is not None else frozenset({""})
            candidates.append(info.factor)
        candidates.append(closing)
        if prefix is None:
            prefix = closing
        run = after
    if prefix is None:  # never closed: the whole sequence is one literal run
        return _exact(run)
    candidates.append(run)
    return _Info(None, prefix, run, _best(*candidates))


def _item(op, av) -> _Info:
    if op == sre_constants.LITERAL:
        return _exact(frozenset({chr(av).lower()}))
    if op == sre_constants.IN:
        chars = _chars(av)
        return _exact(chars) if chars else _ANY
    if op in (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return _EMPTY  # zero width: requires nothing, changes no run
    if op == sre_constants.SUBPATTERN:
        return _sequence(av[-1])
    if op == getattr(sre_constants, "ATOMIC_GROUP", None):
        return _sequence(av)
    if op == sre_constants.BRANCH:
        infos = [_sequence(branch) for branch in av[1]]
        exact = _union([i.exact for i in infos])
        if exact is not None:
            return _exact(exact)
        factors = [_best(i.exact, i.factor, i.prefix, i.suffix) for i in infos]
        return _Info(None, _union([i.prefix for i in infos]), _union([i.suffix for i in infos]), _union(factors))
    if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)):
        low, high, body = av
        inner = _sequence(body)
        if low == 0:
            if high == 1 and inner.exact is not None:
                return _exact(inner.exact | {""})
            return _ANY
        if low == high == 1:
            return inner
        return _Info(None, inner.prefix, inner.suffix, _best(inner.exact, inner.factor, inner.prefix, inner.suffix))
    return _ANY  # ANY, NOT_LITERAL, CATEGORY, GROUPREF ...


def factors(pattern: re.Pattern[str] | str) -> frozenset[str] | None:
    """Literals (lower-case) one of which every match of the pattern contains; None if none is required."""
    if isinstance(pattern, str):
        return _factors(pattern, 0)
    return _factors(pattern.pattern, pattern.flags)  # a re.Pattern, or a catalogue.LazyPattern


@grammar_cache.remembered  # the rules', the scanner's and the template cache's literals come from the same patterns
def _factors(source: str, flags: int) -> frozenset[str] | None:
    info = _sequence(sre_parse.parse(source, flags))
    return _best(info.exact, info.factor, info.prefix, info.suffix)


def weak(patterns: Iterable[re.Pattern[str]]) -> list[str]:
    """Patterns whose best factor is short or occurs in real noise (they would slow every scan)."""
    out = []
    for p in patterns:
        f = factors(p)
        if f is None or _score(f)[0] < 0 or _score(f)[1] < MIN_LEN:
            out.append(f"{p.pattern[:80]!r} -> {sorted(f) if f else None}")
    return out


def literals(patterns: Iterable[re.Pattern[str]], extra: Iterable[str] = ()) -> list[str]:
    """The union of the patterns' factors (and `extra` literals), each cut to start at a letter
    when what is left is still long and clean (`1" 4` -> `" 4`, `0mib` -> `mib`: fewer first
    bytes, see compile_groups), without any literal that contains another one."""
    found: set[str] = set(extra)
    for p in patterns:
        f = factors(p)
        if f is None:
            raise ValueError(f"no literal is required by {p.pattern!r}: it cannot be prefiltered")
        found |= {_from_letter(x) for x in f}
    return list(_minimal(tuple(sorted(found))))


@grammar_cache.remembered  # ~1,200 literals against each other: ~60 ms of every start-up, the same every time
def _minimal(found: tuple[str, ...]) -> tuple[str, ...]:
    """The literals of `found` that contain no other one (sorted): a line holding a longer one holds the shorter."""
    out: list[str] = []
    for lit in sorted(found, key=len):
        if not any(shorter in lit for shorter in out):
            out.append(lit)
    return tuple(sorted(out))


def _from_letter(lit: str) -> str:
    i = 0
    while i < len(lit) - MIN_LEN and not lit[i].isalpha() and lit[i + 1 :] not in _NOISE:
        i += 1
    return lit[i:]


def compile_groups(words: Iterable[str]) -> tuple[re.Pattern[bytes], ...]:
    """Regexes (bytes, for lower-cased text) that together find every literal, one per first byte.

    Python's re scans at several hundred MB/s for a pattern that starts with ONE literal byte (it
    skips ahead to that byte), but at ~10 MB/s for an alternation of different first bytes (it
    tries every branch at every position), so 28 single-first-byte tries beat one big trie 4x."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word)
    return tuple(compile_literals(group) for _, group in sorted(groups.items()))


def line_starts(block: bytes, regexes: Iterable[re.Pattern[bytes]]) -> set[int]:
    """Where the lines of `block` holding a match of one of `regexes` start: one C-speed search per
    hit line and regex (the search resumes at the next line, so a line's second hit costs nothing)."""
    found: set[int] = set()
    for rx in regexes:
        pos = 0
        while (m := rx.search(block, pos)) is not None:
            found.add(block.rfind(b"\n", 0, m.start()) + 1)
            pos = block.find(b"\n", m.end()) + 1
            if pos == 0:
                break
    return found


def compile_literals(words: Iterable[str]) -> re.Pattern[bytes]:
    """One bytes regex for a set of literals, as a trie (`e(?:rror|xception)|...`), children
    with the same subtree merged into a class (`gpu [0-7]`)."""
    trie: dict = {}
    for word in words:
        node = trie
        for byte in word.encode():
            node = node.setdefault(byte, {})
        node[None] = {}

    def emit(node: dict) -> bytes:
        ends = None in node
        by_tail: dict[bytes, list[int]] = {}  # children with the same subtree share one branch: `gpu [0-9]`
        for byte, child in sorted((k, v) for k, v in node.items() if k is not None):
            by_tail.setdefault(emit(child), []).append(byte)
        alts = [(re.escape(bytes(heads)) if len(heads) == 1 else b"[" + b"".join(re.escape(bytes([h])) for h in heads) + b"]") + tail
                for tail, heads in by_tail.items()]
        if not alts:
            return b""
        body = alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"
        return b"(?:" + body + b")?" if ends else body

    return re.compile(emit(trie))
