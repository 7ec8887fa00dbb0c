"""Perf problems stated in words (doctor/logparse/perf_prose.py): real sentences from public threads,
read by `llm-doctor analyze` on their own, judged by the perf check their numbers feed (code, evidence,
fix value) or reported as said (perf.stated); questions, advice and healthy numbers stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

from llm_doctor.logparse import perf_prose
from tests.analyze_json import analyze, check, fix_commands


def _paste(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "issue.md"
    path.write_text(text)
    return analyze(path)


def _finding(report: dict, code: str) -> dict:
    (found,) = [f for f in report["findings"] if f["code"] == code]
    return found



def test_kv_cache_near_full_with_requests_waiting_is_pressure(tmp_path):
    # https://github.com/vllm-project/vllm-ascend/issues/5859 (title)
    report = _paste(tmp_path, "[Bug]: KV cache usage接近100%时，TPOT激增四五倍，排队waiting机制是有效的，但这似乎无法保障服务性能\n")
    f = _finding(report, "perf.kv_cache_pressure")
    assert f["severity"] == "warn" and f["title"].startswith("KV cache 100% full")
    assert any("issue.md:1: [Bug]: KV cache usage接近100%" in e for e in f["evidence"])
    assert any("the reporter's statement" in e for e in f["evidence"])
    assert report["findings"][0]["code"] == "perf.kv_cache_pressure"


def test_kv_cache_full_without_its_queue_is_reported_as_said(tmp_path):
    # https://github.com/vllm-project/vllm/issues/1607
    report = _paste(tmp_path, "As the question showed, I meet some case that the output may be so long and the GPU KV cache usage "
                              "keeps increasing， and reaches 100%，then model don't genearate anything and don't recieve other request. "
                              "Finally, I only restart it\n")
    # a person's own "reaches 100%" is the state they complain of: the check judges it (no second, stated-only finding)
    (f,) = [f for f in report["findings"] if f["code"] == "perf.kv_cache_pressure"]
    assert f["severity"] == "warn" and f["title"] == "KV cache 100% full"
    assert any("GPU KV cache usage keeps increasing" in e for e in f["evidence"])
    assert fix_commands(f) == ["--kv-cache-dtype fp8"]
    assert check(report, "perf.kv_cache_metrics")["status"] == "warn"


def test_a_percent_then_cache_is_the_kv_cache_and_its_queue_counts(tmp_path):
    # https://github.com/vllm-project/vllm/issues/23444 (the title)
    report = _paste(tmp_path, "[Bug]: Hitting close to 100% cache causes spike in waiting and kills throughput\n")
    f = _finding(report, "perf.kv_cache_pressure")
    assert f["severity"] == "warn" and f["title"] == "KV cache 100% full"


def test_why_only_n_requests_states_the_full_cache_it_asks_about(tmp_path):
    # https://github.com/vllm-project/vllm/issues/14412
    report = _paste(tmp_path, "2. why  only  two request , kv cache is 100% ?\n")
    assert _finding(report, "perf.kv_cache_pressure")["severity"] == "warn"


def test_layers_said_to_be_offloaded_name_the_ones_left_on_the_cpu(tmp_path):
    # https://github.com/ollama/ollama/issues/5843
    report = _paste(tmp_path, "Currently when I am running gemma2 (using Ollama serve) on my device by default only 27 layers are "
                              "offloaded on GPU, but I want to offload all 43 layers to GPU\n")
    (f,) = [f for f in report["findings"] if f["code"] == "perf.low_gpu_util"]
    assert f["severity"] == "warn" and f["title"].startswith("16 of 43 layers run on the CPU")
    assert fix_commands(f) == ["PARAMETER num_gpu 43"]


def test_kv_cache_reading_below_full_stays_quiet(tmp_path):
    # https://github.com/llm-d/llm-d-autoscaling/issues/662
    report = _paste(tmp_path, "We see in the above experiment graph that we are clearly in saturation state (num_requests_waiting is "
                              "constantly growing),  the num_requests_running stabilized on ~20,  and the kv_cache_usage_perc "
                              "stabilized on just ~0.32 (32%), so in this scenario the KVCache will not trigger a saturation indication.\n")
    assert not [f for f in report["findings"] if f["code"] == "perf.kv_cache_pressure"]
    assert "32%" in check(report, "perf.kv_cache_metrics")["detail"]


def test_stated_ttft_is_judged_by_the_latency_threshold(tmp_path):
    # https://github.com/vllm-project/vllm/issues/8086 (a comment)
    report = _paste(tmp_path, "The same situation occurs when I reason about visual models. I compared it with transformers when ten "
                              "requests were sent concurrently.vLLM TTFT increased from 2s to 17s, and there was no obvious difference "
                              "between transformers and single request.\n")
    f = _finding(report, "perf.high_latency")
    assert f["severity"] == "warn" and f["title"].startswith("TTFT 17.0 s")
    assert any(e.startswith("mean TTFT 17.00 s (") and "TTFT increased from 2s to 17s" in e for e in f["evidence"])
    assert "--enable-prefix-caching --enable-chunked-prefill" in fix_commands(f)


def test_slow_first_token_in_words_is_info_with_the_metrics_to_get(tmp_path):
    # https://github.com/vllm-project/vllm/issues/9722
    report = _paste(tmp_path, "The request speed is very fast for a single request, but the performance is slow under concurrency, "
                              "especially the latency for the first token.\n")
    f = _finding(report, "perf.high_latency")
    assert f["severity"] == "info" and "stated in words" in f["evidence"][-1]
    assert "time_to_first_token" in fix_commands(f)[0]


def test_prefix_cache_hit_rate_zero_is_prefix_caching_off_with_the_flag(tmp_path):
    # https://github.com/vllm-project/vllm/issues/31920 (title)
    report = _paste(tmp_path, "[Bug]: Prefix cache hit rate remains 0 in multi-round conversation with history of identical prompts.\n")
    f = _finding(report, "perf.prefix_caching_off")
    assert f["title"] == "no repeated prompt prefix is read from the cache (hit rate 0%)"
    assert f["evidence"][0].endswith("issue.md:1: [Bug]: Prefix cache hit rate remains 0 in multi-round conversation with history of identical prompts")
    assert fix_commands(f) == ["--enable-prefix-caching"]


def test_prefix_caching_never_passed_said_in_words_is_info(tmp_path):
    # a launch script described, not pasted (the shape of corpus/z155, worded from vLLM's own flag)
    report = _paste(tmp_path, "Our launch script never passes `--enable-prefix-caching`, so every request re-prefills the full\n"
                              "prompt.\n")
    assert report["status"] == "info"
    f = _finding(report, "perf.prefix_caching_off")
    assert f["severity"] == "info" and "never passes `--enable-prefix-caching`" in f["evidence"][0]


def test_a_prefix_cache_that_never_hits_is_said_without_a_rate():
    for url, title in (
        ("https://github.com/ARahim3/mlx-dspark/issues/7",
         "Server prefix cache never hits (hits: 0) — TTFT does not improve on repeated identical requests"),
        ("https://github.com/bstnxbt/dflash-mlx/issues/19",
         "Multi-turn prompt cache never engages: TTFT for turn 2 = cold start (vs llama.cpp 7x speedup)"),
    ):
        (said,) = perf_prose.statements("t.md", title)
        assert (said.code, said.measures, said.text) == ("perf.prefix_caching_off", {}, title), url


def test_repeated_requests_reading_no_cached_tokens_are_a_zero_hit_rate():
    # Anthropic's usage.cache_read_input_tokens (anthropic-sdk-python types/usage.py), two identical calls
    text = ("call1 usage: {cache_creation_input_tokens: 2048, cache_read_input_tokens: 0, input_tokens: 2050}\n"
            "call2 usage: {cache_creation_input_tokens: 2048, cache_read_input_tokens: 0, input_tokens: 2050}\n")
    (said,) = perf_prose.statements("u.txt", text)
    assert (said.code, said.where, said.measures) == ("perf.prefix_caching_off", "u.txt:1", {"prefix_cache_hit_rate": 0.0})
    assert perf_prose.statements("u.txt", text.replace("cache_read_input_tokens: 0, input_tokens: 2050}\n", "cache_read_input_tokens: 2048, input_tokens: 2}\n", 1)) == []


def test_thermal_throttling_stated_is_judged_by_the_clocks_check(tmp_path):
    # https://github.com/jundot/omlx/issues/2689 (a comment)
    report = _paste(tmp_path, "- Additional ~18% drop attributed to GPU thermal throttling after 3h continuous load\n\n"
                              "This matches the 1368→743 MHz clock drop observed in the soak test.\n")
    f = _finding(report, "perf.gpu_throttled")
    assert f["severity"] == "warn" and f["title"] == "1 GPU(s) throttled: thermal"
    assert any("GPU thermal throttling after 3h continuous load" in e for e in f["evidence"])
    assert fix_commands(f) == ["nvidia-smi -i 0 -q -d TEMPERATURE,PERFORMANCE"]


def test_hardware_thermal_slowdown_names_its_gpu(tmp_path):
    # https://github.com/rammsguns/llm-rig/issues/97
    (said,) = perf_prose.statements("i.md", "A hardware thermal-slowdown flag asserted on GPU0 during the first 8k-prompt workload, "
                                            "on two consecutive samples 0.5 s apart, and the sweep aborted immediately without retry.")
    assert said.code == "perf.gpu_throttled" and said.gpu is not None
    assert (said.gpu.index, said.gpu.throttle_reasons) == (0, ["hw_thermal_slowdown"])


def test_power_cap_without_load_figures_is_reported_as_said(tmp_path):
    # https://github.com/l4rz/reverse-engineering-dell-idrac-to-get-rid-of-gpu-throttling/issues/3
    report = _paste(tmp_path, "However, when running at full load, frequency reduction and SW Power Cap will appear at about 240W.\n")
    f = _finding(report, "perf.gpu_throttled")
    assert f["severity"] == "info"  # the cap counts only near its limit (perf.clocks): the limit is not said
    assert fix_commands(f) == ["nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE"]


def test_not_active_reasons_state_no_throttling():
    # nvidia-smi -q's rows pasted into a sentence: https://github.com/kubeflow/kubeflow/issues/68 (a comment)
    assert perf_prose.statements("k.md", "| SW Power Cap | Not Active |\n| HW Slowdown | Not Active |\n") == []


def test_requests_served_one_at_a_time_are_batching_limited(tmp_path):
    report = _paste(tmp_path, (
        # https://github.com/vllm-project/vllm/issues/1707
        "Of course, I can send multiple seperate requests, but those are handled sequentially and do not benefit from speed "
        "improvements.\n\n"
        # https://github.com/EricLBuehler/mistral.rs/issues/2343 (title)
        "# Concurrent text-serving throughput does not scale above serial despite PagedAttention engaged (v0.9.0, H100, Llama-3.2-1B bf16)\n"))
    f = _finding(report, "perf.batching_limited")
    assert f["severity"] == "info" and f["title"].endswith("(2 statements)")
    assert [e.split("issue.md:")[1][:2] for e in f["evidence"][:2]] == ["1:", "3:"]
    assert "num_requests_(running|waiting)" in fix_commands(f)[0]
    for url, sentence in (
        ("https://github.com/mozilla-ai/llamafile/issues/183", "In server mode on my MacBook Pro M1, when I use the /completion "
         "API with two different prompts at once, the requests are handled sequentially. The second request waits until the first "
         "one finishes processing."),
        ("https://github.com/ggml-org/llama.cpp/issues/3693", "Currently, `./server` processes requests sequentially."),
        ("https://github.com/ollama/ollama/issues/11277", "It appears that Ollama does not efficiently handle concurrent requests — "
         "possibly due to a lack of parallel execution or limited context switching."),
    ):
        found = perf_prose.statements("t.md", sentence)
        assert found and {x.code for x in found} == {"perf.batching_limited"}, url
    # https://github.com/NVIDIA/TensorRT-LLM/issues/11080 (title)
    (said,) = perf_prose.statements("t.md", "[Usage]: Batching doesn't improve prefill throughput for llama 3.1 8B")
    assert said.code == "perf.batching_limited"


def test_a_memory_share_said_with_the_engines_flag_name_is_judged_by_memory_headroom(tmp_path):
    # vLLM's own argument name and the share (vllm/engine/arg_utils.py: gpu_memory_utilization), said in a sentence
    report = _paste(tmp_path, "We run it with gpu_memory_utilization=0.98 so the KV cache gets as much room as possible.\n")
    f = _finding(report, "perf.memory_overcommitted")
    assert f["severity"] == "warn" and f["evidence"][0].startswith("gpu_memory_utilization=0.98 (stated at ")
    assert fix_commands(f)[0] == "--gpu-memory-utilization 0.90"
    # below the check's limit: quiet (https://github.com/vllm-project/vllm/issues/7553)
    quiet = _paste(tmp_path, "BTW, when we set gpu-memory-utilization = 0.9,  it means that 24564(for RTX 4090) * 0.9 can be used.\n")
    assert not [x for x in quiet["findings"] if x["code"] == "perf.memory_overcommitted"]


def test_more_gpus_slower_than_fewer_is_the_interconnect_as_said(tmp_path):
    report = _paste(tmp_path, (
        # https://github.com/oobabooga/textgen/issues/6424 (title)
        "Inference with TP (tensor parallelism) is around 4x slower than without\n\n"
        # https://github.com/huggingface/text-generation-inference/issues/1315 (a comment)
        "Hi, any updates on this? I also had a problem that the deployment with 8 GPUs is not faster than with that with 4 GPUs. "
        "I'm using V100.\n"))
    f = _finding(report, "perf.slow_interconnect")
    assert f["severity"] == "info" and f["title"].endswith("(2 statements)")
    assert fix_commands(f) == ["nvidia-smi topo -m"]
    # "slower than without" TP is against one GPU: the model fits one, so TP is also larger than it needs, ranked first
    # (the 8-vs-4 sentence says nothing of one GPU: its statement stays the interconnect's alone)
    assert [x["code"] for x in report["findings"]] == ["perf.tp_mismatch", "perf.slow_interconnect"]
    assert _finding(report, "perf.tp_mismatch")["title"].endswith("(1 statement)")


def test_no_faster_on_several_gpus_than_on_one_is_tp_larger_than_the_model_needs():
    # https://github.com/NVIDIA/TensorRT-LLM/issues/389 (corpus/perf/trtllm-bloom-world-size-8-v100-slower-than-1gpu-389, train):
    # the question tacked on at the end leaves the statement before it standing
    text = ("using trt-llm run bloom, tensor parallelism (built with --world_size =8 ) slower seriously than single gpu (GPU is 8X V100)\n"
            "single gpu total latency: 9.276402950286865 sec, world_size =8 tensor parallelism  total latency: 115sec,  it shouldn't be faster?\n")
    assert [st.code for st in perf_prose.statements("issue.md", text)] == ["perf.tp_mismatch", "perf.slow_interconnect"]
    # https://github.com/vllm-project/vllm/issues/1435 (corpus/perf/vllm-starcoderbase-tp1-vs-tp8-same-throughput-1435, train)
    text = ("Using 8 A100s (80GB), I find that setting this to 1 or 8 doesn't change performance much, even when using large "
            "batches (1000+).\n")
    assert [st.code for st in perf_prose.statements("issue.md", text)] == ["perf.tp_mismatch", "perf.slow_interconnect"]
    # a sentence that opens as a question states nothing
    assert perf_prose.statements("issue.md", "Is tensor parallelism on 8 GPUs slower than a single GPU?\n") == []


def test_questions_advice_and_healthy_numbers_stay_quiet(tmp_path):
    text = (
        # https://github.com/vllm-project/vllm/issues/5626 (title)
        "Why is the GPU KV cache usage very low?\n\n"
        # https://github.com/vllm-project/vllm/issues/14412
        "1. when GPU kv cache useage is 100% , waiting reqseq should increase? and runing reqseq should descrease\n\n"
        # https://github.com/vllm-project/vllm/issues/6206 (title)
        "[Usage]: The GPU KV cache usage is still small (below 20% most of time) though I turned the enable_prefix_caching on "
        "as well as modified the block_size from 16 to 32.\n\n"
        # https://github.com/ollama/ollama/issues/6163 (title): above perf.gpu_utilization's 50 %
        "GPU Usage Never Exceeds 70% When Using LLaMA 3:8B with Ollama\n\n"
        # https://github.com/vllm-project/vllm/issues/770 (a comment)
        "Setting: Model 8B, batch 1, GPU A5000, number input token 8\n"
        "Results: TTFT ~ 62ms.\n"
    )
    report = _paste(tmp_path, text)
    assert not [f for f in report["findings"] if f["code"].startswith("perf.")], report["findings"]


def test_a_crash_in_the_same_paste_ranks_before_the_stated_perf_problem(tmp_path):
    # the crash: vLLM's own OOM line (shared/real); the sentence: https://github.com/vllm-project/vllm/issues/8086
    report = _paste(tmp_path, "vLLM TTFT increased from 2s to 17s when ten requests were sent concurrently.\n"
                              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                              "of 79.15 GiB of which 1.05 GiB is free.\n")
    codes = [f["code"] for f in report["findings"]]
    assert codes[0].startswith("load.") and report["findings"][0]["severity"] == "error"


def test_a_key_in_the_sentence_never_reaches_the_report(tmp_path):
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    report = _paste(tmp_path, f"With OPENAI_API_KEY={key} the TTFT is 20 s at 10 concurrent requests.\n")
    assert _finding(report, "perf.high_latency")["title"].startswith("TTFT 20.0 s")
    assert key not in json.dumps(report)


def test_decode_falling_back_to_eager_is_eager_mode_as_said(tmp_path):
    # https://github.com/sgl-project/sglang/pull/40346
    report = _paste(tmp_path, "On an RTX 5090 (32 GB, SM120), the 20–35 GiB memory tier currently defaults to a decode CUDA graph "
                              "maximum batch size of 48 for TP < 4. Under concurrency, decode can exceed that ceiling and fall back "
                              "to eager execution.\n")
    f = _finding(report, "perf.eager_mode")
    assert f["severity"] == "info" and f["title"].startswith("CUDA graphs are said to be off")
    assert any("fall back to eager execution" in e for e in f["evidence"])
    # "maximum batch size of 48" is no batch cap flag: nothing said of batching
    assert [x["code"] for x in report["findings"]] == ["perf.eager_mode"]


def test_a_benchmark_headed_disable_cuda_graph_is_eager_mode():
    # https://github.com/xLLM-AI/xllm/pull/713 (the heading above its benchmark block)
    (st,) = perf_prose.statements("pr.md", "**Disable CUDA Graph:**\n```\n")
    assert st.code == "perf.eager_mode" and st.where == "pr.md:1"


def test_a_statement_opening_with_when_is_no_question(tmp_path):
    # https://github.com/vllm-project/vllm/issues/3384
    report = _paste(tmp_path, "When running inference we see that the CPU of the VLLM process is maxed at 100%, but the GPU varies "
                              "between 50-70%. For a single request, our avg generated throughput is only about 100 tokens/second.\n")
    f = _finding(report, "perf.cpu_bound")
    assert any("CPU of the VLLM process is maxed at 100%" in e for e in f["evidence"])
    assert report["status"] != "incomplete"


def test_a_batch_cap_said_with_the_flag_name_is_judged_by_perf_batching(tmp_path):
    # https://github.com/MiaAI-Lab/Qwen3.8-Flash-Next-Single-DGX-Spark/issues/19
    report = _paste(tmp_path, "**Affects:** `.env.sample` (`MAX_NUM_SEQS=4`), `start.sh`\n"
                              "### 15a — MAX_NUM_SEQS=4 is a benchmarking trap\n")
    assert report["facts"]["deployment"]["max_num_seqs"] == 4
    (f,) = [f for f in report["findings"] if f["code"] == "perf.batching_limited"]
    assert f["severity"] == "warn" and f["check"] == "perf.batching"
    assert fix_commands(f) == ["--max-num-seqs 256"]


def test_eager_and_cap_words_that_state_no_problem_stay_quiet(tmp_path):
    text = ("We serve with CUDA graphs enabled and the server is not in eager mode.\n\n"
            "The deployment runs max_num_seqs=256 on one H100.\n")
    report = _paste(tmp_path, text)
    assert not [f for f in report["findings"] if f["code"].startswith("perf.")], report["findings"]


def test_a_table_row_is_read_with_its_columns_names_and_the_lowest_hit_rate_is_the_complaint(tmp_path):
    # https://github.com/MiaAI-Lab/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark/issues/144
    report = _paste(tmp_path, "| reasoning_effort | cache hit rate | hit latency | miss latency | speedup |\n"
                              "|---|---|---|---|---|\n"
                              "| off | 95% | ~1.4-1.7s | ~3.8-4.0s | ~2.3-2.7x |\n"
                              "| low | 95% | ~1.6-1.7s | ~3.9-4.0s | ~2.3-2.5x |\n"
                              "| high | 0% | ~4.2s | ~4.1s | ~1.0x |\n"
                              "| max | 0% | ~4.1-4.3s | ~4.1-4.3s | ~1.0x |\n")
    f = _finding(report, "perf.prefix_caching_off")
    assert f["title"] == "no repeated prompt prefix is read from the cache (hit rate 0%)"
    assert f["evidence"][0].endswith("issue.md:5: reasoning_effort high; cache hit rate 0%; hit latency ~4.2s; miss latency ~4.1s; speedup ~1.0x")
    assert report["status"] != "incomplete"


def test_a_latency_column_whose_slow_row_is_twice_the_fast_one_is_high_latency(tmp_path):
    # https://github.com/ml-explore/mlx-lm/issues/1435: 86.6 ms is below any absolute threshold, 2.4x the same machine's 35.6 ms
    table = ("| mlx-lm | TTFT median | range |\n|---|---:|---|\n"
             "| 0.27.1 | **35.6 ms** | 32.1 – 41.6 |\n| 0.31.3 | **86.6 ms** | 80.7 – 243.2 |\n")
    (st,) = perf_prose._latency_spread("issue.md", table)
    assert (st.code, st.where, st.measures) == ("perf.high_latency", "issue.md:4", {"latency_ratio": 2.43})
    assert st.text == "TTFT median 86.6 ms (0.31.3) against 35.6 ms (0.27.1): 2.4x"
    report = _paste(tmp_path, table)
    assert report["status"] != "ok" and report["findings"][0]["code"] == "perf.high_latency"
    # one row of it compares nothing: the absolute threshold alone judges 35.6 ms, healthy
    one_row = table.rsplit("| 0.31.3", 1)[0]
    assert perf_prose._latency_spread("issue.md", one_row) == []
    assert not [f for f in _paste(tmp_path, one_row)["findings"] if f["code"].startswith("perf.")]


def test_a_cell_boundary_keeps_one_columns_latency_from_the_next(tmp_path):
    # https://github.com/confidential-dot-ai/c8s/pull/144: ITL is its own cell's 1.58 ms, not TTFT's 287.2 ms
    (st,) = [s for s in perf_prose.statements("x", "| path | TTFT p50 | ITL p50 | tok/s @ c32 |\n|---|---:|---:|---:|\n"
                                                     "| through `tls-lb` | 287.2 ms | **1.58 ms** | 2235 |\n") if "ttft_s" in s.measures]
    assert st.measures == {"ttft_s": 0.2872, "itl_s": 0.00158}


def test_a_count_of_preemptions_said_without_the_cache_is_kv_pressure_before_the_cap(tmp_path):
    # https://github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks/issues/122
    report = _paste(tmp_path, "the reason our `MAX_NUM_SEQS=4` soak with `--long-prefill-token-threshold` (see #119 / #110) "
                              "preempted 165 times while `MAX_NUM_SEQS=3` cut that to 59.\n")
    first = report["findings"][0]
    assert (first["code"], first["title"]) == ("perf.kv_cache_pressure", "KV cache under pressure, 165 preemptions")
    assert not any("peak usage" in e for e in first["evidence"])
    # the stated cap halved: the running sequences then fit the cache they overran
    assert fix_commands(first)[0] == "--max-num-seqs 2"
    assert [f["code"] for f in report["findings"]] == ["perf.kv_cache_pressure", "perf.batching_limited"]


def test_tp_traffic_said_to_take_pcie_without_nvlink_is_the_interconnect_as_said(tmp_path):
    # https://github.com/haohervchb/sglang-V100/pull/2
    text = ("Our four V100 SXM2 32 GB sit behind one PCIe (PLX) switch: P2P works at PCIe line rate but there is no NVLink. "
            "On that topology `can_use_custom_all_reduce_with_nvlink()` rejects the custom all-reduce for more than two GPUs "
            '("not supported on more than two PCIe-only GPUs"), so every TP all-reduce goes through NCCL.\n')
    found = perf_prose.statements("pr.md", text)
    assert [st.code for st in found] == ["perf.slow_interconnect", "perf.slow_interconnect"]
    # (the second sentence's NCCL is read as a failure by the log's keyword families, which block the perf checks)
    f = _finding(_paste(tmp_path, text.split(" On that")[0] + "\n"), "perf.slow_interconnect")
    assert f["severity"] == "info" and [x["command"] for x in f["fixes"]] == ["nvidia-smi topo -m"]


def test_a_healthy_engines_p2p_lines_and_one_gpu_state_no_slow_interconnect():
    # corpus/perf/vllm-startup-v0.6.1.post2-v0-tp4-vllmworkerprocess-stats (train, healthy): vLLM's own P2P check lines
    text = ("(VllmWorkerProcess pid=215) INFO 09-27 03:03:56 custom_all_reduce_utils.py:242] reading GPU P2P access cache "
            "from /home/corvo/.cache/vllm/gpu_p2p_access_cache_for_0,1,2,3.json\n")
    assert perf_prose.statements("engine.log", text) == []


def test_a_cpu_reading_either_side_of_its_name_is_cpu_bound_and_explains_the_flat_throughput(tmp_path):
    # https://github.com/vllm-project/vllm/issues/11320 (corpus/perf/vllm-bge-m3-embeddings-python-process-cpu-100-11320, train)
    report = _paste(tmp_path, "In our tests, the throughput increased up to 12TPS, and then did not increase after that. It is not clear "
                              "what the cause is, but the CPU utilization of the python process reaches 100% when the bottleneck is reached.\n")
    assert report["findings"][0]["code"] == "perf.cpu_bound"
    assert any("CPU utilization of the python process reaches 100%" in e for e in report["findings"][0]["evidence"])
    # https://github.com/ggml-org/llama.cpp/issues/22097 (corpus g076, train): the reading before the name
    (st,) = perf_prose.statements("issue.md", "All the while, the llama-server process has 100% CPU usage.\n")
    assert (st.code, st.measures) == ("perf.cpu_bound", {"cpu_percent": 100.0})
    # a CPU share of the weights, not a CPU's load
    assert perf_prose.statements("issue.md", "We run it with 100% CPU offloading of the experts.\n") == []
