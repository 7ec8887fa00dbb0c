"""s-perf: a person's latency figures read as the run's typical request (the mean or median, a tail percentile only
where no other is given), a long prompt's TTFT read as that prompt's prefill, and a GPU's power cap setting read as a
setting, not as a throttle reason. Healthy samples stay quiet; problem samples keep their code and exact values."""

from __future__ import annotations

from llm_doctor.logparse import perf_prose
from tests.analysis import only, scenario

LOUD = ("warn", "error")


def loud(found) -> list[str]:
    return [f.code for f in found if f.code.startswith("perf.") and f.severity in LOUD]


# club-3090's soak summary (https://github.com/noonghunna/club-3090/issues/488: `scripts/report.sh --full`, 2x RTX 3090
# on NVLink, the soak passed): the p50 is what a request sees, the p95 is the slowest turns of a growing multi-turn context
SOAK = """| Metric | Value |
|---|---:|
| p50 decode TPS | 122.64 |
| p95 decode TPS | 146.31 |
| TPS retention | 100.0% |
| p50 TTFT | 1343 ms |
| p95 TTFT | 5184 ms |
| TTFT first/last ratio | 1.00x |
"""


def test_a_tail_percentile_beside_the_median_is_not_the_typical_request(tmp_path):
    said = [st.measures for st in perf_prose.statements("soak.md", SOAK) if st.code == "perf.high_latency"]
    assert {"ttft_s": 1.343} in said and {"ttft_tail_s": 5.184} in said
    assert loud(scenario(tmp_path, soak_md=SOAK)) == []


def test_a_tail_percentile_alone_is_still_judged(tmp_path):
    f = only(scenario(tmp_path, soak_md=SOAK.replace("| p50 TTFT | 1343 ms |\n", "")), "perf.high_latency")
    assert f.severity == "warn" and f.title.startswith("TTFT 5.2 s")
    assert any("p95 TTFT | 5184 ms" in e for e in f.evidence)


def test_a_slow_median_is_judged_whatever_the_tail(tmp_path):
    f = only(scenario(tmp_path, soak_md=SOAK.replace("1343 ms", "4100 ms")), "perf.high_latency")
    assert f.severity == "warn" and f.title.startswith("TTFT 4.1 s")


# club-3090 bench.sh's prefill probe (https://github.com/noonghunna/club-3090/issues/1065: one RTX 3090, llama.cpp,
# cache-busted prompts of 10K and 90K tokens): TTFT = prompt tokens / the measured prefill rate
DEPTHS = """| depth | prompt tok (mean) | prefill tok/s (mean) | TTFT (mean) | CV |
|---|---|---|---|---|
| 10K | 10,367 | **1147.4** | 9,035 ms | 0.2% |
| 90K | ~87,850 | **834.3** | 105,322 ms | 0.7% |
"""


def test_a_long_prompts_ttft_at_its_measured_prefill_rate_is_quiet(tmp_path):
    said = [st.measures for st in perf_prose.statements("bench.md", DEPTHS) if st.code == "perf.high_latency"]
    assert not any("ttft_s" in m for m in said)
    # the two depths are a sweep of the prompt's length: a longer prompt prefills longer, no regression between rows
    assert not any("latency_ratio" in m for m in said)
    assert loud(scenario(tmp_path, bench_md=DEPTHS)) == []


def test_a_prompt_tok_line_at_its_rate_is_its_prefill():
    # the same report's client-side fallback, in a sentence: 9,779 tokens at 1167.2 tok/s take 8.38 s
    line = "also ran: 9,779 prompt tok @ 1167.2 tok/s, TTFT 8,378 ms — consistent with the 10K figure.\n"
    assert [st.measures for st in perf_prose.statements("n.md", line) if st.code == "perf.high_latency"] == []


def test_a_ttft_the_prefill_rate_does_not_explain_is_still_slow(tmp_path):
    # 1,000 tokens at 1147 tok/s prefill in 0.9 s: a 9 s TTFT lost 8 s elsewhere (a queue, a cold start)
    row = DEPTHS.replace("| 10K | 10,367 |", "| 1K | 1,000 |").replace("| 90K | ~87,850 | **834.3** | 105,322 ms | 0.7% |\n", "")
    f = only(scenario(tmp_path, bench_md=row), "perf.high_latency")
    assert f.severity == "warn" and f.title.startswith("TTFT 9.0 s")


# the same report's rig block: the card's configured power limit (nvidia-smi -pl 370), a setting, not NVML's
# "SW Power Cap: Active" throttle reason
RIG = ("- **GPU:** 1× NVIDIA GeForce RTX 3090, 24,576 MiB, driver 595.71.05, power cap\n"
       "  370 W (max 390 W), pstate P2, PCIe gen3 x16/x16 (negotiated, sampled under load).\n")


def test_a_power_cap_setting_is_no_throttle_reason(tmp_path):
    assert [st for st in perf_prose.statements("rig.md", RIG) if st.code == "perf.gpu_throttled"] == []
    assert loud(scenario(tmp_path, rig_md=RIG)) == []


def test_a_gpu_said_power_capped_still_throttles():
    (st,) = [st for st in perf_prose.statements("n.md", "Under load the GPU is power capped, the SM clock sits at 1410 MHz.\n")
             if st.code == "perf.gpu_throttled"]
    assert st.gpu is not None and st.gpu.throttle_reasons == ["sw_power_cap"] and st.gpu.sm_clock_mhz == 1410.0


# llama-server's update_slots when llama_decode finds no free KV cells (ggml-org/llama.cpp examples/server/server.cpp:
# SRV_WRN("failed to find free space in the KV cache, retrying with smaller batch size - try increasing it via the context
# size or enable defragmentation, i = %d, n_batch = %d, ret = %d\n", ...); LOG_TEE("%s : failed to find free space in the KV
# cache, retrying with smaller n_batch = %d\n", ...) in 2024 builds)
FULL_CACHE = [
    "srv  update_slots: failed to find free space in the KV cache, retrying with smaller batch size - try increasing it via the "
    "context size or enable defragmentation, i = 0, n_batch = 1024, ret = 1\n",
    "update_slots : failed to find free space in the KV cache, retrying with smaller n_batch = 256\n",
]


def test_llama_servers_full_cache_retry_is_kv_pressure_with_its_context_doubled(tmp_path):
    for text in FULL_CACHE:
        log = "llama_new_context_with_model: n_ctx      = 4096\n" + text
        f = only(scenario(tmp_path, server_log=log), "perf.kv_cache_pressure")
        assert f.severity == "warn" and f.title == "the KV cache runs full: a batch found no free KV cells 1 times"
        assert any("failed to find free space in the KV cache" in e for e in f.evidence)
        assert f.fixes[0].command == "-c 8192" and f.fixes[1].command == "-ctk q8_0 -ctv q8_0"


def test_the_full_cache_message_quoted_in_a_report_with_a_reply_beside_it(tmp_path):
    # https://github.com/ggml-org/llama.cpp/issues/6603: the message quoted in a sentence, the maintainer's reply under it
    # ("please upgrade" is a failure word no rule places): the engine served, so the perf checks still judge it
    notes = ('When using llama.cpp via LocalAI, "failed to find free space in the KV cache" will be displayed after using it '
             "for a while, and the string that can respond will gradually become shorter.\n\n"
             "phymbert (comment):\nPlease upgrade the KV cache size yes using `--ctx-size`\n")
    f = only(scenario(tmp_path, notes_txt=notes), "perf.kv_cache_pressure")
    assert f.severity == "warn" and f.fixes[0].command is None and f.fixes[0].summary.startswith("Give the slots more KV cache")


def test_a_crash_after_the_full_cache_retry_still_blocks_perf(tmp_path):
    found = scenario(tmp_path, server_log=FULL_CACHE[0] + "The server crashed after this and would not start again.\n")
    assert "perf.kv_cache_pressure" not in [f.code for f in found]
