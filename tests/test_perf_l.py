"""Perf codes decided from the numbers a report attaches (a clock sampling, a benchmark table's column,
a decode speed set against another), read together as `llm-doctor analyze a b c` reads them: the code,
the number it rests on and the fix value."""

from __future__ import annotations

from llm_doctor.logparse import nvidia_smi, perf_prose
from tests.analysis import codes, only, scenario

# hasso5703/dgx-spark-qwen38#8: `nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 500`
CLOCKS = """2026/08/30 13:52:26.441, 2223 MHz, 0 %
2026/08/30 13:52:26.941, 2216 MHz, 0 %
2026/08/30 13:52:27.441, 2197 MHz, 0 %
2026/08/30 13:52:27.942, 2229 MHz, 0 %
2026/08/30 13:52:29.943, 890 MHz, 0 %
2026/08/30 13:52:30.944, 858 MHz, 96 %
2026/08/30 13:52:31.444, 695 MHz, 96 %
"""


def test_a_headerless_query_gpu_sampling_is_named_by_its_units():
    header, rows = nvidia_smi.embedded_csv("What else can I check?\n" + CLOCKS)
    assert header == ["timestamp", "clocks.sm", "utilization.gpu"] and len(rows) == 7
    gpu = nvidia_smi.parse_csv(header, rows).gpus[0]
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz, gpu.util_gpu.max) == (858.0, 2229.0, 96.0)


def test_two_columns_of_one_unit_are_not_guessed():
    rows = "".join(f"2026/08/30 13:52:2{i}.441, 2223 MHz, 1593 MHz\n" for i in range(5))
    assert nvidia_smi.embedded_csv(rows) == ([], [])


def test_a_gpu_clocked_down_under_load_is_throttled_with_no_reason_recorded(tmp_path):
    found = scenario(tmp_path, nvidia_smi_txt=CLOCKS, notes_txt="Getting less than half of the reference box's speed.\n")
    hot = only(found, "perf.gpu_throttled")
    assert hot.evidence[0].startswith("GPU0: SM 858 MHz at 96 % utilization against 2229 MHz it reaches (38%")
    assert hot.fixes[0].command == "nvidia-smi -i 0 -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE"
    assert hot.fixes[1].command == "sudo nvidia-smi -i 0 -rgc && sudo nvidia-smi -i 0 -rac"


def test_a_gpu_that_keeps_its_clock_under_load_is_not_throttled(tmp_path):
    steady = "".join(f"2026/08/30 13:52:2{i}.441, {1980 - 40 * i} MHz, {90 + i} %\n" for i in range(6))
    found = scenario(tmp_path, nvidia_smi_txt="2026/08/30 13:52:19.441, 345 MHz, 0 %\n" + steady)
    assert "perf.gpu_throttled" not in codes(found)


# vllm-project/vllm PR 44594: a benchmark table with a preemption column (read with its header)
PREEMPT_TABLE = """#### Results

| watermark | preempt | out tok/s | req/s | TTFT p50 (s) | ITL p99 (ms) |
|----------:|--------:|----------:|------:|-------------:|-------------:|
| off       |    1065 |     11582 | 2.306 |         6.56 |        40.62 |
| 0.02      |     400 |     12134 | 2.416 |        11.80 |        18.80 |
"""


def test_a_benchmark_tables_preemption_column_is_kv_cache_pressure(tmp_path):
    said = perf_prose.statements("bench.txt", PREEMPT_TABLE)
    assert [s.measures for s in said] == [{"preemptions": 1065.0}, {"preemptions": 400.0}]
    kv = only(scenario(tmp_path, bench_txt=PREEMPT_TABLE), "perf.kv_cache_pressure")
    assert kv.title == "KV cache under pressure, 1065 preemptions"
    assert kv.evidence[0].endswith("watermark off; preempt 1065; out tok/s 11582; req/s 2.306; TTFT p50 (s) 6.56; ITL p99 (ms) 40.62")


def test_a_zero_preemption_column_states_no_pressure():
    table = PREEMPT_TABLE.replace("1065", "0").replace("  400", "    0")
    assert not [s for s in perf_prose.statements("bench.txt", table) if s.code == "perf.kv_cache_pressure" and s.measures.get("preemptions")]


def test_a_tuning_table_that_survived_with_zero_oom_is_no_oom(tmp_path):
    # tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark PR 11: the preemptions the KV pool gave, in a tuning table
    notes = ("| Flag | Before | After | Why |\n|---|---|---|---|\n"
             "| `--kv-cache-memory` | 3221225472 (3 GiB) | 6442450944 (6 GiB) | 6 preemptions under load; KV pool 310,292 -> "
             "678,661 tokens (measured). Doubling fits inside the existing 0.85 gpu-mem-util envelope; survives C6 concurrent "
             "prefills with zero OOM. |\n")
    found = scenario(tmp_path, notes_md=notes)
    assert "load.runtime_oom" not in codes(found)
    assert only(found, "perf.kv_cache_pressure").title == "KV cache under pressure, 6 preemptions"


def test_one_token_every_few_seconds_is_the_inter_token_latency(tmp_path):
    # blazux/qwen3.8-Flash-DGX#9: the maintainer's reproduction table
    notes = ("| | while the two prefills run (~110 s) | after |\n|---|---|---|\n"
             "| decoding client | **0.2 tok/s** (one token every 5–7 s) | 26–29 tok/s |\n")
    late = only(scenario(tmp_path, notes_md=notes), "perf.high_latency")
    assert late.title == "5000 ms per output token, well above what the GPU gives"
    assert "one token every 5–7 s" in late.evidence[0]


def test_a_decode_speed_set_against_a_faster_one_is_its_latency():
    # TheTom/llama-cpp-turboquant#356
    text = ("The first decode after any significant prefill runs dramatically slower than subsequent decodes — "
            "e.g. 5 t/s vs 36 t/s with MTP at 126K context.\n")
    (said,) = perf_prose.statements("notes.txt", text)
    assert (said.code, said.measures) == ("perf.high_latency", {"itl_s": 0.2})
    # two speeds of different models compared, with no word that one is slow: nothing stated
    assert perf_prose.statements("notes.txt", "Model A gives 5 t/s vs 36 t/s for model B on the same box.\n") == []


def test_a_decode_rate_column_whose_slow_row_is_a_fraction_of_the_fast_one(tmp_path):
    # FlashML-org/FreeToken PR 484: the same request alone and beside a 200K-token prefill
    notes = ("| run | victim wall | victim output | decode rate |\n|---|---|---|---|\n"
             "| victim **alone** | 11.8 s | 699 tokens | **59.4 tok/s** |\n"
             "| victim **+ one 200K-token prefill** | 90.4 s | 699 tokens | **7.7 tok/s** |\n")
    found = scenario(tmp_path, notes_md=notes)
    late = [f for f in found if f.code == "perf.high_latency"]
    assert late[0].title == "130 ms per output token, well above what the GPU gives"
    assert any("decode rate 7.7 tok/s (victim + one 200K-token prefill) against 59.4 tok/s (victim alone): 7.7x" in e
               for f in late for e in f.evidence)


def test_a_llama_bench_table_of_prompt_and_generation_rows_is_no_spread():
    table = ("| model | size | backend | ngl | test | t/s |\n|---|---|---|---|---|---|\n"
             "| llama 7B Q4_0 | 3.56 GiB | CUDA | 99 | pp512 | 5412.3 ± 20.1 |\n"
             "| llama 7B Q4_0 | 3.56 GiB | CUDA | 99 | tg128 | 148.2 ± 0.3 |\n")
    assert [s for s in perf_prose.statements("bench.md", table) if s.code == "perf.high_latency"] == []


TRUNCATED = "(APIServer pid=1) WARNING 07-05 08:51:36 [vllm.py:1719] Truncating max_cudagraph_capture_size to {size}\n"
SPEC_LAUNCH = ("vllm serve deepseek-ai/DeepSeek-V3 --max-num-seqs 64 "
               "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'\n")


def test_a_capture_ceiling_below_the_decode_step_is_eager_decode_with_the_ceiling_that_covers_it(tmp_path):
    found = scenario(tmp_path, launch_sh=SPEC_LAUNCH, vllm_log=TRUNCATED.format(size=128))
    eager = only(found, "perf.eager_mode")
    assert (eager.severity, eager.title) == ("warn", "decode steps of 256 tokens exceed the 128-token CUDA graph capture ceiling")
    assert "64 requests x 4 token(s) = 256 tokens" in eager.evidence[-1]
    assert eager.fixes[0].command == "--max-cudagraph-capture-size 256"


def test_a_capture_ceiling_that_holds_the_decode_step_is_quiet(tmp_path):
    found = scenario(tmp_path, launch_sh=SPEC_LAUNCH, vllm_log=TRUNCATED.format(size=256))
    assert "perf.eager_mode" not in codes(found)


def test_a_capture_ceiling_with_no_batch_cap_known_is_said_at_info(tmp_path):
    # tonyd2wild/DeepSeek-v4-Flash-Vision-Exp-DSpark-1M-NVFP4-KV-2x-DGX-Spark PR 5: the boot-log warning alone
    eager = only(scenario(tmp_path, vllm_log=TRUNCATED.format(size=4)), "perf.eager_mode")
    assert (eager.severity, eager.title) == ("info", "CUDA graphs are captured only up to 4 tokens per step")
    assert eager.fixes[0].command is None


def test_capture_sizes_are_on_vllms_lattice():
    from llm_doctor.checks.perf.engine_log import capture_size

    assert [capture_size(n) for n in (3, 6, 24, 250, 257, 1000)] == [4, 8, 24, 256, 272, 1008]


def test_a_sentence_that_denies_a_crash_is_no_failure(tmp_path):
    notes = ("Generation never stops entirely, so this isn't a crash or a hang — it's every decode step falling out "
             "of the captured CUDA graph path into eager execution.\n")
    assert "load.unrecognized_failure" not in codes(scenario(tmp_path, notes_md=notes))


def test_nccl_on_sockets_with_the_reporter_saying_the_collectives_cross_nodes(tmp_path):
    # areal-project/AReaL#639: NCCL's transport line, and the reporter's words that the AllReduce crosses nodes
    notes = ("Cross-node collective operations (AllReduce, Broadcast) are 4-5x slower than expected due to NCCL "
             "falling back to Socket transport instead of InfiniBand.\n")
    found = scenario(tmp_path, nccl_log="NCCL INFO NET/Socket : Using [0]bond0:<REDACTED><0>\n", notes_txt=notes)
    link = found[0]
    assert (link.code, link.severity) == ("perf.slow_interconnect", "warn")
    assert link.title == "NCCL uses TCP sockets (bond0) between 2 nodes: no InfiniBand/RoCE transport was found"
    assert link.fixes[0].command == "ibv_devinfo"


def test_nccl_on_sockets_inside_one_node_is_quiet(tmp_path):
    found = scenario(tmp_path, nccl_log="NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n",
                     notes_txt="Decode on the two local GPUs is as fast as the reference.\n")
    assert "perf.slow_interconnect" not in codes(found)


def test_tp2_latency_greater_than_tp1_is_tp_larger_than_the_model_needs(tmp_path):
    # vllm-project/vllm#6027: the issue title
    found = scenario(tmp_path, notes_txt="[Bug]: When I inference with a 1b model, tp2 latency is greater than tp1\n")
    assert {"perf.tp_mismatch", "perf.slow_interconnect"} <= set(codes(found))
    assert "tp2 latency is greater than tp1" in only(found, "perf.tp_mismatch").evidence[0]


# SillyTavern/SillyTavern#1589: a late-2023 llama.cpp server under a client that never sent cache_prompt
SLOT_LOG = """print_timings: prompt eval time =    9327.12 ms /   144 tokens (   64.77 ms per token,    15.44 tokens per second)
print_timings:        eval time =    3956.15 ms /    13 runs   (  304.32 ms per token,     3.29 tokens per second)
slot 0 released (158 tokens in cache)
slot 0 is processing [task id: 2]
{asked}slot 0 : kv cache rm - [{at}, end)
"""


def test_a_slot_that_held_the_last_turn_and_evaluates_from_zero_without_the_cache_line_dropped_it(tmp_path):
    found = scenario(tmp_path, llama_server_log=SLOT_LOG.format(asked="", at=0))
    off = found[0]
    assert (off.code, off.severity) == ("perf.prefix_caching_off", "warn")
    assert off.evidence[0].endswith("slot 0 : kv cache rm - [0, end) (the slot held 158 tokens)")
    assert off.fixes[0].command == '"cache_prompt": true'


def test_a_slot_whose_request_asked_for_the_cache_is_no_drop(tmp_path):
    asked = "slot 0 : in cache: 0 tokens | to process: 150 tokens\n"
    assert "perf.prefix_caching_off" not in codes(scenario(tmp_path, llama_server_log=SLOT_LOG.format(asked=asked, at=0)))
    assert "perf.prefix_caching_off" not in codes(scenario(tmp_path, llama_server_log=SLOT_LOG.format(asked="", at=140)))


def test_runs_listed_by_memory_share_where_the_higher_one_crashed_are_memory_overcommitted(tmp_path):
    # vllm-project/vllm#9290: the reporter's experiments, one a line
    notes = ("Some experiments:\n"
             "- `num-scheduler-steps 16 --gpu-memory-utilization 0.941` and ` --request-rate inf ` - Crash\n"
             "- `num-scheduler-steps 16 --gpu-memory-utilization 0.9` and ` --request-rate inf ` - No Crash\n"
             "- `num-scheduler-steps 8 --gpu-memory-utilization 0.941` and ` --request-rate [any] ` - No Crash\n")
    (said,) = [s for s in perf_prose.statements("notes.txt", notes) if s.code == "perf.memory_overcommitted"]
    assert said.measures == {"oom_cured": 1.0, "memory_share": 0.941, "cured_share": 0.9}
    share = only(scenario(tmp_path, notes_md=notes), "perf.memory_overcommitted")
    assert "(0.941)" in share.title and share.fixes[0].command == "--gpu-memory-utilization 0.90"


def test_runs_that_crashed_only_at_the_lower_share_say_nothing_of_headroom():
    notes = ("- `--gpu-memory-utilization 0.8` - Crash\n- `--gpu-memory-utilization 0.9` - No Crash\n")
    assert [s for s in perf_prose.statements("notes.txt", notes) if s.code == "perf.memory_overcommitted" and s.measures.get("oom_cured")] == []


def test_requests_said_capped_at_the_slot_count_are_batching_limited():
    # ggml-org/llama.cpp#5827: a k6 load test against llama-server
    text = "I am doing a load test for llama cpp server, but somehow the request only capped at the --parallel n.\n"
    (said,) = perf_prose.statements("notes.txt", text)
    assert said.code == "perf.batching_limited"
    assert perf_prose.statements("notes.txt", "The GPU clock is capped at 1500 MHz by the driver.\n")[0].code != "perf.batching_limited"
