"""r-perf8: a perf warning rests on a measured figure that is bad against a floor, or on the engine's own statement;
a flag named in advice, an improvement's old figure, a setting whose cost is not shown stay quiet (info at most).
Problem samples keep their code and exact values."""

from __future__ import annotations

import pytest

from llm_doctor import guessed
from llm_doctor.facts import Facts
from llm_doctor.facts.stated import WordedGuess
from llm_doctor.findings import GUESS
from tests.analysis import only, scenario

LOUD = ("warn", "error")


def loud(found) -> list[str]:
    return [f.code for f in found if f.code.startswith("perf.") and f.severity in LOUD]


# vLLM V1 stat line (vllm/v1/metrics/loggers.py LoggingStatLogger.log: "Engine %03d: Avg prompt throughput: %.1f tokens/s,
# Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%")
def _v1(usage: float, waiting: int) -> str:
    return (f"INFO 06-01 10:00:00 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
            f"880.0 tokens/s, Running: 24 reqs, Waiting: {waiting} reqs, GPU KV cache usage: {usage}%, Prefix cache hit rate: 41.0%\n")


@pytest.mark.parametrize("text", [
    "If the crash comes back, try running with --enforce-eager to rule out CUDA graphs as the cause.\n",
    "SGLang docs: --disable-cuda-graph disables CUDA graphs; only use it for debugging.\n",
    "We no longer pass --enforce-eager; CUDA graphs are captured now and decode is 30% faster.\n",
])
def test_a_graph_flag_named_in_a_sentence_sets_nothing(tmp_path, text):
    assert loud(scenario(tmp_path, notes_txt=text)) == []


def test_the_graph_flag_on_a_launch_line_is_still_the_setting(tmp_path):
    f = only(scenario(tmp_path, notes_txt="python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct --enforce-eager\n"),
             "perf.eager_mode")
    assert f.severity == "warn" and f.fixes[0].summary.startswith("Drop --enforce-eager")


@pytest.mark.parametrize("text", [
    "With this PR, TTFT drops from 2.1 s to 180 ms and throughput is 2x higher than before.\n",
    "Mean TTFT: 2450 ms -> 310 ms (7.9x) with the fix.\n",
    "Before this change TTFT was 3.2 s on long prompts; after it is 0.4 s.\n",
    "TTFT is about 120 ms and ITL 9 ms at concurrency 8 on one H100.\n",
])
def test_a_latency_now_in_range_is_quiet(tmp_path, text):
    assert loud(scenario(tmp_path, notes_txt=text)) == []


def test_the_new_latency_of_a_change_is_the_one_judged(tmp_path):
    f = only(scenario(tmp_path, notes_txt="After the upgrade TTFT went from 300 ms to 6.5 s at 8 concurrent requests.\n"),
             "perf.high_latency")
    assert f.severity == "warn" and f.title.startswith("TTFT 6.5 s")


def test_a_full_cache_with_the_queue_printed_empty_is_a_note(tmp_path):
    f = only(scenario(tmp_path, vllm_log=_v1(93.1, 0) + _v1(94.5, 0)), "perf.kv_cache_pressure")
    assert f.severity == "info" and f.title == "KV cache 94% full"


def test_a_full_cache_with_requests_waiting_warns(tmp_path):
    f = only(scenario(tmp_path, vllm_log=_v1(96.0, 7) + _v1(97.2, 9)), "perf.kv_cache_pressure")
    assert f.severity == "warn" and "9 waiting" in f.title


@pytest.mark.parametrize(("cmd", "severity"), [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.95\n", "info"),  # 4 GiB left of 80 GB
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --mem-fraction-static 0.95\n", "info"),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.99\n", "warn"),  # 0.8 GiB of 80 GB
])
def test_a_memory_share_warns_only_where_the_headroom_left_is_short(tmp_path, cmd, severity):
    f = only(scenario(tmp_path, cmd_txt=cmd), "perf.memory_overcommitted")
    assert f.severity == severity


def test_prefix_caching_turned_off_for_a_benchmark_is_a_note(tmp_path):
    # vllm PR 21793's serve command: --no-enable-prefix-caching to measure prefill
    f = only(scenario(tmp_path, cmd_txt="vllm serve meta-llama/Llama-3.1-8B-Instruct --no-enable-prefix-caching\n"),
             "perf.prefix_caching_off")
    assert f.severity == "info" and f.evidence == ["enable_prefix_caching=False (cmdline)"]


def test_llama_server_at_its_own_default_of_one_slot_is_a_note(tmp_path):
    # llama.cpp common/common.h: int32_t n_parallel = 1; // number of parallel sequences to decode
    f = only(scenario(tmp_path, cmd_txt="./llama-server -m model.gguf -ngl 99 -c 8192 --parallel 1\n"), "perf.batching_limited")
    assert f.severity == "info"


def test_a_perf_guess_from_words_alone_is_a_note():
    """doctor/guessed.py: words alone name a perf code at info; the same guess of a load code stays a warning."""
    def guess(code: str) -> list:
        said = WordedGuess(code, 3, ["TTFT", "slow"], "issue.md:1", "TTFT is slow on every request")
        return guessed.findings(Facts(guessed=[said]), [])
    assert [(f.code, f.severity, f.tier) for f in guess("perf.high_latency")] == [("perf.high_latency", "info", GUESS)]
    assert [(f.code, f.severity) for f in guess("load.weights_oom")] == [("load.weights_oom", "warn")]
