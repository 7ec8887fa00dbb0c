"""A launch command followed by the engine's own log records is a start (doctor/logparse/scan.py
_launch_went_on): a paste of `vllm serve ...` and the workers' INFO lines, with neither the API
server's header nor a ready line, is a start-up that never finished, never an all-clear; the same
paste that ends in the engine's ready line stays quiet. The record lines are the engines' own
(vLLM's gpu_model_runner "Graph capturing finished in %.0f secs, took %.2f GiB", SGLang's
model_runner "Load weight end. type=%s, dtype=%s, avail mem=%.2f GB, mem usage=%.2f GB.", its
http_server "The server is fired up and ready to roll!", llama.cpp's tools/server "main: server is
listening on %s - starting the main loop"), as the fixtures hold them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_doctor.logparse.scan import scan_lines

ROOT = Path(__file__).resolve().parents[1]

VLLM = """\
VLLM_USE_V2_MODEL_RUNNER=1 vllm serve Qwen/Qwen2-7B-Instruct --served-model-name qwen -tp 4
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: 60.44 GiB
(EngineCore_0 pid=1812) INFO 09-04 01:04:32 [gpu_model_runner.py:2708] Graph capturing finished in 3 secs, took 0.50 GiB
"""
VLLM_UP = "(APIServer pid=1671) INFO:     Application startup complete.\n"
SGLANG = """\
python -m sglang.launch_server --model-path Qwen/Qwen2-7B-Instruct --tp 2
[2025-03-10 16:21:21 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=24.71 GB, mem usage=14.00 GB.
"""
SGLANG_UP = "[2025-03-10 16:21:40] The server is fired up and ready to roll!\n"
LLAMA_UP = "llama-server -m model.gguf -ngl 99\nmain: server is listening on http://0.0.0.0:8085 - starting the main loop\n"
STOPPED = "the last start (start 1) never logged that the server was ready"


def analyze_json(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "llm_doctor", "analyze", str(path), "--format", "json"], capture_output=True,
                          cwd=ROOT, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return json.loads(proc.stdout)


@pytest.mark.parametrize("text", [VLLM, SGLANG])
def test_a_launch_and_the_engines_records_with_no_ready_line_is_no_all_clear(tmp_path: Path, text: str) -> None:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    report = analyze_json(path)
    assert report["status"] == "warn"
    (f,) = report["findings"]
    assert (f["code"], f["check"]) == ("load.unrecognized_failure", "doctor.coverage")
    assert f"the log has {len(text.splitlines())} lines; {STOPPED}" in f["evidence"]
    assert {"summary": "Read the end of the full log, and the kernel's log for a kill (an OOM kill leaves no line in the engine's log)",
            "command": "dmesg -T | grep -i -E 'killed process|out of memory'"} in f["fixes"]


@pytest.mark.parametrize("text", [VLLM + VLLM_UP, SGLANG + SGLANG_UP, LLAMA_UP])
def test_a_launch_whose_engine_says_it_is_up_stays_quiet(tmp_path: Path, text: str) -> None:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    report = analyze_json(path)
    assert report["status"] == "ok", report["findings"]
    assert report["findings"] == []


def scan(text: str):
    return scan_lines(text.encode().splitlines(keepends=True))[0]


def test_a_launch_followed_by_prose_only_is_no_start() -> None:
    facts = scan("vllm serve Qwen/Qwen2-7B-Instruct -tp 4\nand then it just hangs, nothing else is printed\n")
    assert (facts.started, facts.ready) == (False, False)


def test_a_launch_followed_by_its_engines_record_is_a_start() -> None:
    facts = scan(VLLM)
    assert (facts.started, facts.ready, facts.engine) == (True, False, "vllm")
    assert scan(VLLM + VLLM_UP).ready is True
