"""Perf codes from the prose real threads carry, read as `llm-doctor analyze` reads them: an nccl-tests bus bandwidth
said in words (perf.interconnect judges it), a second GPU that slows a model down (perf.tp_mismatch), a count of
preemptions written as a word, and a process's "100% CPU usage" that is not `ollama ps`. Each test asserts the code,
the figure it rests on and, where the check computes one, the fix."""

from __future__ import annotations

from tests.analysis import codes, only, scenario


def test_a_busbw_said_low_between_two_boxes_is_below_the_network_floor(tmp_path):
    notes = ("Running the NCCL playbook on 2 DGX Sparks over one QSFP cable, `all_reduce_perf` reaches only ~3 GB/s busbw\n"
             "at every buffer size.\n")
    found = scenario(tmp_path, notes_txt=notes)
    f = only(found, "perf.slow_interconnect")
    assert f.severity == "warn"
    assert f.title == "NCCL moves 3 GB/s between nodes: the data path is not on RDMA"
    assert any("below 5 GB/s between nodes" in line for line in f.evidence), f.evidence
    assert "NCCL_DEBUG_SUBSYS=INIT,NET" in f.fixes[0].command


def test_a_busbw_set_against_a_faster_run_of_the_same_test_names_the_slow_path_in_gbytes(tmp_path):
    notes = "Measured between the two nodes (nccl-tests busbw): 98 Gb/s with one HCA -> 161 Gb/s with both HCAs.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.slow_interconnect")
    # bits to bytes: 98 / 8 = 12.25, 161 / 8 = 20.125
    assert f.title == "NCCL reaches 12.25 GB/s where the same test reached 20.125 GB/s"
    assert f.severity == "warn"
    assert any("(1.64x)" in line for line in f.evidence), f.evidence


def test_a_healthy_busbw_said_without_a_complaint_stays_quiet(tmp_path):
    notes = "The all_reduce_perf run between the nodes gives 96 GB/s busbw, the target for four 200G NICs.\n"
    assert "perf.slow_interconnect" not in codes(scenario(tmp_path, notes_txt=notes))


def test_a_second_card_that_slows_the_model_is_a_split_wider_than_it_needs(tmp_path):
    notes = ("Prompt processing runs at 2500 tokens/sec on the 4090 and is slowed down to 300 tokens/sec when adding a second 3090,\n"
             "generation speed drops from 80/sec down to 20/sec.\n")
    found = scenario(tmp_path, notes_txt=notes)
    f = only(found, "perf.tp_mismatch")
    assert "adding a second 3090" in f.evidence[0]
    assert "replica" in f.fixes[0].summary
    assert "perf.slow_interconnect" in codes(found)


def test_a_latency_that_went_down_to_a_figure_is_still_an_improvement(tmp_path):
    notes = "After enabling CUDA graphs the TTFT went down to 80 ms with a second GPU.\n"
    assert not [c for c in codes(scenario(tmp_path, notes_txt=notes)) if c.startswith("perf.")]


def test_preemptions_counted_in_words_are_the_kv_cache_pressure(tmp_path):
    notes = "Ten preemptions in one run with eight 16k-token streams on the 3090, and one request straggles to 72 s.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.kv_cache_pressure")
    assert f.title == "KV cache under pressure, 10 preemptions"
    assert f.fixes[0].command == "--kv-cache-dtype fp8"


def test_a_process_at_100_percent_cpu_outside_ollama_is_the_stated_cpu_bound(tmp_path):
    log = ("llama-server -m gemma-it_Q8_0.gguf --device cuda0 -np 4\n"
           "The GPU never gets past 90% utilization. All the while, the llama-server process has 100% CPU usage.\n")
    f = only(scenario(tmp_path, engine_log=log), "perf.cpu_bound")
    assert "the llama-server process has 100% CPU usage" in f.evidence[0]
    assert f.fixes[0].command == "top -b -n 1 -c | head -30; nproc"


def test_a_share_said_to_cause_the_oom_and_lowered_in_the_next_sentence_gives_that_share(tmp_path):
    log = "Setting rollout.gpu_memory_utilization to 0.7 would cause OOM on a node of 8x80G. So decrease it from 0.7 to 0.6.\n"
    found = scenario(tmp_path, engine_log=log)
    top = found[0]
    assert top.code == "perf.memory_overcommitted" and top.explains == ["load.runtime_oom"]
    assert top.title.startswith("the memory share (0.7) leaves no headroom")
    assert top.fixes[0].command == "--gpu-memory-utilization 0.60"


def test_a_share_said_to_cause_the_oom_alone_is_lowered_below_it(tmp_path):
    log = "With --gpu-memory-utilization 0.95 the server causes an OOM as soon as a second batch arrives.\n"
    top = scenario(tmp_path, engine_log=log)[0]
    assert top.code == "perf.memory_overcommitted"
    assert top.fixes[0].command == "--gpu-memory-utilization 0.90"


def test_a_capture_ceiling_raised_with_a_speed_up_is_eager_decode_above_the_old_ceiling(tmp_path):
    notes = "Decode at 64 concurrent requests ran 5x faster once max_cudagraph_capture_size was raised from 512 to 1024.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.eager_mode")
    assert f.title.startswith("decode batches above the CUDA graph capture ceiling are said to run eager")
    assert f.fixes[0].command == "--max-cudagraph-capture-size 1024"


def test_sglangs_graph_batch_cap_raised_gives_its_own_flag(tmp_path):
    notes = "Throughput improved by 40% after increasing cuda_graph_max_bs from 160 to 256 on the H100.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.eager_mode")
    assert f.fixes[0].command == "--cuda-graph-max-bs 256"


def test_a_capture_ceiling_lowered_or_raised_without_a_speed_up_states_nothing(tmp_path):
    notes = "We raised max_cudagraph_capture_size from 512 to 1024 for the new release.\n"
    assert "perf.eager_mode" not in codes(scenario(tmp_path, notes_txt=notes))


def test_a_cold_request_after_keep_alive_unloaded_the_model_is_the_reload(tmp_path):
    notes = ("The first request after lunch took 38 s and the rerun 1.2 s: Ollama's default keep_alive unloads the model\n"
             "after five idle minutes.\n")
    f = only(scenario(tmp_path, notes_txt=notes), "perf.high_latency")
    assert "38 s against 1.2 s warm" in f.title
    assert f.fixes[0].command == "OLLAMA_KEEP_ALIVE=-1"


def test_a_seconds_figure_in_korean_is_read_as_seconds(tmp_path):
    notes = "응답이 104.47초 걸리고 곧바로 재실행하니 1.47초 — 원인은 Ollama 기본 keep_alive 이후 모델 언로드.\n"
    f = only(scenario(tmp_path, notes_txt=notes), "perf.high_latency")
    assert "104.47 s against 1.47 s warm" in f.title


def test_a_latency_that_drops_with_a_second_card_is_no_split_complaint(tmp_path):
    notes = "The TTFT drops from 900 ms to 500 ms with a second A100 in the box, the throughput doubles.\n"
    got = codes(scenario(tmp_path, notes_txt=notes))
    assert "perf.tp_mismatch" not in got and "perf.slow_interconnect" not in got


def test_a_speed_that_fell_to_a_rate_is_a_complaint_a_latency_that_dropped_is_not(tmp_path):
    from llm_doctor.logparse.perf_prose import _not_a_problem

    assert not _not_a_problem("generation speed drops from 80/sec down to 20/sec with two GPUs")
    assert not _not_a_problem("it is slowed down to 300 tokens/sec when adding a second 3090")
    assert _not_a_problem("the TTFT dropped to 20 ms and decode runs at 300 tok/s")
