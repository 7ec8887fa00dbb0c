"""The log scanner's fast paths change nothing but speed (issue #10).

- The template cache (doctor.logparse.template_cache) serves a repeated message from the plan of
  its template: the typed events, setup facts and counts are identical with and without it, on every
  fixture log, the repository's corpus, and generated busy / worst-case / crash-loop logs.
- The external prefilter (rg or grep -F, doctor.logparse.external_prefilter) passes exactly the
  lines the Python prefilter passes: the same facts on the same logs, read tail first, with lines
  longer than a block, and with a tool that fails.
- `analyze` shows its progress on stderr when that is a terminal (a real pty) and not otherwise.
Nothing here is timed: speed is bench/log_scan.py's business.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_doctor.collect import logs
from llm_doctor.engine import Deadline
from llm_doctor.facts import Facts
from llm_doctor.logparse import external_prefilter as xp
from llm_doctor.logparse import scan
from llm_doctor.logparse import template_cache as tc
from llm_doctor.logparse.lines import WRAP_MAX, LineNumbers
from llm_doctor.logparse.scan import LogScanner

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("log_shapes", ROOT / "bench" / "log_shapes.py")
assert _spec and _spec.loader
shapes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shapes)

FIXTURE_LOGS = sorted((ROOT / "fixtures" / "logs").glob("*.log")) + sorted((ROOT / "corpus").glob("*.log"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    """Small logs of the benchmark's shapes (repeats are what the fast paths are for)."""
    folder = tmp_path_factory.mktemp("shapes")
    return [shapes.write(shape, folder / f"{shape}.log", 300 * 1024) for shape in shapes.SHAPES]


def _facts(logfacts) -> dict:
    d = dataclasses.asdict(logfacts)
    d.pop("sources")
    return d


def _scan(path: Path, templates: bool) -> tuple[dict, int]:
    scanner = LogScanner(templates=templates)
    scanner.start_source(path.name)
    with open(path, "rb") as fh:
        for block in logs.read_blocks(fh):
            scanner.feed_block(block)
    return _facts(scanner.finish()), scanner.templates.served


def test_template_cache_changes_no_event(generated) -> None:
    served = 0
    for path in FIXTURE_LOGS + generated:
        without, none = _scan(path, templates=False)
        with_cache, n = _scan(path, templates=True)
        assert none == 0
        assert with_cache == without, path.name
        served += n
    assert served > 1_000  # the generated logs repeat their messages: the cache did serve them


def test_template_cache_key_is_the_line_with_its_digits_masked() -> None:
    """Two preemption warnings with other numbers (as many digits): the second is served, with its own values."""
    text = (
        b"INFO 09-10 23:40:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 3 reqs\n"
        b"WARNING 09-10 23:40:02 [scheduler.py:1560] Sequence group 17 is preempted by PreemptionMode.RECOMPUTE mode "
        b"because there is not enough KV cache space. total_num_cumulative_preemption=52\n"
        b"WARNING 09-10 23:40:09 [scheduler.py:1560] Sequence group 93 is preempted by PreemptionMode.RECOMPUTE mode "
        b"because there is not enough KV cache space. total_num_cumulative_preemption=61\n"
    )
    scanner = LogScanner()
    scanner.start_source("x")
    scanner.feed_block(text)
    (event,) = scanner.finish().events
    assert scanner.templates.served == 1
    assert event.kind == "preemption" and event.count == 2 and event.last_line_no == 3
    assert event.last_line.endswith("total_num_cumulative_preemption=61")


def test_a_status_code_is_read_again_on_every_line() -> None:
    """`HTTP 200` and `HTTP 429` share a template, but a rule names 429: the 429 line is parsed in full."""
    text = b"".join(f"client: got HTTP {code} from the proxy, retrying\n".encode() for code in (200, 200, 429, 200))
    served = {}
    for templates in (False, True):
        scanner = LogScanner(templates=templates)
        scanner.start_source("x")
        scanner.feed_block(text)
        served[templates] = (_facts(scanner.finish()), scanner.templates.served)
    assert served[True][0] == served[False][0]
    assert [e["kind"] for e in served[True][0]["events"]] == ["client_rate_limit"]
    assert served[True][1] >= 1  # the second line (the 429 was parsed in full: its event is there)


@pytest.mark.parametrize(
    ("pattern", "blind"),
    [(r"\d+ reqs", True), (r"[0-9a-f]{8,}", True), (r"\w+\.py:\d+", True), (r"pid=[^,]+", True),
     (r"running: [1-9]", False), (r"HTTP 429", False), (r"[^0]x", False), (r"(a)\1", False), (r"python3?", False)],
)
def test_digit_blind(pattern: str, blind: bool) -> None:
    import re

    assert tc.digit_blind(re.compile(pattern)) is blind


def test_the_prefix_peeling_is_digit_blind() -> None:
    """Otherwise no line could be served (the cache would only cost)."""
    assert LogScanner().templates.usable


def _tools() -> list[tuple[str, list[str]]]:
    """Both arms where they exist (grep always does here; rg comes with the `test` extra)."""
    rg = shutil.which("rg") or shutil.which("rg", path=str(Path(sys.executable).parent))
    return [(name, xp.command(exe)) for name, exe in (("rg", rg), ("grep", shutil.which("grep"))) if exe]


def _collect(path: Path, tool: list[str] | None) -> dict:
    facts = Facts()
    collector = logs.LogCollector(facts, Deadline(600), tool=tool)
    collector.external_min = 0
    collector.add_path(str(path))
    return {"logs": _facts(collector.finish()), "gaps": [dataclasses.asdict(g) | {"seconds": None} for g in facts.gaps],
            "metrics": dataclasses.asdict(facts.metrics) if facts.metrics else None}  # the stat lines


@pytest.mark.parametrize(("name", "tool"), _tools(), ids=[name for name, _ in _tools()])
def test_external_prefilter_passes_the_same_lines(name, tool, generated, tmp_path, monkeypatch) -> None:
    # small blocks and a small tail: every file is read in many blocks, the big ones tail first
    monkeypatch.setattr(logs, "BLOCK", 16 * 1024)
    monkeypatch.setattr(logs, "TAIL_BYTES", 64 * 1024)
    long_line = tmp_path / "long-line.log"  # a line longer than a block, with literals across the cut
    long_line.write_bytes(b"INFO start\n" + b"x" * 16380 + b"CUDA out of memory. " * 2000 + b"\nERROR done: failed\n")
    used: list[bool] = []
    feed = LogScanner.feed_block

    def spying(self, block, expired=None, hits=None):
        used.append(hits is not None)
        return feed(self, block, expired, hits)

    monkeypatch.setattr(LogScanner, "feed_block", spying)
    for path in FIXTURE_LOGS[::7] + generated + [long_line]:
        python = _collect(path, None)
        del used[:]
        assert _collect(path, tool) == python, path.name
        assert all(used) or path == long_line
    assert not all(used)  # the long line's pieces were prefiltered in Python


@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("name", "tool"), _tools(), ids=[name for name, _ in _tools()])
def test_external_prefilter_on_every_fixture_and_corpus_log(name, tool, tmp_path, monkeypatch) -> None:
    """Every fixture log and the whole corpus, one after the other in one file (one tool run, not
    hundreds): the tool's lines and stat lines are the Python prefilter's, so the facts are the same."""
    monkeypatch.setattr(logs, "BLOCK", 64 * 1024)
    monkeypatch.setattr(logs, "TAIL_BYTES", 256 * 1024)
    every = tmp_path / "every.log"
    every.write_bytes(b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in FIXTURE_LOGS))
    python = _collect(every, None)
    assert python["logs"]["events"] and python["metrics"]
    assert _collect(every, tool) == python


def test_the_tail_s_plans_serve_the_head_and_change_no_fact(generated, tmp_path, monkeypatch) -> None:
    """A big file is read tail first by a sibling scanner that shares the head's template plans: the
    head is served by the plans the tail made (the same start-up header is not learned twice), and the
    facts are those of a tail scanner with plans of its own."""
    monkeypatch.setattr(logs, "BLOCK", 16 * 1024)
    monkeypatch.setattr(logs, "TAIL_BYTES", 64 * 1024)
    every = tmp_path / "every.log"
    every.write_bytes(b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in FIXTURE_LOGS[::5]))
    sibling, siblings = LogScanner.sibling, []

    def sharing(self):
        siblings.append(sibling(self))
        assert siblings[-1].templates is self.templates
        return siblings[-1]

    for path in [*generated, every]:
        monkeypatch.setattr(LogScanner, "sibling", sharing)
        shared = _collect(path, None)
        monkeypatch.setattr(LogScanner, "sibling", lambda self: LogScanner())
        assert _collect(path, None) == shared, path.name
    assert siblings  # the files were read tail first


def test_a_cleaned_template_puts_each_line_s_own_digits_back() -> None:
    """Colour codes hold digits too: those are dropped, the message's are the line's own."""
    from llm_doctor.logparse import lines as ln

    first = "\x1b[1;36m(APIServer pid=1009)\x1b[0;0m WARNING 09-10 23:40:02 [scheduler.py:1560] group 17 is preempted\r\n"
    other = "\x1b[1;36m(APIServer pid=2718)\x1b[0;0m WARNING 11-12 03:04:05 [scheduler.py:1561] group 93 is preempted\r\n"
    cleaning = tc.Cleaning.of(first)
    assert cleaning is not None and cleaning.apply(first) == ln.clean(first)
    assert cleaning.apply(other) == ln.clean(other) == "(APIServer pid=2718) WARNING 11-12 03:04:05 [scheduler.py:1561] group 93 is preempted"


def test_a_line_of_hundreds_of_digits_gets_a_cleaning_too() -> None:
    """An argument dump's hundreds of digits (colour codes among them): each kept digit's place is
    found, so the line's template is cleaned as a format, and every line of it gets its own digits back."""
    from llm_doctor.logparse import lines as ln

    def line(seed: int) -> str:
        sizes = ", ".join(f"{(seed * 7919 + i * 104729) % 100000:05d}" for i in range(120))  # (one template: as many digits)
        return f"\x1b[1;3{seed % 10}m(EngineCore pid={seed})\x1b[0;0m INFO [core.py:{seed % 900 + 100}] cudagraph sizes [{sizes}]\x1b[0m\r\n"

    cleaning = tc.Cleaning.of(line(1009))
    assert cleaning is not None and len(cleaning.kept) > 300
    for seed in (1009, 2718, 4321):
        assert cleaning.apply(line(seed)) == ln.clean(line(seed))


def test_a_failing_tool_falls_back_to_the_python_prefilter(generated, monkeypatch) -> None:
    monkeypatch.setattr(logs, "BLOCK", 16 * 1024)
    failing = [sys.executable, "-c", "import sys; sys.exit(2)"]
    for path in generated:
        assert _collect(path, failing) == _collect(path, None), path.name


def _analyze_stdin(stderr_tty: bool, chunks: list[bytes], pause: float) -> tuple[str, str, int]:
    """Run `llm-doctor analyze -` with the log written in chunks, `pause` seconds apart."""
    argv = [str(Path(sys.executable).parent / "llm-doctor"), "analyze", "-", "--format", "json"]
    if stderr_tty:
        master, slave = pty.openpty()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
    else:
        master = None
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    err = b""
    for i, chunk in enumerate(chunks):
        if i:
            time.sleep(pause)
        proc.stdin.write(chunk)
        proc.stdin.flush()
    proc.stdin.close()
    out = proc.stdout.read() if proc.stdout else b""  # type: ignore[union-attr]
    proc.wait(timeout=120)
    if master is not None:
        while select.select([master], [], [], 0.5)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other end is closed
                break
            if not data:
                break
            err += data
        os.close(master)
    elif proc.stderr is not None:
        err = proc.stderr.read()
    return out.decode(errors="replace"), err.decode(errors="replace"), proc.returncode


@pytest.mark.timeout(300)
def test_progress_is_shown_on_a_terminal_only(generated) -> None:
    """A scan that takes longer than a second (the writer pauses 1.5 s) says how far it is, on a
    terminal; the same scan into a pipe says nothing on stderr. The report is on stdout either way."""
    data = generated[0].read_bytes()
    half = data.rfind(b"\n", 0, len(data) // 2) + 1
    chunks = [data[:half], data[half:]]
    out, err, rc = _analyze_stdin(True, chunks, 1.5)
    assert '"findings"' in out, (rc, err)
    assert "reading <stdin>: " in err and " MiB" in err
    out, err, rc = _analyze_stdin(False, chunks, 1.5)
    assert '"findings"' in out and "reading" not in err


STAT_LOGS = sorted(p for p in (ROOT / "fixtures" / "stat_lines").iterdir() if not p.name.endswith(".source.txt"))
_DECODE = "[2025-03-10 16:21:{s:02d} TP0] Decode batch. #running-req: {r}, #token: 2{s}0, token usage: 0.{k:02d}, gen throughput (token/s): 4{s}.5, #queue-req: {q}"
_PREFILL = ("[2025-03-10 16:21:{s:02d} TP0] Prefill batch. #new-seq: 1, #new-token: 9{s}, #cached-token: 0, cache hit rate: 0.00%, "
            "token usage: 0.{k:02d}, #running-req: {r}, #queue-req: {q}")
_VLLM = ("(APIServer pid=1) INFO 09-10 23:40:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 1{s}.0 tokens/s, "
         "Avg generation throughput: 0.0 tokens/s, Running: {r} reqs, Waiting: {q} reqs, GPU KV cache usage: {k}.5%, Prefix cache hit rate: {s}.0%")
# lines feed_line reads otherwise than the batch's patterns would: each must send its block back to feed_line
_ODD = [
    _PREFILL + ", input throughput (token/s): 812.00",  # _fields reads a label the prefill pattern does not hold
    _DECODE.replace("#queue-req: {q}", "#queue-req: {q}, #running-req: 99"),  # a label twice
    "Avg prompt throughput: 3.0 tokens/s and " + _DECODE,  # vLLM's words: feed_line reads the line as vLLM's
    _VLLM + " Running: 12 reqs" + "x" * 5000,  # longer than MAX_LINE: feed_line reads its first 4096 bytes
    # ... and lines it reads as feed_line does: vLLM V0's CPU usage, an Arabic-Indic digit (`\\d` in text)
    _VLLM.replace("Prefix cache", "CPU KV cache usage: 1.0%, Prefix cache"),
    _DECODE.replace("running-req: {r}", "running-req: \u0663"),
]
_READ_ALIKE = 2  # the last ones


def _stat_facts(path: Path | bytes, monkeypatch, batched: bool) -> tuple[dict, int]:
    from llm_doctor.logparse import stat_lines

    calls = []
    series = stat_lines.StatLines._series
    with monkeypatch.context() as m:
        if not batched:
            m.setattr(stat_lines, "_WORDINGS", ())
        m.setattr(stat_lines.StatLines, "_series", lambda self, *a: calls.append(1) or series(self, *a))
        scanner = LogScanner()
        scanner.start_source("x")
        data = path if isinstance(path, bytes) else path.read_bytes()
        for block in logs.read_blocks(io.BytesIO(data)):
            scanner.feed_block(block)
        scanner.finish()
        found = scanner.stats.metrics()
    return {"stats": dataclasses.asdict(scanner.stats), "metrics": found and dataclasses.asdict(found)}, len(calls)


def test_stat_lines_read_in_batches_give_what_feed_line_gives(generated, monkeypatch) -> None:
    """Every fixture log, the corpus, the stat-line fixtures and the generated busy logs: the same
    counts, peaks, sums (to the last bit) and quoted lines with and without the batch."""
    batches = 0
    for path in FIXTURE_LOGS + STAT_LOGS + generated:
        batched, n = _stat_facts(path, monkeypatch, True)
        assert batched == _stat_facts(path, monkeypatch, False)[0], path.name
        batches += n
    assert batches > 10  # the busy logs were read in batches


@pytest.mark.parametrize("odd", _ODD)
def test_a_stat_line_the_batch_would_misread_sends_its_block_to_feed_line(odd, monkeypatch) -> None:
    fill = [(_DECODE if i % 3 else _PREFILL) if "Avg prompt" not in odd[:30] and "APIServer" not in odd else _VLLM for i in range(40)]
    lines = [line.format(s=i % 60, r=i % 7, q=i % 5, k=(i * 7) % 99) for i, line in enumerate(fill)]
    lines.insert(17, odd.format(s=17, r=3, q=2, k=95))
    data = ("\n".join(lines) + "\n").encode()
    batched, n = _stat_facts(data, monkeypatch, True)
    assert n == (odd in _ODD[-_READ_ALIKE:])  # an odd line's block was read line by line
    assert batched == _stat_facts(data, monkeypatch, False)[0]
    assert batched["stats"]["samples"] >= 40
    clean = ("\n".join(lines[:17] + lines[18:]) + "\n").encode()
    assert _stat_facts(clean, monkeypatch, True)[1] == 1  # without it, the batch reads the block


def test_repeats_held_back_count_on_their_event_and_quote_its_last_line() -> None:
    """A run of preemption warnings is read as its last line plus a count; when that last line is
    the event's first line again, the event's last line is the one before, as line by line."""
    warn = ("WARNING 09-10 23:40:0{s} [scheduler.py:1560] Sequence group {g} is preempted by PreemptionMode.RECOMPUTE mode "
            "because there is not enough KV cache space. total_num_cumulative_preemption={n}\n")
    runs = {  # the same digit counts: one template
        "ends on another line": [(1, 17, 52), (2, 93, 61), (3, 44, 70), (4, 12, 98)],
        "ends on its first line": [(1, 17, 52), (2, 93, 61), (3, 44, 70), (1, 17, 52)],
    }
    for name, lines in runs.items():
        # a serving server (else each line between may say it is up: none is held back)
        text = b"INFO 09-10 23:39:59 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 3 reqs\n"
        text += b"".join(warn.format(s=s, g=g, n=n).encode() + b"INFO 09-10 23:40:00 [loggers.py:87] Finished request x.\n"
                         for s, g, n in lines)
        facts, served = {}, 0
        for templates in (False, True):
            scanner = LogScanner(templates=templates)
            scanner.start_source("x")
            scanner.feed_block(text)
            facts[templates], served = _facts(scanner.finish()), scanner.templates.served
        assert facts[True] == facts[False], name
        (event,) = facts[True]["events"]
        assert event["count"] == 4
        if name == "ends on another line":  # the third line was held back: only the second and the last were served
            assert served == 2 and event["last_line_no"] == 8 and event["last_line"].endswith("=98")
        else:  # the last one quotes the first: the held-back line before it was read after all, and is the last line
            assert served == 3 and event["last_line_no"] == 6 and event["last_line"].endswith("=70")


@pytest.mark.parametrize(("name", "tool"), _tools(), ids=[name for name, _ in _tools()])
def test_the_tool_hands_over_the_starts_of_the_lines_holding_a_literal(name, tool, tmp_path) -> None:
    """rg reports lines (at their starts), grep matches (at the literal): the scanner gets the same
    line starts from both, ascending and each once, a line holding two literals or one twice included,
    with their line numbers; a set searched case-sensitively (the stat lines') only where its literal is
    in that casing."""
    text = (b"INFO ok\n"
            b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"  # both literals
            b"INFO serving\n"
            b"ERROR x ERROR y\n"  # one literal twice
            b"error at the end, no newline")
    path = tmp_path / "x.log"
    path.write_bytes(text)
    prefilter = xp.ExternalPrefilter(tool, [(["cuda out of memory", "error"], True), (["ERROR"], False)])
    try:
        hits = prefilter.search(str(path))
        found = hits.take(text)
        hits.close()
    finally:
        prefilter.close()
    assert found == (([8, 93, 109], [2, 4, 5]), ([93], [4]))


def _templated_and_not(text: bytes) -> tuple[dict, LogScanner]:
    """The facts with and without the template cache (asserted equal), and the scanner that used it."""
    found = {}
    for templates in (False, True):
        scanner = LogScanner(templates=templates)
        scanner.start_source("x")
        scanner.feed_block(text)
        found[templates] = _facts(scanner.finish())
    assert found[True] == found[False]
    return found[True], scanner


# a start-up line of 100+ characters (kept in case the next line continues it), and a line the prefilter passes only after it
LONG = (b"INFO 09-10 23:50:21 [core.py:214] init engine (profile, create kv cache, warmup model) took 141.56 seconds, "
        b"with 4 workers on 2 of the nodes\n")
SHORT = b"INFO 09-10 23:50:25 [launcher.py:44] Route: /v1/models, Methods: GET\n"


def test_a_line_after_a_long_one_is_served_unless_it_completes_its_message() -> None:
    """A line kept for a hard-wrap (a message of 100+ characters) no longer makes the next one a full
    parse: the next one is served by its plan, and learned from, unless the two halves are one message."""
    facts, scanner = _templated_and_not(LONG + SHORT + LONG + SHORT)
    assert scanner.templates.served == 2  # the second long line and the second route line, after it
    first = b"ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV ca\n"
    rest = b"che (16864). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
    facts, scanner = _templated_and_not(rest + b"\n" + first + rest)  # the plan of `rest` alone is learned first
    (event,) = facts["events"]
    assert event["values"] == {"max_seq_len": 32768, "kv_tokens": 16864} and event["line_no"] == 3
    assert event["lines"] == [(first[:-1] + rest[:-1]).decode()]


# vLLM 0.8.4's request log (shared/real/vllm-startup/v0.8.4-v1-deepseek-r1-tp16-ray-2nodes-stats.txt, line 342): a
# line of 700+ characters no rule explains, so each is kept in case the next line continues it
REQUEST = ("INFO 04-16 10:35:13 [logger.py:39] Received request chatcmpl-{id:032x}: prompt: '<｜begin▁of▁sentence｜>In every "
           "output, response using the following format:\\n<think>\\n{{reasoning_content}}\\n</think>\\n\\n{{content}}<｜User｜>"
           "请讲个笑话。<｜Assistant｜>', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
           "repetition_penalty=1.0, temperature=0.6, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
           "bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens={max_tokens}, min_tokens=0, "
           "logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
           "truncate_prompt_tokens=None, guided_decoding=None, extra_args=None), prompt_token_ids: None, lora_request: None, "
           "prompt_adapter_request: None.\n")


def test_a_run_of_long_lines_costs_each_line_a_bounded_search(monkeypatch) -> None:
    """A run of long lines no rule explains (a request log, a cascade's long messages): each is kept
    in case the next continues it, and the kept message was once the whole run so far, so the rules
    searched every line before each one (n^2 / 2 characters: a log of them took minutes). The message
    kept stops at lines.WRAP_MAX: the characters handed to the rules grow with the lines, counted here."""
    searched: list[int] = []
    match = scan._match
    monkeypatch.setattr(scan, "_match", lambda text: searched.append(len(text)) or match(text))

    def run(n: int) -> int:
        searched.clear()
        scanner = LogScanner()
        scanner.start_source("requests.log")
        scanner.feed_block("".join(REQUEST.format(id=i, max_tokens=64 + i) for i in range(n)).encode())
        scanner.finish()
        return sum(searched)

    line = len(REQUEST)
    short, long = run(100), run(400)
    assert short > 100 * line  # halves were joined and searched (the test sees the rejoin it bounds)
    assert max(searched) <= WRAP_MAX + line and long <= 400 * 2 * (WRAP_MAX + line)
    assert long <= 4.5 * short  # four times the lines, about four times the characters (not sixteen)


def test_a_line_longer_than_wrap_max_is_not_rejoined_with_the_next(monkeypatch) -> None:
    """SGLang's `server_args=ServerArgs(...)` line (3,000 characters, fixtures' 0.4.3 start-up) was kept
    for a hard-wrap and searched again joined with the line after it, at every start of a crash loop:
    the rules now see no text longer than the longest line of the start-up."""
    header = shapes._real(shapes.SGLANG_HEADER).encode()
    searched: list[int] = []
    match = scan._match
    monkeypatch.setattr(scan, "_match", lambda text: searched.append(len(text)) or match(text))
    scanner = LogScanner()
    scanner.start_source("sglang.log")
    scanner.feed_block(header * 3)
    scanner.finish()
    longest = max(len(line) for line in header.splitlines())
    assert longest > WRAP_MAX and max(searched) <= longest


def test_a_line_of_no_message_is_served_by_an_empty_plan() -> None:
    """A Ray worker's tag alone (`(RayWorkerWrapper pid=1273) `, its message printed empty) has an empty
    template: it ends a hard-wrap and does nothing else, without its prefixes peeled again."""
    empty = b"\x1b[1;36m(EngineCore_0 pid=1159)\x1b[0;0m \x1b[36m(RayWorkerWrapper pid=%d)\x1b[0m \n"
    facts, scanner = _templated_and_not(b"".join(LONG + empty % pid for pid in (1273, 1274, 1275)))
    assert scanner.templates.served == 4 and facts["events"] == []  # the empty line ended the hard-wrap: SHORT was not read
    plan = scanner.templates.plan(empty % 9999)
    assert plan is not None and plan.empty


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [(r"HTTP 429", "HTTP 200", "HTTP abc"), (r"running: [1-9]", "running: 0", "running: x"), (r"[^0]x", "0x", "x"),
     (r"(?<!\d)5\d\d\b", "x 200", "x 20"), (r"(?P<n>\d+) of 8(?!0)", "3 of 50", "3 of x"), (r"(?i:code)\s*5\d\d", "CODE 404", "code ok")],
)
def test_the_relaxed_form_matches_any_digits_where_the_pattern_names_some(pattern: str, matches: str, misses: str) -> None:
    import re

    from llm_doctor.logparse import relaxed

    wider = relaxed.pattern(re.compile(pattern))
    assert wider is not None and tc.digit_blind(wider)
    assert wider.search(matches) and not re.search(pattern, matches)
    assert not wider.search(misses)


def test_no_relaxed_form_where_accepting_more_can_make_a_match_fail() -> None:
    import re

    from llm_doctor.logparse import relaxed

    assert [relaxed.pattern(re.compile(p)) for p in (r"(a)\1", r"(?>5|5x)y", r"5++", r"(a)?(?(1)5|6)")] == [None] * 4


def test_a_pattern_that_cannot_match_a_template_is_not_tried_again_on_its_lines() -> None:
    """"decode" holds the literal "code" of failures.CLIENT_SIDE's `(?:error|status|HTTP|code)\\s*5\\d\\d`,
    but no digits follow it on a tqdm redraw of the CUDA graph capture: its plan keeps no check of it
    (it was searched again on every redraw of a start-up)."""
    from llm_doctor.logparse import failures as fl

    line = b"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  33%|###3      | 27/83 [00:56<01:35,  1.71s/it]\n"
    _, scanner = _templated_and_not(line + line.replace(b"27/83", b"28/83"))
    plan = scanner.templates.plan(line)
    assert scanner.templates.served == 1
    assert plan is not None and fl.CLIENT_SIDE not in [c.pattern for c in plan.checks]


def test_a_line_s_number_is_its_count_of_newlines_from_any_numbered_line() -> None:
    """LineNumbers counts from the nearest line it knows (the last asked, a line a search numbered,
    looked up by bisect): every answer, asked in any order, is the block's own newline count."""
    block = b"".join(b"line %d %s\n" % (i, b"x" * (i % 7)) for i in range(200))
    starts = [0] + [i + 1 for i in range(len(block) - 1) if block[i] == ord("\n")]
    first = 41
    known = ((starts[5::17], [first + i for i in range(5, 200, 17)]), (starts[3::40], [first + i for i in range(3, 200, 40)]))
    for table in ((), known):
        numbers = LineNumbers(block, first, table)
        for i in [199, 0, 150, 151, 6, 5, 120, 22, 199, 3, 44, 43]:
            assert numbers.at(starts[i]) == first + i


def test_the_memos_change_no_fact(generated, monkeypatch) -> None:
    """The scanner's exact memos (the peeled line, the patterns asked before the rules, the rules, setup facts, the
    phase tracker's move, the failure reader's line signal and classify) give what computing each again gives:
    the same facts on every fixture log and the generated crash loops, whose restarts repeat their lines byte for byte."""
    paths = sorted((ROOT / "fixtures" / "logs").glob("*.log")) + generated
    for memo in (scan._peeled, scan._shape, scan.fl._classify_memo):
        memo.cache_clear()
    remembered = [_scan(path, templates=True)[0] for path in paths]
    # the crash loops' restarts were served from the memos: each traceback line peeled once, each rank's exception classified once
    assert scan._peeled.cache_info().hits > 2 * scan._peeled.cache_info().misses
    assert scan.fl._classify_memo.cache_info().hits > scan.fl._classify_memo.cache_info().misses
    peel = scan._peeled.__wrapped__
    for name, plain in (("_peeled", peel), ("_shape", scan._shape_of), ("_shape_long", scan._shape_of),
                        ("_match_memo", scan.chains.match), ("_match_long", scan.chains.match),
                        ("_extract_memo", scan.st.extract), ("_extract_long", scan.st.extract),
                        ("_moved", scan._tracker_move), ("_moved_long", scan._tracker_move)):
        monkeypatch.setattr(scan, name, plain)
    monkeypatch.setattr(scan.fl, "_line_signal", scan.fl.line_signal)
    monkeypatch.setattr(scan.fl, "_long_signal", scan.fl.line_signal)
    monkeypatch.setattr(scan.fl, "_classified", scan.fl.classify)
    for path, facts in zip(paths, remembered, strict=True):
        assert _scan(path, templates=True)[0] == facts, path.name


class _Expired:
    """A deadline already past: the reading stops after the first block."""

    def expired(self) -> bool:
        return True

    def remaining(self) -> float:
        return 0.0


def test_a_traceback_the_deadline_cuts_is_no_failure_of_the_log() -> None:
    """The first block ends inside a traceback. Cut there by the deadline, the traceback is not read as an
    exception (its exception line is in the part not read); a log that ends there does report one."""
    tb = b'Traceback (most recent call last):\n  File "/app/serve.py", line 12, in main\n    load()\n'
    head = b"INFO ok\n" * ((logs.BLOCK - len(tb) - 64) // 8) + tb
    data = head + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" * 2
    collector = logs.LogCollector(Facts(), _Expired(), tool=None)  # type: ignore[arg-type]
    assert not collector.add_stream("cut.log", io.BytesIO(data))
    cut = collector.finish()
    assert cut.bytes_read == len(head) and cut.cut_run == 0
    assert [e for e in cut.events if e.values.get("cut")] == []
    ended = logs.LogCollector(Facts(), Deadline(60), tool=None)
    assert ended.add_stream("ended.log", io.BytesIO(head))
    assert [e.values["frame"] for e in ended.finish().events if e.values.get("cut")] == ["serve.py:12 in main"]
