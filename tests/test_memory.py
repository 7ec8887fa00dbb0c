"""The memory arithmetic against what real engines printed (table tests).

Each case: the model (doctor/data/models.json), the GPUs and flags of a real start-up log, and the
figure the engine printed. From the engine's own available-KV-memory line the KV token count must
match within 1%; from the GPU total and flags alone (the `plan` path) within 10%.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from llm_doctor import memory
from llm_doctor.engine_args import parse_command
from llm_doctor.models import from_table
from llm_doctor.planning import cuda_total_bytes, lookup_gpu

GIB = 1024**3


def cuda_total(gpu: str, nvml_mib: float | None = None) -> int:
    """What the engine sees of a GPU: NVML's total less the driver reservation (doctor/data/gpus.json)."""
    return cuda_total_bytes(gpu, nvml_mib or lookup_gpu(gpu)[1])[0]


@dataclass
class Case:
    id: str
    source: str  # the log the numbers come from
    model: str
    command: str
    available_gib: float | None  # the engine's own "memory left for KV" figure, per GPU (min over ranks)
    printed_tokens: int
    gpu: str = ""
    gpu_nvml_mib: float = 0
    gpus: int = 1
    printed_concurrency: float | None = None


R = "/work/shared/real/vllm-startup/"
S = "/work/shared/real/other-engines/"
CASES = [
    Case("gqa-qwen2-7b-a100-gmu0.25", R + "v0.10.1.1-v1-1xA100-0.25gmu.txt", "Qwen/Qwen2-7B-Instruct",
         "vllm serve Qwen2-7B-Instruct --max-model-len 16384 --gpu-memory-utilization 0.25",
         5.01, 93872, "NVIDIA A100-SXM4-80GB", 81920, 1, 5.73),
    Case("gqa-qwen2-7b-a100-gmu0.5", R + "v0.10.1.1-v1-1xA100-qwen2-7b-hardwrapped.txt", "Qwen/Qwen2-7B-Instruct",
         "vllm serve Qwen2-7B-Instruct --max-model-len 16384 --gpu-memory-utilization 0.5",
         24.83, 464848, "NVIDIA A100-SXM4-80GB", 81920),
    Case("gqa-qwen2-7b-tp2-gmu0.25", R + "v0.10.1.1-v1-tp2-a100-0.25gmu.txt", "Qwen/Qwen2-7B-Instruct",
         "vllm serve Qwen2-7B-Instruct --max-model-len 16384 --gpu-memory-utilization 0.25 -tp 2",
         12.02, 450192, "NVIDIA A100-SXM4-80GB", 81920, 2),
    Case("gqa-qwen2-7b-tp2-gmu0.5", R + "v0.10.1.1-v1-tp2-a100-custom-allreduce-disabled-p2p.txt", "Qwen/Qwen2-7B-Instruct",
         "vllm serve Qwen2-7B-Instruct --max-model-len 16384 --gpu-memory-utilization 0.5 -tp 2",
         31.83, 1192160, "NVIDIA A100-SXM4-80GB", 81920, 2),
    Case("gqa-qwen2-7b-tp2-2nodes-a100-40gb", R + "v0.10.1.1-v1-tp2-ray-2nodes-a100-40gb.txt", "Qwen/Qwen2-7B-Instruct",
         "vllm serve Qwen2-7B-Instruct --max-model-len 16384 --gpu-memory-utilization 0.5 -tp 2",
         11.03, 412944, "NVIDIA A100-SXM4-40GB", 40960, 2),
    Case("sliding-gpt-oss-120b-tp4", R + "v0.10.1.1-v1-tp4-ray-4nodes-gptoss120b-ansi.txt", "openai/gpt-oss-120b",
         "vllm serve gpt-oss-120b --max-model-len 16384 --gpu-memory-utilization 0.8 -tp 4",
         45.32, 2640144, "NVIDIA A100-SXM4-80GB", 81920, 4, 284.25),
    Case("v0-gqa-llama-3.1-70b-tp8-h200", R + "v0.6.4.post1-v0-tp-llama70b-k8s-slow-load.txt", "meta-llama/Llama-3.1-70B-Instruct",
         "vllm serve /models/Meta-Llama-3.1-70B-Instruct -tp 8 --gpu-memory-utilization 0.95",
         107.35, 175884 * 16),
    # Sliding-window/hybrid model in V0: every layer gets a full-length cache (one uniform group).
    Case("v0-sliding-gemma-3-27b-tp4-a100-40gb", R + "v0.8.0rc3-v0-fallback-tp4-pcie-custom-allreduce-disabled.txt",
         "google/gemma-3-27b-it", "vllm serve /Gemma-3-27b -tp 4 --max-model-len 65536", 18.03, 9526 * 16),
    Case("mla-deepseek-r1-tp16-h800", R + "v0.8.4-v1-deepseek-r1-tp16-ray-2nodes-stats.txt", "deepseek-ai/DeepSeek-R1",
         "vllm serve /deepseek-r1 --max-model-len 32768 -tp 16 --max-num-batched-tokens 32768",
         None, 304704, "NVIDIA H800", 81559, 16),
]  # fmt: skip

SGLANG = [
    # (id, source, model, command, avail after weights GB, total at start GB, printed max_total_num_tokens, tol)
    ("sglang-gqa-mistral-7b", S + "sglang-0.3.x-2024-10-prefill-decode-near-full-kv.txt", "mistralai/Mistral-7B-v0.1",
     "python -m sglang.launch_server --model-path m --mem-fraction-static 0.88", 9.59, 23.16, 55807, 0.01),
    # The MLA case is 1.5% off: SGLang takes the minimum over all 16 ranks and the log shows 8 of them.
    ("sglang-mla-deepseek-r1-tp16", S + "sglang-0.4.3-deepseek-r1-tp8-startup-decode-batches.txt", "deepseek-ai/DeepSeek-R1",
     "python -m sglang.launch_server --model-path m --tp 16 --mem-fraction-static 0.7", 36.48, 76.94, 201681, 0.02),
    ("sglang-capped-by-max-total-tokens", S + "sglang-0.4.3-tp2-startup-kv-cache-allocated.txt",
     "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
     "python -m sglang.launch_server --model-path m --tp 2 --mem-fraction-static 0.87 --max-total-tokens 10240",
     24.71, 38.71, 10240, 0.0),
]  # fmt: skip


def setup(case: Case):
    model = from_table(case.model)
    assert model is not None, case.model
    return model, parse_command(case.command)


@pytest.mark.parametrize("case", [c for c in CASES if c.available_gib], ids=lambda c: c.id)
def test_kv_tokens_from_the_engines_available_memory_within_1pct(case: Case) -> None:
    model, cfg = setup(case)
    if "-v0-" in case.source:
        cfg.engine_generation = "V0"
    tokens = memory.kv_tokens_from_available(model, cfg, case.available_gib * GIB)
    assert tokens == pytest.approx(case.printed_tokens, rel=0.01)


@pytest.mark.parametrize("case", [c for c in CASES if c.gpu], ids=lambda c: c.id)
def test_kv_tokens_from_gpu_total_and_flags_within_10pct(case: Case) -> None:
    model, cfg = setup(case)
    total = cuda_total(case.gpu, case.gpu_nvml_mib)
    result = memory.plan(model, total, case.gpus, cfg, gpu_name=case.gpu)
    assert result.fits and result.verdict == "ok"
    assert result.kv_cache_tokens == pytest.approx(case.printed_tokens, rel=0.10)


@pytest.mark.parametrize("case", [c for c in CASES if c.printed_concurrency], ids=lambda c: c.id)
def test_max_concurrency_matches_the_printed_line(case: Case) -> None:
    model, cfg = setup(case)
    got = memory.max_concurrency(model, cfg, case.printed_tokens, cfg.max_model_len)
    assert got == pytest.approx(case.printed_concurrency, abs=0.01)


@pytest.mark.parametrize("case", SGLANG, ids=lambda c: c[0])
def test_sglang_profile_max_num_token(case: tuple) -> None:
    _, _, name, command, avail, total, printed, tol = case
    model, cfg = from_table(name), parse_command(command)
    rest = (avail - total * (1 - cfg.gpu_memory_utilization)) * GIB
    assert memory.kv_tokens_from_available(model, cfg, rest) == pytest.approx(printed, rel=tol)


def test_kv_bytes_per_token_gqa_mla_replication() -> None:
    qwen, llama, ds = (
        from_table("Qwen/Qwen2-7B-Instruct"),
        from_table("meta-llama/Llama-3.1-70B-Instruct"),
        from_table("deepseek-ai/DeepSeek-V3"),
    )
    assert memory.kv_bytes_per_token(qwen, parse_command("vllm serve q")) == 2 * 28 * 4 * 128 * 2
    # 8 KV heads over TP=16: one head per GPU, replicated, not 0.5
    assert memory.kv_bytes_per_token(llama, parse_command("vllm serve l -tp 16")) == 2 * 80 * 1 * 128 * 2
    # MLA: one latent of 512 + 64 per layer, the same on every TP rank
    assert memory.kv_bytes_per_token(ds, parse_command("vllm serve d -tp 8")) == 61 * 576 * 2
    # the SGLang log's "K size: 0.47 GB" at 10240 tokens, TP=2, Qwen-14B-shaped model
    distill = from_table("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
    k_bytes = (
        memory.kv_bytes_per_token(
            distill, parse_command("python -m sglang.launch_server --model-path m --tp 2")
        )
        // 2
    )
    assert round(10240 * k_bytes / GIB, 2) == 0.47


def test_fp8_kv_cache_doubles_the_tokens_of_the_same_memory() -> None:
    # Not a printed figure: vLLM's page size halves with a 1-byte KV dtype (FullAttentionSpec).
    qwen = from_table("Qwen/Qwen2-7B-Instruct")
    auto = memory.kv_tokens_from_available(qwen, parse_command("vllm serve q"), 5.01 * GIB)
    fp8 = memory.kv_tokens_from_available(
        qwen, parse_command("vllm serve q --kv-cache-dtype fp8"), 5.01 * GIB
    )
    assert fp8 == pytest.approx(2 * auto, abs=16)


def test_weights_oom_explained_with_numbers_and_tp_change() -> None:
    llama = from_table("meta-llama/Llama-3.1-70B-Instruct")
    total = cuda_total("A100-80GB")
    result = memory.plan(llama, total, 4, parse_command("vllm serve m -tp 1 --max-model-len 8192"), "A100")
    assert (result.fits, result.verdict) == (False, "weights_oom")
    assert result.weights_gib_per_gpu == pytest.approx(131.4, abs=0.5)
    assert "131.4 GiB per GPU at TP=1" in result.reasons[0]
    commands = [c.command for c in result.changes]
    assert "--tensor-parallel-size 2" in commands


def test_kv_cache_insufficient_gives_the_max_model_len_that_fits() -> None:
    # Llama-3.1-8B at its full 131072 context on one L4: the weights fit, the context does not.
    llama = from_table("meta-llama/Llama-3.1-8B-Instruct")
    total = cuda_total("L4")
    cfg = parse_command("vllm serve meta-llama/Llama-3.1-8B-Instruct")
    result = memory.plan(llama, total, 1, cfg, "NVIDIA L4")
    assert result.verdict == "kv_cache_insufficient" and result.max_model_len == 131072
    by_flag = {c.flag: c.value for c in result.changes}
    assert int(by_flag["--max-model-len"]) == result.kv_cache_tokens // 16 * 16 < 131072
    fixed = memory.plan(
        llama, total, 1, parse_command(f"vllm serve m --max-model-len {by_flag['--max-model-len']}"), "L4"
    )
    assert fixed.fits and fixed.kv_cache_tokens == result.kv_cache_tokens
    too_long = int(by_flag["--max-model-len"]) + 16
    assert not memory.plan(
        llama, total, 1, parse_command(f"vllm serve m --max-model-len {too_long}"), "L4"
    ).fits
    assert "--tensor-parallel-size" not in by_flag or by_flag["--tensor-parallel-size"] == "2"


def test_no_kv_cache_memory_when_weights_leave_nothing() -> None:
    qwen = from_table("Qwen/Qwen2-7B-Instruct")
    total = cuda_total("L4")
    result = memory.plan(qwen, total, 1, parse_command("vllm serve q --gpu-memory-utilization 0.67"), "L4")
    assert result.verdict == "no_kv_cache_memory" and result.kv_cache_tokens == 0
    util = next(c for c in result.changes if c.flag == "--gpu-memory-utilization")
    assert 0.67 < float(util.value) <= 0.95


def test_tgi_budgets_its_fraction_times_the_wiggle_room() -> None:
    # TGI's warmup sizes the KV cache under CUDA_MEMORY_FRACTION x TGI_WIGGLE_ROOM of the total
    llama = from_table("meta-llama/Llama-3.1-8B-Instruct")
    total = cuda_total("A100-80GB")
    default = memory.plan(llama, total, 1, parse_command("text-generation-launcher --model-id m"), "A100")
    assert default.budget_gib == pytest.approx(total * 1.0 * 0.90 / GIB, abs=0.01)
    env = parse_command("TGI_WIGGLE_ROOM=0.95 text-generation-launcher --model-id m --cuda-memory-fraction 0.8")
    assert memory.plan(llama, total, 1, env, "A100").budget_gib == pytest.approx(total * 0.8 * 0.95 / GIB, abs=0.01)
    docker_env = parse_command("CUDA_MEMORY_FRACTION=0.5 text-generation-launcher --model-id m")
    assert docker_env.gpu_memory_utilization == 0.5


def test_tp_larger_than_gpus_is_reported() -> None:
    qwen = from_table("Qwen/Qwen2-7B-Instruct")
    result = memory.plan(qwen, 80 * GIB, 2, parse_command("vllm serve q -tp 4"))
    assert result.verdict == "gpu_count" and not result.fits


def test_explain_weights_gives_the_numbers_a_crash_diagnosis_quotes() -> None:
    # Llama-3.1-70B bf16: 141,107,412,992 bytes in its safetensors index = 131.4 GiB.
    llama = from_table("meta-llama/Llama-3.1-70B-Instruct")
    total = cuda_total("A100-80GB")  # 81920 - 763 MiB reserved = 79.25 GiB
    text = memory.explain_weights(llama, parse_command("vllm serve m -tp 1"), total, 4)
    assert text.startswith("the weights need 131.4 GiB per GPU at TP=1; 4 GPU(s) give 71.3 GiB each")
    assert text.endswith("TP=2 needs 65.7 GiB per GPU and fits")
    fits = memory.explain_weights(llama, parse_command("vllm serve m -tp 2"), total, 2)
    assert "5.6 GiB is left" in fits
    one_l4 = memory.explain_weights(llama, parse_command("vllm serve m"), cuda_total("L4"), 1)
    assert one_l4.endswith("TP=8 needs 16.4 GiB per GPU and fits, which needs 8 GPUs (1 given)")
