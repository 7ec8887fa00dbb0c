"""Engine command lines and start-up log dumps -> EngineConfig, with the engines' defaults.

Command lines are the forms users paste in the trackers (several copied from the corpus); logs
are real start-up logs in fixtures/engine_args/ (sources in the sidecars)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_doctor.engine_args import apply_hardware_defaults, parse_command, parse_log_args
from llm_doctor.facts import Facts
from llm_doctor.facts.deployment import EngineConfig

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "engine_args"
GIB = 1024**3


def log(name: str) -> str:
    return (FIX / f"{name}.log").read_text(errors="replace")


def test_vllm_serve_flags_both_spellings_booleans_and_negation() -> None:
    cfg = parse_command(
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 --max-model-len 131072 "
        "--gpu_memory_utilization=0.95 --no-enable-prefix-caching --enforce-eager --kv-cache-dtype fp8 "
        "--api-key sk-secret-123456"
    )
    assert (cfg.engine, cfg.model, cfg.tensor_parallel_size, cfg.max_model_len) == (
        "vllm",
        "meta-llama/Llama-3.1-70B-Instruct",
        4,
        131072,
    )
    assert cfg.gpu_memory_utilization == 0.95 and cfg.kv_cache_dtype == "fp8"
    assert cfg.enable_prefix_caching is False and cfg.enforce_eager is True
    assert cfg.api_key_set is True and "sk-secret" not in repr(Facts(deployment=cfg).to_dict())
    assert cfg.sources["tensor_parallel_size"] == "cmdline"
    # defaults the user did not type, marked as such
    assert (cfg.block_size, cfg.sources["block_size"]) == (16, "default")
    assert (cfg.pipeline_parallel_size, cfg.port, cfg.max_num_seqs) == (1, 8000, 256)


def test_vllm_api_server_with_env_prefix_and_human_readable_lengths() -> None:
    cfg = parse_command(
        "CUDA_VISIBLE_DEVICES=0,1 python -m vllm.entrypoints.openai.api_server \\\n --model /m --tp 2 --max-model-len 32K"
    )
    assert (cfg.engine, cfg.model, cfg.tensor_parallel_size, cfg.max_model_len) == ("vllm", "/m", 2, 32768)
    assert cfg.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert parse_command(["vllm", "serve", "x", "--max-model-len", "32k"]).max_model_len == 32000


def test_vllm_corpus_command_with_double_space_value() -> None:
    # From the corpus: "--gpu_memory_utilization  0.9" with two spaces and a trailing boolean flag.
    cfg = parse_command(
        "python -m vllm.entrypoints.openai.api_server --model /data/coding/model-671b-MS/dir "
        "--tensor-parallel-size 2 --max-model-len 8192 --trust-remote-code --gpu_memory_utilization  0.9"
    )
    assert (cfg.tensor_parallel_size, cfg.max_model_len, cfg.trust_remote_code) == (2, 8192, True)
    assert cfg.gpu_memory_utilization == 0.9 and cfg.sources["gpu_memory_utilization"] == "cmdline"


def test_sglang_prefix_alias_equals_and_inverted_boolean() -> None:
    cfg = parse_command(
        "python3 -m sglang.launch_server --model meta-llama/Llama-4-Scout-17B-16E-Instruct --tp-size=4 "
        "--host=0.0.0.0 --mem-fraction-static=0.95 --context-length=196608 --enable-multimodal --disable-radix-cache"
    )
    assert (cfg.engine, cfg.model, cfg.tensor_parallel_size) == (
        "sglang",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        4,
    )
    assert (cfg.max_model_len, cfg.gpu_memory_utilization, cfg.enable_prefix_caching) == (196608, 0.95, False)
    assert cfg.extra == {"--enable-multimodal": ""}


def test_sglang_mem_fraction_default_follows_tp_size() -> None:
    cfg = parse_command("python -m sglang.launch_server --model-path m --tp 8")
    assert cfg.gpu_memory_utilization is None
    resolved = apply_hardware_defaults(cfg, "NVIDIA H100 80GB HBM3", 80 * GIB)
    assert resolved.gpu_memory_utilization == 0.81 and resolved.sources["gpu_memory_utilization"] == "default"
    small = apply_hardware_defaults(
        parse_command("python -m sglang.launch_server --model-path m"), "L4", 22 * GIB
    )
    assert (small.gpu_memory_utilization, small.max_num_batched_tokens) == (0.88, 2048)


def test_vllm_hardware_defaults_depend_on_gpu() -> None:
    cfg = parse_command("vllm serve m")
    h100 = apply_hardware_defaults(cfg, "NVIDIA H100 80GB HBM3", 80 * GIB)
    a100 = apply_hardware_defaults(cfg, "NVIDIA A100-SXM4-80GB", 80 * GIB)
    assert (h100.max_num_seqs, h100.max_num_batched_tokens) == (1024, 8192)
    assert (a100.max_num_seqs, a100.max_num_batched_tokens) == (256, 2048)
    typed = apply_hardware_defaults(parse_command("vllm serve m --max-num-seqs 64"), "H100", 80 * GIB)
    assert typed.max_num_seqs == 64


def test_tgi_llamacpp_trtllm_ollama() -> None:
    tgi = parse_command(
        "text-generation-launcher --model-id x --num-shard 2 --max-total-tokens 8192 --quantize awq"
    )
    assert (tgi.engine, tgi.tensor_parallel_size, tgi.max_model_len, tgi.quantization) == (
        "tgi",
        2,
        8192,
        "awq",
    )
    assert tgi.gpu_memory_utilization == 1.0
    llama = parse_command("llama-server -m a.gguf -fa -ctk q8_0 -c 32768 -ngl 99 --port 8081")
    assert (llama.engine, llama.model, llama.max_model_len, llama.n_gpu_layers) == (
        "llamacpp",
        "a.gguf",
        32768,
        99,
    )
    assert (llama.kv_cache_dtype, llama.port, llama.extra) == ("q8_0", 8081, {"-fa": ""})
    trt = parse_command("trtllm-serve serve meta-llama/x --tp_size 8")
    assert (trt.engine, trt.model, trt.tensor_parallel_size, trt.gpu_memory_utilization) == (
        "trtllm",
        "meta-llama/x",
        8,
        0.9,
    )
    oll = parse_command("OLLAMA_HOST=0.0.0.0:1234 ollama serve")
    assert (oll.engine, oll.host, oll.port) == ("ollama", "0.0.0.0", 1234)


def test_docker_image_wrapper() -> None:
    cfg = parse_command(
        "docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest --model mistralai/Mistral-7B-v0.1"
    )
    assert (cfg.engine, cfg.model) == ("vllm", "mistralai/Mistral-7B-v0.1")


def test_bad_input_never_raises() -> None:
    assert parse_command("").engine == ""
    assert parse_command("ls -la").unknown_flags == ["<no known engine command found>"]
    cfg = parse_command("vllm serve m --max-model-len lots --tensor-parallel-size")
    assert cfg.max_model_len is None and len(cfg.unknown_flags) == 2
    assert parse_command("vllm serve 'unbalanced --tp 2").engine == "vllm"
    assert parse_log_args("\x00\xff garbage").engine == ""


def test_log_v1_non_default_args_and_config_line_hardwrapped() -> None:
    cfg = parse_log_args(log("v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped"))
    assert (cfg.engine, cfg.engine_version, cfg.engine_generation) == ("vllm", "0.10.1.1", "V1")
    assert (cfg.model, cfg.max_model_len, cfg.gpu_memory_utilization) == ("Qwen2-7B-Instruct", 16384, 0.5)
    assert cfg.sources["max_model_len"] == "log" and cfg.sources["block_size"] == "default"


def test_log_with_ansi_codes_quantization_and_tp() -> None:
    cfg = parse_log_args(log("v0.10.1.1-v1-tp4-ray-4nodes-gptoss120b-ansi"))
    assert (cfg.model, cfg.tensor_parallel_size, cfg.quantization, cfg.gpu_memory_utilization) == (
        "gpt-oss-120b",
        4,
        "mxfp4",
        0.8,
    )


def test_log_v0_namespace_and_config_line() -> None:
    cfg = parse_log_args(log("v0.5.2-v0-medusa-specdecode-stats"))
    assert (cfg.engine_version, cfg.engine_generation) == ("0.5.2", "V0")
    assert (cfg.max_model_len, cfg.gpu_memory_utilization, cfg.max_num_seqs) == (4096, 0.8, 128)
    assert cfg.enable_prefix_caching is False and cfg.unknown_flags == []
    # V0 without chunked prefill schedules max(max_model_len, 2048) tokens a step
    assert cfg.max_num_batched_tokens == 4096


def test_log_truncated_namespace_falls_back_to_config_line() -> None:
    cfg = parse_log_args(log("v0.2.7-era-v0-awq-mixtral-startup-stats"))
    assert (cfg.model, cfg.max_model_len, cfg.dtype, cfg.engine_generation) == (
        "TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ",
        32768,
        "float16",
        "V0",
    )


def test_log_sglang_server_args() -> None:
    cfg = parse_log_args(log("sglang-0.4.3-tp2-startup-kv-cache-allocated"))
    assert (cfg.engine, cfg.model, cfg.tensor_parallel_size) == (
        "sglang",
        "/data1/model_checkpoint/DeepSeek-R1-Distill-Qwen-14B",
        2,
    )
    assert cfg.gpu_memory_utilization == 0.87 and cfg.sources["gpu_memory_utilization"] == "log"


def test_log_tgi_args_struct_and_derived_defaults() -> None:
    cfg = parse_log_args(log("tgi-2.2.0-launcher-startup-llama31-8b-args-download-shard"))
    assert (cfg.engine, cfg.model, cfg.port) == ("tgi", "meta-llama/Meta-Llama-3.1-8B-Instruct", 80)
    # "Default `max_total_tokens` to 4096", "Default `max_batch_prefill_tokens` to 4145"
    assert (cfg.max_model_len, cfg.max_num_batched_tokens) == (4096, 4145)


def test_merge_fills_gaps_and_evidence_beats_defaults() -> None:
    from_cmd = parse_command("vllm serve m --max-model-len 8192")
    from_log = parse_log_args(log("v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped"))
    merged = from_cmd.merge(from_log)
    assert merged.max_model_len == 8192 and merged.sources["max_model_len"] == "cmdline"
    assert merged.gpu_memory_utilization == 0.5 and merged.sources["gpu_memory_utilization"] == "log"
    assert merged.engine_version == "0.10.1.1"
    assert from_cmd.gpu_memory_utilization == 0.9  # merge returns a new config
    assert EngineConfig().merge(from_cmd).max_model_len == 8192


def test_round_trip_through_facts() -> None:
    cfg = parse_command("vllm serve m --tp 2")
    again = Facts.from_dict(Facts(deployment=cfg).to_dict()).deployment
    assert again == cfg


@pytest.mark.parametrize("flag", ["--max-num-seqs=0x10", "--gpu-memory-utilization=high"])
def test_invalid_values_become_unknown_flags(flag: str) -> None:
    cfg = parse_command(f"vllm serve m {flag}")
    assert cfg.unknown_flags and flag.split("=")[1] in cfg.unknown_flags[0]


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        ("vllm serve m --tensor-parallel-size 0 --max-model-len -5",
         ["tensor_parallel_size 0: must be at least 1", "max_model_len -5: must be at least 1"]),
        ("vllm serve m --gpu-memory-utilization 1.5", ["gpu_memory_utilization 1.5: must be above 0 and at most 1"]),
        ("vllm serve m --tensor-parallel-size abc", ["--tensor-parallel-size=abc (not a valid value)"]),
        ("python -m sglang.launch_server --model-path m --tp 0", ["tensor_parallel_size 0: must be at least 1"]),
        ("vllm serve m --max-model-len -1", []),  # vLLM: the model's maximum
        ("llama-server -m m.gguf -c 0 -ngl -1", []),  # llama.cpp: the model's context, every layer
        ("vllm serve m --tensor-parallel-size `4` --port 8000`", []),  # quoted in Markdown
    ],
)
def test_values_no_engine_accepts(command: str, refused: list[str]) -> None:
    from llm_doctor.engine_args import invalid_values

    assert invalid_values(parse_command(command)) == refused


def test_absurd_launch_command_file_is_config_invalid(tmp_path) -> None:
    from llm_doctor.collect.files import load_paths
    from llm_doctor.engine import Deadline, load_checks, run_checks, select

    cmd = tmp_path / "cmd.txt"
    cmd.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 0 --max-model-len -5\n")
    facts = load_paths([str(cmd)], Deadline(30))
    results = run_checks(facts, select(load_checks()), Deadline(30))
    assert not [r.id for r in results if r.status == "error"]  # TP 0 crashes no check
    findings = [f for r in results for f in r.findings]
    assert [f.code for f in findings] == ["load.config_invalid"]
    assert findings[0].evidence == ["launch command: tensor_parallel_size 0: must be at least 1",
                                    "launch command: max_model_len -5: must be at least 1"]


def test_llama_cpp_cli_binaries_old_and_new_are_llamacpp() -> None:
    # llama.cpp issue 842 (Windows build of the pre-rename `main`) and 9881 (`llama-cli`), as pasted
    old = parse_command(r'.\Release\main.exe  -m .\models\7B\ggml-model-f16.bin -p "Below I count" -c 1024 -t 24 -n 1024 -b 64')
    assert (old.engine, old.model, old.extra.get("-t")) == ("llamacpp", "./models/7B/ggml-model-f16.bin", "24")  # Windows separators read as /
    new = parse_command("./build/bin/llama-cli -m ../gguf_files/llama-3-8B.gguf -t 6912 --ctx-size 50 --n_predict 50")
    assert (new.engine, new.model, new.extra.get("-t")) == ("llamacpp", "../gguf_files/llama-3-8B.gguf", "6912")
    assert parse_command("python main.py -m foo").engine == ""  # a script called main is not llama.cpp


def test_lmdeploy_launch_command() -> None:
    """`lmdeploy serve api_server MODEL` (lmdeploy/cli/serve.py): the model is positional, --cache-max-entry-count is
    the KV share of the memory the weights leave free (0.8 by default), the port 23333."""
    cfg = parse_command("CUDA_VISIBLE_DEVICES=0,1,2,3 lmdeploy serve api_server /models/Mixtral-8x22B --tp 4 "
                        "--cache-max-entry-count 0.65 --session-len 32768 --quant-policy 8")
    assert (cfg.engine, cfg.model, cfg.tensor_parallel_size) == ("lmdeploy", "/models/Mixtral-8x22B", 4)
    assert (cfg.gpu_memory_utilization, cfg.max_model_len, cfg.kv_cache_dtype) == (0.65, 32768, "8")
    assert cfg.env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"} and not cfg.unknown_flags
    plain = parse_command("python -m lmdeploy.serve.openai.api_server ./internlm2-chat-7b --server-port 8000")
    assert (plain.engine, plain.model, plain.port, plain.gpu_memory_utilization) == ("lmdeploy", "./internlm2-chat-7b", 8000, 0.8)
    assert plain.sources["gpu_memory_utilization"] == "default"


def test_tgi_cuda_graphs_zero_is_eager_and_a_size_list_is_not():
    # text-generation-inference launcher/src/main.rs: `--cuda-graphs` "Specify the batch sizes to compute cuda graphs for.
    # Use "0" to disable. Default = "1,2,4,8,16,32"" (env CUDA_GRAPHS)
    assert parse_command("text-generation-launcher --model-id m --cuda-graphs 0").enforce_eager is True
    assert parse_command("text-generation-launcher --model-id m --cuda-graphs 1,2,4,8").enforce_eager is False
    assert parse_command("CUDA_GRAPHS=0 text-generation-launcher --model-id m").enforce_eager is True
    assert parse_command("text-generation-launcher --model-id m").is_set("enforce_eager") is False
