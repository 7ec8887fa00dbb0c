"""The line normaliser, the event grammar and the streaming scanner, on real line shapes."""

from __future__ import annotations

import gzip
import io
import tracemalloc

from llm_doctor.logparse.events import match, to_number
from llm_doctor.logparse.lines import normalise
from llm_doctor.logparse.scan import scan_lines


def test_prefixes_colour_and_crlf_are_peeled() -> None:
    raw = b"\x1b[36m(VllmWorker rank=1 pid=4321)\x1b[0m ERROR 05-12 10:11:12 [engine.py:123] RuntimeError: boom\r\n"
    line = normalise(1, raw)
    assert line.text == "RuntimeError: boom"
    assert line.process == "VllmWorker rank=1 pid=4321"
    assert line.level == "ERROR"


def test_lost_escape_bytes_and_collector_stamps() -> None:
    # from shared/corpus/d055.log (Ray Data on a log collector): ESC byte lost in the paste
    raw = "  | 2025-03-07T05:56:27.270Z | [36m(_MapWorker pid=13019)[0m ERROR 03-07 05:56:27 worker_base.py:581] RuntimeError: No CUDA GPUs are available"
    line = normalise(7, raw)
    assert line.text == "RuntimeError: No CUDA GPUs are available"
    assert line.process == "_MapWorker pid=13019"


def test_sglang_tgi_mpi_and_torch_rank_prefixes() -> None:
    assert normalise(1, "[2025-02-10 21:15:43 TP6] Scheduler hit an exception").text == "Scheduler hit an exception"
    assert normalise(1, "[2025-02-10 21:15:43 TP6] x").process == "TP6"
    assert normalise(1, "2024-09-03T04:36:57.491823Z  INFO text_generation_launcher: Starting shard").text == "Starting shard"
    assert normalise(1, "[1,0]<stderr>:NCCL WARN x").text == "NCCL WARN x"
    assert normalise(1, "[rank0]: torch.OutOfMemoryError: CUDA out of memory.").text.startswith("torch.OutOfMemoryError")


def test_python_logging_headers_of_lmdeploy_and_xinference_give_the_level() -> None:
    """LMDeploy's `%(asctime)s - %(name)s - %(levelname)s - [%(filename)s:%(lineno)d - ]` (lmdeploy/utils.py v0.6.0,
    v0.16.0) and Xinference's `%(asctime)s %(name)-12s %(process)d %(levelname)-8s` (xinference/deploy/utils.py
    v1.5.0): the level is the record's, so a DEBUG line that says "failed" is no failure."""
    line = normalise(1, "2024-07-23 14:18:00,452 - lmdeploy - ERROR - <Triton> test failed!")
    assert (line.level, line.text) == ("ERROR", "<Triton> test failed!")
    line = normalise(1, "2025-07-08 14:12:38,320 - lmdeploy - WARNING - archs.py:51 - Fallback to pytorch engine")
    assert (line.level, line.text) == ("WARNING", "Fallback to pytorch engine")
    line = normalise(1, "2024-06-28 10:39:03,418 xinference.core.worker 2281 ERROR    Failed to load model qwen2-instruct-1-0")
    assert (line.level, line.text) == ("ERROR", "Failed to load model qwen2-instruct-1-0")
    # lmdeploy/pytorch/engine/engine.py v0.16.0 logger.debug: a DEBUG record, not an engine failure
    facts, _ = scan_lines([b"2026-03-01 10:00:00,000 - lmdeploy - DEBUG - engine.py:812 - Memory trim failed: timeout\n"], "t.log")
    assert not [e for e in facts.events if e.fatal]


def test_healthy_llama_cpp_warnings_are_no_failure() -> None:
    """llama.cpp's LLAMA_LOG_WARN lines print no level (ggml-org/llama.cpp src/llama-context.cpp, src/llama-vocab.cpp as
    vendored in ollama/ollama v0.12.6): the load goes on without the feature."""
    lines = [b"llama_init_from_model: KV cache shifting is not supported for this context, disabling KV cache shifting\n",
             b"load: SPM vocabulary, but newline token not found: _try_copy! Using special_pad_id instead.\n",
             b"load: Mask token is missing in vocab, please reconvert model!\n"]
    facts, _ = scan_lines(lines, "t.log")
    assert not [e for e in facts.events if e.fatal], [(e.kind, e.lines) for e in facts.events]


def test_a_request_without_a_model_is_its_shape_not_any_two_words() -> None:
    """FastAPI/pydantic's missing body field (vLLM's 400) and OpenAI's wording name the missing model; a line that
    only holds both words does not."""
    assert match("{'type': 'missing', 'loc': ('body', 'model'), 'msg': 'Field required'}")[0].kind == "client_model_missing_id"
    assert match("Error: Missing required parameter: 'model'.")[0].kind == "client_model_missing_id"
    assert match("load: Mask token is missing in vocab, please reconvert model!") is None


def test_invalid_utf8_never_raises() -> None:
    line = normalise(1, b"Capturing CUDA graph shapes: 91%|\xe2\x96 \xff\xfe done")
    assert "\ufffd" in line.text


def test_oom_numbers_are_converted_to_gib() -> None:
    rule, values = match(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 462.00 MiB. GPU 0 has a total capacity of 79.25 GiB "
        "of which 278.75 MiB is free. Including non-PyTorch memory, this process has 78.97 GiB memory in use."
    )  # type: ignore[misc]
    assert rule.kind == "cuda_oom"
    assert values == {"tried": 0.4512, "total": 79.25, "free": 0.2722, "this_process": 78.97}


def test_kv_capacity_wordings() -> None:
    _, v0 = match("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (16864).")  # type: ignore[misc]
    assert v0 == {"max_seq_len": 32768, "kv_tokens": 16864}
    assert to_number("1,192,160") == 1192160


def test_traceback_frame_is_no_http_status() -> None:
    assert match('File "/usr/lib/python3.12/site-packages/x.py", line 401, in run') is None


def _scan(text: str):
    return scan_lines(io.BytesIO(text.encode()).readlines(), "t.log")[0]


def test_phase_comes_from_the_traceback_frames() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/vllm/worker/model_runner.py", line 1, in capture_model\n'
        '  File "/torch/x.py", line 2, in forward\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    (oom,) = _scan(text).events
    assert oom.phase == "cuda_graph"


def test_restarts_split_runs_and_the_last_crash_is_judged() -> None:
    text = (
        "INFO 01-01 00:00:00 api_server.py:1] vLLM API server version 0.6.3\n"
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (8000).\n"
        "INFO 01-01 00:01:00 api_server.py:1] vLLM API server version 0.6.3\n"
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`\n"
    )
    facts = _scan(text)
    assert facts.runs == 2
    assert [(e.kind, e.run) for e in facts.events] == [("kv_cache_too_small", 0), ("no_kv_memory", 1)]


def test_repeated_rank_lines_are_counted_once() -> None:
    line = "[2025-03-07 21:49:45 TP{}] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.1919\n"
    facts = _scan("".join(line.format(i) for i in range(8)))
    assert len(facts.events) == 1 and facts.events[0].count == 8


def test_streaming_memory_stays_flat() -> None:
    """Scanning 16x more lines must not cost more memory than a small, fixed bound (75,000 lines
    more: a leak of one 8-byte pointer a line would already break the bound)."""
    noise = b"INFO 05-03 18:07:24 metrics.py:229] Avg prompt throughput: 0.0 tokens/s, Running: 0 reqs, GPU KV cache usage: 0.0%\n"
    crash = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n"

    def lines(n: int):
        for i in range(n):
            yield crash if i % 1000 == 0 else noise

    def peak(n: int) -> int:
        tracemalloc.start()
        scan_lines(lines(n))
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, big = peak(5_000), peak(80_000)
    assert big < small + 512 * 1024, (small, big)


def test_gzip_stream_reads_like_text(tmp_path) -> None:
    from llm_doctor.collect.logs import read_blocks

    path = tmp_path / "x.log.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"a\nb\nc")
    with gzip.open(path, "rb") as fh:
        assert b"".join(read_blocks(fh)) == b"a\nb\nc"


def test_blocks_end_on_line_boundaries_and_long_lines_are_cut(monkeypatch) -> None:
    from llm_doctor.collect import logs

    monkeypatch.setattr(logs, "BLOCK", 16)
    blocks = list(logs.read_blocks(io.BytesIO(b"0123456789\nabcdefghij\n" + b"x" * 40 + b"\nend")))
    assert all(b.endswith(b"\n") or len(b) >= 16 for b in blocks[:-1]), blocks  # only a too-long line is cut
    assert b"".join(blocks) == b"0123456789\nabcdefghij\n" + b"x" * 40 + b"\nend"
    assert max(len(b) for b in blocks) <= 32


def test_every_grammar_pattern_can_be_prefiltered() -> None:
    """Each rule requires literals (derived from its regex), and none of them is weak."""
    from llm_doctor.logparse import prefilter
    from llm_doctor.logparse.scan import GRAMMAR

    assert prefilter.weak(GRAMMAR) == []
    assert all(rule.literals for rule in __import__("llm_doctor.logparse.events", fromlist=["RULES"]).RULES)


def test_prefilter_literals_are_required_by_their_pattern() -> None:
    from llm_doctor.logparse.prefilter import factors

    assert factors(r"max seq len \((?P<n>\d+)\) is larger") == {f"max seq len ({d}" for d in "0123456789"}
    assert factors(r"^GPU (?P<idx>\d+): ") == {f"gpu {d}" for d in "0123456789"}
    assert factors(r"NCCL error|ncclSystemError") == {"nccl error", "ncclsystemerror"}
    # `http/` is in every access-log line: the factor is the status digit after the quote instead
    assert all('" ' in f for f in factors(r'"POST (?P<path>/\S*) HTTP/[\d.]+" (?P<status>[45]\d\d)'))  # type: ignore[union-attr]


def test_steady_state_noise_is_not_parsed() -> None:
    """Real stat/access/request lines are rejected before normalisation (the speed of big logs)."""
    from llm_doctor.logparse.prefilter import NOISE_SAMPLE
    from llm_doctor.logparse.scan import CANDIDATE

    for line in NOISE_SAMPLE:
        assert not any(rx.search(line.lower().encode()) for rx in CANDIDATE), line


def _facts_dict(facts) -> dict:
    import dataclasses

    d = dataclasses.asdict(facts)
    d.pop("sources")
    return d


def test_block_scan_equals_line_scan_on_every_fixture(monkeypatch) -> None:
    """The fast path (blocks, prefilter on the whole block) finds exactly what the line path finds,
    also when blocks cut the log in many places."""
    from pathlib import Path

    from llm_doctor.collect import logs
    from llm_doctor.logparse.scan import LogScanner

    for path in sorted((Path(__file__).resolve().parents[1] / "fixtures" / "logs").glob("*.log")):
        # small blocks, but none smaller than a line (a longer line is cut, and counts as two)
        monkeypatch.setattr(logs, "BLOCK", max(1024, 1 + max(map(len, path.read_bytes().split(b"\n")))))
        by_line = _facts_dict(scan_lines(io.BytesIO(path.read_bytes()).readlines(), path.name)[0])
        scanner = LogScanner()
        scanner.start_source(path.name)
        with open(path, "rb") as fh:
            for block in logs.read_blocks(fh):
                scanner.feed_block(block)
        assert _facts_dict(scanner.finish()) == by_line, path.name


def test_hard_wrapped_line_is_joined_even_when_the_second_half_has_no_literal() -> None:
    text = (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV ca\n"
        "che (16864). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
    )
    (event,) = _scan(text).events
    assert event.values == {"max_seq_len": 32768, "kv_tokens": 16864}


def test_block_scan_memory_stays_flat() -> None:
    from llm_doctor.logparse.scan import LogScanner

    noise = (b"(APIServer pid=1) INFO 05-03 18:07:24 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
             b"Running: 0 reqs, GPU KV cache usage: 0.0%\n") * 5000
    crash = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n"

    def peak(blocks: int) -> int:
        tracemalloc.start()
        scanner = LogScanner()
        scanner.start_source("x")
        for _ in range(blocks):
            scanner.feed_block(noise + crash)
        scanner.finish()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, big = peak(2), peak(24)  # 110,000 lines more: one 8-byte pointer a line would break the bound
    assert big < small + 512 * 1024, (small, big)


def test_ollama_cpu_fallback_and_cgo_crash() -> None:
    """Ollama's own wordings: its discovery line before it falls back to the CPU (the shape of
    app/server/server_test.go), and a Go crash in its C++ runner (llm/status.go errorPrefixes)."""
    facts = _scan('time=2025-07-01T17:59:51.470Z level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"\n'
                  "signal arrived during cgo execution\n")
    assert [e.kind for e in facts.events] == ["gpu_not_visible", "crash_signal"]


def test_go_slog_heads_are_peeled_and_their_level_kept() -> None:
    # corpus/z030.log (Ollama's scheduler): the record's head goes, msg= and error= stay
    raw = ('time=2025-01-10T22:05:24.824+08:00 level=ERROR source=sched.go:455 msg="error loading llama server" '
           'error="llama runner process has terminated: GGML_ASSERT(hparams.n_swa > 0) failed"')
    line = normalise(1, raw)
    assert line.text.startswith('msg="error loading llama server" error="llama runner process')
    assert line.level == "ERROR"
    # logrus writes the time quoted and the level in lower case
    line = normalise(1, 'time="2024-05-01T10:00:00Z" level=error msg="pull model manifest: file does not exist"')
    assert (line.level, line.text) == ("ERROR", 'msg="pull model manifest: file does not exist"')
    # an INFO record is an INFO line (not a failure for its words)
    assert normalise(1, 'time=2024-05-01T10:00:00.000Z level=INFO source=routes.go:1 msg="Listening on 127.0.0.1:11434"').level == "INFO"


def test_a_slog_message_is_read_as_a_line_of_its_own() -> None:
    from llm_doctor.logparse import chains

    # anchored wordings (a `^Killed`, an error enum) are found inside msg="..." too
    assert chains.inner_message('msg="Killed" pid=12') == ("Killed", "Go slog message")
