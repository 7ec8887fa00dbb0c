"""r-perf7: perf signals that engines and tools print, judged whether or not another part of the paste shows a
failure. Sample lines come from the engines' sources or /work/shared/real; each test asserts the code, the evidence
it rests on and the fix."""

from __future__ import annotations

import pytest

from llm_doctor.logparse.tp_compare import setting_costs
from tests.analysis import codes, only, scenario

# llama.cpp llm_load_tensors (src/llama.cpp, 2024; load_tensors in src/llama-model.cpp later):
# "%s: offloaded %d/%d layers to GPU" (/work/shared/real/other-engines/ollama-0.5.x-windows-partial-offload-29of41-runner-crash.txt:113)
PARTIAL = "llm_load_tensors: offloaded 29/41 layers to GPU\n"


def test_layers_left_on_the_cpu_are_named_beside_a_failure_in_another_file(tmp_path):
    notes = "The second try crashed: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    found = scenario(tmp_path, server_log=PARTIAL, notes_txt=notes)
    f = only(found, "perf.low_gpu_util")
    assert f.title == "12 of 41 layers run on the CPU: each token waits for them"
    assert any("offloaded 29/41 layers to GPU" in line for line in f.evidence), f.evidence
    assert f.fixes[0].command == "-ngl 41"
    assert found[0].layer == "load"  # the failure still ranks first


def test_every_layer_on_the_gpu_is_quiet(tmp_path):
    log = "llm_load_tensors: offloaded 41/41 layers to GPU\n"
    assert "perf.low_gpu_util" not in codes(scenario(tmp_path, server_log=log))


def test_a_temperature_below_the_thermal_throttle_point_is_not_throttling(tmp_path):
    notes = "| GPU temp | 70–76 °C | Air-cooled, well below thermal throttle (80°C) |\n"
    assert "perf.gpu_throttled" not in codes(scenario(tmp_path, notes_md=notes))


def test_a_gpu_said_to_throttle_from_heat_is_still_named(tmp_path):
    notes = "nvidia-smi shows GPU 0 at 89 °C and thermal throttling, the clock drops to 1200 MHz under load.\n"
    f = only(scenario(tmp_path, notes_md=notes), "perf.gpu_throttled")
    assert any("thermal throttling" in line for line in f.evidence), f.evidence


# a benchmark table of one setting off and on (doctor/logparse/tp_compare.py): the shapes people tabulate them in
def test_a_table_with_prefix_caching_off_and_on_as_columns_names_the_off_arm(tmp_path):
    bench = ("| TTFT p50 | prefix caching on | prefix caching off |\n"
             "|---|---:|---:|\n"
             "| 4k shared prefix | 310 ms | 2,950 ms |\n")
    f = only(scenario(tmp_path, bench_md=bench), "perf.prefix_caching_off")
    assert f.severity == "info"
    # 2950 / 310 = 9.516
    assert f.title.startswith("runs without prefix caching measure 9.52x slower in a benchmark table"), f.title
    assert "prefix caching off 2,950 ms, prefix caching on 310 ms" in f.evidence[0], f.evidence
    assert f.fixes[0].command == "--enable-prefix-caching"


def test_a_table_with_eager_and_graphs_as_rows_names_eager_mode(tmp_path):
    bench = ("config | Output token throughput (tok/s) | Mean TPOT (ms)\n"
             "--|--|--\n"
             "eager | 410.2 | 21.0\n"
             "CUDA graphs | 655.0 | 13.9\n")
    f = only(scenario(tmp_path, bench_md=bench), "perf.eager_mode")
    # throughput 655.0 / 410.2 = 1.597, TPOT 21.0 / 13.9 = 1.511: the worst metric
    assert f.title.startswith("runs without CUDA graphs (eager) measure 1.6x slower in a benchmark table"), f.title
    assert "--enforce-eager" in f.fixes[0].summary


def test_a_setting_whose_arms_are_within_noise_measures_no_cost():
    bench = ("| TTFT p50 | prefix caching on | prefix caching off |\n"
             "|---|---:|---:|\n"
             "| short prompts | 110 ms | 121 ms |\n")
    assert setting_costs(bench) == []  # 121 / 110 = 1.1, under COST


def test_a_table_whose_metric_has_no_direction_measures_no_cost():
    bench = ("| run | no cache | with cache |\n"
             "|---|---|---|\n"
             "| hits | 0 | 412 |\n")
    assert setting_costs(bench) == []


def test_the_worse_off_arm_is_measured_both_ways():
    rows = ("| | TTFT (ms) | Output tok/s |\n|---|---|---|\n| no cache | 900 | 100 |\n| with cache | 300 | 180 |\n")
    (c,) = setting_costs(rows)
    assert (c.code, c.cost) == ("perf.prefix_caching_off", 3.0)  # TTFT 900 / 300 over throughput 180 / 100


def test_a_wider_tp_said_to_give_less_than_a_narrower_one_is_judged_per_gpu(tmp_path):
    notes = "Measured on one node: 4067 tokens/s at tp=4 with two replicas against 2822 at tp=8 with one.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.tp_mismatch")
    # per GPU: 4067 / 4 = 1016.75 against 2822 / 8 = 352.75, 2.88x
    assert f.title == "TP=8 is wider than the model needs: TP 4 serves 188% more per GPU"
    assert f.fixes[0].command == "--tensor-parallel-size 4 --data-parallel-size 2"


def test_a_wider_tp_that_scales_is_quiet(tmp_path):
    notes = "TP=1 gives 55 tok/s and TP=2 gives 90 tok/s on the same prompt.\n"  # 90 > 1.15 x 55: the GPUs buy speed
    assert "perf.tp_mismatch" not in codes(scenario(tmp_path, notes_txt=notes))


def test_a_figure_with_thousands_and_decimals_is_read_whole(tmp_path):
    notes = "tp=1 gives 1,043.54 tok/s while tp=2 gives 1,100.10 tok/s.\n"  # 1100.10 < 1.15 x 1043.54
    f = only(scenario(tmp_path, notes_txt=notes), "perf.tp_mismatch")
    assert any("throughput per GPU: 550.05 at TP 2, 1043.54 at TP 1" in line for line in f.evidence), f.evidence


@pytest.mark.parametrize(("sentence", "code"), [
    # a server said not to batch
    ("Under load the server interleaves concurrent decodes, it does not batch them.", "perf.batching_limited"),
    ("With 8 clients the requests queue up and are handled one after another.", "perf.batching_limited"),
    ("The output throughput stays the same whether 1 or 8 clients send requests.", "perf.batching_limited"),
    # a clock held down, by its tool's name for it or by a power mode
    ("During inference rocm-smi shows the GFXCLK stays stuck at 41 MHz.", "perf.gpu_throttled"),
    ("It ran at 0.9 FPS in the 30W power mode and 2.5 FPS in MAXN.", "perf.gpu_throttled"),
    # threads oversubscribing the cores
    ("Setting -t -1 uses logical cores instead of physical cores, so the CPU threads are oversubscribed and generation slows down.",
     "perf.cpu_bound"),
    ("Hyperthreading oversubscription makes the run 3x slower.", "perf.cpu_bound"),
])
def test_a_cause_said_in_words_names_its_code_and_quotes_the_sentence(tmp_path, sentence, code):
    f = only(scenario(tmp_path, notes_txt=sentence + "\n"), code)
    assert sentence[:30] in f.evidence[0], f.evidence


def test_a_preemption_count_a_test_asserts_on_is_kv_cache_pressure(tmp_path):
    f = only(scenario(tmp_path, notes_txt="The benchmark failed its check: Preemptions detected: 24.\n"), "perf.kv_cache_pressure")
    assert "24 preemptions" in f.title, f.title


def test_a_kv_usage_said_full_is_kv_cache_pressure(tmp_path):
    notes = "At batch 32 the run hit 100% KV usage with waiting requests.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.kv_cache_pressure")
    assert any("100% KV usage" in line for line in f.evidence), f.evidence


def test_cores_counted_without_a_complaint_are_quiet(tmp_path):
    notes = "The machine has 16 physical cores and 32 logical cores.\n"
    assert "perf.cpu_bound" not in codes(scenario(tmp_path, notes_txt=notes))
