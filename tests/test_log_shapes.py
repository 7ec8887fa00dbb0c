"""The benchmark's generated logs have the shapes the issue asks for (issue #10): the line kinds of a
busy server, restarts, and the crash last, so a scan figure measured on them means something. Only
the shape is checked here; speed is for bench/log_scan.py, never for a test."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("log_shapes", ROOT / "bench" / "log_shapes.py")
assert _spec and _spec.loader
shapes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shapes)

SIZE = 512 * 1024
VLLM_KINDS = {
    "stat": r"\[loggers\.py:\d+\] Engine 000: Avg prompt throughput: [\d.]+ tokens/s",
    "access": r'INFO:     [\d.]+:\d+ - "POST /v1/chat/completions HTTP/1\.1" 200 OK$',
    "received": r"\[logger\.py:39\] Received request chatcmpl-[0-9a-f]{32}: prompt: ",
    "added": r"\[async_llm\.py:228\] Added request chatcmpl-[0-9a-f]{32}\.$",
    "finished": r"Finished request chatcmpl-[0-9a-f]{32}\.$",
    "preemption": r"WARNING .* is preempted by PreemptionMode\.RECOMPUTE mode .* total_num_cumulative_preemption=\d+$",
    "start-up": r"Initializing a V1 LLM engine \(v0\.10\.1\.1\)",
}


def generated(shape: str, tmp_path: Path, size: int = SIZE) -> list[str]:
    path = shapes.write(shape, tmp_path / f"{shape}.log", size)
    assert path.stat().st_size >= size
    return path.read_text(encoding="utf-8").splitlines()


def count(lines: list[str], pattern: str) -> int:
    rx = re.compile(pattern)
    return sum(1 for line in lines if rx.search(line))


def ends_with_crash(lines: list[str], crash_file: Path, first: str) -> bool:
    text = crash_file.read_text(encoding="utf-8")
    crash = text[text.index(first):].splitlines()
    return lines[-len(crash):] == crash


@pytest.mark.parametrize("kind", sorted(VLLM_KINDS))
def test_busy_vllm_has_every_line_kind(kind: str, tmp_path: Path) -> None:
    assert count(generated("vllm-busy", tmp_path), VLLM_KINDS[kind]) > 0


def test_busy_vllm_restarts_twice_and_ends_in_the_cuda_oom(tmp_path: Path) -> None:
    lines = generated("vllm-busy", tmp_path)
    assert count(lines, VLLM_KINDS["start-up"]) == 3
    assert ends_with_crash(lines, shapes.VLLM_CRASH, "(VllmWorker")
    assert lines[-2].endswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 5 has a total "
                              "capacity of 79.14 GiB of which 72.75 MiB is free. Process 1001250 has 79.06 GiB memory in use. "
                              "Of the allocated memory 78.43 GiB is allocated by PyTorch, and 6.96 MiB is reserved by PyTorch "
                              "but unallocated. If reserved but unallocated memory is large try setting "
                              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                              "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    assert count(lines, "OutOfMemoryError") == 1


def test_busy_vllm_warns_on_about_three_percent_of_its_lines(tmp_path: Path) -> None:
    """The issue measured ~3% of a real busy server's lines passing the prefilter; preemption warnings carry it."""
    lines = generated("vllm-busy", tmp_path, 4 * SIZE)
    share = count(lines, VLLM_KINDS["preemption"]) / len(lines)
    assert 0.02 < share < 0.04


def test_worst_case_every_other_line_is_a_matching_warning(tmp_path: Path) -> None:
    lines = generated("vllm-worst", tmp_path)
    header = shapes.VLLM_HEADER.read_text(encoding="utf-8").count("\n")
    crash = shapes.VLLM_CRASH.read_text(encoding="utf-8")
    body = lines[header:-crash[crash.index("(VllmWorker"):].count("\n")]
    warned = [bool(re.search(VLLM_KINDS["preemption"], line)) for line in body]
    assert warned[1::2] == [True] * (len(body) // 2)
    assert not any(warned[0::2])
    assert ends_with_crash(lines, shapes.VLLM_CRASH, "(VllmWorker")


def test_busy_sglang_has_batch_and_access_lines_and_crashes_last(tmp_path: Path) -> None:
    lines = generated("sglang-busy", tmp_path)
    assert count(lines, r"^\[[\d: -]+ TP0\] Prefill batch\. #new-seq: \d+, #new-token: \d+") > 100
    assert count(lines, r"^\[[\d: -]+ TP0\] Decode batch\. #running-req: \d+, #token: \d+") > 100
    assert count(lines, r'^\[[\d: -]+\] INFO:     127\.0\.0\.1:\d+ - "POST /generate HTTP/1\.1" 200 OK$') > 100
    assert ends_with_crash(lines, shapes.SGLANG_CRASH, "Exception in ModelTpServer:")
    assert count(lines, "Exception in ModelTpServer:") == 1


def test_k8s_crash_loop_restarts_many_times_each_ending_in_the_crash(tmp_path: Path) -> None:
    lines = generated("k8s-crashloop", tmp_path)
    starts, crashes = count(lines, VLLM_KINDS["start-up"]), count(lines, "OutOfMemoryError")
    assert starts == crashes > 2
    assert lines[-1] == "Killed"
    assert ends_with_crash(lines, shapes.VLLM_CRASH, "(VllmWorker")
