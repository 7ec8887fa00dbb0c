"""Every flag a fix or plan change prints reads back, through the same parser that reads the
user's launch command, into the field it is meant to set — for every engine that has the knob."""

from __future__ import annotations

import pytest

from llm_doctor.engine_args import parse_command
from llm_doctor.engine_flags import FLAGS, KNOB_FIELDS, KV_HALF, command, kv_half, setting

LAUNCH = {
    "vllm": "vllm serve org/model",
    "sglang": "python -m sglang.launch_server --model-path org/model",
    "tgi": "text-generation-launcher --model-id org/model",
    "llamacpp": "llama-server -m model.gguf",
    "trtllm": "trtllm-serve org/model",
    "lmdeploy": "lmdeploy serve api_server org/model",
}
VALUES = {"tp": 2, "pp": 2, "dp": 2, "max_seqs": 48, "mem": 0.83, "batched_tokens": 4096, "ctx": 8192,
          "quant": "awq"}  # fmt: skip

# every knob that sets a field, in every engine whose launch command engine_args reads
CASES = [(kind, engine) for kind, table in FLAGS.items() if kind in KNOB_FIELDS for engine in table if engine in LAUNCH]


@pytest.mark.parametrize(("kind", "engine"), CASES, ids=[f"{k}-{e}" for k, e in CASES])
def test_each_printed_flag_sets_its_field(kind: str, engine: str) -> None:
    value = KV_HALF[engine] if kind == "kv_dtype" else VALUES[kind]
    cfg = parse_command(f"{LAUNCH[engine]} {setting(kind, engine, value)}")
    assert cfg.engine == engine
    assert getattr(cfg, KNOB_FIELDS[kind]) == value


def test_tgi_concurrency_is_one_flag_everywhere() -> None:
    # the flag a memory plan and a perf check print for TGI's running-batch cap is the one the parser reads
    assert setting("max_seqs", "tgi", 32) == "--max-batch-size 32"
    assert parse_command("text-generation-launcher --model-id m --max-batch-size 32").max_num_seqs == 32


def test_command_leaves_out_knobs_the_engine_lacks() -> None:
    assert command("sglang", ("tp", 2), ("dp", 2)) == "--tp 2 --dp 2"
    assert command("tgi", ("tp", 2), ("dp", 2)) == "--num-shard 2"
    assert command("ollama", ("tp", 2)) is None
    assert command("", ("tp", 4)) == "--tensor-parallel-size 4"  # engine unknown: vLLM's spelling


def test_kv_half_in_each_engine() -> None:
    assert kv_half("llamacpp") == "-ctk q8_0 -ctv q8_0"
    assert kv_half("sglang") == "--kv-cache-dtype fp8_e5m2"
    assert kv_half("") == "--kv-cache-dtype fp8"
    assert kv_half("trtllm") is None
