"""`llm-doctor plan`: the CLI, its JSON contract (facts.plan) and the load.memory_fit findings."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest


def plan(*args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "llm_doctor", "plan", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"},
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_json_carries_the_plan_numbers_for_a_command_line() -> None:
    rc, out = plan(
        "--gpu", "A100-80GB", "--format", "json", "--",
        "vllm", "serve", "Qwen/Qwen2-7B-Instruct", "--max-model-len", "16384", "--gpu-memory-utilization", "0.5",
    )  # fmt: skip
    assert rc == 0, out
    report = json.loads(out)
    p = report["facts"]["plan"]
    assert p["fits"] is True and p["weights_gib_per_gpu"] == pytest.approx(14.18, abs=0.05)
    # vLLM printed 464,848 tokens for this deployment (real/vllm-startup/v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped.txt)
    assert p["kv_cache_tokens"] == pytest.approx(464848, rel=0.05)
    assert p["max_concurrency"] == pytest.approx(464848 / 16384, rel=0.05)
    assert report["checks"][0]["id"] == "load.memory_fit" and report["checks"][0]["status"] == "pass"


def test_weights_oom_is_rank_1_with_the_tp_fix() -> None:
    rc, out = plan(
        "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "A100-80GB", "--gpus", "4",
        "--tp", "1", "--max-model-len", "8192", "--format", "json",
    )  # fmt: skip
    assert rc == 1, out
    report = json.loads(out)
    first = report["findings"][0]
    assert first["code"] == "load.weights_oom" and first["rank"] == 1
    assert "131.4 GiB per GPU at TP=1" in first["title"]
    assert {"summary": first["fixes"][0]["summary"], "command": "--tensor-parallel-size 2"} in first["fixes"]
    assert report["facts"]["plan"]["fits"] is False


def test_kv_cache_insufficient_with_computed_max_model_len_in_markdown() -> None:
    rc, out = plan("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "L4", "--format", "markdown")
    assert rc == 1, out
    assert (
        "`load.kv_cache_insufficient`" in out
        and "Memory budget per GPU" in out
        and "X over budget" not in out
    )
    line = next(x for x in out.splitlines() if "--max-model-len " in x)
    assert 16000 < int(line.rsplit("--max-model-len ", 1)[1].rstrip("`")) < 131072


def test_sglang_command_line() -> None:
    rc, out = plan(
        "--gpu-memory", "24", "--format", "json", "--",
        "python", "-m", "sglang.launch_server", "--model-path", "mistralai/Mistral-7B-v0.1", "--context-length", "8192",
    )  # fmt: skip
    p = json.loads(out)["facts"]["plan"]
    assert rc == 0 and p["engine"] == "sglang" and p["kv_cache_tokens"] > 40000


def test_unknown_model_offline_is_a_finding_and_unknown_gpu_a_usage_error() -> None:
    rc, out = plan("--model", "nobody/NoSuchModel-7B", "--gpu", "H100", "--offline", "--format", "json")
    assert rc == 1 and json.loads(out)["findings"][0]["code"] == "load.model_files"
    rc, out = plan("--model", "Qwen/Qwen2-7B-Instruct", "--gpu", "Z9000")
    assert rc == 2 and "unknown GPU" in out


def test_tgi_launcher_line_shards_and_context_from_its_flags() -> None:
    rc, out = plan(
        "--gpu", "L4", "--gpus", "2", "--format", "json", "--",
        "text-generation-launcher", "--model-id", "meta-llama/Llama-3.1-8B-Instruct",
        "--num-shard", "2", "--max-total-tokens", "8192",
    )  # fmt: skip
    p = json.loads(out)["facts"]["plan"]
    assert rc == 0, out
    assert (p["engine"], p["tensor_parallel_size"], p["max_model_len"]) == ("tgi", 2, 8192)
    # 8 KV heads over 2 shards: 2 x 32 layers x 4 heads x 128 x 2 bytes
    assert p["kv_bytes_per_token"] == 65536 and p["fits"] is True


def test_vllm_fp8_kv_cache_flag_halves_bytes_per_token() -> None:
    _, auto = plan("--gpu", "L4", "--format", "json", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                   "--max-model-len", "8192")  # fmt: skip
    _, fp8 = plan("--gpu", "L4", "--format", "json", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                  "--max-model-len", "8192", "--kv-cache-dtype", "fp8")  # fmt: skip
    a, f = json.loads(auto)["facts"]["plan"], json.loads(fp8)["facts"]["plan"]
    assert (a["kv_bytes_per_token"], f["kv_bytes_per_token"]) == (131072, 65536)
    assert f["kv_cache_tokens"] == pytest.approx(2 * a["kv_cache_tokens"], abs=16)


@pytest.mark.parametrize(("gpu", "offered"), [("A100-40GB", False), ("L40S", True)])
def test_fp8_weights_are_offered_only_from_compute_capability_8_9(gpu: str, offered: bool) -> None:
    """Qwen2.5-32B in bf16 does not fit one 40-48 GB GPU; FP8 weights would, but an A100 (8.0)
    cannot run FP8, so it is told AWQ instead."""
    rc, out = plan("--model", "Qwen/Qwen2.5-32B-Instruct", "--gpu", gpu, "--gpus", "1", "--max-model-len", "4096",
                   "--format", "json")
    assert rc == 1, out
    report = json.loads(out)
    values = [c["value"] for c in report["facts"]["plan"]["changes"]]
    commands = " ".join(x["command"] or "" for f in report["findings"] for x in f["fixes"])
    assert ("fp8" in values) is offered and ("fp8" in commands) is offered, (values, commands)
    if not offered:
        assert "awq" in values


def test_tp_that_does_not_divide_the_heads_is_tp_invalid_not_fits() -> None:
    """Llama-3.1-8B has 32 heads and 8 KV heads: TP=3 is refused by vLLM, so it is no 'fits'."""
    rc, out = plan("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--tp", "3", "--gpus", "4",
                   "--format", "json")
    assert rc == 1, out
    report = json.loads(out)
    (first,) = report["findings"]
    assert first["code"] == "load.tp_invalid"
    assert first["title"] == "TP=3 does not divide the 32 attention heads and 8 KV heads evenly; valid TP sizes: 1, 2, 4, 8, 16, 32"
    assert first["fixes"][0]["command"] == "--tensor-parallel-size 4"  # the largest valid size on the 4 GPUs
    assert report["facts"]["plan"]["fits"] is False and report["facts"]["plan"]["verdict"] == "tp_invalid"


def test_more_pipeline_stages_than_layers_is_tp_invalid() -> None:
    rc, out = plan("--model", "Qwen/Qwen2-7B-Instruct", "--gpu", "H100", "--pp", "64", "--format", "json")
    assert rc == 1 and json.loads(out)["findings"][0]["title"] == "PP=64 is more pipeline stages than the model's 28 layers"


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--gpu-memory", "0"), ("--gpu-memory", "-3"), ("--tp", "0"), ("--pp", "-1"), ("--max-model-len", "0"),
     ("--gpu-memory-utilization", "1.5"), ("--gpu-memory-utilization", "0"), ("--max-num-seqs", "0")],
)
def test_absurd_plan_flags_are_usage_errors(flag: str, value: str) -> None:
    rc, out = plan("--model", "Qwen/Qwen2-7B-Instruct", flag, value)
    assert rc == 2, out
    assert f"Invalid value for '{flag}'" in out or f"/ '{flag}'" in out
    assert "Traceback" not in out


def test_absurd_values_in_the_engine_command_are_config_invalid() -> None:
    rc, out = plan("--gpu", "H100", "--format", "json", "--",
                   "vllm", "serve", "Qwen/Qwen2-7B-Instruct", "--tensor-parallel-size", "0", "--max-model-len", "-5")
    assert rc == 1, out
    (first,) = json.loads(out)["findings"]
    assert first["code"] == "load.config_invalid"
    assert first["evidence"] == ["launch command: tensor_parallel_size 0: must be at least 1",
                                 "launch command: max_model_len -5: must be at least 1"]


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit"])
def test_every_format_says_which_gpu_and_context_were_assumed(fmt: str) -> None:
    """No --gpu, --gpus or --max-model-len: the plan is for an H100 at the model's own maximum, and
    every format says so (the engine version too)."""
    import html

    rc, out = plan("--model", "Qwen/Qwen2-7B-Instruct", "--format", fmt)
    assert rc == 0, out
    out = html.unescape(out) if fmt == "html" else out
    for said in ("no GPU given (--gpu NAME or --gpu-memory GiB): planned for NVIDIA H100 80GB HBM3 (81559 MiB)",
                 "no GPU count given (--gpus N): as many as TP x PP = 1",
                 "context length not given: the model's maximum, 32768 tokens (max_position_embeddings)",
                 "engine version not given: vLLM 0.10's memory profile (V1)"):
        assert said in out, (fmt, said)


def test_given_gpu_and_context_are_not_assumptions() -> None:
    rc, out = plan("--model", "Qwen/Qwen2-7B-Instruct", "--gpu", "L4", "--gpus", "1", "--max-model-len", "4096",
                   "--format", "json")
    assumptions = json.loads(out)["facts"]["plan"]["assumptions"]
    assert not [a for a in assumptions if a.startswith(("no GPU", "context length not given"))], assumptions
    assert "engine version not given: vLLM 0.10's memory profile (V1)" in assumptions


def test_unknown_model_says_what_to_pass_and_draws_no_budget() -> None:
    rc, out = plan("--model", "nobody/NoSuchModel-7B", "--gpu", "H100", "--offline")
    assert rc == 1, out
    assert "0 x" not in out and "█" not in out
    assert "no plan: the model nobody/NoSuchModel-7B is unknown" in out
    for what in ("--model /path/to/model-folder", "config.json", "--gpu H100 --gpus 1 (or --gpu-memory GiB)"):
        assert what in out, what


def test_a_budget_that_leaves_no_headroom_gets_the_share_that_does() -> None:
    """0.99 of an H100 leaves less than the CUDA context and graphs need outside the budget: the
    fix is the largest share that frees the shortfall (computed, and it re-plans with headroom)."""
    model = ("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100", "--offline", "--format", "json")
    rc, out = plan(*model, "--gpu-memory-utilization", "0.99")
    report = json.loads(out)
    p = report["facts"]["plan"]
    (f,) = [f for f in report["findings"] if f["code"] == "perf.memory_overcommitted"]
    share = math.floor((p["budget_gib"] + p["headroom_gib"]) / p["gpu_total_gib"] * 100) / 100
    assert p["headroom_gib"] < 0 and f["fixes"][0]["command"] == f"--gpu-memory-utilization {share}"
    rc, out = plan(*model, "--gpu-memory-utilization", str(share))
    assert json.loads(out)["facts"]["plan"]["headroom_gib"] >= 0
