"""The out-of-memory family told apart by what the engines print: where in the engine's life the
OOM happened (a traceback printed after the error line, a scheduler's step, TensorRT-LLM's
BufferManager), what PyTorch's numbers say (an allocation too small for a weight tensor, a process
holding more than the weight shard its model's name implies), and Ollama's refusal to load, with
the fix values computed from them. Every log line is verbatim from the public issue named above it."""

from __future__ import annotations

import pytest

from llm_doctor.models import from_name
from tests.analysis import assert_rank_one, findings_of

_V1_CORE = "(EngineCore pid=104)"

# (name, log lines, rank-1 code, a substring of the evidence, the first fix's exact command or None)
CASES = [
    # noonghunna/club-3090#58: the error quoted first, then vLLM V1's engine-core traceback, whose source line
    # calls run_busy_loop (the serving loop): a served step ran out, not the weights
    ("vllm-v1-title-then-busy-loop-traceback", [
        "[bug] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB "
        "of which 56.88 MiB is free",
        f"{_V1_CORE} Traceback (most recent call last):",
        f'{_V1_CORE}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1129, in run_engine_core',
        f"{_V1_CORE}     engine_core.run_busy_loop()",
    ], "load.runtime_oom", "phase: serving", "--max-num-seqs 128"),
    # vllm-project/vllm#15598: 2 MiB cannot be a weight tensor of a model that fills a 44.53 GiB card
    ("vllm-two-mib-on-a-full-card", [
        "[Bug]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 6 has a total capacity of 44.53 GiB "
        "of which 448.00 KiB is free.",
    ], "load.runtime_oom", "a 2.0 MiB allocation is below 1/1024 of the 44.53 GiB GPU", "--max-num-seqs 128"),
    # vllm-project/vllm#9356: an 11B fp16 model over TP 2 is 10.2 GiB a GPU; the process held 28.62 GiB
    ("vllm-11b-tp2-held-past-its-shard", [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.59 GiB. GPU 0 has a total capacity of 31.73 GiB of "
        "which 3.11 GiB is free. Including non-PyTorch memory, this process has 28.62 GiB memory in use.",
        "CUDA_VISIBLE_DEVICES=4,5 vllm serve /model/models/Llama-3.2-11B-Vision-Instruct -tp 2 --dtype float16 --enforce-eager "
        "--max-model-len 32768",
    ], "load.runtime_oom", "the process held 28.62 GiB, more than its 10.2 GiB weight shard", "--max-num-seqs 128"),
    # pegainfer-project/pegainfer#358: a scheduler's execution step is a served batch
    ("scheduler-execution-step-oom", [
        'WARN openinfer_qwen3_4b::scheduler: Execution step failed: Alloc failed: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")',
    ], "load.runtime_oom", "phase: serving", None),
    # triton-inference-server/tensorrtllm_backend#281: TensorRT-LLM's BufferManager allocates after the engine's weights
    # were deserialized (runtime/tllmRuntime.cpp): the runtime buffers sized by the build limits
    ("trtllm-buffer-manager-oom", [
        "Model 'tensorrt_llm' loading failed with error: version 1 is at UNAVAILABLE state: Internal: unexpected error when "
        "creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): "
        "out of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)",
    ], "load.runtime_oom", "phase: profiling", None),
    # InternLM/lmdeploy#3557: the report says it runs out "when concurrency is high" (并发过多的时候)
    ("lmdeploy-turbomind-oom-under-concurrency", [
        "使用Turbomind启动服务，当并发过多的时候会导致OOM，然后服务直接自杀了",
        "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/core/allocator.cc:49",
    ], "load.runtime_oom", "phase: serving", None),
]


@pytest.mark.parametrize(("name", "lines", "code", "evidence", "command"), CASES, ids=[c[0] for c in CASES])
def test_oom_family(tmp_path, name: str, lines: list[str], code: str, evidence: str, command: str | None) -> None:
    assert_rank_one(tmp_path, name, lines, code, evidence, command)


def test_a_weight_sized_allocation_with_no_phase_leads_with_runtime(tmp_path) -> None:
    """vllm-project/vllm#11560's 462 MiB on a 79 GiB card is over 1/1024 of it: a weight tensor may be
    what failed, but nothing shows the weights loading, and an OOM is load.weights_oom only on
    positive evidence of it (codes.md). So runtime leads, the weights follow in the top 3."""
    log = tmp_path / "bare.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 462.00 MiB. GPU 0 has a total capacity "
                   "of 79.15 GiB of which 370.62 MiB is free.\n")
    found = findings_of(log)
    assert [f.code for f in found[:2]] == ["load.runtime_oom", "load.weights_oom"]
    assert "phase: not placed (no loader frame, start-up milestone or serving line around it)" in found[0].evidence
    assert found[0].fixes[0].command == "--max-num-seqs 128"


def test_a_loader_frame_is_not_overruled_by_a_small_allocation(tmp_path) -> None:
    """The loader's frame (vllm-project/vllm@v0.6.3 model_loader/loader.py) placed the OOM in the weights:
    a small failed tensor there is still the weights' (the card filled while they loaded)."""
    log = tmp_path / "loader.log"
    log.write_text('  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/model_loader/loader.py", line 403, in load_model\n'
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 6 has a total capacity of 44.53 GiB "
                   "of which 448.00 KiB is free.\n")
    assert findings_of(log)[0].code == "load.weights_oom"


def test_ollama_refusal_gives_the_shortfall(tmp_path) -> None:
    """continuedev/continue#11478: Ollama's pre-load check (llm/server.go) names host RAM; the model
    is too large for the machine beside it, and both fixes state the computed 0.4 GiB shortfall."""
    log = tmp_path / "ollama.log"
    log.write_text('Model: Llama 3.1 8B\nProvider: ollama\nStatus Code: 500\n'
                   '"model requires more system memory (2.7 GiB) than is available (2.3 GiB)"\n')
    findings = findings_of(log)
    assert [f.code for f in findings][:2] == ["load.host_oom", "load.weights_oom"]
    assert "needs 2.7 GiB of system memory, 2.3 GiB available: 0.4 GiB short" in findings[0].evidence
    assert findings[0].fixes[0].summary.startswith("Free 0.4 GiB of RAM")
    assert findings[1].fixes[0].summary.startswith("Use a model or quantization at least 0.4 GiB smaller")


@pytest.mark.parametrize(("name", "params", "quant"), [
    ("/model/models/Llama-3.2-11B-Vision-Instruct", 11e9, ""),
    ("mistralai/Mixtral-8x7B-v0.1", 56e9, ""),  # the experts' product: an upper bound
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", 30e9, ""),  # "A3B" is the active count
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", 7e9, "awq"),
    ("HuggingFaceTB/SmolLM-135M", 135e6, ""),
])
def test_parameter_count_from_the_name(name: str, params: float, quant: str) -> None:
    model = from_name(name)
    assert model is not None and model.params == int(params) and model.quant_method == quant


@pytest.mark.parametrize("name", ["microsoft/Phi-3-mini-128k-instruct", "deepseek-ai/DeepSeek-V3", "vllm-0.6.3",
                                  # the active count of a MoE (vllm-project/vllm#16712: Scout is 109B in all)
                                  "meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Maverick-17B-128E-Instruct-FP8"])
def test_a_name_without_a_count_sizes_nothing(name: str) -> None:
    assert from_name(name) is None


def test_a_kv_cache_near_full_in_every_stat_line_is_pressure(tmp_path) -> None:
    """sgl-project/sglang#26248: the full-attention pool at 0.92 in every decode line, nothing queued
    yet: "near full" (codes.md perf.kv_cache_pressure), never an all-clear; the cap on admissions is
    computed from the 6 running at 92 % (the next long request would be retracted)."""
    line = ("[03:51:{:02d}] Decode batch, #running-req: 6, #full token: 2435072, full token usage: 0.92, swa token usage: 0.09, "
            "gen throughput (token/s): 24.33")
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(line.format(s) for s in (54, 59)) + "\n")
    top = findings_of(log)[0]
    assert top.code == "perf.kv_cache_pressure"
    assert any("full in 2 of 2 stat lines" in e for e in top.evidence), top.evidence
    assert "--max-running-requests 5" in " ".join(f.command or "" for f in top.fixes)
